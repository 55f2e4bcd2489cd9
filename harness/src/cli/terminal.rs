//! The one-screen summary printed after a run, and its machine-readable form.

use crate::results::{Bound, RunRow};

/// Seconds with the digits a short run needs: `0.0042`, `0.193`, `12.40`.
fn seconds(s: f64) -> String {
    if s < 0.1 {
        format!("{s:.4}")
    } else if s < 10.0 {
        format!("{s:.3}")
    } else {
        format!("{s:.2}")
    }
}

/// A fixed-width table of the rows, one line per epoch, in SI units (MB = 1e6 B), with what
/// bound each epoch (`bounds`, aligned with `rows`; empty to leave the column blank).
pub fn table(rows: &[RunRow], bounds: &[Option<Bound>]) -> String {
    let mut out = String::new();
    if let Some(first) = rows.first() {
        let stored = rows.iter().find(|r| r.split > 0).unwrap_or(first);
        out.push_str(&format!(
            "{}: {} samples, {}, codec {}, {} shards, storage {}{}\n",
            first.workload,
            first.samples,
            crate::units::count(first.threads as u64, "thread", "threads"),
            stored.codec,
            stored.shards,
            first.storage,
            first
                .consumer
                .map_or_else(String::new, |c| format!(", consumer {c}"))
        ));
    }
    let training = rows.iter().any(|r| r.au_pct.is_some());
    let training_header = if training {
        format!(" {:>6} {:>6} {:>8}", "AU%", "stall%", "p99_ms")
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{:<16} {:>5} {:>7} {:>11} {:>9} {:>9} {:>9} {:>10} {:>9} {:>7} {:>6}{training_header}  {}\n",
        "strategy",
        "epoch",
        "cache",
        "storage_MB",
        "MB/sample",
        "offline_s",
        "online_s",
        "samples/s",
        "read_MB",
        "resid%",
        "check",
        "bound"
    ));
    for (i, r) in rows.iter().enumerate() {
        let per_sample = if r.samples > 0 {
            r.storage_bytes as f64 / r.samples as f64 / 1e6
        } else {
            0.0
        };
        let check = match (r.valid, r.verified) {
            (false, _) => "INVALID",
            (true, None) => "",
            (true, Some(v)) => v.label(),
        };
        let figures = if training {
            let f = |v: Option<f64>, d: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.d$}"));
            format!(
                " {:>6} {:>6} {:>8}",
                f(r.au_pct, 1),
                f(r.stall_pct, 1),
                f(r.batch_wait_p99_ms, 1)
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{:<16} {:>5} {:>7} {:>11.2} {:>9.4} {:>9} {:>9} {:>10.1} {:>9.1} {:>7.1} {:>6}{figures}  {}\n",
            r.strategy,
            r.epoch,
            r.cache,
            r.storage_bytes as f64 / 1e6,
            per_sample,
            seconds(r.offline_s),
            seconds(r.online_s),
            r.throughput_sps,
            r.read_bytes as f64 / 1e6,
            r.residency_after_pct,
            check,
            bounds.get(i).map_or("", |b| b.map_or("-", Bound::label))
        ));
    }
    out
}

/// A line per strategy whose output differed from fully-online processing, with the first
/// sample ids.
pub fn verify_failures(failures: &[(String, Vec<u64>)]) -> Vec<String> {
    failures
        .iter()
        .map(|(strategy, ids)| {
            let shown: Vec<String> = ids.iter().take(20).map(u64::to_string).collect();
            let more = if ids.len() > 20 { ", ..." } else { "" };
            format!(
                "strategy `{strategy}` differs from fully-online processing for {} samples (ids {}{more})",
                ids.len(),
                shown.join(", ")
            )
        })
        .collect()
}

/// One JSON object per row, one per line.
pub fn json_lines(rows: &[RunRow]) -> String {
    rows.iter()
        .map(|r| serde_json::to_string(r).expect("row serializes") + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_keep_the_digits_a_short_run_needs() {
        assert_eq!(seconds(0.0042), "0.0042");
        assert_eq!(seconds(0.193), "0.193");
        assert_eq!(seconds(12.4), "12.40");
    }

    #[test]
    fn table_has_a_line_per_row_and_flags_invalid_ones() {
        let rows = vec![
            RunRow {
                strategy: "decoded".into(),
                samples: 10,
                storage_bytes: 5_000_000,
                verified: Some(crate::results::Verdict::Pass),
                valid: true,
                ..Default::default()
            },
            RunRow {
                strategy: "resized".into(),
                samples: 10,
                verified: None,
                valid: false,
                ..Default::default()
            },
        ];
        let t = table(&rows, &[]);
        assert_eq!(t.lines().count(), 4);
        assert!(
            t.contains("0.5000") && t.contains("pass") && t.contains("INVALID"),
            "{t}"
        );
        assert_eq!(json_lines(&rows).lines().count(), 2);
    }
}
