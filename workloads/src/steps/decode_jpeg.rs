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
/// and `max_expansion` before the pixels are allocated.
///
/// zune-jpeg is called directly, as the `image` crate calls it (the same options, so the same
/// pixels), but once: through `image` a decode copied the input twice and parsed the headers
/// three times (docs/decisions.md, "JPEG decoding").
pub fn decode_rgb8(bytes: &[u8], max_pixels: u64, max_expansion: f64) -> Result<Tensor, StepError> {
    use zune_core::bytestream::ZCursor;
    use zune_core::colorspace::ColorSpace;
    use zune_core::options::DecoderOptions;
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

    /// A photograph-like test picture: smooth gradients with texture, `w` x `h`.
    fn picture(w: u16, h: u16) -> Vec<u8> {
        let mut rgb = Vec::with_capacity(w as usize * h as usize * 3);
        for y in 0..h as u32 {
            for x in 0..w as u32 {
                let n = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 27;
                rgb.extend([
                    (x * 255 / w as u32) as u8 ^ n as u8,
                    (y * 255 / h as u32) as u8,
                    ((x + y) % 256) as u8,
                ]);
            }
        }
        rgb
    }

    /// Identical pixels from the direct decode and from `image`'s, for every chroma
    /// subsampling cameras write, baseline and progressive, odd sizes, restart intervals and
    /// greyscale.
    #[test]
    fn the_direct_decode_gives_the_pixels_image_gave() {
        use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for (w, h) in [(64u16, 48u16), (333, 251), (17, 9)] {
            let rgb = picture(w, h);
            for sampling in [
                SamplingFactor::F_1_1,
                SamplingFactor::F_2_1,
                SamplingFactor::F_2_2,
                SamplingFactor::F_1_2,
            ] {
                for progressive in [false, true] {
                    for restart in [0u16, 4] {
                        let mut out = Vec::new();
                        let mut e = Encoder::new(&mut out, 90);
                        e.set_sampling_factor(sampling);
                        e.set_progressive(progressive);
                        e.set_restart_interval(restart);
                        e.encode(&rgb, w, h, ColorType::Rgb).unwrap();
                        files.push((
                            format!(
                                "{w}x{h} {sampling:?} progressive {progressive} restart {restart}"
                            ),
                            out,
                        ));
                    }
                }
            }
            let grey: Vec<u8> = rgb.chunks(3).map(|p| p[1]).collect();
            let mut out = Vec::new();
            Encoder::new(&mut out, 85)
                .encode(&grey, w, h, ColorType::Luma)
                .unwrap();
            files.push((format!("{w}x{h} greyscale"), out));
        }
        files.push(("image's encoder".into(), jpeg(40, 30)));
        for (name, bytes) in &files {
            let direct = decode_rgb8(bytes, u64::MAX, 1e9).unwrap();
            let via_image = decode_rgb8_via_image(bytes, u64::MAX, 1e9).unwrap();
            assert_eq!(direct.shape(), via_image.shape(), "{name}");
            assert!(direct.data() == via_image.data(), "{name}: pixels differ");
        }
    }

    /// The same on real photographs (Debian's lomiri-wallpapers, baseline and progressive,
    /// 1.5-15.9 MP), fetched by scripts/fetch_photos.py; skipped, saying why, where they cannot be.
    #[test]
    fn the_direct_decode_gives_the_pixels_image_gave_on_real_photographs() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let fetched = std::process::Command::new("python3")
            .arg(format!("{root}/scripts/fetch_photos.py"))
            .output();
        let dir = match fetched {
            Ok(out) if out.status.success() => {
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            }
            Ok(out) => {
                eprintln!(
                    "skipped: no real photographs: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                return;
            }
            Err(e) => {
                eprintln!("skipped: python3 cannot run scripts/fetch_photos.py: {e}");
                return;
            }
        };
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jpg") {
                let bytes = std::fs::read(&path).unwrap();
                let direct = decode_rgb8(&bytes, u64::MAX, 1e9).unwrap();
                let via_image = decode_rgb8_via_image(&bytes, u64::MAX, 1e9).unwrap();
                assert!(direct == via_image, "{}: pixels differ", path.display());
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked} photographs in {dir}");
    }

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
