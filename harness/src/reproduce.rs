//! `prepbench reproduce`: every reference workload swept at a named scale, then the report.
//! The scales are defined here and nowhere else.

use std::path::PathBuf;

use workloads::{CacheMode, Codec};

use crate::report::{write_report, ReportFiles};
use crate::sweep::{sweep, Places, SweepOptions, SweepOutcome};

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
    pub trials: usize,
    pub threads: &'static [usize],
    pub codecs: &'static [&'static str],
    pub cache: &'static [CacheMode],
    pub epochs: usize,
    pub offline_trials: usize,
}

pub fn scale(name: ScaleName) -> Scale {
    match name {
        ScaleName::Quick => Scale {
            samples: 300,
            trials: 3,
            threads: &[1, 2],
            codecs: &["none", "gzip"],
            cache: &[CacheMode::Cold],
            epochs: 2,
            offline_trials: 1,
        },
        ScaleName::Medium => Scale {
            samples: 2000,
            trials: 5,
            threads: &[1, 2, 4, 8],
            codecs: &["none", "gzip", "zlib", "zstd"],
            cache: &[CacheMode::Cold],
            epochs: 2,
            offline_trials: 1,
        },
        ScaleName::Paper => Scale {
            samples: 8000,
            trials: 5,
            threads: &[1, 2, 4, 8],
            codecs: &["none", "gzip", "zlib"],
            cache: &[CacheMode::Cold],
            epochs: 2,
            offline_trials: 5,
        },
    }
}

/// The sweep options of `workload` at `scale` (the workload's own strategies and shards).
pub fn sweep_options(workload: &str, s: &Scale, seed: u64) -> SweepOptions {
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
        epochs: Some(s.epochs),
        samples: Some(s.samples),
        offline_trials: s.offline_trials,
        seed,
        verify: true,
        ..Default::default()
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
    let report = write_report(&places.out)?;
    Ok(Reproduction { sweeps, report })
}

pub fn default_out(name: ScaleName) -> PathBuf {
    PathBuf::from(format!(
        "results/local/reproduce-{}",
        format!("{name:?}").to_lowercase()
    ))
}
