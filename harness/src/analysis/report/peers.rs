//! Measurements of other loaders folded into the report. Today, finding 5's reading cost per
//! record: `python3 scripts/peers/run_peers.py --records --out PEERS` reads the same TFRecord
//! shards (the synthetic arrays at the paper's twelve sample sizes) with prepbench and with
//! tf.data's `TFRecordDataset` and writes `records.csv`; `prepbench report DIR --peers PEERS`
//! checks it and copies it into the results folder (`DIR/peers/records.csv`), so that every
//! later `prepbench report DIR` writes the same report.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};
use serde::Deserialize;

/// One timed read of one size's shards (`records.csv`).
#[derive(Debug, Deserialize)]
struct RecordRow {
    mb_per_sample: f64,
    reader: String,
    cache: String,
    records: u64,
    mb_s: f64,
    us_per_record: f64,
}

/// The readers `records.csv` holds, as the report names them.
const READERS: [&str; 2] = ["prepbench", "tf.data TFRecordDataset"];

fn load(path: &Path) -> anyhow::Result<Vec<RecordRow>> {
    let mut reader = csv::Reader::from_path(path).with_context(|| {
        format!(
            "reading {} (made by `python3 scripts/peers/run_peers.py --records --out DIR`)",
            path.display()
        )
    })?;
    let mut rows = Vec::new();
    for (i, row) in reader.deserialize::<RecordRow>().enumerate() {
        let row = row.with_context(|| format!("{}: row {}", path.display(), i + 1))?;
        let finite = [row.mb_per_sample, row.mb_s, row.us_per_record]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0);
        if !finite || row.records == 0 {
            bail!(
                "{}: row {}: sizes, rates and times must be positive numbers, records at least 1",
                path.display(),
                i + 1
            );
        }
        if !READERS.contains(&row.reader.as_str())
            || !["cold", "warm"].contains(&row.cache.as_str())
        {
            bail!(
                "{}: row {}: reader `{}` / cache `{}`: expected one of {READERS:?} and cold or warm",
                path.display(),
                i + 1,
                row.reader,
                row.cache
            );
        }
        rows.push(row);
    }
    if rows.is_empty() {
        bail!("{}: no rows", path.display());
    }
    Ok(rows)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Where a results folder keeps the peer measurements it was given.
const KEPT: &str = "peers/records.csv";

/// Checks `peers/records.csv` and keeps a copy of it in the results folder `results`.
pub fn adopt(results: &Path, peers: &Path) -> anyhow::Result<()> {
    let from = peers.join("records.csv");
    load(&from)?;
    let bytes = workloads::storage::read_regular(&from)
        .with_context(|| format!("reading {}", from.display()))?;
    Ok(datasets::write_atomically(&results.join(KEPT), &bytes)?)
}

