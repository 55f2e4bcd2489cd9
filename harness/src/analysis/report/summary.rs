//! summary.csv: one row per cell, its statistics.

use crate::analysis::cells::Cell;
use crate::results::Verdict;

/// summary.csv's text.
pub fn summary_csv(cells: &[Cell]) -> String {
    let columns = [
        "workload",
        "condition",
        "strategy",
        "split",
        "codec",
        "threads",
        "cache",
        "epoch",
        "n",
        "samples",
        "storage_bytes",
        "mb_per_sample",
        "offline_s_mean",
        "throughput_sps_mean",
        "throughput_sps_sd",
        "throughput_sps_median",
        "throughput_sps_min",
        "throughput_sps_max",
        "throughput_sps_ci95_lo",
        "throughput_sps_ci95_hi",
        "throughput_sps_cv",
        "throughput_outliers",
        "online_s_mean",
        "invalid_runs",
        "verified",
        "first_sample_s_median",
        "steady_sps_mean",
        "foreign_load_pct_mean",
        "short_epochs",
    ];
    let mut out = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let _ = out.write_record(columns);
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
    for c in cells {
        let (k, t) = (&c.key, &c.throughput);
        let values = vec![
            k.workload.clone(),
            k.condition.to_string(),
            k.strategy.clone(),
            k.split.to_string(),
            k.codec.to_string(),
            k.threads.to_string(),
            k.cache.to_string(),
            k.epoch.to_string(),
            t.n.to_string(),
            c.samples.to_string(),
            format!("{:.0}", c.storage_bytes),
            format!("{:.6}", c.mb_per_sample()),
            opt(c.offline.as_ref().map(|o| o.mean)),
            format!("{:.3}", t.mean),
            opt(t.sd),
            format!("{:.3}", t.median),
            format!("{:.3}", t.min),
            format!("{:.3}", t.max),
            opt(t.ci95.map(|c| c.0)),
            opt(t.ci95.map(|c| c.1)),
            opt(t.cv),
            t.outliers.len().to_string(),
            format!("{:.6}", c.online.mean),
            c.invalid_runs.to_string(),
            verdict_or_dash(c.verified).to_string(),
            opt(c.first_sample.as_ref().map(|s| s.median)),
            opt(c.steady.as_ref().map(|s| s.mean)),
            opt(c.foreign_load_pct),
            (!c.long_enough()).to_string(),
        ];
        let _ = out.write_record(&values);
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).expect("the values are UTF-8")
}

/// A cell's verdict as summary.csv and report.json give it: `pass`, `fail`, or `-` when not
/// verified.
pub(super) fn verdict_or_dash(v: Option<Verdict>) -> &'static str {
    v.map_or("-", Verdict::label)
}
