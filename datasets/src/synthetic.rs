//! The paper's synthetic datasets: `<n>.npy` NumPy arrays of shape [2500, k], float32 or uint8,
//! sized exactly to one of the paper's twelve sample sizes (0.01 MB to 20.48 MB, doubling).
//! Options: `dtype` (float32 | uint8, default float32), `mb_per_sample` (default 0.64).

use std::path::Path;
use std::sync::Arc;

use workloads::rng::SeededRng;

use crate::files::Files;
use crate::source::{flat_source, Source};
use crate::{DatasetError, DatasetKind, GenerateRequest};

/// Rows of every synthetic array (the paper's 2500).
pub const ROWS: usize = 2500;
/// The paper's sample sizes in MB (1e6 B): 0.01 x 2^i for i in 0..12.
pub const SIZES_MB: [&str; 12] = [
    "0.01", "0.02", "0.04", "0.08", "0.16", "0.32", "0.64", "1.28", "2.56", "5.12", "10.24",
    "20.48",
];

pub const KIND: DatasetKind = DatasetKind {
    name: "synthetic",
    family: "synthetic",
    real: "the paper's synthetic arrays",
    layout: "<n>.npy ([2500, k] float32 or uint8 NumPy arrays)",
    samples_per_file: 1,
    calibration: None,
    options: &[
        "dtype=float32|uint8",
        "mb_per_sample=0.01|0.02|0.04|...|10.24|20.48",
    ],
    reader_options: &[],
    open,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: Some(expected_mb),
    fields: |_| &[],
    cheap_to_generate: true,
};

/// The array's element type and column count from the request's options.
fn shape(request: &GenerateRequest) -> Result<(&'static str, usize, usize), DatasetError> {
    let dtype = request
        .options
        .get("dtype")
        .map(String::as_str)
        .unwrap_or("float32");
    let (descr, item) = match dtype {
        "float32" => ("<f4", 4),
        "uint8" => ("|u1", 1),
        other => {
            return Err(DatasetError::Generate(format!(
                "synthetic: dtype `{other}` is not float32 or uint8"
            )))
        }
    };
    let size = request
        .options
        .get("mb_per_sample")
        .map(String::as_str)
        .unwrap_or("0.64");
    let index = SIZES_MB
        .iter()
        .position(|s| s.parse::<f64>().ok() == size.parse::<f64>().ok().filter(|v| v.is_finite()))
        .ok_or_else(|| {
            DatasetError::Generate(format!(
                "synthetic: mb_per_sample `{size}` is not one of the paper's sizes: {}",
                SIZES_MB.join(", ")
            ))
        })?;
    let bytes = 10_000usize << index;
    Ok((descr, item, bytes / (ROWS * item)))
}

/// NPY format 1.0 header for a C-order [rows, cols] array, padded to a multiple of 64 bytes.
pub fn npy_header(descr: &str, rows: usize, cols: usize) -> Vec<u8> {
    let dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut header = Vec::with_capacity(total);
    header.extend_from_slice(b"\x93NUMPY\x01\x00");
    header.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    header.extend_from_slice(dict.as_bytes());
    header.resize(total - 1, b' ');
    header.push(b'\n');
    header
}

fn expected_mb(request: &GenerateRequest) -> Result<f64, DatasetError> {
    let (descr, item, cols) = shape(request)?;
    Ok((npy_header(descr, ROWS, cols).len() + ROWS * cols * item) as f64 / 1e6)
}

pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let (descr, item, cols) = shape(request)?;
    let mut rng = SeededRng::from_parts(&[request.seed, n as u64, 0x5e7]);
    let mut bytes = npy_header(descr, ROWS, cols);
    bytes.reserve(ROWS * cols * item);
    for _ in 0..ROWS * cols {
        let v = rng.next_u64();
        if item == 4 {
            // Uniform in [-1, 1) from the top 24 bits.
            bytes
                .extend_from_slice(&(((v >> 40) as f32 / (1u64 << 23) as f32) - 1.0).to_le_bytes());
        } else {
            bytes.push((v >> 56) as u8);
        }
    }
    crate::write_atomically(&request.root.join(format!("{n}.npy")), &bytes)
}

pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    flat_source(files, "synthetic", root, root, "npy", "<n>.npy arrays")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_64_aligned_and_shapes_hit_the_paper_sizes() {
        let h = npy_header("<f4", 2500, 1);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(*h.last().unwrap(), b'\n');
        let req = |dtype: &str, mb: &str| GenerateRequest {
            options: [
                ("dtype".into(), dtype.into()),
                ("mb_per_sample".into(), mb.into()),
            ]
            .into(),
            ..Default::default()
        };
        assert_eq!(shape(&req("float32", "0.01")).unwrap(), ("<f4", 4, 1));
        assert_eq!(shape(&req("uint8", "0.01")).unwrap(), ("|u1", 1, 4));
        assert_eq!(shape(&req("float32", "20.48")).unwrap(), ("<f4", 4, 2048));
        assert!(shape(&req("float64", "0.01")).is_err());
        assert!(shape(&req("float32", "0.03"))
            .unwrap_err()
            .to_string()
            .contains("paper's sizes"));
    }
}
