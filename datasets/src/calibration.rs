//! How a dataset's size per sample compares with the real dataset's.

use crate::error::DatasetError;
use crate::kind::{DatasetKind, GenerateRequest};
use crate::source::Source;

/// How a dataset's size per sample compares with the real dataset's.
#[derive(Clone, Debug)]
pub struct CalibrationCheck {
    pub line: String,
    pub within: bool,
    /// Measured mean over the reference mean, minus one (0 without a reference).
    pub deviation: f64,
}

/// Compares the mean MB per sample of `source` with what `kind` is calibrated against.
pub fn check_calibration(
    kind: &DatasetKind,
    source: &Source,
    request: &GenerateRequest,
) -> Result<CalibrationCheck, DatasetError> {
    let samples = (source.len() * kind.samples_per_file).max(1) as f64;
    let measured = source.total_bytes() as f64 / samples / 1e6;
    let (expected, tolerance) = match (kind.expected_mb, kind.calibration) {
        (Some(f), _) => (f(request)?, 0.01),
        // A small dataset's mean size is a noisy estimate of a calibrated mean: widen the
        // tolerance by three standard errors of the mean (from the files' own spread), which
        // vanishes as samples grow.
        (None, Some(c)) => (
            c.mb_per_sample,
            c.tolerance + 3.0 * relative_standard_error(source),
        ),
        (None, None) => {
            return Ok(CalibrationCheck {
                line: format!(
                    "{}: {measured:.4} MB per sample (no reference size)",
                    kind.name
                ),
                within: true,
                deviation: 0.0,
            })
        }
    };
    let deviation = measured / expected - 1.0;
    let within = deviation.abs() <= tolerance;
    let line = format!(
        "{}: {measured:.4} MB per sample generated vs {expected:.4} in {} ({:+.1} %, tolerance +-{:.0} %){}",
        kind.name,
        kind.real,
        deviation * 100.0,
        tolerance * 100.0,
        if within { "" } else { ": OUTSIDE THE TOLERANCE" }
    );
    Ok(CalibrationCheck {
        line,
        within,
        deviation,
    })
}

/// The standard error of the mean file size over the mean (0 for fewer than two files).
fn relative_standard_error(source: &Source) -> f64 {
    let n = source.items.len();
    if n < 2 {
        return 0.0;
    }
    let sizes = source.items.iter().map(|i| i.size_bytes as f64);
    let mean = sizes.clone().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let variance = sizes.map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    variance.sqrt() / mean / (n as f64).sqrt()
}
