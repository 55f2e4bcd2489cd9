//! `rms_periods`: root mean square over consecutive periods of rows of a [rows, cols] array ->
//! float32 [rows / period, cols] (the paper's synthetic processing workload: periods of 500
//! rows of a [2500, k] array). A partial last period is dropped.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// uint8 or float32 [rows, cols], replaced
    #[serde(default = "default_field")]
    #[param(default = "array")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// rows per period
    #[serde(default = "default_period")]
    #[param(default = "500")]
    pub period: usize,
}

fn default_field() -> FieldName {
    "array".into()
}
fn default_period() -> usize {
    500
}

step_spec! { RmsPeriods, "rms_periods", "RMS over periods of rows: [rows, cols] -> float32 [rows / period, cols]" }

#[derive(Debug)]
pub struct RmsPeriods {
    params: Params,
}

impl RmsPeriods {
    pub fn new(params: Params) -> Result<RmsPeriods, String> {
        if params.period == 0 {
            return Err("period must be positive".to_string());
        }
        Ok(RmsPeriods { params })
    }
}

fn rms<T: Copy + Into<f64>>(data: &[T], cols: usize, period: usize, periods: usize) -> Vec<f32> {
    let mut sums = vec![0f64; periods * cols];
    if cols == 0 {
        // [rows, 0] has no columns to average: [periods, 0].
        return Vec::new();
    }
    for (r, row) in data.chunks_exact(cols).take(periods * period).enumerate() {
        let acc = &mut sums[(r / period) * cols..(r / period + 1) * cols];
        for (a, &v) in acc.iter_mut().zip(row) {
            let v: f64 = v.into();
            *a += v * v;
        }
    }
    sums.iter()
        .map(|s| (s / period as f64).sqrt() as f32)
        .collect()
}

impl Step for RmsPeriods {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let tensor = sample.take_tensor(field)?;
        let &[rows, cols] = tensor.shape() else {
            return Err(StepError::new(format!(
                "field `{field}` has shape {:?}, expected [rows, cols]",
                tensor.shape()
            )));
        };
        let period = self.params.period;
        let periods = rows / period;
        let out = match tensor.data() {
            TensorData::F32(d) => rms(d, cols, period, periods),
            TensorData::U8(d) => rms(d, cols, period, periods),
            TensorData::F64(d) => rms(d, cols, period, periods),
            other => {
                return Err(StepError::new(format!(
                    "field `{field}` is {}, expected uint8, float32 or float64",
                    other.dtype()
                )))
            }
        };
        sample.set_tensor(field, vec![periods, cols], TensorData::F32(out))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rms_per_period_and_column() {
        // 4 rows x 2 cols, period 2: column 0 rows (3, 4) and (0, 0); column 1 all 1.
        let data = vec![3.0f32, 1.0, 4.0, 1.0, 0.0, 1.0, 0.0, 1.0];
        let out = rms(&data, 2, 2, 2);
        assert!((out[0] - (12.5f32).sqrt()).abs() < 1e-6);
        assert_eq!(&out[1..], &[1.0, 0.0, 1.0]);
    }
}
