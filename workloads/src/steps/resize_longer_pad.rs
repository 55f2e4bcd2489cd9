//! `resize_longer_pad`: letterboxing. Resizes a uint8 image so its longer side is `size`
//! (antialiased, aspect kept), centres it on a `size` x `size` canvas of `fill`, moves the
//! boxes with it, and records [scale, pad_top, pad_left] so predictions can be mapped back.

use fast_image_resize::{ResizeAlg, ResizeOptions};
use serde::{Deserialize, Serialize};

use super::image_dims;
use super::resize_shorter::{resize_image, Filter};
use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// uint8 image [h, w, c]
    #[serde(default = "super::default_image_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// side of the square output
    pub size: usize,
    /// Value of the padding (114, mid grey, is the YOLO convention).
    #[serde(default = "default_fill")]
    #[param(default = "114")]
    pub fill: u8,
    /// optional boxes field [k, 4] moved with the image
    #[serde(default)]
    #[param(reads, writes)]
    pub boxes: Option<FieldName>,
    /// float32 [3] field: scale, pad_top, pad_left
    #[serde(default = "default_record")]
    #[param(default = "letterbox")]
    #[param(writes)]
    pub record: FieldName,
    /// convolution filter
    #[serde(default = "default_filter")]
    #[param(default = "bilinear")]
    pub filter: Filter,
}

fn default_fill() -> u8 {
    114
}
fn default_record() -> FieldName {
    "letterbox".into()
}
fn default_filter() -> Filter {
    Filter::Bilinear
}

step_spec! { ResizeLongerPad, "resize_longer_pad", "letterbox: longer side to `size`, centred on a size x size canvas, boxes moved along" }

#[derive(Debug)]
pub struct ResizeLongerPad {
    params: Params,
    options: ResizeOptions,
}

impl ResizeLongerPad {
    pub fn new(params: Params) -> Result<ResizeLongerPad, String> {
        if params.size == 0 || params.size > 65_535 {
            return Err(format!("size must be in 1..=65535, got {}", params.size));
        }
        let options =
            ResizeOptions::new().resize_alg(ResizeAlg::Convolution(params.filter.to_fir()));
        Ok(ResizeLongerPad { params, options })
    }
}

/// (scale, resized height and width, pad top and left) of letterboxing h x w into size.
pub fn letterbox(h: usize, w: usize, size: usize) -> (f32, usize, usize, usize, usize) {
    let scale = size as f64 / h.max(w) as f64;
    let nh = ((h as f64 * scale).round() as usize).clamp(1, size);
    let nw = ((w as f64 * scale).round() as usize).clamp(1, size);
    (scale as f32, nh, nw, (size - nh) / 2, (size - nw) / 2)
}

impl Step for ResizeLongerPad {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let (field, size) = (&self.params.field, self.params.size);
        let tensor = sample.tensor(field)?;
        let (h, w, c) = image_dims(tensor, field)?;
        if h == 0 || w == 0 {
            return Err(StepError::new(format!(
                "field `{field}` is an empty image {h}x{w}"
            )));
        }
        let (scale, nh, nw, top, left) = letterbox(h, w, size);
        // The resized image and the canvas it is copied into, beside the sample.
        super::budget::reserve(field, sample.size_bytes(), &[2, size, size, c], 1)?;
        let resized = resize_image(tensor, field, (nh, nw), &self.options)?;
        let TensorData::U8(px) = resized.data() else {
            unreachable!("resize_image returns uint8")
        };
        let mut canvas = vec![self.params.fill; size * size * c];
        for row in 0..nh {
            let dst = ((top + row) * size + left) * c;
            canvas[dst..dst + nw * c].copy_from_slice(&px[row * nw * c..(row + 1) * nw * c]);
        }
        if let Some(boxes) = &self.params.boxes {
            let (sx, sy) = (nw as f32 / w as f32, nh as f32 / h as f32);
            super::boxes::transform(&mut sample, boxes, |b| {
                b.scaled(sx, sy).shifted(left as f32, top as f32)
            })?;
        }
        sample.set_tensor(field, vec![size, size, c], TensorData::U8(canvas))?;
        sample.set_tensor(
            &self.params.record,
            vec![3],
            TensorData::F32(vec![scale, top as f32, left as f32]),
        )?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    #[test]
    fn letterbox_geometry_and_boxes_by_hand() {
        // 480 x 640 into 640: scale 1, pad 80 rows top and bottom.
        assert_eq!(letterbox(480, 640, 640), (1.0, 480, 640, 80, 0));
        // 100 x 50 into 64: scale 0.64 -> 64 x 32, pad 16 columns left.
        assert_eq!(letterbox(100, 50, 64), (0.64, 64, 32, 0, 16));
        let image = Tensor::new(vec![100, 50, 3], TensorData::U8(vec![200; 100 * 50 * 3])).unwrap();
        let boxes = Tensor::new(vec![1, 4], TensorData::F32(vec![10.0, 20.0, 25.0, 50.0])).unwrap();
        let s = Sample::new(0)
            .with("image", Field::Tensor(image))
            .with("boxes", Field::Tensor(boxes));
        let step = ResizeLongerPad::new(Params {
            field: "image".into(),
            size: 64,
            fill: 0,
            boxes: Some("boxes".into()),
            record: "letterbox".into(),
            filter: Filter::Bilinear,
        })
        .unwrap();
        let out = step.apply(s, &StepContext::default()).unwrap();
        let TensorData::U8(px) = out.tensor("image").unwrap().data() else {
            panic!()
        };
        assert_eq!(out.tensor("image").unwrap().shape(), &[64, 64, 3]);
        assert_eq!(
            (px[(10 * 64 + 5) * 3], px[(10 * 64 + 30) * 3]),
            (0, 200),
            "padding, then picture"
        );
        // x: 10 * 0.64 + 16 = 22.4; y: 20 * 0.64 = 12.8; w: 16; h: 32.
        let TensorData::F32(b) = out.tensor("boxes").unwrap().data() else {
            panic!()
        };
        for (got, want) in b.iter().zip([22.4, 12.8, 16.0, 32.0]) {
            assert!((got - want).abs() < 1e-4, "{b:?}");
        }
        assert_eq!(
            out.tensor("letterbox").unwrap().data(),
            &TensorData::F32(vec![0.64, 0.0, 16.0])
        );
    }
}
