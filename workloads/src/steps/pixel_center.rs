//! `pixel_center`: converts a uint8 tensor to float32 as x / scale + offset; the defaults give
//! the paper's x / 127.5 - 1, mapping [0, 255] to [-1, 1].

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// uint8 tensor to convert
    #[serde(default = "super::default_image_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// divisor
    #[serde(default = "default_scale")]
    #[param(default = "127.5")]
    pub scale: f32,
    /// added after dividing
    #[serde(default = "default_offset")]
    #[param(default = "-1.0")]
    pub offset: f32,
}

fn default_scale() -> f32 {
    127.5
}

fn default_offset() -> f32 {
    -1.0
}

step_spec! { PixelCenter, "pixel_center", "uint8 to float32 as x / scale + offset (default: [0, 255] -> [-1, 1])" }

#[derive(Debug)]
pub struct PixelCenter {
    params: Params,
    /// x / scale + offset for every possible uint8 value, computed once.
    table: [f32; 256],
}

impl PixelCenter {
    pub fn new(params: Params) -> Result<PixelCenter, String> {
        if !params.scale.is_finite() || params.scale == 0.0 || !params.offset.is_finite() {
            return Err(format!(
                "scale must be finite and non-zero, offset finite (got {}, {})",
                crate::number::Num(params.scale.into()),
                crate::number::Num(params.offset.into())
            ));
        }
        let table = std::array::from_fn(|v| v as f32 / params.scale + params.offset);
        Ok(PixelCenter { params, table })
    }
}

impl Step for PixelCenter {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let tensor = sample.take_tensor(field)?;
        let (shape, data) = tensor.into_parts();
        let TensorData::U8(pixels) = data else {
            return Err(StepError::new(format!(
                "field `{field}` is {}, expected uint8",
                data.dtype()
            )));
        };
        super::budget::reserve(field, sample.size_bytes() + pixels.len(), &shape, 4)?;
        let centred: Vec<f32> = pixels.iter().map(|&p| self.table[p as usize]).collect();
        sample.set_tensor(field, shape, TensorData::F32(centred))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_0_255_to_minus_one_one_exactly_like_the_formula() {
        let step = PixelCenter::new(Params {
            field: "image".into(),
            scale: 127.5,
            offset: -1.0,
        })
        .unwrap();
        let px: Vec<u8> = (0..=255).collect();
        let s = Sample::new(0).with_tensor("image", vec![16, 16, 1], TensorData::U8(px));
        let out = step
            .apply(
                s,
                &StepContext {
                    seed: 0,
                    epoch: 0,
                    step_index: 3,
                    files: None,
                },
            )
            .unwrap();
        let t = out.tensor("image").unwrap();
        assert_eq!(t.shape(), &[16, 16, 1]);
        let TensorData::F32(v) = t.data() else {
            panic!()
        };
        assert_eq!(v[0], -1.0);
        assert_eq!(v[255], 1.0);
        for (i, x) in v.iter().enumerate() {
            assert_eq!(*x, i as f32 / 127.5 - 1.0);
        }
    }

    #[test]
    fn zero_scale_is_refused() {
        assert!(PixelCenter::new(Params {
            field: "image".into(),
            scale: 0.0,
            offset: 0.0
        })
        .is_err());
    }
}
