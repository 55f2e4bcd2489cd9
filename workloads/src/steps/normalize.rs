//! `normalize`: uint8 or float32 image to float32, per channel (x * scale - mean[c]) / std[c];
//! the defaults are the ImageNet statistics used by torchvision models, on x / 255.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// uint8 or float32 image [h, w, c]
    #[serde(default = "super::default_image_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// per-channel mean, after scaling
    #[serde(default = "default_mean")]
    #[param(default = "[0.485, 0.456, 0.406]")]
    pub mean: Vec<f32>,
    /// per-channel standard deviation
    #[serde(default = "default_std")]
    #[param(default = "[0.229, 0.224, 0.225]")]
    pub std: Vec<f32>,
    /// multiplies x first
    #[serde(default = "default_scale")]
    #[param(default = "1/255")]
    pub scale: f32,
}

fn default_mean() -> Vec<f32> {
    vec![0.485, 0.456, 0.406]
}
fn default_std() -> Vec<f32> {
    vec![0.229, 0.224, 0.225]
}
fn default_scale() -> f32 {
    1.0 / 255.0
}

step_spec! { Normalize, "normalize", "image to float32, per channel (x * scale - mean[c]) / std[c]" }

#[derive(Debug)]
pub struct Normalize {
    params: Params,
}

impl Normalize {
    pub fn new(params: Params) -> Result<Normalize, String> {
        if params.mean.is_empty() || params.mean.len() != params.std.len() {
            return Err(format!(
                "mean and std need one value per channel ({} and {} given)",
                params.mean.len(),
                params.std.len()
            ));
        }
        if params.std.iter().any(|s| !s.is_finite() || *s == 0.0) || !params.scale.is_finite() {
            return Err("std must be finite and non-zero, scale finite".to_string());
        }
        Ok(Normalize { params })
    }
}

impl Step for Normalize {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let (shape, data) = sample.take_tensor(field)?.into_parts();
        let c = *shape.last().unwrap_or(&0);
        if c != self.params.mean.len() {
            return Err(StepError::new(format!(
                "field `{field}` has {c} channels, mean/std have {}",
                self.params.mean.len()
            )));
        }
        // (x * scale - mean) / std as one multiply-add per element: x * a[c] + b[c].
        let a: Vec<f32> = self
            .params
            .std
            .iter()
            .map(|s| self.params.scale / s)
            .collect();
        let b: Vec<f32> = self
            .params
            .mean
            .iter()
            .zip(&self.params.std)
            .map(|(m, s)| -m / s)
            .collect();
        let held = sample.size_bytes() + data.len() * data.dtype().size_bytes();
        let n = super::budget::reserve(field, held, &shape, 4)?;
        let mut out: Vec<f32> = Vec::with_capacity(n);
        match data {
            TensorData::U8(px) => px.chunks_exact(c).for_each(|p| {
                out.extend(
                    p.iter()
                        .zip(a.iter().zip(&b))
                        .map(|(&x, (a, b))| x as f32 * a + b),
                )
            }),
            TensorData::F32(px) => px.chunks_exact(c).for_each(|p| {
                out.extend(p.iter().zip(a.iter().zip(&b)).map(|(&x, (a, b))| x * a + b))
            }),
            other => {
                return Err(StepError::new(format!(
                    "field `{field}` is {}, normalize takes uint8 or float32",
                    other.dtype()
                )))
            }
        }
        sample.set_tensor(field, shape, TensorData::F32(out))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_channel_by_hand() {
        let p = Params {
            field: "image".into(),
            mean: vec![0.5, 0.0],
            std: vec![0.25, 2.0],
            scale: 0.5,
        };
        let s =
            Sample::new(0).with_tensor("image", vec![1, 2, 2], TensorData::U8(vec![2, 4, 0, 8]));
        let out = Normalize::new(p)
            .unwrap()
            .apply(s, &StepContext::default())
            .unwrap();
        // (2*0.5-0.5)/0.25 = 2, (4*0.5-0)/2 = 1, (0-0.5)/0.25 = -2, (8*0.5)/2 = 2.
        assert_eq!(
            out.tensor("image").unwrap().data(),
            &TensorData::F32(vec![2.0, 1.0, -2.0, 2.0])
        );
        assert!(Normalize::new(Params {
            field: "image".into(),
            mean: vec![0.0],
            std: vec![0.0],
            scale: 1.0
        })
        .is_err());
    }
}
