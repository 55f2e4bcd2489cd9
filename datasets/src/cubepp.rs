//! Cube++'s layout, `PNG/<n>.png` (16-bit RGB, linear like the camera's raw frames) and
//! `JPG/<n>.jpg` (the processed 8-bit image of the same scene), 2601x1733: readers of either
//! half (`cubepp-png`, `cubepp-jpg`) and one generator writing both.

use std::path::Path;
use std::sync::Arc;

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};
use workloads::rng::SeededRng;

use crate::files::Files;
use crate::photo::{encode_jpeg, render, scene, PhotoStyle, Texture};
use crate::source::{flat_source, Source};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

pub const WIDTH: usize = 2601;
pub const HEIGHT: usize = 1733;
/// JPEG quality of the processed images.
const JPEG_QUALITY: u8 = 91;
/// Sensor noise of the 16-bit frames, in 16-bit levels (sets the PNG size: noise does not compress).
const SENSOR_NOISE: f32 = 16.0;
const STYLE: PhotoStyle = PhotoStyle {
    detail: 3.0,
    grain: 2.0,
    clutter: 150,
    flat: 0.0,
};

pub const PNG_KIND: DatasetKind = DatasetKind {
    name: "cubepp-png",
    family: "cubepp",
    real: "Cube++ PNG",
    layout: "PNG/<n>.png (16-bit RGB PNG, 2601x1733); generated with JPG/",
    samples_per_file: 1,
    calibration: Calibration::of(17.4176, 0.20),
    options: &[],
    reader_options: &[],
    open: open_png,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: None,
    fields: |_| &[],
    cheap_to_generate: false,
};

pub const JPG_KIND: DatasetKind = DatasetKind {
    name: "cubepp-jpg",
    family: "cubepp",
    real: "Cube++ JPG",
    layout: "JPG/<n>.jpg (RGB JPEG, 2601x1733); generated with PNG/",
    samples_per_file: 1,
    calibration: Calibration::of(0.5203, 0.20),
    options: &[],
    reader_options: &[],
    open: open_jpg,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: None,
    fields: |_| &[],
    cheap_to_generate: false,
};

fn encode_error(n: usize, what: &str, e: image::ImageError) -> DatasetError {
    DatasetError::Generate(format!("{what} encoding of sample {n} failed: {e}"))
}

/// Writes `PNG/<n+1>.png` and `JPG/<n+1>.jpg` of one scene.
pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let mut rng = SeededRng::from_parts(&[request.seed, n as u64, 0xc0be]);
    let s = scene(&mut rng, WIDTH, HEIGHT, STYLE, None);
    let pixels = render(&mut rng, &s, STYLE, Texture::Own);
    let jpeg = encode_jpeg(&pixels, WIDTH, HEIGHT, JPEG_QUALITY)
        .map_err(|e| DatasetError::Generate(format!("JPEG encoding of sample {n} failed: {e}")))?;
    // Linear (gamma-decoded) 16-bit values, darker like a raw frame, plus sensor noise.
    let mut noise = SeededRng::new(rng.next_u64());
    let linear: Vec<u16> = pixels
        .iter()
        .map(|&v| {
            let x = (v as f32 / 255.0).powf(2.2) * 12_000.0
                + (noise.unit_f64() as f32 - 0.5) * 2.0 * SENSOR_NOISE;
            x.clamp(0.0, 65_535.0) as u16
        })
        .collect();
    let mut png = Vec::with_capacity(18_000_000);
    PngEncoder::new_with_quality(&mut png, CompressionType::Default, FilterType::Adaptive)
        .write_image(
            bytemuck_bytes(&linear),
            WIDTH as u32,
            HEIGHT as u32,
            ExtendedColorType::Rgb16,
        )
        .map_err(|e| encode_error(n, "PNG", e))?;
    crate::write_atomically(
        &request.root.join("JPG").join(format!("{}.jpg", n + 1)),
        &jpeg,
    )?;
    crate::write_atomically(
        &request.root.join("PNG").join(format!("{}.png", n + 1)),
        &png,
    )
}

/// The native-endian bytes of 16-bit samples (what the PNG encoder expects).
fn bytemuck_bytes(values: &[u16]) -> &[u8] {
    // SAFETY: u16 has no padding and any byte pattern is a valid u8; the length is exact.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
    }
}

pub fn open_png(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    flat_source(
        files,
        "cubepp-png",
        root,
        &root.join("PNG"),
        "png",
        "PNG/<n>.png (the Cube++ layout)",
    )
}

pub fn open_jpg(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    flat_source(
        files,
        "cubepp-jpg",
        root,
        &root.join("JPG"),
        "jpg",
        "JPG/<n>.jpg (the Cube++ layout)",
    )
}
