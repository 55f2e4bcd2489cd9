//! ImageNet's training layout, `train/<wnid>/<wnid>_<n>.JPEG` (RGB JPEG, one folder per class):
//! the reader for a real copy and the generator of a calibrated stand-in.
//!
//! Source order interleaves the classes (first file of every class, then the second, ...), so
//! the first N samples are a class-balanced subset; the generator numbers its files so that
//! sample n is exactly the n-th file of that order, whatever the total count.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use workloads::rng::SeededRng;

use crate::files::natural_key;
use crate::files::{files_ending, folders, Entry, Files};
use crate::photo::{encode_jpeg, synthesize, PhotoStyle, Texture};
use crate::source::{Source, SourceItem};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

/// Generated datasets use this many classes (ImageNet has 1000).
pub const GENERATED_CLASSES: usize = 100;
/// JPEG quality of generated images (ImageNet's files are mostly high-quality JPEGs; with 4:2:0
/// chroma, 96 and the style below give ImageNet's mean size, about 4.3 bits per pixel).
const JPEG_QUALITY: u8 = 96;

/// Half the surfaces smooth (skies, walls, out-of-focus backgrounds), the rest textured and
/// grainy: decoded, such images shrink under GZIP as much as ImageNet's do (the paper's
/// compression table: 29 % decoded, 23 % resized), at ImageNet's JPEG size. Every surface
/// textured, as before, gave 5 % and 5 %.
const STYLE: PhotoStyle = PhotoStyle {
    detail: 12.0,
    grain: 11.0,
    clutter: 350,
    flat: 0.5,
};

fn wnid(class: usize) -> String {
    // WordNet-style ids, increasing with the class index so that sorted order is class order.
    format!("n{:08}", 1_000_000 + class * 1_009)
}

/// Where sample `n` of a generated dataset lives, and its class.
pub fn generated_path(root: &Path, n: usize) -> (PathBuf, usize) {
    let class = n % GENERATED_CLASSES;
    let id = wnid(class);
    (
        root.join("train")
            .join(&id)
            .join(format!("{id}_{}.JPEG", n / GENERATED_CLASSES)),
        class,
    )
}

/// Image size as ImageNet spreads them: most are 500 px on the longer side (500x375, 500x333),
/// the rest from 300 to 800 px, about three in four landscape.
fn image_dims(rng: &mut SeededRng) -> (usize, usize) {
    let longer = if rng.below(4) < 3 {
        500
    } else {
        300 + rng.below(501) as usize
    };
    let aspects = [4.0 / 3.0, 4.0 / 3.0, 3.0 / 2.0, 1.0, 16.0 / 9.0, 5.0 / 4.0];
    let aspect = aspects[rng.below(aspects.len() as u64) as usize];
    let shorter = ((longer as f64 / aspect).round() as usize).max(64);
    if rng.below(4) < 3 {
        (shorter, longer) // (height, width): landscape
    } else {
        (longer, shorter)
    }
}

pub const KIND: DatasetKind = DatasetKind {
    name: "imagenet",
    family: "imagenet",
    real: "ImageNet ILSVRC2012 train",
    layout: "train/<wnid>/<wnid>_<n>.JPEG (RGB JPEG)",
    samples_per_file: 1,
    calibration: Calibration::of(0.1147, 0.15),
    options: &[],
    reader_options: &[],
    open,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: None,
    fields: |_| &["label"],
    cheap_to_generate: false,
};

/// The JPEG of generated image `n` (deterministic in seed and n alone): also the `jpg` member
/// of a generated WebDataset sample.
pub(crate) fn photo_jpeg(seed: u64, n: usize) -> Result<Vec<u8>, DatasetError> {
    let mut rng = SeededRng::from_parts(&[seed, n as u64, 0x1a6e]);
    let (height, width) = image_dims(&mut rng);
    let pixels = synthesize(&mut rng, width, height, STYLE, Texture::Shared(seed));
    let jpeg = encode_jpeg(&pixels, width, height, JPEG_QUALITY)
        .map_err(|e| DatasetError::Generate(format!("JPEG encoding of sample {n} failed: {e}")))?;
    Ok(jpeg)
}

/// Writes sample `n` of the generated dataset (deterministic in seed and n alone).
pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let jpeg = photo_jpeg(request.seed, n)?;
    let (path, _) = generated_path(&request.root, n);
    crate::write_atomically(&path, &jpeg)
}

/// Lists a dataset in ImageNet's layout in source order (classes interleaved).
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    let train = root.join("train");
    let classes = folders(&**files, &train).map_err(|e| DatasetError::Layout {
        path: train.display().to_string(),
        message: format!("{e}: expected train/<wnid>/<wnid>_<n>.JPEG (the ImageNet layout)"),
    })?;
    if classes.is_empty() {
        return Err(DatasetError::Layout {
            path: train.display().to_string(),
            message: "no class folders: expected train/<wnid>/<wnid>_<n>.JPEG".into(),
        });
    }
    let mut per_class: Vec<(PathBuf, Vec<Entry>)> = Vec::with_capacity(classes.len());
    for class in classes {
        let dir = class.path_in(&train);
        let mut images = files_ending(&**files, &dir, &[".jpeg", ".jpg"])?;
        images.sort_by_key(|e| natural_key(&e.name));
        per_class.push((dir, images));
    }
    let rounds = per_class.iter().map(|(_, f)| f.len()).max().unwrap_or(0);
    let mut items = Vec::with_capacity(per_class.iter().map(|(_, f)| f.len()).sum());
    for round in 0..rounds {
        for (label, (dir, images)) in per_class.iter().enumerate() {
            if let Some(e) = images.get(round) {
                items.push(SourceItem::labelled(e.path_in(dir), e, label as i32));
            }
        }
    }
    Ok(Source::new("imagenet", files, root, items))
}
