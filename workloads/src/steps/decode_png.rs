//! `decode_png`: decodes PNG bytes (8- or 16-bit) to an RGB image tensor [height, width, 3]:
//! uint8, or uint16 for 16-bit files unless `to_uint8` (the paper's pipelines down-convert).

use image::{DynamicImage, ImageFormat};
use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the PNG
    #[serde(default = "super::default_data_field")]
    #[param(reads)]
    pub from: FieldName,
    /// image field to write
    #[serde(default = "super::default_image_field")]
    #[param(writes)]
    pub to: FieldName,
    /// Convert 16-bit images to uint8 (v * 255 / 65535, rounded), as the paper's pipelines do.
    #[serde(default = "default_true")]
    #[param(default = "true")]
    pub to_uint8: bool,
    /// refuse larger images before decoding
    #[serde(default = "super::default_max_pixels")]
    #[param(default = "178956970")]
    pub max_pixels: u64,
    /// refuse images that would decode to more than this many bytes per input byte (beyond 16 MiB)
    #[serde(default = "super::default_max_expansion")]
    #[param(default = "1024")]
    pub max_expansion: f64,
}

fn default_true() -> bool {
    true
}

step_spec! { DecodePng, "decode_png", "decode PNG bytes (8- or 16-bit) to an RGB image [height, width, 3], uint8 or uint16" }

#[derive(Debug)]
pub struct DecodePng {
    params: Params,
}

impl DecodePng {
    pub fn new(params: Params) -> Result<DecodePng, String> {
        super::check_max_pixels(params.max_pixels)?;
        super::check_max_expansion(params.max_expansion)?;
        Ok(DecodePng { params })
    }
}

/// Whether the decoded image holds 16-bit samples.
fn is_16_bit(image: &DynamicImage) -> bool {
    matches!(
        image,
        DynamicImage::ImageLuma16(_)
            | DynamicImage::ImageLumaA16(_)
            | DynamicImage::ImageRgb16(_)
            | DynamicImage::ImageRgba16(_)
    )
}

impl Step for DecodePng {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let bytes = sample.take_bytes(&self.params.from)?;
        let image = super::decode_guarded(
            &bytes,
            ImageFormat::Png,
            self.params.max_pixels,
            self.params.max_expansion,
        )?;
        let (w, h) = (image.width() as usize, image.height() as usize);
        let data = if is_16_bit(&image) && !self.params.to_uint8 {
            TensorData::U16(image.into_rgb16().into_raw())
        } else {
            TensorData::U8(image.into_rgb8().into_raw())
        };
        sample.set_tensor(&self.params.to, vec![h, w, 3], data)?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Field;
    use image::codecs::png::PngEncoder;
    use image::{ExtendedColorType, ImageEncoder};

    fn png16(values: &[u16], w: u32, h: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        PngEncoder::new(&mut out)
            .write_image(&bytes, w, h, ExtendedColorType::Rgb16)
            .unwrap();
        out
    }

    const CTX: StepContext = StepContext::FIRST;

    fn step(to_uint8: bool) -> DecodePng {
        DecodePng::new(Params {
            from: crate::steps::default_data_field(),
            to: "image".into(),
            to_uint8,
            max_pixels: crate::steps::MAX_IMAGE_PIXELS,
            max_expansion: crate::steps::DEFAULT_MAX_EXPANSION,
        })
        .unwrap()
    }

    #[test]
    fn sixteen_bit_pngs_keep_or_scale_their_values() {
        let values = [0u16, 257, 65535, 1000, 32768, 12345];
        let s = || Sample::new(0).with("data", Field::Bytes(png16(&values, 2, 1)));
        let wide = step(false).apply(s(), &CTX).unwrap();
        assert_eq!(
            wide.tensor("image").unwrap().data(),
            &TensorData::U16(values.to_vec())
        );
        let narrow = step(true).apply(s(), &CTX).unwrap();
        let expected: Vec<u8> = values
            .iter()
            .map(|&v| (v as f64 * 255.0 / 65535.0).round() as u8)
            .collect();
        assert_eq!(
            narrow.tensor("image").unwrap().data(),
            &TensorData::U8(expected)
        );
        assert_eq!(narrow.tensor("image").unwrap().shape(), &[1, 2, 3]);
    }

    #[test]
    fn truncated_and_garbage_pngs_are_errors() {
        let good = png16(&[1; 300], 10, 10);
        for bad in [
            good[..good.len() / 2].to_vec(),
            b"\\x89PNG garbage".to_vec(),
            Vec::new(),
        ] {
            let s = Sample::new(0).with("data", Field::Bytes(bad));
            assert!(step(true)
                .apply(s, &CTX)
                .unwrap_err()
                .message
                .contains("PNG"));
        }
    }

    #[test]
    fn images_over_the_pixel_limit_are_refused_before_decoding() {
        // A 10x10 image against a limit of 99 pixels: refused from the header alone.
        let s = Sample::new(0).with("data", Field::Bytes(png16(&[1; 300], 10, 10)));
        let tight = DecodePng::new(Params {
            max_pixels: 99,
            ..step(true).params
        })
        .unwrap();
        let err = tight.apply(s, &CTX).unwrap_err().message;
        assert!(
            err.contains("10x10 = 100 pixels exceeds max_pixels 99"),
            "{err}"
        );
    }
}
