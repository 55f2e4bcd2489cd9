//! `random_hflip`: mirrors an image [h, w, c] (any dtype) left to right with probability `p`,
//! drawn from the run seed, sample id and epoch, and mirrors its boxes with it. Always online.

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
    /// optional boxes field [k, 4] mirrored with the image
    #[serde(default)]
    #[param(reads, writes)]
    pub boxes: Option<FieldName>,
    /// probability of mirroring
    #[serde(default = "default_p")]
    #[param(default = "0.5")]
    pub p: f64,
}

fn default_p() -> f64 {
    0.5
}

step_spec! { RandomHflip, "random_hflip", "mirror an image [h, w, c] left to right with probability p, boxes along (seeded by sample id and epoch)", StepFacts { random: true, ..StepFacts::PURE } }

#[derive(Debug)]
pub struct RandomHflip {
    params: Params,
}

impl RandomHflip {
    pub fn new(params: Params) -> Result<RandomHflip, String> {
        if !(0.0..=1.0).contains(&params.p) {
            return Err(format!(
                "p must be in [0, 1], got {}",
                crate::number::Num(params.p)
            ));
        }
        Ok(RandomHflip { params })
    }
}

fn mirror<T: Copy>(v: &[T], w: usize, c: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for row in v.chunks_exact(w * c) {
        for px in row.chunks_exact(c).rev() {
            out.extend_from_slice(px);
        }
    }
    out
}

impl Step for RandomHflip {
    fn apply(&self, mut sample: Sample, ctx: &StepContext) -> Result<Sample, StepError> {
        if ctx.rng(sample.id).unit_f64() >= self.params.p {
            return Ok(sample);
        }
        let field = &self.params.field;
        let tensor = sample.tensor(field)?;
        let (h, w, c) = image_dims(tensor, field)?;
        if w == 0 || c == 0 {
            return Ok(sample);
        }
        let data = match tensor.data() {
            TensorData::U8(v) => TensorData::U8(mirror(v, w, c)),
            TensorData::U16(v) => TensorData::U16(mirror(v, w, c)),
            TensorData::I16(v) => TensorData::I16(mirror(v, w, c)),
            TensorData::I32(v) => TensorData::I32(mirror(v, w, c)),
            TensorData::F32(v) => TensorData::F32(mirror(v, w, c)),
            TensorData::F64(v) => TensorData::F64(mirror(v, w, c)),
        };
        if let Some(boxes) = &self.params.boxes {
            super::boxes::transform(&mut sample, boxes, |b| b.mirrored(w as f32))?;
        }
        sample.set_tensor(field, vec![h, w, c], data)?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    #[test]
    fn mirrors_pixels_and_boxes_about_half_the_time() {
        let image = Tensor::new(vec![1, 3, 2], TensorData::I32(vec![1, 2, 3, 4, 5, 6])).unwrap();
        let boxes = Tensor::new(vec![1, 4], TensorData::F32(vec![0.0, 0.0, 1.0, 1.0])).unwrap();
        let step = RandomHflip::new(Params {
            field: "image".into(),
            boxes: Some("boxes".into()),
            p: 0.5,
        })
        .unwrap();
        let mut flipped = 0;
        for id in 0..200 {
            let s = Sample::new(id)
                .with("image", Field::Tensor(image.clone()))
                .with("boxes", Field::Tensor(boxes.clone()));
            let out = step
                .apply(
                    s,
                    &StepContext {
                        seed: 4,
                        epoch: 1,
                        step_index: 3,
                        files: None,
                    },
                )
                .unwrap();
            if out.tensor("image").unwrap().data() == &TensorData::I32(vec![5, 6, 3, 4, 1, 2]) {
                flipped += 1;
                assert_eq!(
                    out.tensor("boxes").unwrap().data(),
                    &TensorData::F32(vec![2.0, 0.0, 1.0, 1.0])
                );
            } else {
                assert_eq!(out.tensor("image").unwrap().data(), image.data());
            }
        }
        assert!((70..130).contains(&flipped), "{flipped} of 200");
    }
}
