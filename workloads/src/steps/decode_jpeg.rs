//! `decode_jpeg`: decodes JPEG bytes to an RGB uint8 image tensor [height, width, 3], refusing
//! images above a pixel limit before allocating them (decompression bombs).

use image::ImageFormat;
use serde::Deserialize;

use crate::registry::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext, StepError};

#[derive(Debug, Deserialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the JPEG
    #[serde(default = "super::default_data_field")]
    pub from: FieldName,
    /// image field to write
    #[serde(default = "super::default_image_field")]
    pub to: FieldName,
    /// refuse larger images before decoding
    #[serde(default = "super::default_max_pixels")]
    #[param(default = "178956970")]
    pub max_pixels: u64,
    /// refuse images that would decode to more than this many bytes per input byte (beyond 16 MiB)
    #[serde(default = "super::default_max_expansion")]
    #[param(default = "1024")]
    pub max_expansion: f64,
}

step_spec! { DecodeJpeg, "decode_jpeg", "decode JPEG bytes to an RGB uint8 image [height, width, 3]" }

#[derive(Debug)]
pub struct DecodeJpeg {
    params: Params,
}

impl DecodeJpeg {
    pub fn new(params: Params) -> Result<DecodeJpeg, String> {
        super::check_max_pixels(params.max_pixels)?;
        super::check_max_expansion(params.max_expansion)?;
        Ok(DecodeJpeg { params })
    }
}

impl Step for DecodeJpeg {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let bytes = sample.take_bytes(&self.params.from)?;
        let image = decode_rgb8(&bytes, self.params.max_pixels, self.params.max_expansion)?;
        sample.set(&self.params.to, Field::Tensor(image));
        Ok(sample)
    }
}

/// Decodes JPEG bytes into an RGB uint8 tensor, checking the header's size against `max_pixels`
/// and `max_expansion`.
pub fn decode_rgb8(bytes: &[u8], max_pixels: u64, max_expansion: f64) -> Result<Tensor, StepError> {
    check_complete(bytes).map_err(|what| StepError::new(format!("invalid JPEG: {what}")))?;
    let rgb =
        super::decode_guarded(bytes, ImageFormat::Jpeg, max_pixels, max_expansion)?.into_rgb8();
    let (w, h) = rgb.dimensions();
    Tensor::new(
        vec![h as usize, w as usize, 3],
        TensorData::U8(rgb.into_raw()),
    )
}

