//! Sizes and durations in the units a person reads and writes: `16GB` and `16GiB` in, `1.3 GB`
//! and `2.3 h` out.

use bytesize::ByteSize;

/// A byte count as a person writes it: `16GB`, `1.5 GiB`, `512MB`, or a plain number of bytes
/// (bytesize's parser: SI units are powers of 1000, IEC units (`KiB`, `GiB`) of 1024).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    match trimmed.parse::<ByteSize>() {
        Ok(size) if size.as_u64() > 0 => Ok(size.as_u64()),
        Ok(_) => Err(format!("`{text}` is not a size above zero")),
        Err(_) => Err(format!(
            "`{text}` is not a size: a number with a unit such as `16GB`, `512MB` or `8GiB`, or a number of bytes"
        )),
    }
}

/// Bytes in SI units with one decimal (`215 B`, `3.4 MB`, `1.3 GB`).
pub fn bytes(b: f64) -> String {
    if !b.is_finite() || b < 0.0 {
        return format!("{b} B");
    }
    ByteSize(b.round() as u64).display().si().to_string()
}

/// Seconds in the unit that reads best: `340 ms`, `12.3 s`, `4.5 min`, `2.3 h`, `3.1 days`.
pub fn duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return format!("{s} s");
    }
    if s == 0.0 {
        "0 s".into()
    } else if s < 1.0 {
        let ms = s * 1e3;
        if ms < 10.0 {
            format!("{ms:.1} ms")
        } else {
            format!("{ms:.0} ms")
        }
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86_400.0)
    }
}

/// A rate with the digits it needs: `1074`, `96.3`, `4.21` (three significant figures below
/// 1000, no exponent).
pub fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A number a user gave, as short as it reads: `1`, `0.25`, `1e-300` (never a 300-digit
/// decimal); see [`workloads::number::Num`].
pub fn number(v: f64) -> String {
    workloads::number::Num(v).to_string()
}

/// A count with the grammar it needs: `1 thread`, `2 threads`.
pub fn count(n: u64, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// Sorted integers as runs (`0, 2-9, 12`), at most `shown` runs and then how many more, so
/// that a list of 100,000 missing shards is a line, not a page.
pub fn runs_of(sorted: &[u64], shown: usize) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &n in sorted {
        match runs.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(n) => *end = n,
            _ => runs.push((n, n)),
        }
    }
    let text = |&(a, b): &(u64, u64)| match b - a {
        0 => a.to_string(),
        1 => format!("{a}, {b}"),
        _ => format!("{a}-{b}"),
    };
    let mut out: Vec<String> = runs.iter().take(shown).map(text).collect();
    if runs.len() > shown {
        let rest: u64 = runs[shown..].iter().map(|(a, b)| b - a + 1).sum();
        out.push(format!("and {rest} more"));
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_integers_are_short() {
        assert_eq!(runs_of(&[0, 2, 3, 4, 7, 8, 12], 10), "0, 2-4, 7, 8, 12");
        assert_eq!(runs_of(&[], 10), "");
        let many: Vec<u64> = (0..100_000).filter(|i| i % 3 != 1).collect();
        let text = runs_of(&many, 4);
        assert!(text.ends_with("more") && text.len() < 60, "{text}");
        assert_eq!(
            runs_of(&[u64::MAX - 1, u64::MAX], 4),
            format!("{}, {}", u64::MAX - 1, u64::MAX)
        );
    }

    #[test]
    fn sizes_in_and_out() {
        assert_eq!(parse_bytes("16GB"), Ok(16_000_000_000));
        assert_eq!(parse_bytes("16 GiB"), Ok(16 << 30));
        assert_eq!(parse_bytes("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("sixteen").unwrap_err().contains("`16GB`"));
        assert!(parse_bytes("0GB").is_err());
        assert_eq!(bytes(215.0), "215 B");
        assert_eq!(bytes(1.3e9), "1.3 GB");
        assert_eq!(bytes(3.4e6), "3.4 MB");
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(0.004), "4.0 ms");
        assert_eq!(duration(0.34), "340 ms");
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(270.0), "4.5 min");
        assert_eq!(duration(99_804.8), "27.7 h");
        assert_eq!(duration(3.0 * 86_400.0), "3.0 days");
        assert_eq!(count(1, "thread", "threads"), "1 thread");
        assert_eq!(count(8, "thread", "threads"), "8 threads");
        assert_eq!(rate(1073.58), "1074");
        assert_eq!(rate(96.34), "96.3");
        assert_eq!(rate(4.214), "4.21");
    }
}
