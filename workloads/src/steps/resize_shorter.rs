//! `resize_shorter`: resizes a uint8 image so its shorter side has a given length, aspect kept,
//! with an antialiased convolution filter (bilinear by default, as Pillow's `resize(BILINEAR)`
//! computes it: the filter support grows with the reduction factor).

use std::cell::RefCell;

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use serde::Deserialize;

use super::{image_dims, MAX_IMAGE_PIXELS};
use crate::registry::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext, StepError};

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Filter {
    Box,
    Bilinear,
    Hamming,
    Bicubic,
    Lanczos3,
}

impl crate::registry::ParamKind for Filter {
    const KIND: &'static str = "box | bilinear | hamming | bicubic | lanczos3";
}

impl Filter {
    pub(crate) fn to_fir(self) -> FilterType {
        match self {
            Filter::Box => FilterType::Box,
            Filter::Bilinear => FilterType::Bilinear,
            Filter::Hamming => FilterType::Hamming,
            Filter::Bicubic => FilterType::CatmullRom,
            Filter::Lanczos3 => FilterType::Lanczos3,
        }
    }
}

#[derive(Debug, Deserialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// uint8 image [h, w, c], c in 1..=4
    #[serde(default = "super::default_image_field")]
    pub field: FieldName,
    /// length of the shorter side after resizing
    pub size: usize,
    /// convolution filter
    #[serde(default = "default_filter")]
    #[param(default = "bilinear")]
    pub filter: Filter,
    /// A boxes field [k, 4] (COCO x, y, w, h) to scale with the image.
    #[serde(default)]
    pub boxes: Option<FieldName>,
}

fn default_filter() -> Filter {
    Filter::Bilinear
}

step_spec! { ResizeShorter, "resize_shorter", "resize a uint8 image so its shorter side is `size`, aspect kept, antialiased" }

#[derive(Debug)]
pub struct ResizeShorter {
    params: Params,
    options: ResizeOptions,
}

impl ResizeShorter {
    pub fn new(params: Params) -> Result<ResizeShorter, String> {
        if params.size == 0 || params.size > u32::MAX as usize {
            return Err(format!(
                "size must be in 1..={}, got {}",
                u32::MAX,
                params.size
            ));
        }
        let options =
            ResizeOptions::new().resize_alg(ResizeAlg::Convolution(params.filter.to_fir()));
        Ok(ResizeShorter { params, options })
    }
}

/// Output (height, width): the shorter side becomes `size`, the longer one is scaled by the
/// same factor and truncated (torchvision's `Resize(int)` convention).
pub fn target_dims(height: usize, width: usize, size: usize) -> (usize, usize) {
    if height <= width {
        (size, (width * size / height).max(1))
    } else {
        ((height * size / width).max(1), size)
    }
}

thread_local! {
    /// One resizer per worker thread: it keeps its scratch buffers between samples.
    static RESIZER: RefCell<Resizer> = RefCell::new(Resizer::new());
}

/// Resizes a uint8 image tensor [h, w, c] to [nh, nw, c] with `options`; the checks and errors
/// every resizing step shares.
pub(crate) fn resize_image(
    tensor: &Tensor,
    field: &str,
    (nh, nw): (usize, usize),
    options: &ResizeOptions,
) -> Result<Tensor, StepError> {
    let (h, w, c) = image_dims(tensor, field)?;
    let TensorData::U8(pixels) = tensor.data() else {
        return Err(StepError::new(format!(
            "field `{field}` is {}, expected uint8",
            tensor.dtype()
        )));
    };
    let pixel_type = match c {
        1 => PixelType::U8,
        2 => PixelType::U8x2,
        3 => PixelType::U8x3,
        4 => PixelType::U8x4,
        _ => {
            return Err(StepError::new(format!(
                "field `{field}` has {c} channels, expected 1 to 4"
            )))
        }
    };
    if h == 0 || w == 0 || nh == 0 || nw == 0 {
        return Err(StepError::new(format!(
            "field `{field}`: cannot resize {h}x{w} to {nh}x{nw}"
        )));
    }
    if (nh as u64).saturating_mul(nw as u64) > MAX_IMAGE_PIXELS {
        return Err(StepError::new(format!(
            "resizing {h}x{w} to {nh}x{nw} goes above {MAX_IMAGE_PIXELS} pixels"
        )));
    }
    let src = ImageRef::new(w as u32, h as u32, pixels, pixel_type)
        .map_err(|e| StepError::new(format!("resize source: {e}")))?;
    let mut dst = Image::new(nw as u32, nh as u32, pixel_type);
    RESIZER
        .with(|r| r.borrow_mut().resize(&src, &mut dst, options))
        .map_err(|e| StepError::new(format!("resize failed: {e}")))?;
    Tensor::new(vec![nh, nw, c], TensorData::U8(dst.into_vec()))
}

