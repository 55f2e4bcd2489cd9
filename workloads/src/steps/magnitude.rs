//! `magnitude`: |z|^power of a complex tensor [..., 2] (real, imaginary) -> [...] float32;
//! power 1 is the magnitude spectrogram (tf.abs), power 2 the power spectrogram.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// complex tensor [..., 2] (real, imaginary), replaced
    #[serde(default = "super::default_spectrogram_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// exponent of the magnitude
    #[serde(default = "default_power")]
    #[param(default = "1.0")]
    pub power: f32,
}

fn default_power() -> f32 {
    1.0
}

step_spec! { Magnitude, "magnitude", "|z|^power of a complex [..., 2] float32 tensor (1: magnitude, 2: power)" }

#[derive(Debug)]
pub struct Magnitude {
    params: Params,
}

impl Magnitude {
    pub fn new(params: Params) -> Result<Magnitude, String> {
        if !(params.power.is_finite() && params.power > 0.0) {
            return Err(format!(
                "power must be positive, got {}",
                crate::number::Num(params.power.into())
            ));
        }
        Ok(Magnitude { params })
    }
}

impl Step for Magnitude {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let (mut shape, data) = sample.take_tensor(field)?.into_parts();
        let TensorData::F32(values) = data else {
            return Err(StepError::new(format!(
                "field `{field}` is {}, expected float32 (real, imaginary) pairs",
                data.dtype()
            )));
        };
        if shape.last() != Some(&2) {
            return Err(StepError::new(format!(
                "field `{field}` has shape {shape:?}, expected a last dimension of 2 (real, imaginary)"
            )));
        }
        shape.pop();
        let power = self.params.power;
        let pairs = values.chunks_exact(2);
        let out: Vec<f32> = if power == 1.0 {
            pairs.map(|c| (c[0] * c[0] + c[1] * c[1]).sqrt()).collect()
        } else if power == 2.0 {
            pairs.map(|c| c[0] * c[0] + c[1] * c[1]).collect()
        } else {
            pairs
                .map(|c| (c[0] * c[0] + c[1] * c[1]).sqrt().powf(power))
                .collect()
        };
        sample.set_tensor(field, shape, TensorData::F32(out))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    #[test]
    fn magnitude_and_power() {
        let ctx = StepContext::default();
        let input = || {
            Sample::new(0).with(
                "spectrogram",
                Field::Tensor(
                    Tensor::new(vec![1, 2, 2], TensorData::F32(vec![3.0, 4.0, 0.0, -2.0])).unwrap(),
                ),
            )
        };
        let m = Magnitude::new(Params {
            field: "spectrogram".into(),
            power: 1.0,
        })
        .unwrap();
        let out = m.apply(input(), &ctx).unwrap();
        let t = out.tensor("spectrogram").unwrap();
        assert_eq!(t.shape(), &[1, 2]);
        assert_eq!(t.data(), &TensorData::F32(vec![5.0, 2.0]));
        let p = Magnitude::new(Params {
            field: "spectrogram".into(),
            power: 2.0,
        })
        .unwrap();
        let out = p.apply(input(), &ctx).unwrap();
        assert_eq!(
            out.tensor("spectrogram").unwrap().data(),
            &TensorData::F32(vec![25.0, 4.0])
        );
        assert!(Magnitude::new(Params {
            field: "x".into(),
            power: 0.0
        })
        .is_err());
    }
}
