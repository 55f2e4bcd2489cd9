//! `read_cream_hour`: parses a CREAM hourly HDF5 file (bytes) into a calibrated [2, samples]
//! float64 `signal` (row 0 voltage in volts, row 1 current in amperes) and an int32
//! `sample_rate`. Each channel is int16 counts with a `calibration_factor` attribute.
//!
//! The ADC's offset is removed as the paper's pipeline (the CREAM dataset's own loader) does it,
//! `offsets: per_period`: the voltage's mean over each mains period (the nominal rate / 50 Hz
//! samples; the last period zero-padded to full length, a whole extra period of zeros when the
//! recording is already a whole number of periods) is placed at evenly spaced integer sample
//! positions from the first to the last sample, and interpolated linearly to one offset per
//! sample; the current's offset is the voltage's times 1/sqrt(2). `offsets: mean` subtracts each
//! channel's own mean instead (cheaper, and exact for a constant offset).

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the HDF5 file
    #[serde(default = "super::default_data_field")]
    #[param(reads)]
    pub from: FieldName,
    /// float64 [2, samples] to write: volts, amperes
    #[serde(default = "super::default_signal_field")]
    #[param(writes)]
    pub to: FieldName,
    /// how the ADC offset is removed
    #[serde(default)]
    #[param(default = "per_period")]
    pub offsets: Offsets,
}

/// How `read_cream_hour` removes the ADC's offset.
#[derive(Debug, Deserialize, Serialize, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Offsets {
    /// The paper's: per-period voltage means interpolated per sample; current's / sqrt(2).
    #[default]
    PerPeriod,
    /// Each channel's mean.
    Mean,
}

impl crate::op::ParamKind for Offsets {
    const KIND: &'static str = "per_period | mean";
}

/// The mains frequency of the CREAM recordings (Germany).
const MAINS_HZ: f64 = 50.0;

/// Calls `f(j, offset)` for every sample j of `counts`: the per-period means of `counts` (periods
/// of `period` samples, the last zero-padded to full length) at positions
/// floor(1 + k (len - 1) / (periods - 1)), interpolated linearly at positions 1..=len.
fn per_period_offsets(counts: &[i16], period: usize, mut f: impl FnMut(usize, f64)) {
    let len = counts.len();
    let pad = period - len % period;
    let periods = (len + pad) / period;
    let means: Vec<f64> = (0..periods)
        .map(|k| {
            let from = k * period;
            let to = (from + period).min(len);
            let sum: f64 = counts
                .get(from..to)
                .map_or(0.0, |c| c.iter().map(|&v| v as f64).sum());
            sum / period as f64
        })
        .collect();
    if periods == 1 {
        (0..len).for_each(|j| f(j, means[0]));
        return;
    }
    let step = (len - 1) as f64 / (periods - 1) as f64;
    let position = |k: usize| -> f64 {
        if k + 1 == periods {
            len as f64
        } else {
            (k as f64 * step + 1.0).floor()
        }
    };
    let mut k = 0;
    for j in 0..len {
        let x = (j + 1) as f64;
        while k + 2 < periods && position(k + 1) < x {
            k += 1;
        }
        let (x0, x1) = (position(k), position(k + 1));
        let t = if x1 > x0 { (x - x0) / (x1 - x0) } else { 0.0 };
        f(j, means[k] + (means[k + 1] - means[k]) * t);
    }
}

step_spec! { ReadCreamHour, "read_cream_hour", "parse a CREAM HDF5 hour (int16 voltage + current) into calibrated float64 [2, samples]" }

/// One recording: its sampling rate and calibrated channels.
#[derive(Debug)]
pub struct Recording {
    pub sample_rate_hz: f64,
    pub voltage: Vec<f64>,
    pub current: Vec<f64>,
}

/// Parses a CREAM file from memory, removing offsets as `offsets` says; errors say which
/// attribute or dataset is missing or wrong.
pub fn parse_recording(bytes: Vec<u8>, offsets: Offsets) -> Result<Recording, String> {
    let file = hdf5_reader::Hdf5File::from_vec(bytes)
        .map_err(|e| format!("not a readable HDF5 file: {e}"))?;
    let rate = file
        .root_group()
        .and_then(|g| g.attribute("frequency"))
        .and_then(|a| a.read_scalar::<f64>())
        .map_err(|e| format!("root attribute `frequency` (Hz): {e}"))?;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!(
            "root attribute `frequency` is {rate}, not a rate in Hz"
        ));
    }
    let channel = |name: &str| -> Result<(Vec<i16>, f64), String> {
        let ds = file
            .dataset(name)
            .map_err(|e| format!("dataset `{name}`: {e}"))?;
        let factor = ds
            .attribute("calibration_factor")
            .and_then(|a| a.read_scalar::<f64>())
            .map_err(|e| format!("`{name}` attribute `calibration_factor`: {e}"))?;
        let array = ds
            .read_array::<i16>()
            .map_err(|e| format!("dataset `{name}` as int16: {e}"))?;
        // One copy of the contiguous samples: the array's element iterator (any rank, any
        // layout) took 40 % of an hour's parse.
        let counts: Vec<i16> = match array.as_slice() {
            Some(contiguous) => contiguous.to_vec(),
            None => array.iter().copied().collect(),
        };
        if counts.is_empty() {
            return Err(format!("dataset `{name}` is empty"));
        }
        Ok((counts, factor))
    };
    let ((v, v_factor), (i, i_factor)) = (channel("voltage")?, channel("current")?);
    if v.len() != i.len() {
        return Err(format!(
            "voltage has {} samples, current {}",
            v.len(),
            i.len()
        ));
    }
    let (mut voltage, mut current) = (vec![0.0; v.len()], vec![0.0; i.len()]);
    match offsets {
        Offsets::PerPeriod => {
            let period = (rate / MAINS_HZ).round().max(1.0) as usize;
            per_period_offsets(&v, period, |j, offset| {
                voltage[j] = (v[j] as f64 - offset) * v_factor;
                current[j] = (i[j] as f64 - offset * std::f64::consts::FRAC_1_SQRT_2) * i_factor;
            });
        }
        Offsets::Mean => {
            let mean = |c: &[i16]| c.iter().map(|&x| x as f64).sum::<f64>() / c.len() as f64;
            let (vm, im) = (mean(&v), mean(&i));
            for j in 0..v.len() {
                voltage[j] = (v[j] as f64 - vm) * v_factor;
                current[j] = (i[j] as f64 - im) * i_factor;
            }
        }
    }
    Ok(Recording {
        sample_rate_hz: rate,
        voltage,
        current,
    })
}

#[derive(Debug)]
pub struct ReadCreamHour {
    params: Params,
}

impl ReadCreamHour {
    pub fn new(params: Params) -> Result<ReadCreamHour, String> {
        Ok(ReadCreamHour { params })
    }
}

impl Step for ReadCreamHour {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let bytes = sample.take_bytes(&self.params.from)?;
        let Recording {
            sample_rate_hz,
            mut voltage,
            current,
        } = parse_recording(bytes, self.params.offsets).map_err(StepError::new)?;
        let n = voltage.len();
        voltage.extend_from_slice(&current);
        drop(current);
        sample.set_tensor(&self.params.to, vec![2, n], TensorData::F64(voltage))?;
        if sample_rate_hz.fract() == 0.0 && sample_rate_hz <= i32::MAX as f64 {
            sample.set(
                super::SAMPLE_RATE_FIELD,
                Field::Tensor(Tensor::scalar_i32(sample_rate_hz as i32)),
            );
        }
        Ok(sample)
    }
}
