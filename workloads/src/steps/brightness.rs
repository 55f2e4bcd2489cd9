//! `brightness`: scales an image's values by a factor, saturating uint8 at 0 and 255. The example
//! step of `docs/adding-a-step.md`, which shows this file whole; change both together.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

/// The parameters, read strictly from the workload YAML (an unknown key is an error).
#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The image to change, uint8 or float32, any shape.
    #[serde(default = "super::default_image_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// What every value is multiplied by.
    pub factor: f32,
}

step_spec! { Brightness, "brightness", "multiply an image by a factor (uint8 saturates at 0 and 255)" }

#[derive(Debug)]
pub struct Brightness {
    params: Params,
}

impl Brightness {
    /// Checks the parameters once, when the workload is loaded.
    pub fn new(params: Params) -> Result<Brightness, String> {
        if !(params.factor >= 0.0 && params.factor.is_finite()) {
            return Err(format!(
                "factor must be a finite number >= 0, got {}",
                crate::number::Num(params.factor.into())
            ));
        }
        Ok(Brightness { params })
    }
}

impl Step for Brightness {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let factor = self.params.factor;
        let (shape, data) = sample.take_tensor(field)?.into_parts();
        let data = match data {
            TensorData::U8(mut px) => {
                // `as u8` saturates: 300.0 becomes 255.
                px.iter_mut()
                    .for_each(|v| *v = (*v as f32 * factor).round() as u8);
                TensorData::U8(px)
            }
            TensorData::F32(mut px) => {
                px.iter_mut().for_each(|v| *v *= factor);
                TensorData::F32(px)
            }
            other => {
                return Err(StepError::new(format!(
                    "field `{field}` is {}, brightness takes uint8 or float32",
                    other.dtype()
                )))
            }
        };
        sample.set_tensor(field, shape, data)?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> StepContext<'static> {
        StepContext::default()
    }

    fn image(data: TensorData) -> Sample {
        Sample::new(0).with_tensor("image", vec![1, 3, 1], data)
    }

    #[test]
    fn uint8_saturates_and_float_scales() {
        let step = Brightness::new(Params {
            field: "image".into(),
            factor: 1.5,
        })
        .unwrap();
        let out = step
            .apply(image(TensorData::U8(vec![0, 100, 200])), &ctx())
            .unwrap();
        assert_eq!(
            out.tensor("image").unwrap().data(),
            &TensorData::U8(vec![0, 150, 255])
        );
        let out = step
            .apply(image(TensorData::F32(vec![-1.0, 0.5, 2.0])), &ctx())
            .unwrap();
        assert_eq!(
            out.tensor("image").unwrap().data(),
            &TensorData::F32(vec![-1.5, 0.75, 3.0])
        );
    }

    #[test]
    fn bad_factors_and_dtypes_are_errors() {
        let bad = Brightness::new(Params {
            field: "image".into(),
            factor: -1.0,
        });
        assert!(bad.unwrap_err().contains("factor must be"));
        let step = Brightness::new(Params {
            field: "image".into(),
            factor: 2.0,
        })
        .unwrap();
        let err = step
            .apply(image(TensorData::I32(vec![1, 2, 3])), &ctx())
            .unwrap_err();
        assert!(err.message.contains("int32"), "{}", err.message);
    }
}
