//! `read_cream_hour`: parses a CREAM hourly HDF5 file (bytes) into a calibrated [2, samples]
//! float64 `signal` (row 0 voltage in volts, row 1 current in amperes) and an int32
//! `sample_rate`. Each channel is int16 counts with attributes `calibration_factor` and
//! `offset`; the paper's pipeline removes the offset attribute, then the remaining mean (the
//! ADC's DC drift), then scales. The two subtractions together leave counts minus their mean,
//! whatever the offset, so the offset attribute is not needed and may be absent.

use serde::Deserialize;

use crate::registry::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext, StepError};

#[derive(Debug, Deserialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the HDF5 file
    #[serde(default = "super::default_data_field")]
    pub from: FieldName,
    /// float64 [2, samples] to write: volts, amperes
    #[serde(default = "super::default_signal_field")]
    pub to: FieldName,
}

step_spec! { ReadCreamHour, "read_cream_hour", "parse a CREAM HDF5 hour (int16 voltage + current) into calibrated float64 [2, samples]" }

/// One recording: its sampling rate and calibrated channels.
#[derive(Debug)]
pub struct Recording {
    pub sample_rate_hz: f64,
    pub voltage: Vec<f64>,
    pub current: Vec<f64>,
}

/// Parses a CREAM file from memory; errors say which attribute or dataset is missing or wrong.
pub fn parse_recording(bytes: Vec<u8>) -> Result<Recording, String> {
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
    let channel = |name: &str| -> Result<Vec<f64>, String> {
        let ds = file
            .dataset(name)
            .map_err(|e| format!("dataset `{name}`: {e}"))?;
        let factor = ds
            .attribute("calibration_factor")
            .and_then(|a| a.read_scalar::<f64>())
            .map_err(|e| format!("`{name}` attribute `calibration_factor`: {e}"))?;
        let counts: Vec<i16> = ds
            .read_array::<i16>()
            .map_err(|e| format!("dataset `{name}` as int16: {e}"))?
            .into_iter()
            .collect();
        if counts.is_empty() {
            return Err(format!("dataset `{name}` is empty"));
        }
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / counts.len() as f64;
        Ok(counts.iter().map(|&c| (c as f64 - mean) * factor).collect())
    };
    let (voltage, current) = (channel("voltage")?, channel("current")?);
    if voltage.len() != current.len() {
        return Err(format!(
            "voltage has {} samples, current {}",
            voltage.len(),
            current.len()
        ));
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
        } = parse_recording(bytes).map_err(StepError::new)?;
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