/// Walks the marker segments of a JPEG and requires an end-of-image marker after the last
/// scan. The decoder alone fills a file truncated mid-scan with grey; Pillow (and so the users'
/// loaders) refuses such files by default, and so does prepbench.
pub fn check_complete(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 4 || bytes[0] != 0xFF || bytes[1] != 0xD8 {
        return Err("no start-of-image marker (not a JPEG)".into());
    }
    let mut pos = 2;
    loop {
        // Find the next marker: 0xFF followed by a byte other than 0x00 (stuffing), 0xFF (fill)
        // and RST0-7 (restart markers inside entropy-coded data).
        let is_marker =
            |at: usize| bytes[at] == 0xFF && !matches!(bytes[at + 1], 0x00 | 0xFF | 0xD0..=0xD7);
        while pos + 1 < bytes.len() && !is_marker(pos) {
            pos += 1;
        }
        if pos + 1 >= bytes.len() {
            return Err(format!(
                "truncated: no end-of-image marker in {} bytes",
                bytes.len()
            ));
        }
        let marker = bytes[pos + 1];
        pos += 2;
        match marker {
            0xD9 => return Ok(()),
            0x01 => continue, // TEM has no length
            _ => {
                if pos + 2 > bytes.len() {
                    return Err(format!("truncated inside marker 0xFF{marker:02X}"));
                }
                let len = u16::from_be_bytes([bytes[pos], bytes[pos + 1]]) as usize;
                if len < 2 || pos + len > bytes.len() {
                    return Err(format!(
                        "truncated: segment 0xFF{marker:02X} at byte {} runs past the end",
                        pos - 2
                    ));
                }
                pos += len; // past the segment; after SOS the scan data follows
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg(width: u32, height: u32) -> Vec<u8> {
        let img =
            image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 128]));
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95)
            .encode_image(&img)
            .unwrap();
        out
    }

    fn step(max_pixels: u64) -> DecodeJpeg {
        DecodeJpeg::new(Params {
            from: crate::steps::default_data_field(),
            to: "image".into(),
            max_pixels,
            max_expansion: crate::steps::DEFAULT_MAX_EXPANSION,
        })
        .unwrap()
    }

    const CTX: StepContext = StepContext::FIRST;

    #[test]
    fn decodes_to_height_width_3_close_to_the_source() {
        let s = Sample::new(0).with("data", Field::Bytes(jpeg(40, 30)));
        let out = step(crate::steps::MAX_IMAGE_PIXELS).apply(s, &CTX).unwrap();
        let t = out.tensor("image").unwrap();
        assert_eq!(t.shape(), &[30, 40, 3]);
        let TensorData::U8(px) = t.data() else {
            panic!("not u8")
        };
        // pixel (x=20, y=10): R ~ 20, G ~ 10, B ~ 128 after lossy coding
        let i = (10 * 40 + 20) * 3;
        assert!(
            (px[i] as i32 - 20).abs() <= 6 && (px[i + 1] as i32 - 10).abs() <= 6,
            "{:?}",
            &px[i..i + 3]
        );
        assert!(out.get("data").is_none());
    }

    #[test]
    fn garbage_truncated_and_oversized_inputs_are_errors() {
        for bad in [
            Vec::new(),
            b"not a jpeg".to_vec(),
            jpeg(64, 64)[..200].to_vec(),
        ] {
            let s = Sample::new(1).with("data", Field::Bytes(bad));
            let err = step(crate::steps::MAX_IMAGE_PIXELS)
                .apply(s, &CTX)
                .unwrap_err();
            assert!(err.message.contains("JPEG"), "{err}");
        }
        let s = Sample::new(2).with("data", Field::Bytes(jpeg(64, 64)));
        let err = step(1000).apply(s, &CTX).unwrap_err();
        assert!(err.message.contains("exceeds max_pixels"), "{err}");
    }

    /// `jpeg` with its frame header claiming `width` x `height`.
    fn claiming(mut bytes: Vec<u8>, width: u16, height: u16) -> Vec<u8> {
        let sof = bytes
            .windows(2)
            .position(|w| w == [0xff, 0xc0])
            .expect("a baseline frame header");
        bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
        bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
        bytes
    }

    #[test]
    fn a_header_claiming_more_than_the_bytes_can_hold_is_refused_before_decoding() {
        // 13000 x 13000 is under max_pixels, but no few-KB JPEG honestly holds 507 MB.
        let bomb = claiming(jpeg(64, 64), 13000, 13000);
        assert!(bomb.len() < 20_000);
        let s = Sample::new(3).with("data", Field::Bytes(bomb.clone()));
        let err = step(crate::steps::MAX_IMAGE_PIXELS)
            .apply(s, &CTX)
            .unwrap_err();
        assert!(err.message.contains("max_expansion 1024"), "{err}");
        assert!(err.message.contains("JPEG of 13000x13000"), "{err}");
        // The budget is a parameter: raised, a (smaller) false header goes on to the decoder,
        // whatever it makes of the data.
        let lax = DecodeJpeg::new(Params {
            from: crate::steps::default_data_field(),
            to: "image".into(),
            max_pixels: crate::steps::MAX_IMAGE_PIXELS,
            max_expansion: 1e9,
        })
        .unwrap();
        let s = Sample::new(3).with("data", Field::Bytes(claiming(jpeg(64, 64), 4000, 4000)));
        if let Err(err) = lax.apply(s, &CTX) {
            assert!(!err.message.contains("max_expansion"), "{err}");
        }
        // A plausible image of the same size in bytes decodes.
        let s = Sample::new(4).with("data", Field::Bytes(jpeg(640, 480)));
        assert!(step(crate::steps::MAX_IMAGE_PIXELS).apply(s, &CTX).is_ok());
    }
}