/// The report's section on the peer measurements the results folder `results` keeps, if any.
pub fn section(results: &Path) -> anyhow::Result<Option<String>> {
    let path = results.join(KEPT);
    if !path.exists() {
        return Ok(None);
    }
    let rows = load(&path)?;
    let mut sizes: Vec<f64> = rows.iter().map(|r| r.mb_per_sample).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let med = |size: f64, cache: &str, reader: &str, f: fn(&RecordRow) -> f64| {
        median(
            rows.iter()
                .filter(|r| r.mb_per_sample == size && r.cache == cache && r.reader == reader)
                .map(f)
                .collect(),
        )
    };
    let fmt =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Peers: reading cost per record (finding 5)\n\nFrom `{KEPT}` (`run_peers.py \
         --records`, kept by `report --peers`): the same TFRecord shards \
         (the synthetic arrays, one size at a time) read by prepbench (read, CRC-32C, decode \
         into a tensor) and by tf.data's `TFRecordDataset` (read, unframe, yield the bytes, \
         iterated from Python one element at a time as a training loop does, which is part of \
         its cost per record); medians over the repeats.\n"
    );
    let _ = writeln!(out, "| MB per sample | cache | prepbench MB/s | tf.data MB/s | prepbench us/record | tf.data us/record | prepbench / tf.data |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for &size in &sizes {
        for cache in ["cold", "warm"] {
            let ours = med(size, cache, READERS[0], |r| r.mb_s);
            let theirs = med(size, cache, READERS[1], |r| r.mb_s);
            if ours.is_none() && theirs.is_none() {
                continue;
            }
            let ratio = ours.zip(theirs).map(|(a, b)| a / b);
            let _ = writeln!(
                out,
                "| {size} | {cache} | {} | {} | {} | {} | {} |",
                fmt(ours, 0),
                fmt(theirs, 0),
                fmt(med(size, cache, READERS[0], |r| r.us_per_record), 1),
                fmt(med(size, cache, READERS[1], |r| r.us_per_record), 1),
                fmt(ratio, 2)
            );
        }
    }
    // The claim's own figure: MB/s of the largest samples over the smallest's.
    if let (Some(&small), Some(&large)) = (sizes.first(), sizes.last()) {
        if large > small {
            let _ = writeln!(out);
            for cache in ["cold", "warm"] {
                let gain = |reader: &str| {
                    med(large, cache, reader, |r| r.mb_s)
                        .zip(med(small, cache, reader, |r| r.mb_s))
                        .map(|(l, s)| format!("{:.1}x", l / s))
                        .unwrap_or_else(|| "-".into())
                };
                let paper = if cache == "cold" { "11.6x" } else { "35x" };
                let _ = writeln!(
                    out,
                    "- {cache}: {large} MB over {small} MB samples, MB/s: prepbench {}, tf.data {}; the paper (tf.data on its VM, {cache}) {paper}.",
                    gain(READERS[0]),
                    gain(READERS[1])
                );
            }
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "mb_per_sample,reader,cache,repeat,records,bytes,seconds,mb_s,us_per_record\n";

    #[test]
    fn records_are_kept_and_become_a_table_with_the_claims_figure() {
        let (peers, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        assert!(section(results.path()).unwrap().is_none());
        let mut csv = HEADER.to_string();
        for (size, ours, theirs) in [(0.01, 500.0, 50.0), (20.48, 2000.0, 1500.0)] {
            for cache in ["cold", "warm"] {
                for (reader, rate) in [("prepbench", ours), ("tf.data TFRecordDataset", theirs)] {
                    let records = (1000.0 / size) as u64;
                    let us = 1e6 * size / rate;
                    csv += &format!(
                        "{size},{reader},{cache},0,{records},1000000000,1.0,{rate},{us}\n"
                    );
                }
            }
        }
        std::fs::write(peers.path().join("records.csv"), csv).unwrap();
        adopt(results.path(), peers.path()).unwrap();
        drop(peers);
        let text = section(results.path()).unwrap().unwrap();
        assert!(text.contains("| 0.01 | cold | 500 | 50 |"), "{text}");
        assert!(text.contains("| 10.00 |"), "{text}");
        assert!(text.contains("prepbench 4.0x, tf.data 30.0x"), "{text}");
    }

    /// `adopt` of a folder whose records.csv holds `body` fails naming each of `needles`,
    /// and keeps nothing.
    fn refused(body: Option<&str>, needles: &[&str]) {
        let (peers, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        if let Some(body) = body {
            std::fs::write(peers.path().join("records.csv"), format!("{HEADER}{body}")).unwrap();
        }
        let err = format!("{:#}", adopt(results.path(), peers.path()).unwrap_err());
        for needle in needles {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        assert!(!results.path().join(KEPT).exists());
    }

    #[test]
    fn a_missing_or_bad_file_is_named_and_not_kept() {
        refused(None, &["records.csv", "--records"]);
        refused(
            Some("0.01,prepbench,cold,0,10,100,1.0,NaN,1.0\n"),
            &["records.csv: row 1"],
        );
        refused(
            Some("0.01,pytorch,cold,0,10,100,1.0,5.0,1.0\n"),
            &["pytorch"],
        );
    }
}
