//! `prepbench reproduce`: every reference workload swept at a named scale, then the report.
//! The scales are defined here and nowhere else.

use std::path::PathBuf;

use workloads::{CacheMode, Codec};

use crate::analysis::report::{write_report, ReportFiles};
use crate::plan::settings::Settings;
use crate::plan::sweep::{sweep, Places, SweepOptions, SweepOutcome};

/// How much of the paper's protocol a reproduction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleName {
    /// Minutes on a laptop: small subsets, 1-2 threads, no and gzip compression, 3 trials.
    Quick,
    /// An hour or so: larger subsets, 1-8 threads, every DEFLATE codec and zstd, 5 trials.
    Medium,
    /// The paper's protocol: 8000-sample subsets, 1-8 threads, GZIP and ZLIB, 5 trials, 5
    /// materializations.
    Paper,
}

/// The settings of one scale.
#[derive(Clone, Debug)]
pub struct Scale {
    pub samples: usize,
    /// Sample counts for dataset kinds whose samples are much larger (Cube++: 17 MB frames).
    pub samples_by_kind: &'static [(&'static str, usize)],
    pub trials: usize,
    pub threads: &'static [usize],
    pub codecs: &'static [&'static str],
    pub cache: &'static [CacheMode],
    pub epochs: usize,
    pub offline_trials: usize,
    /// MB per dataset variant of workloads that sweep dataset options (the synthetic sizes;
    /// the paper's datasets were about 15 GB each).
    pub dataset_mb: f64,
}

pub fn scale(name: ScaleName) -> Scale {
    match name {
        ScaleName::Quick => Scale {
            samples: 300,
            samples_by_kind: &[("cubepp-png", 24), ("cubepp-jpg", 24), ("cream", 720)],
            trials: 3,
            threads: &[1, 2],
            codecs: &["none", "gzip"],
            cache: &[CacheMode::Cold],
            epochs: 2,
            offline_trials: 1,
            dataset_mb: 48.0,
        },
        ScaleName::Medium => Scale {
            samples: 2000,
            samples_by_kind: &[("cubepp-png", 200), ("cubepp-jpg", 200)],
            trials: 5,
            threads: &[1, 2, 4, 8],
            codecs: &["none", "gzip", "zlib", "zstd"],
            cache: &[CacheMode::Cold],
            epochs: 2,
            offline_trials: 1,
            dataset_mb: 1000.0,
        },
        ScaleName::Paper => Scale {
            samples: 8000,
            samples_by_kind: &[("cubepp-png", 4890), ("cubepp-jpg", 4890)],
            trials: 5,
            threads: &[1, 2, 4, 8],
            codecs: &["none", "gzip", "zlib"],
            cache: &[CacheMode::Cold],
            epochs: 2,
            offline_trials: 5,
            dataset_mb: 15000.0,
        },
    }
}

impl Scale {
    /// Samples a workload reading `kind` uses at this scale.
    pub fn samples_for(&self, kind: &str) -> usize {
        self.samples_by_kind
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(self.samples, |(_, n)| *n)
    }
}

/// The sweep options of `workload` at `scale` (the workload's own strategies and shards).
pub fn sweep_options(workload: &str, s: &Scale, seed: u64) -> SweepOptions {
    let loaded = workloads::load(workload).ok();
    let kind = loaded
        .as_ref()
        .map(|w| w.dataset.kind.clone())
        .unwrap_or_default();
    let variants = loaded.is_some_and(|w| !w.dataset_variants().is_empty());
    SweepOptions {
        workload: workload.to_string(),
        codecs: Some(
            s.codecs
                .iter()
                .map(|c| c.parse::<Codec>().expect("scale codecs are valid"))
                .collect(),
        ),
        threads: Some(s.threads.to_vec()),
        cache: Some(s.cache.to_vec()),
        trials: Some(s.trials),
        // Dataset variants are sized in MB so every variant reads the same bytes.
        dataset_mb: variants.then_some(s.dataset_mb),
        offline_trials: s.offline_trials,
        settings: Settings {
            epochs: Some(s.epochs),
            samples: (!variants).then(|| s.samples_for(&kind)),
            seed,
            verify: true,
            ..Settings::default()
        },
        calibrate: true,
        ..Default::default()
    }
}

/// Workloads also swept under the paper's storage, emulated (`paper-ceph-hdd`), for finding 2:
/// reading many small raw files against the same bytes in record files. Only the two strategies
/// that finding compares, codec none, at the scale's most threads.
pub const EMULATED: [&str; 2] = ["cv", "cv2-png"];

/// The sweep options of `workload` under the emulated paper storage at `scale`.
pub fn emulated_options(workload: &str, s: &Scale, seed: u64) -> SweepOptions {
    SweepOptions {
        strategies: Some(vec!["unprocessed".into(), "concatenated".into()]),
        codecs: Some(vec![Codec::None]),
        threads: Some(vec![s.threads.iter().copied().max().unwrap_or(1)]),
        storage: Some(vec!["paper-ceph-hdd".into()]),
        ..sweep_options(workload, s, seed)
    }
}

pub struct Reproduction {
    pub sweeps: Vec<(String, SweepOutcome)>,
    pub report: ReportFiles,
}

/// Sweeps every reference workload at `name` into `places.out` and writes the report there.
pub fn reproduce(
    name: ScaleName,
    places: &Places,
    seed: u64,
    command_line: Vec<String>,
) -> anyhow::Result<Reproduction> {
    let s = scale(name);
    let mut sweeps = Vec::new();
    for (workload, _) in workloads::BUILTIN {
        places
            .progress
            .note(&format!("reproduce: sweeping `{workload}`"));
        let outcome = sweep(
            &sweep_options(workload, &s, seed),
            places,
            command_line.clone(),
        )?;
        sweeps.push((workload.to_string(), outcome));
    }
    for workload in EMULATED {
        places.progress.note(&format!(
            "reproduce: sweeping `{workload}` under the emulated paper-ceph-hdd storage"
        ));
        let outcome = sweep(
            &emulated_options(workload, &s, seed),
            places,
            command_line.clone(),
        )?;
        sweeps.push((format!("{workload} [storage paper-ceph-hdd]"), outcome));
    }
    let report = write_report(&places.out)?;
    Ok(Reproduction { sweeps, report })
}

pub fn default_out(name: ScaleName) -> PathBuf {
    PathBuf::from(format!(
        "results/local/reproduce-{}",
        format!("{name:?}").to_lowercase()
    ))
}