impl Step for ResizeShorter {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let tensor = sample.tensor(field)?;
        let (h, w, _) = image_dims(tensor, field)?;
        if h == 0 || w == 0 {
            return Err(StepError::new(format!(
                "field `{field}` is an empty image {h}x{w}"
            )));
        }
        let (nh, nw) = target_dims(h, w, self.params.size);
        let out = resize_image(tensor, field, (nh, nw), &self.options)?;
        if let Some(boxes) = &self.params.boxes {
            super::boxes::transform(&mut sample, boxes, |b| {
                b.scaled(nw as f32 / w as f32, nh as f32 / h as f32)
            })?;
        }
        sample.set(field, Field::Tensor(out));
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: StepContext = StepContext::FIRST;

    fn image(h: usize, w: usize, f: impl Fn(usize, usize) -> u8) -> Sample {
        let mut px = Vec::with_capacity(h * w * 3);
        for y in 0..h {
            for x in 0..w {
                px.extend_from_slice(&[f(y, x); 3]);
            }
        }
        Sample::new(0).with_tensor("image", vec![h, w, 3], TensorData::U8(px))
    }

    fn resize(size: usize) -> ResizeShorter {
        ResizeShorter::new(Params {
            field: "image".into(),
            size,
            filter: Filter::Bilinear,
            boxes: None,
        })
        .unwrap()
    }

    #[test]
    fn shorter_side_becomes_size_and_aspect_is_kept() {
        assert_eq!(target_dims(375, 500, 256), (256, 341));
        assert_eq!(target_dims(500, 375, 256), (341, 256));
        assert_eq!(target_dims(100, 100, 256), (256, 256));
        let out = resize(16).apply(image(30, 60, |_, _| 7), &CTX).unwrap();
        assert_eq!(out.tensor("image").unwrap().shape(), &[16, 32, 3]);
    }

    #[test]
    fn flat_images_stay_flat_and_edges_are_antialiased() {
        let out = resize(8).apply(image(32, 32, |_, _| 200), &CTX).unwrap();
        let TensorData::U8(px) = out.tensor("image").unwrap().data() else {
            panic!()
        };
        assert!(px.iter().all(|&p| p == 200));
        // A one-pixel checkerboard reduced 4x averages to mid-grey with an antialiased filter
        // (a point-sampling resize would return 0 or 255).
        let out = resize(8)
            .apply(
                image(32, 32, |y, x| if (x + y) % 2 == 0 { 255 } else { 0 }),
                &CTX,
            )
            .unwrap();
        let TensorData::U8(px) = out.tensor("image").unwrap().data() else {
            panic!()
        };
        let centre = px[(4 * 8 + 4) * 3];
        assert!((120..=135).contains(&centre), "centre pixel {centre}");
    }

    #[test]
    fn outputs_beyond_the_pixel_limit_are_refused_before_allocating() {
        let err = resize(1 << 30)
            .apply(image(2, 3, |_, _| 0), &CTX)
            .unwrap_err();
        assert!(err.message.contains("above"), "{err}");
    }

    #[test]
    fn wrong_dtype_or_rank_is_an_error() {
        let s = Sample::new(0).with_tensor("image", vec![4], TensorData::U8(vec![0; 4]));
        assert!(resize(2)
            .apply(s, &CTX)
            .unwrap_err()
            .message
            .contains("expected an image"));
        let s = Sample::new(0).with_tensor("image", vec![2, 2, 1], TensorData::F32(vec![0.0; 4]));
        assert!(resize(2)
            .apply(s, &CTX)
            .unwrap_err()
            .message
            .contains("expected uint8"));
    }
}
