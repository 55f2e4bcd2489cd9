//! `prepbench whatif`: every strategy's prediction on other hardware, the recommendation and
//! how it moves with bandwidth and cores.

use std::fmt::Write;

use workloads::Codec;

use crate::results::{Calibration, MachineCalibration};

use super::validation::paper_comparison;
use super::*;

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
pub fn whatif_in(dir: &std::path::Path, request: &WhatifRequest) -> anyhow::Result<String> {
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
    let paper_name = |workload: &str| crate::analysis::report::paper_name_in(&manifest, workload);
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
        "# What if: {} ({} cores, CPU speed {}x this machine's, storage {storage})\n\nCold reads, codec {codec}, {} threads; predicted samples/s from this machine's calibration.\n",
        hw.name, hw.cores, hw.cpu_speed, hw.cores
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
                    sps(p.storage_bound),
                    sps(p.cpu_bound),
                    sps(p.predicted),
                    p.binds.to_string(),
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
                    "storage bound",
                    "CPU bound",
                    "predicted",
                    "binds"
                ],
                &rows
            ),
            ranked[0].0.strategy,
            sps(ranked[0].1.predicted)
        );
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
