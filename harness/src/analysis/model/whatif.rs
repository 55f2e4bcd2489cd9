//! `prepbench whatif`: every strategy's prediction on other hardware, the recommendation and
//! how it moves with bandwidth and cores.

use std::fmt::Write;

use workloads::Codec;

use super::hardware::{hardware_file, paper_hardware, storage_of};
use super::predict::*;
use super::validation::paper_comparison;
use crate::results::{Calibration, MachineCalibration, StrategyCalibration};

/// A workload's paper pipeline, if it has one.
pub type PaperName<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The machine `whatif` predicts for: a hardware profile (`paper` or a YAML file; `None`: this
/// machine as calibrated) with some of its figures replaced.
#[derive(Clone, Debug, Default)]
pub struct WhatifRequest {
    pub profile: Option<String>,
    pub cores: Option<usize>,
    pub cpu_speed: Option<f64>,
    /// Read bandwidth, MB/s per reader and in all.
    pub read_mbps: Option<f64>,
    /// Latency per request, ms.
    pub latency_ms: Option<f64>,
    /// The codec of the stored strategies predicted.
    pub codec: Codec,
}

impl WhatifRequest {
    /// The hardware asked for, from the calibrated `machine`.
    pub fn hardware(&self, machine: &MachineCalibration) -> anyhow::Result<Hardware> {
        let mut hw = match self.profile.as_deref() {
            None => this_machine(machine, None),
            Some("paper") => paper_hardware(),
            Some(file) => hardware_file(std::path::Path::new(file))?,
        };
        if let Some(cores) = self.cores {
            anyhow::ensure!(cores > 0, "--cores must be at least 1");
            hw.cores = cores;
        }
        if let Some(speed) = self.cpu_speed {
            anyhow::ensure!(speed > 0.0, "--cpu-speed must be positive");
            hw.cpu_speed = speed;
        }
        if let Some(l) = self.latency_ms {
            anyhow::ensure!(l >= 0.0, "--latency-ms must be zero or positive");
        }
        match (&mut hw.storage, self.read_mbps, self.latency_ms) {
            (_, Some(mb), latency) => {
                anyhow::ensure!(mb > 0.0, "--read-mbps must be positive");
                let latency = latency.unwrap_or(match &hw.storage {
                    Storage::Local(m) => m.request_ms,
                    Storage::Profile(p) => p.latency_ms,
                });
                hw.storage = storage_of(mb, latency);
            }
            (Storage::Profile(p), None, Some(l)) => p.latency_ms = l,
            (Storage::Local(m), None, Some(l)) => hw.storage = storage_of(m.seq_read_mb_s, l),
            (_, None, None) => {}
        }
        if self.cores.is_some()
            || self.cpu_speed.is_some()
            || self.read_mbps.is_some()
            || self.latency_ms.is_some()
        {
            hw.name = format!("{} (adjusted)", hw.name);
        }
        Ok(hw)
    }
}

/// `prepbench whatif DIR`: [`whatif`] from the calibration recorded in `dir`'s manifest; for
/// the paper's hardware, with the paper's ranking of each workload's recorded pipeline.
pub fn whatif_in(
    dir: &std::path::Path,
    request: &WhatifRequest,
    rows: Option<crate::markdown::Rows>,
) -> anyhow::Result<String> {
    use anyhow::Context;
    // A profile file named on the command line is checked first, whatever the folder holds.
    if let Some(file) = request.profile.as_deref().filter(|p| *p != "paper") {
        hardware_file(std::path::Path::new(file))?;
    }
    let manifest = crate::results::Manifest::read(dir)?.unwrap_or_default();
    let calibration = manifest.complete_calibration().with_context(|| {
        format!(
            "{} has no calibration: run `prepbench calibrate WORKLOAD --out {}` (or a sweep \
             without --no-calibrate) first",
            dir.join(crate::results::manifest::MANIFEST).display(),
            dir.display()
        )
    })?;
    let machine = calibration
        .machine
        .as_ref()
        .expect("a complete calibration");
    let hw = request.hardware(machine)?;
    // Codecs compare as values (`zstd` is `zstd:3`); one the calibration lacks is an error
    // naming those it has, not a header over nothing.
    let mut codecs: Vec<Codec> = calibration.strategies.values().map(|s| s.codec).collect();
    codecs.sort_by_key(|c| c.to_string());
    codecs.dedup();
    if !codecs.contains(&request.codec) {
        anyhow::bail!(
            "{} calibrated no strategy with codec `{}`; it has: {} (give one with --codec)",
            dir.display(),
            request.codec,
            codecs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(format) = rows {
        return crate::markdown::rows_as(format, &whatif_rows(calibration, &hw, request.codec));
    }
    let paper_name = |workload: &str| crate::analysis::recorded::paper_name_in(&manifest, workload);
    let paper = request.profile.as_deref() == Some("paper");
    Ok(whatif(
        calibration,
        &hw,
        request.codec,
        paper.then_some(&paper_name as &PaperName<'_>),
    ))
}

/// `prepbench whatif`: per workload, every strategy's prediction on `hw`, the recommended one,
/// and the recommendation over a range of bandwidths and cores; with `paper_name` (a workload's
/// paper pipeline, for the paper's hardware), the paper's measured ranking beside ours.
pub fn whatif(
    cal: &Calibration,
    hw: &Hardware,
    codec: Codec,
    paper_name: Option<&PaperName<'_>>,
) -> String {
    let mut out = String::new();
    let storage = match &hw.storage {
        Storage::Local(m) => format!(
            "this machine's disk ({:.0} MB/s one stream, {:.0} MB/s in all, {:.3} ms per small file)",
            m.seq_read_mb_s, m.parallel_read_mb_s, m.small_file_ms
        ),
        Storage::Profile(p) => format!(
            "`{}` ({} MB/s per reader, {} MB/s in all, {:.3} ms latency, {} IOPS)",
            p.name,
            p.stream_mb_s.map_or("unlimited".into(), |v| format!("{v:.0}")),
            p.aggregate_mb_s.map_or("unlimited".into(), |v| format!("{v:.0}")),
            p.latency_ms,
            p.iops.map_or("unlimited".into(), |v| format!("{v:.0}"))
        ),
    };
    let _ = writeln!(
        out,
        "# What if: {} ({}, CPU speed {}x this machine's, storage {storage})\n\nCold reads, codec {codec}, {}; predicted samples/s from this machine's calibration (each strategy measured for one warm epoch with one worker thread, its passes over the samples given repeated for half a second).\n",
        hw.name,
        crate::units::count(hw.cores as u64, "core", "cores"),
        hw.cpu_speed,
        crate::units::count(hw.cores as u64, "thread", "threads")
    );
    for workload in cal.workloads() {
        let ranked = ranking(cal, workload, codec, hw);
        if ranked.is_empty() {
            continue;
        }
        let rows: Vec<Vec<String>> = ranked
            .iter()
            .map(|(s, p)| {
                vec![
                    s.strategy.clone(),
                    format!("{:.4}", s.bytes_per_sample / 1e6),
                    file_size(s),
                    sps(p.storage_bound),
                    sps(p.cpu_bound),
                    sps(p.predicted),
                    p.binds.to_string(),
                    calibrated_on(s),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "## {workload}\n\n{}\nRecommended: **{}** ({} samples/s).\n",
            crate::markdown::table(
                &[
                    "strategy",
                    "MB/sample",
                    "file read",
                    "storage bound",
                    "CPU bound",
                    "predicted",
                    "binds",
                    "calibrated on (samples x passes)"
                ],
                &rows
            ),
            ranked[0].0.strategy,
            sps(ranked[0].1.predicted)
        );
        if let Some(note) = file_size_note(&ranked, hw) {
            let _ = writeln!(out, "{note}\n");
        }
        if let Some(note) = thin_calibration_note(&ranked) {
            let _ = writeln!(out, "{note}\n");
        }
        let _ = writeln!(out, "{}", sensitivity(cal, workload, codec, hw));
        if let Some(paper_name) = paper_name {
            let _ = writeln!(
                out,
                "{}",
                paper_comparison(workload, paper_name(workload), &ranked)
            );
        }
    }
    out
}

/// Every workload's strategies ranked on `hw` as named fields (rank 1 is the recommendation):
/// the rows of `whatif --csv` and `--json`.
pub fn whatif_rows(
    cal: &Calibration,
    hw: &Hardware,
    codec: Codec,
) -> Vec<Vec<(&'static str, serde_json::Value)>> {
    use serde_json::json;
    let mut rows = Vec::new();
    for workload in cal.workloads() {
        for (rank, (s, p)) in ranking(cal, workload, codec, hw).iter().enumerate() {
            rows.push(vec![
                ("hardware", json!(hw.name)),
                ("cores", json!(hw.cores)),
                ("cpu_speed", json!(hw.cpu_speed)),
                ("workload", json!(workload)),
                ("rank", json!(rank + 1)),
                ("strategy", json!(s.strategy)),
                ("codec", json!(codec.to_string())),
                ("bytes_per_sample", json!(s.bytes_per_sample)),
                ("file_bytes", json!(s.file_bytes())),
                ("storage_bound_sps", json!(p.storage_bound)),
                ("cpu_bound_sps", json!(p.cpu_bound)),
                ("predicted_sps", json!(p.predicted)),
                ("binds", json!(p.binds)),
                ("calibrated_samples", json!(s.distinct_samples())),
                ("calibrated_passes", json!(s.passes)),
            ]);
        }
    }
    rows
}

/// Calibrations on fewer distinct samples than this get a caution: however many passes the
/// epoch repeated, their per-sample costs are those of a few samples, read over and over.
pub const THIN_CALIBRATION_SAMPLES: u64 = 100;

/// What a calibration read: `48 x 12`, its distinct samples and passes over them.
fn calibrated_on(s: &StrategyCalibration) -> String {
    format!("{} x {}", s.distinct_samples(), s.passes.max(1))
}

/// A caution naming the strategies calibrated on fewer than [`THIN_CALIBRATION_SAMPLES`]
/// distinct samples.
fn thin_calibration_note(ranked: &[(&StrategyCalibration, Prediction)]) -> Option<String> {
    let thin: Vec<String> = ranked
        .iter()
        .filter(|(s, _)| s.distinct_samples() < THIN_CALIBRATION_SAMPLES)
        .map(|(s, _)| format!("`{}` ({} samples)", s.strategy, s.distinct_samples()))
        .collect();
    (!thin.is_empty()).then(|| {
        format!(
            "**Caution:** {} calibrated on fewer than {THIN_CALIBRATION_SAMPLES} distinct samples: the per-sample costs these predictions rest on are those of a few samples read over and over (warm in the CPU's caches after the first pass), not of the dataset's variety. Calibrate again with more (`prepbench calibrate WORKLOAD --samples 500 --recalibrate`) before acting on this.",
            thin.join(", ")
        )
    })
}

/// The size of each file a strategy reads: its shard, or the raw file.
fn file_size(s: &StrategyCalibration) -> String {
    crate::units::bytes(s.file_bytes())
}

/// Under a storage profile, files smaller than its small-file cutoff are read as random
/// requests, larger ones streamed, so a stored strategy's shard size (samples / shards) can
/// decide its rank. When a stored strategy's calibrated shards fall under the cutoff, the
/// strategies are ranked again as if every stored strategy's shards were at least the cutoff:
/// a note names the strategies affected, and warns when the recommendation changes with them.
fn file_size_note(ranked: &[(&StrategyCalibration, Prediction)], hw: &Hardware) -> Option<String> {
    let Storage::Profile(profile) = &hw.storage else {
        return None;
    };
    let cutoff = profile.small_file_kb * 1024.0;
    let small: Vec<&StrategyCalibration> = ranked
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| s.split > 0 && s.file_bytes() < cutoff)
        .collect();
    if small.is_empty() {
        return None;
    }
    let setting = Setting::cold(hw.cores);
    let mut regrouped: Vec<(String, f64)> = ranked
        .iter()
        .map(|(s, p)| {
            if s.split > 0 && s.file_bytes() < cutoff {
                let mut larger = (*s).clone();
                larger.files_per_sample = s.bytes_per_sample / cutoff;
                (s.strategy.clone(), predict(&larger, hw, &setting).predicted)
            } else {
                (s.strategy.clone(), p.predicted)
            }
        })
        .collect();
    regrouped.sort_by(|a, b| b.1.total_cmp(&a.1));
    let names: Vec<String> = small
        .iter()
        .map(|s| format!("`{}` ({})", s.strategy, crate::units::bytes(s.file_bytes())))
        .collect();
    let mut note = format!(
        "**Shard size matters here:** the calibrated shards of {} are under `{}`'s small-file cutoff of {}, so they are read as {} KiB random requests, not streamed; their shard size comes from the calibration's samples and shards, not from the dataset you will store.",
        names.join(", "),
        profile.name,
        crate::units::bytes(cutoff),
        profile.request_kb
    );
    let best = &ranked[0].0.strategy;
    if regrouped[0].0 != *best {
        let _ = write!(
            note,
            " With shards of {} or more (fewer shards: `--shards`, or more samples per shard), the recommendation would be **{}** ({} samples/s) instead of {best}: calibrate with the shard size you will use before acting on this.",
            crate::units::bytes(cutoff),
            regrouped[0].0,
            sps(regrouped[0].1)
        );
    } else {
        let _ = write!(
            note,
            " With shards of {} or more the recommendation stays {best}.",
            crate::units::bytes(cutoff)
        );
    }
    Some(note)
}

/// The recommended strategy over a grid of read bandwidths (x1/8 .. x8 of `hw`'s) and cores.
fn sensitivity(cal: &Calibration, workload: &str, codec: Codec, hw: &Hardware) -> String {
    let (base_mb, latency) = match &hw.storage {
        Storage::Local(m) => (m.seq_read_mb_s, m.request_ms),
        Storage::Profile(p) => (
            p.aggregate_mb_s.or(p.stream_mb_s).unwrap_or(1000.0),
            p.latency_ms,
        ),
    };
    let factors = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
    let cores = [1, 2, 4, 8, 16, 32, 64];
    let mut rows = Vec::new();
    for f in factors {
        let mb = base_mb * f;
        let mut row = vec![format!("{mb:.0}")];
        for &c in &cores {
            let mut at = hw.clone();
            at.cores = c;
            at.storage = match &hw.storage {
                Storage::Profile(p) => {
                    let mut p = p.clone();
                    p.stream_mb_s = p.stream_mb_s.map(|v| v * f);
                    p.aggregate_mb_s = p.aggregate_mb_s.map(|v| v * f);
                    p.iops = p.iops.map(|v| v * f);
                    Storage::Profile(p)
                }
                Storage::Local(_) => storage_of(mb, latency),
            };
            let best = ranking(cal, workload, codec, &at)
                .first()
                .map(|(s, _)| s.strategy.clone())
                .unwrap_or_default();
            row.push(best);
        }
        rows.push(row);
    }
    let mut header = vec!["read MB/s \\ cores".to_string()];
    header.extend(cores.iter().map(|c| c.to_string()));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    format!(
        "Recommended strategy as bandwidth (IOPS with it) and cores vary:\n\n{}",
        crate::markdown::table(&header, &rows)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::StrategyCalibration;
    use workloads::StorageProfile;

    fn stored(strategy: &str, bytes: f64, files: f64, worker: f64) -> StrategyCalibration {
        StrategyCalibration {
            samples: 48,
            ..super::super::predict::tests::calibrated(strategy, bytes, files, worker)
        }
    }

    fn paper_like() -> Hardware {
        Hardware {
            name: "h".into(),
            cores: 8,
            cpu_speed: 1.0,
            storage: Storage::Profile(StorageProfile {
                name: "slow".into(),
                stream_mb_s: Some(100.0),
                aggregate_mb_s: Some(400.0),
                latency_ms: 10.0,
                request_kb: 4.0,
                small_file_kb: 1024.0,
                iops: Some(1000.0),
                ..StorageProfile::local()
            }),
        }
    }

    #[test]
    fn shards_under_the_small_file_cutoff_that_decide_the_answer_are_warned_about() {
        // 48 samples in 16 shards: 3 samples per shard. `small` stores 0.25 MB per sample
        // (0.75 MB shards, under 1 MiB: 4 KiB requests at 10 ms); `big` 1 MB per sample (3 MB
        // shards, streamed) and more CPU.
        let small = stored("small", 0.25e6, 16.0 / 48.0, 0.002);
        let big = stored("big", 1e6, 16.0 / 48.0, 0.004);
        let hw = paper_like();
        let setting = Setting::cold(8);
        let mut ranked = vec![
            (&small, predict(&small, &hw, &setting)),
            (&big, predict(&big, &hw, &setting)),
        ];
        ranked.sort_by(|a, b| b.1.predicted.total_cmp(&a.1.predicted));
        assert_eq!(ranked[0].0.strategy, "big", "small shards pay per request");
        let note = file_size_note(&ranked, &hw).expect("a note");
        assert!(note.contains("`small` (750.0 kB)"), "{note}");
        assert!(note.contains("would be **small**"), "{note}");
        // Shards above the cutoff: nothing to say.
        let small = stored("small", 0.25e6, 1.0 / 48.0, 0.002);
        let ranked = vec![(&small, predict(&small, &hw, &setting))];
        assert!(file_size_note(&ranked, &hw).is_none());
        // The local disk has no cutoff to cross.
        let local = Hardware {
            storage: Storage::Local(Default::default()),
            ..hw
        };
        assert!(file_size_note(&ranked, &local).is_none());
        // 48 samples is thin evidence; 500 is not.
        let note = thin_calibration_note(&ranked).expect("a caution");
        assert!(note.contains("`small` (48 samples)"), "{note}");
        // Passes repeated over the 48 do not make them more: still thin.
        let mut repeated = small.clone();
        (repeated.samples, repeated.passes) = (48 * 12, 12);
        let ranked = vec![(&repeated, predict(&repeated, &local, &setting))];
        let note = thin_calibration_note(&ranked).expect("a caution");
        assert!(note.contains("`small` (48 samples)"), "{note}");
        assert_eq!(calibrated_on(&repeated), "48 x 12");
        let mut plenty = small.clone();
        plenty.samples = 500;
        let ranked = vec![(&plenty, predict(&plenty, &local, &setting))];
        assert!(thin_calibration_note(&ranked).is_none());
    }
}
