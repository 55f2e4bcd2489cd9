//! `nilm_features`: the paper's NILM aggregation of a [2, samples] window (voltage, current)
//! into [3, periods] float64: per period of `period` samples (128 = one 50 Hz cycle at 6.4 kHz)
//! the active power mean(v * i), the RMS current sqrt(mean(i^2)), and the cumulative sum of the
//! RMS current minus its mean over the window.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// float64 [2, samples]: voltage, current; removed
    #[serde(default = "super::default_signal_field")]
    #[param(reads)]
    pub from: FieldName,
    /// float64 [3, periods] to write
    #[serde(default = "default_to")]
    #[param(default = "features")]
    #[param(writes)]
    pub to: FieldName,
    /// samples per period (one mains cycle)
    #[serde(default = "default_period")]
    #[param(default = "128")]
    pub period: usize,
    /// periods per window, from its start
    #[serde(default = "default_periods")]
    #[param(default = "500")]
    pub periods: usize,
}

fn default_to() -> FieldName {
    "features".into()
}
fn default_period() -> usize {
    128
}
fn default_periods() -> usize {
    500
}

step_spec! { NilmFeatures, "nilm_features", "per-period active power, RMS current and its centred cumulative sum: [2, n] -> [3, periods] float64" }

#[derive(Debug)]
pub struct NilmFeatures {
    params: Params,
}

impl NilmFeatures {
    pub fn new(params: Params) -> Result<NilmFeatures, String> {
        if params.period == 0 || params.periods == 0 {
            return Err("period and periods must be positive".to_string());
        }
        if params
            .period
            .checked_mul(params.periods)
            .is_none_or(|n| n > 1 << 32)
        {
            return Err(format!(
                "period x periods ({} x {}) must be at most 2^32 samples",
                params.period, params.periods
            ));
        }
        Ok(NilmFeatures { params })
    }
}

/// The features of `voltage` and `current` (each at least period x periods long).
pub fn features(voltage: &[f64], current: &[f64], period: usize, periods: usize) -> Vec<f64> {
    let mut out = vec![0f64; 3 * periods];
    let (power, rest) = out.split_at_mut(periods);
    let (rms, cumulative) = rest.split_at_mut(periods);
    for p in 0..periods {
        let range = p * period..(p + 1) * period;
        let (v, i) = (&voltage[range.clone()], &current[range]);
        power[p] = v.iter().zip(i).map(|(v, i)| v * i).sum::<f64>() / period as f64;
        rms[p] = (i.iter().map(|i| i * i).sum::<f64>() / period as f64).sqrt();
    }
    let mean = rms.iter().sum::<f64>() / periods as f64;
    let mut running = 0.0;
    for (c, r) in cumulative.iter_mut().zip(rms.iter()) {
        running += r - mean;
        *c = running;
    }
    out
}

impl Step for NilmFeatures {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let from = &self.params.from;
        let (shape, data) = sample.take_tensor(from)?.into_parts();
        let (TensorData::F64(signal), &[2, n]) = (&data, shape.as_slice()) else {
            return Err(StepError::new(format!(
                "field `{from}` is {} {shape:?}, expected float64 [2, samples] (voltage, current)",
                data.dtype()
            )));
        };
        let (period, periods) = (self.params.period, self.params.periods);
        if period * periods > n {
            return Err(StepError::new(format!(
                "a window of {n} samples is shorter than {periods} periods of {period}"
            )));
        }
        let out = features(&signal[..n], &signal[n..], period, periods);
        sample.set_tensor(&self.params.to, vec![3, periods], TensorData::F64(out))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resistive_load_has_power_v_rms_times_i_rms() {
        let (period, periods) = (128, 4);
        let t = |k: usize| 2.0 * std::f64::consts::PI * (k % period) as f64 / period as f64;
        let v: Vec<f64> = (0..period * periods).map(|k| 325.0 * t(k).sin()).collect();
        // The current doubles after two periods.
        let i: Vec<f64> = (0..period * periods)
            .map(|k| if k < 2 * period { 1.0 } else { 2.0 } * t(k).sin())
            .collect();
        let f = features(&v, &i, period, periods);
        let rms = 1.0 / 2f64.sqrt();
        assert!((f[0] - 325.0 / 2.0).abs() < 1e-9 && (f[3] - 325.0).abs() < 1e-9);
        assert!((f[4] - rms).abs() < 1e-12 && (f[7] - 2.0 * rms).abs() < 1e-12);
        // Cumulative sum of RMS minus its mean (1.5 rms): -0.5, -1.0, -0.5, 0.0 (x rms).
        for (got, want) in f[8..].iter().zip([-0.5, -1.0, -0.5, 0.0]) {
            assert!((got - want * rms).abs() < 1e-12);
        }
    }
}
