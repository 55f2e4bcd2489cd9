//! `random_crop`: cuts a [height, width, channels] window at a random offset (any dtype), drawn
//! from the run seed, the sample id and the epoch. Always online.

use serde::{Deserialize, Serialize};

use super::image_dims;
use crate::error::StepError;
use crate::op::{ParamDocs, StepFacts};
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// image tensor [h, w, c], any dtype
    #[serde(default = "super::default_image_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// crop height
    pub height: usize,
    /// crop width
    pub width: usize,
    /// A boxes field [k, 4] moved with the crop and clipped to it (boxes left outside keep
    /// zero width or height, so they stay aligned with their categories).
    #[serde(default)]
    #[param(reads, writes)]
    pub boxes: Option<FieldName>,
}

step_spec! { RandomCrop, "random_crop", "crop a random height x width window of an image [h, w, c] (seeded by sample id and epoch)", StepFacts { random: true, ..StepFacts::PURE } }

#[derive(Debug)]
pub struct RandomCrop {
    params: Params,
}

impl RandomCrop {
    pub fn new(params: Params) -> Result<RandomCrop, String> {
        if params.height == 0 || params.width == 0 {
            return Err("height and width must be positive".to_string());
        }
        Ok(RandomCrop { params })
    }
}

fn crop_rows<T: Copy>(
    src: &[T],
    w: usize,
    c: usize,
    top: usize,
    left: usize,
    ch: usize,
    cw: usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(ch * cw * c);
    for row in top..top + ch {
        let start = (row * w + left) * c;
        out.extend_from_slice(&src[start..start + cw * c]);
    }
    out
}

impl Step for RandomCrop {
    fn apply(&self, mut sample: Sample, ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let (ch, cw) = (self.params.height, self.params.width);
        let tensor = sample.tensor(field)?;
        let (h, w, c) = image_dims(tensor, field)?;
        if h < ch || w < cw {
            return Err(StepError::new(format!(
                "cannot crop {ch}x{cw} from a {h}x{w} image in `{field}`"
            )));
        }
        let mut rng = ctx.rng(sample.id);
        let top = rng.index((h - ch + 1) as u64) as usize;
        let left = rng.index((w - cw + 1) as u64) as usize;
        let data = match tensor.data() {
            TensorData::U8(v) => TensorData::U8(crop_rows(v, w, c, top, left, ch, cw)),
            TensorData::U16(v) => TensorData::U16(crop_rows(v, w, c, top, left, ch, cw)),
            TensorData::I16(v) => TensorData::I16(crop_rows(v, w, c, top, left, ch, cw)),
            TensorData::I32(v) => TensorData::I32(crop_rows(v, w, c, top, left, ch, cw)),
            TensorData::F32(v) => TensorData::F32(crop_rows(v, w, c, top, left, ch, cw)),
            TensorData::F64(v) => TensorData::F64(crop_rows(v, w, c, top, left, ch, cw)),
        };
        if let Some(boxes) = &self.params.boxes {
            super::boxes::transform(&mut sample, boxes, |b| {
                b.shifted(-(left as f32), -(top as f32))
                    .clipped(cw as f32, ch as f32)
            })?;
        }
        sample.set_tensor(field, vec![ch, cw, c], data)?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    fn ramp(id: u64, h: usize, w: usize) -> Sample {
        // Each pixel encodes its own (row, column) so the crop offset can be read back.
        let px: Vec<i32> = (0..h * w)
            .flat_map(|i| [(i / w) as i32, (i % w) as i32])
            .collect();
        Sample::new(id).with_tensor("image", vec![h, w, 2], TensorData::I32(px))
    }

    fn crop() -> RandomCrop {
        RandomCrop::new(Params {
            field: "image".into(),
            height: 4,
            width: 5,
            boxes: None,
        })
        .unwrap()
    }

    fn offset(out: &Sample) -> (i32, i32) {
        let TensorData::I32(v) = out.tensor("image").unwrap().data() else {
            panic!()
        };
        (v[0], v[1])
    }

    #[test]
    fn crops_a_contiguous_window_of_the_right_shape() {
        let ctx = StepContext {
            seed: 1,
            epoch: 0,
            step_index: 4,
            files: None,
        };
        let out = crop().apply(ramp(0, 10, 12), &ctx).unwrap();
        let t = out.tensor("image").unwrap();
        assert_eq!(t.shape(), &[4, 5, 2]);
        let TensorData::I32(v) = t.data() else {
            panic!()
        };
        let (top, left) = (v[0], v[1]);
        for r in 0..4 {
            for col in 0..5 {
                let i = (r * 5 + col) * 2;
                assert_eq!((v[i], v[i + 1]), (top + r as i32, left + col as i32));
            }
        }
    }

    #[test]
    fn offsets_depend_on_id_and_epoch_and_are_reproducible() {
        let at = |id, epoch| {
            offset(
                &crop()
                    .apply(
                        ramp(id, 40, 40),
                        &StepContext {
                            seed: 9,
                            epoch,
                            step_index: 4,
                            files: None,
                        },
                    )
                    .unwrap(),
            )
        };
        assert_eq!(at(3, 0), at(3, 0));
        let distinct: std::collections::HashSet<_> = (0..20).map(|e| at(3, e)).collect();
        assert!(
            distinct.len() > 10,
            "epochs should move the crop: {distinct:?}"
        );
        let distinct: std::collections::HashSet<_> = (0..20).map(|id| at(id, 0)).collect();
        assert!(
            distinct.len() > 10,
            "ids should move the crop: {distinct:?}"
        );
    }

    #[test]
    fn boxes_follow_the_crop_window() {
        let ctx = StepContext {
            seed: 1,
            epoch: 0,
            step_index: 4,
            files: None,
        };
        let boxes = Tensor::new(vec![1, 4], TensorData::F32(vec![3.0, 2.0, 4.0, 3.0])).unwrap();
        let step = RandomCrop::new(Params {
            field: "image".into(),
            height: 4,
            width: 5,
            boxes: Some("boxes".into()),
        })
        .unwrap();
        let out = step
            .apply(ramp(0, 10, 12).with("boxes", Field::Tensor(boxes)), &ctx)
            .unwrap();
        let (top, left) = offset(&out);
        let TensorData::F32(b) = out.tensor("boxes").unwrap().data() else {
            panic!()
        };
        // The box [3, 7) x [2, 5) shifted by the offset and clipped to the 5 x 4 window.
        let (x0, x1) = (
            (3.0 - left as f32).clamp(0.0, 5.0),
            (7.0 - left as f32).clamp(0.0, 5.0),
        );
        let (y0, y1) = (
            (2.0 - top as f32).clamp(0.0, 4.0),
            (5.0 - top as f32).clamp(0.0, 4.0),
        );
        assert_eq!(b, &vec![x0, y0, x1 - x0, y1 - y0]);
    }

    #[test]
    fn too_small_an_image_is_an_error() {
        let ctx = StepContext {
            seed: 1,
            epoch: 0,
            step_index: 4,
            files: None,
        };
        let err = crop().apply(ramp(0, 3, 12), &ctx).unwrap_err();
        assert!(err.message.contains("cannot crop"), "{err}");
    }
}
