//! What decoding a dataset's JPEG files costs, measured once and kept in its generation marker.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{io_err, DatasetError};
use crate::files::LocalFiles;

/// prepbench's JPEG decode (`decode_jpeg`, one thread) timed on a spread of a dataset's JPEG
/// files, to compare with real photographs of the same bit rate (docs/decisions.md, Datasets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecodeCost {
    /// Files decoded.
    pub files: usize,
    /// Milliseconds per megapixel: the fastest of three decodes of each file, summed, over
    /// their megapixels.
    pub ms_per_mp: f64,
    /// Compressed bits per pixel of those files.
    pub bits_per_pixel: f64,
    /// What GZIP (level 6, as `--codec gzip`) saves on those files' decoded pixels, in percent
    /// of their size: how compressible a `decoded` store of the dataset is (ImageNet's: 29 %,
    /// the paper's compression table). Absent from markers written before it was measured.
    #[serde(default)]
    pub decoded_gzip_saving_pct: Option<f64>,
}

/// Most files and megapixels timed by [`measure_decode`].
const DECODE_FILES: usize = 24;
const DECODE_MEGAPIXELS: f64 = 12.0;

/// Times prepbench's JPEG decode on up to 24 JPEG files spread evenly over `root` (sorted
/// paths), stopping after 12 megapixels: `None` when there is none. A file that does not decode
/// is an error naming it.
pub fn measure_decode(root: &Path) -> Result<Option<DecodeCost>, DatasetError> {
    let mut jpegs: Vec<PathBuf> = crate::folder::walk(&LocalFiles, root)?
        .into_iter()
        .filter(|f| {
            let name = f.entry.name.to_ascii_lowercase();
            name.ends_with(".jpg") || name.ends_with(".jpeg")
        })
        .map(|f| f.path)
        .collect();
    jpegs.sort();
    if jpegs.is_empty() {
        return Ok(None);
    }
    let step = jpegs.len().div_ceil(DECODE_FILES);
    let (mut seconds, mut pixels, mut bytes, mut files) = (0.0, 0.0, 0.0, 0);
    let (mut decoded, mut deflated) = (0usize, 0usize);
    for path in jpegs.iter().step_by(step) {
        let data = std::fs::read(path).map_err(io_err(path))?;
        let mut best = f64::INFINITY;
        let mut last = None;
        for _ in 0..3 {
            let start = std::time::Instant::now();
            let image = workloads::steps::decode_jpeg::decode_rgb8(
                &data,
                workloads::steps::MAX_IMAGE_PIXELS,
                f64::INFINITY,
            )
            .map_err(|e| DatasetError::Generate(format!("{}: {}", path.display(), e.message)))?;
            best = best.min(start.elapsed().as_secs_f64());
            last = Some(image);
        }
        if let Some(image) = &last {
            let raw = image.data().as_bytes();
            decoded += raw.len();
            deflated += gzip_len(raw);
            pixels += (image.shape()[0] * image.shape()[1]) as f64;
        }
        seconds += best;
        bytes += data.len() as f64;
        files += 1;
        if pixels >= DECODE_MEGAPIXELS * 1e6 {
            break;
        }
    }
    Ok(Some(DecodeCost {
        files,
        ms_per_mp: 1e3 * seconds / (pixels / 1e6).max(1e-9),
        bits_per_pixel: 8.0 * bytes / pixels.max(1.0),
        decoded_gzip_saving_pct: Some(100.0 * (1.0 - deflated as f64 / decoded.max(1) as f64)),
    }))
}

/// Bytes GZIP at level 6 writes for `data`.
fn gzip_len(data: &[u8]) -> usize {
    use std::io::Write;
    let mut encoder =
        flate2::write::GzEncoder::new(Vec::with_capacity(data.len()), flate2::Compression::new(6));
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().map_or(data.len(), |v| v.len())
}
