//! Numbers a user gave, printed as short as they read: `1`, `0.25`, `1500`, `1e-300`. Rust
//! prints an `f64` with `{}` in full decimal, so `1e-300` in a workload file came back as 300
//! digits in the error naming it; messages quote user numbers through [`Num`] instead.

use std::fmt;

/// An `f64` shown with at most four significant figures, in exponent form outside 0.001 to
/// 10^7.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num(pub f64);

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v == 0.0 || !v.is_finite() {
            return write!(f, "{v}");
        }
        let magnitude = v.abs();
        if (1e-3..1e7).contains(&magnitude) {
            let decimals = (3 - magnitude.log10().floor() as i32).max(0) as usize;
            let text = format!("{v:.decimals$}");
            match text.contains('.') {
                true => f.write_str(text.trim_end_matches('0').trim_end_matches('.')),
                false => f.write_str(&text),
            }
        } else {
            let text = format!("{v:.3e}");
            let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            write!(f, "{mantissa}e{exponent}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Num;

    #[test]
    fn numbers_read_short_at_any_magnitude() {
        for (v, text) in [
            (1.0, "1"),
            (0.25, "0.25"),
            (1500.0, "1500"),
            (2.0 / 3.0, "0.6667"),
            (1e-300, "1e-300"),
            (1e308, "1e308"),
            (-2.5e9, "-2.5e9"),
            (0.0, "0"),
            (123_456.7, "123457"),
            (f64::NAN, "NaN"),
            (f64::MAX, "1.798e308"),
        ] {
            assert_eq!(Num(v).to_string(), text, "{v}");
        }
    }
}
