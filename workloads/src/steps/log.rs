//! `log`: natural log of a float32 tensor after adding an offset, ln(x + offset), the last step
//! of the paper's log-mel spectrogram (its offset, 1e-8, keeps silent bins finite).

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// float32 tensor, replaced
    #[serde(default = "super::default_spectrogram_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// added before the log
    #[serde(default = "default_offset")]
    #[param(default = "1e-8")]
    pub offset: f32,
}

fn default_offset() -> f32 {
    1e-8
}

step_spec! { Log, "log", "ln(x + offset) of a float32 tensor" }

#[derive(Debug)]
pub struct Log {
    params: Params,
}

impl Log {
    pub fn new(params: Params) -> Result<Log, String> {
        if !(params.offset.is_finite() && params.offset >= 0.0) {
            return Err(format!(
                "offset must be finite and not negative, got {}",
                crate::number::Num(params.offset.into())
            ));
        }
        Ok(Log { params })
    }
}

impl Step for Log {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let (shape, data) = sample.take_tensor(field)?.into_parts();
        let TensorData::F32(mut values) = data else {
            return Err(StepError::new(format!(
                "field `{field}` is {}, expected float32",
                data.dtype()
            )));
        };
        let offset = self.params.offset;
        values.iter_mut().for_each(|v| *v = (*v + offset).ln());
        sample.set_tensor(field, shape, TensorData::F32(values))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_with_offset() {
        let step = Log::new(Params {
            field: "x".into(),
            offset: 1e-6,
        })
        .unwrap();
        let sample = Sample::new(0).with_tensor("x", vec![2], TensorData::F32(vec![0.0, 1.0]));
        let ctx = StepContext::default();
        let out = step.apply(sample, &ctx).unwrap();
        let TensorData::F32(v) = out.tensor("x").unwrap().data() else {
            panic!()
        };
        assert!((v[0] - 1e-6f32.ln()).abs() < 1e-6 && (v[1] - 1e-6).abs() < 1e-6);
        assert!(Log::new(Params {
            field: "x".into(),
            offset: -1.0
        })
        .is_err());
    }
}
