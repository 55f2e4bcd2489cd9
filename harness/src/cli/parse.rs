//! Parsers of option values: numbers in a range with their unit, counts, sizes.

/// A number in `(0, max]` (or `[0, max]` with `zero`); the error says the allowed range and
/// what the number is (NaN, infinities and negatives are refused).
pub(super) fn number_in(text: &str, zero: bool, max: f64, unit: &str) -> Result<f64, String> {
    in_range(text.trim().parse::<f64>().ok(), text, zero, max, unit)
}

/// `value` (read from `text`, `None` when it did not read) if in range, else the error saying
/// the range, quoting `text`.
fn in_range(
    value: Option<f64>,
    text: &str,
    zero: bool,
    max: f64,
    unit: &str,
) -> Result<f64, String> {
    match value {
        Some(v) if v.is_finite() && v <= max && (v > 0.0 || (zero && v == 0.0)) => Ok(v),
        _ => Err(format!(
            "`{text}` is not a number of {unit} {} {max}",
            if zero {
                "from 0 to"
            } else {
                "above 0 and at most"
            }
        )),
    }
}

pub(super) fn mb_per_s(text: &str) -> Result<f64, String> {
    number_in(text, false, 1e7, "MB/s")
}

pub(super) fn milliseconds(text: &str) -> Result<f64, String> {
    number_in(text, true, 1e5, "milliseconds")
}

pub(super) fn speed_factor(text: &str) -> Result<f64, String> {
    number_in(text, false, 1e3, "times the calibrated speed")
}

/// Megabytes: a plain number is MB; a size with a unit (`16GB`, `512MiB`) is read as such.
pub(super) fn megabytes(text: &str) -> Result<f64, String> {
    // What reads as a number (NaN and infinities included, refused below) is MB.
    let value = match text.trim().parse::<f64>() {
        Ok(mb) => mb,
        Err(_) => crate::units::parse_bytes(text)? as f64 / 1e6,
    };
    // A kilobyte at least: 1e-300 MB is no data (it made a sweep of 480 empty runs).
    match value {
        v if v > 0.0 && v < 1e-3 => {
            Err(format!("`{text}` is not a number of MB from 0.001 to 1e9"))
        }
        v => in_range(Some(v), text, false, 1e9, "MB"),
    }
}

/// A whole number in `LO..=HI`; the error says the allowed range.
pub(super) fn count_in<const LO: usize, const HI: usize>(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (LO..=HI).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not a whole number from {LO} to {HI}")),
    }
}

/// A positive, finite number of seconds, up to an hour.
pub(super) fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("`{text}` is not a number of seconds in (0, 3600]")),
    }
}
