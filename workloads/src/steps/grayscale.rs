//! `grayscale`: RGB to one luma channel with ITU-R 601-2 weights (0.299 R + 0.587 G + 0.114 B),
//! for uint8 with Pillow's `convert("L")` fixed-point rounding, for float32 in floating point.

use serde::{Deserialize, Serialize};

use super::image_dims;
use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// uint8 or float32 image [h, w, 3]
    #[serde(default = "super::default_image_field")]
    #[param(reads, writes)]
    pub field: FieldName,
}

step_spec! { Grayscale, "grayscale", "RGB [h, w, 3] to luma [h, w, 1] with ITU-R 601-2 weights (uint8 as Pillow's convert('L'), or float32)" }

#[derive(Debug)]
pub struct Grayscale {
    params: Params,
}

impl Grayscale {
    pub fn new(params: Params) -> Result<Grayscale, String> {
        Ok(Grayscale { params })
    }
}

/// ITU-R 601-2 luma of 8-bit RGB: the weights in 16-bit fixed point (0.299, 0.587 and 0.114
/// times 65536), rounded half up, as Pillow computes `convert("L")`.
pub fn luma_u8(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * 19_595 + g as u32 * 38_470 + b as u32 * 7_471 + 0x8000) >> 16) as u8
}

impl Step for Grayscale {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let tensor = sample.tensor(field)?;
        let (h, w, c) = image_dims(tensor, field)?;
        if c != 3 {
            return Err(StepError::new(format!(
                "field `{field}` has {c} channels, grayscale needs 3 (RGB)"
            )));
        }
        let data = match tensor.data() {
            TensorData::U8(px) => TensorData::U8(
                px.chunks_exact(3)
                    .map(|p| luma_u8(p[0], p[1], p[2]))
                    .collect(),
            ),
            TensorData::F32(px) => TensorData::F32(
                px.chunks_exact(3)
                    .map(|p| 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2])
                    .collect(),
            ),
            other => {
                return Err(StepError::new(format!(
                    "field `{field}` is {}, grayscale takes uint8 or float32",
                    other.dtype()
                )))
            }
        };
        sample.set_tensor(field, vec![h, w, 1], data)?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    #[test]
    fn luma_by_hand() {
        assert_eq!(luma_u8(255, 255, 255), 255);
        assert_eq!(luma_u8(0, 0, 0), 0);
        // 0.299 * 255 = 76.2 -> 76; 0.587 * 255 = 149.7 -> 150; 0.114 * 255 = 29.1 -> 29.
        assert_eq!(
            (luma_u8(255, 0, 0), luma_u8(0, 255, 0), luma_u8(0, 0, 255)),
            (76, 150, 29)
        );
        let s = Sample::new(0).with(
            "image",
            Field::Tensor(
                Tensor::new(
                    vec![1, 2, 3],
                    TensorData::F32(vec![1.0, 1.0, 1.0, -1.0, 0.0, 1.0]),
                )
                .unwrap(),
            ),
        );
        let out = Grayscale::new(Params {
            field: "image".into(),
        })
        .unwrap()
        .apply(s, &StepContext::default())
        .unwrap();
        let TensorData::F32(v) = out.tensor("image").unwrap().data() else {
            panic!()
        };
        assert!((v[0] - 1.0).abs() < 1e-6 && (v[1] - (-0.299 + 0.114)).abs() < 1e-6);
    }
}
