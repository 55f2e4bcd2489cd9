//! `decode_jpeg`: decodes JPEG bytes to an RGB uint8 image tensor [height, width, 3], refusing
//! images above a pixel limit before allocating them (decompression bombs). The decoding is
//! prepbench's own for the files photographs come as (`decoder` and the modules beside it),
//! zune-jpeg's for the rest; a PNG under a JPEG's name is decoded as a PNG, as TensorFlow's
//! `decode_jpeg` and Pillow do, and other formats are refused naming what they are.

use image::ImageFormat;
use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

mod bits;
mod decoder;
mod entropy;
mod frame;
mod pixels;
mod scans;
mod ycbcr;

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the JPEG
    #[serde(default = "super::default_data_field")]
    #[param(reads)]
    pub from: FieldName,
    /// image field to write
    #[serde(default = "super::default_image_field")]
    #[param(writes)]
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

step_spec! { DecodeJpeg, "decode_jpeg", "decode JPEG bytes (or a PNG under a JPEG's name, as TensorFlow's decode_jpeg) to an RGB uint8 image [height, width, 3]" }

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
/// and `max_expansion` before the pixels are allocated.
///
/// Baseline and progressive greyscale and YCbCr files (4:4:4, 4:2:2, 4:2:0) go to prepbench's
/// own decoder (`decoder`), which gives the pixels zune-jpeg gives, faster; the rest to
/// zune-jpeg, called directly as the `image` crate calls it (the same options, so the same
/// pixels) but once: through `image` a decode copied the input twice and parsed the headers
/// three times (docs/decisions.md, "CV steps").
pub fn decode_rgb8(bytes: &[u8], max_pixels: u64, max_expansion: f64) -> Result<Tensor, StepError> {
    use zune_core::bytestream::ZCursor;
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
    if bytes.starts_with(PNG_SIGNATURE) {
        return png_rgb8(bytes, max_pixels, max_expansion);
    }
    check_complete(bytes).map_err(|what| StepError::new(format!("invalid JPEG: {what}")))?;
    let bad = |e: zune_jpeg::errors::DecodeErrors| StepError::new(format!("invalid JPEG: {e}"));
    let options = DecoderOptions::default()
        .set_strict_mode(false)
        .set_max_width(usize::MAX)
        .set_max_height(usize::MAX);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    decoder.decode_headers().map_err(bad)?;
    let (width, height) = decoder
        .dimensions()
        .ok_or_else(|| StepError::new("invalid JPEG: no frame header"))?;
    let pixels = width as u64 * height as u64;
    if pixels > max_pixels {
        return Err(StepError::new(format!(
            "image of {width}x{height} = {pixels} pixels exceeds max_pixels {max_pixels}"
        )));
    }
    super::check_expansion(
        &format!("JPEG of {width}x{height}"),
        bytes.len(),
        pixels.saturating_mul(3),
        max_expansion,
    )?;
    // prepbench's own decoder takes what photographs come as and leaves the rest (and data it
    // finds invalid) to zune-jpeg.
    if let Ok(image) = decoder::decode(bytes) {
        if image.width == width && image.height == height {
            return Tensor::new(vec![height, width, 3], TensorData::U8(image.pixels));
        }
    }
    // Greyscale decodes as one channel and is spread to three (as `image`'s to-RGB conversion
    // does); everything else (YCbCr, CMYK, YCCK) is converted to RGB by the decoder.
    let grey = matches!(
        decoder.input_colorspace(),
        Some(ColorSpace::Luma | ColorSpace::LumaA)
    );
    let out = if grey {
        ColorSpace::Luma
    } else {
        ColorSpace::RGB
    };
    decoder.set_options(decoder.options().jpeg_set_out_colorspace(out));
    let decoded = decoder.decode().map_err(bad)?;
    let rgb = if grey {
        decoded.iter().flat_map(|&v| [v, v, v]).collect()
    } else {
        decoded
    };
    if rgb.len() as u64 != pixels * 3 {
        return Err(StepError::new(format!(
            "invalid JPEG: decoded {} bytes for {width}x{height} RGB",
            rgb.len()
        )));
    }
    Tensor::new(vec![height, width, 3], TensorData::U8(rgb))
}

/// The eight bytes a PNG file starts with.
const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A PNG under a JPEG's name, decoded as TensorFlow's `decode_jpeg` and Pillow read one (and
/// so the paper's stack and a PyTorch user's `ImageFolder`): RGB uint8, alpha dropped, 16-bit
/// samples rounded to 8 as `decode_png` does. ImageNet's training set holds one such file
/// (n02105855_2933.JPEG), and folders of photographs gathered from the web hold more.
fn png_rgb8(bytes: &[u8], max_pixels: u64, max_expansion: f64) -> Result<Tensor, StepError> {
    let image = super::decode_guarded(bytes, ImageFormat::Png, max_pixels, max_expansion)?;
    let (width, height) = (image.width() as usize, image.height() as usize);
    Tensor::new(
        vec![height, width, 3],
        TensorData::U8(image.into_rgb8().into_raw()),
    )
}

/// What a file that is neither JPEG nor PNG is, from its first bytes, for the error that
/// refuses it (`None` where the bytes name no format this knows).
fn other_format(bytes: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| bytes.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"GIF87a") || at(0, b"GIF89a") {
        Some("GIF")
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        Some("WebP")
    } else if at(0, b"BM") {
        Some("BMP")
    } else if at(0, b"II*\0") || at(0, b"MM\0*") {
        Some("TIFF")
    } else if at(4, b"ftyphei") || at(4, b"ftypmif1") || at(4, b"ftypavif") {
        Some("HEIF or AVIF")
    } else {
        None
    }
}

/// The same decode through the `image` crate (what [`decode_rgb8`] replaced): the reference its
/// output is tested against, and the baseline of its benchmark.
pub fn decode_rgb8_via_image(
    bytes: &[u8],
    max_pixels: u64,
    max_expansion: f64,
) -> Result<Tensor, StepError> {
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
        return Err(match other_format(bytes) {
            Some(format) => format!(
                "the file is a {format}, not a JPEG (decode_jpeg reads JPEG, and PNG as \
                 TensorFlow's decode_jpeg does; convert it, or pass --on-error skip)"
            ),
            None => "no start-of-image marker (not a JPEG)".into(),
        });
    }
    let mut pos = 2;
    loop {
        // Find the next marker: 0xFF followed by a byte other than 0x00 (stuffing), 0xFF (fill)
        // and RST0-7 (restart markers inside entropy-coded data).
        let is_marker =
            |at: usize| bytes[at] == 0xFF && !matches!(bytes[at + 1], 0x00 | 0xFF | 0xD0..=0xD7);
        while pos + 1 < bytes.len() {
            // The next 0xFF that has a byte after it (memchr: this walks the whole file).
            match memchr::memchr(0xFF, &bytes[pos..bytes.len() - 1]) {
                Some(at) if is_marker(pos + at) => {
                    pos += at;
                    break;
                }
                Some(at) => pos += at + 1,
                None => pos = bytes.len(),
            }
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
mod tests;
