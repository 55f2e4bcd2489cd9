//! Arguments of the commands that read what runs left: results folders (`compare`,
//! `calibrate`, `whatif`) and store directories (`store`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use workloads::Codec;

use super::parse::{count_in, mb_per_s, milliseconds, speed_factor};
use super::places::PlaceArgs;
use crate::plan::sweep::SweepOptions;
use crate::plan::Settings;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The results folder compared against (the denominator of B/A).
    pub a: PathBuf,
    /// The results folder compared (the numerator of B/A); may be A itself with --across.
    pub b: PathBuf,
    /// The setting the two folders differ in: cells pair when every other setting is equal.
    /// `machine` (the default) pairs cells with every setting equal.
    #[arg(long, value_enum, default_value = "machine")]
    pub across: crate::analysis::compare::Across,
    /// With --across: the value to take from A and the one from B, as A_VALUE,B_VALUE
    /// (`1,4` threads; `local,paper-ceph-hdd`; `none,zstd`). Needed when a folder holds several.
    #[arg(long, value_parser = value_pair)]
    pub values: Option<(String, String)>,
    /// Changes smaller than this are noise, as a fraction or a percentage (`0.02`, `2%`).
    #[arg(long, default_value = "2%", value_parser = fraction)]
    pub noise: f64,
    /// How the p-values are corrected for the number of cells compared: holm (family-wise
    /// error) or bh (Benjamini-Hochberg, false discovery rate).
    #[arg(long, value_enum, default_value = "holm")]
    pub correction: crate::analysis::compare::Correction,
    /// Print every pair as JSON instead of Markdown.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print every pair as CSV instead of Markdown.
    #[arg(long)]
    pub csv: bool,
    /// Also write a plot of the ratios with their CIs (SVG) to this file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// `A,B`: two values.
fn value_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once(',') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() && !b.contains(',') => {
            Ok((a.trim().to_string(), b.trim().to_string()))
        }
        _ => Err(format!(
            "`{text}` is not two values as A_VALUE,B_VALUE (such as `1,4`)"
        )),
    }
}

/// A fraction in [0, 1): `0.02` or `2%`.
fn fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}` is not a fraction (`0.02`) or a percentage (`2%`)"))?;
    if (0.0..1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("`{text}` is not between 0 and 100 %"))
    }
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A reference workload name (`cv`) or a workload YAML path.
    pub workload: String,
    /// Strategies, comma-separated (default: the workload's sweep.strategies, or all).
    #[arg(long, value_delimiter = ',')]
    pub strategies: Option<Vec<String>>,
    /// Codecs, comma-separated (default: the workload's sweep.codecs).
    #[arg(long, value_delimiter = ',')]
    pub codecs: Option<Vec<Codec>>,
    /// Samples: the first N of the dataset.
    #[arg(long, value_parser = count_in::<1, 100_000_000>)]
    pub samples: Option<usize>,
    /// Shards per materialized strategy.
    #[arg(long, value_parser = count_in::<1, 65_536>)]
    pub shards: Option<usize>,
    /// Measure the machine again instead of using its cached figures, and every strategy
    /// again.
    #[arg(long)]
    pub recalibrate: bool,
    #[command(flatten)]
    pub places: PlaceArgs,
}

impl CalibrateArgs {
    /// A sweep that only calibrates.
    pub fn options(&self) -> SweepOptions {
        SweepOptions {
            workload: self.workload.clone(),
            strategies: self.strategies.clone(),
            codecs: self.codecs.clone(),
            offline_trials: 1,
            settings: Settings {
                samples: self.samples,
                shards: self.shards,
                ..Settings::default()
            },
            calibrate: true,
            recalibrate: self.recalibrate,
            calibrate_only: true,
            ..SweepOptions::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// A results folder with a calibration (from `prepbench sweep` or `prepbench calibrate`).
    pub dir: PathBuf,
    /// A hardware profile: `paper` (8 cores, the paper's Ceph-over-HDD fio figures; compares
    /// with the paper's measured ranking) or a YAML file (name, cores, cpu_speed, storage).
    #[arg(long)]
    pub profile: Option<String>,
    /// Cores (and worker threads); default: the profile's, else this machine's.
    #[arg(long, value_parser = count_in::<1, 4_096>)]
    pub cores: Option<usize>,
    /// Read bandwidth in MB/s, per reader and in all.
    #[arg(long, value_parser = mb_per_s)]
    pub read_mbps: Option<f64>,
    /// Latency per 4 KiB request of files under 1 MiB (and once per larger file), in ms.
    #[arg(long, value_parser = milliseconds)]
    pub latency_ms: Option<f64>,
    /// CPU speed relative to the calibrated machine (2 = steps take half the time).
    #[arg(long, value_parser = speed_factor)]
    pub cpu_speed: Option<f64>,
    /// Codec of the stored strategies to predict (a level may be left out: `zstd` is
    /// `zstd:3`).
    #[arg(long, default_value = "none")]
    pub codec: workloads::Codec,
    /// Print every strategy's prediction as CSV (rank 1 is the recommendation) instead of
    /// Markdown.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Print every strategy's prediction as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum StoreWhat {
    /// Every store: workload, strategy, codec, shards, samples, size, state, age.
    List {
        /// The store directory runs used (`--store-dir`).
        #[arg(long, default_value = "store")]
        store_dir: PathBuf,
        /// Only this workload's stores.
        #[arg(long)]
        workload: Option<String>,
        /// Print the stores as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove the stores every given condition selects (at least one, or --all).
    #[command(after_help = "Examples:\n  \
        prepbench store remove --incomplete                 interrupted materializations\n  \
        prepbench store remove --stale                      stores of other prepbench versions\n  \
        prepbench store remove --workload cv --older-than 7d --dry-run")]
    Remove {
        /// The store directory runs used (`--store-dir`).
        #[arg(long, default_value = "store")]
        store_dir: PathBuf,
        /// Only this workload's stores.
        #[arg(long)]
        workload: Option<String>,
        /// Only this strategy's stores.
        #[arg(long)]
        strategy: Option<String>,
        /// Only stores last written at least this long ago (`7d`, `12h`, `30min`).
        #[arg(long, value_parser = humantime::parse_duration, value_name = "AGE")]
        older_than: Option<std::time::Duration>,
        /// Only stores whose materialization did not finish.
        #[arg(long)]
        incomplete: bool,
        /// Only stores written by another prepbench version (never reused) or damaged.
        #[arg(long)]
        stale: bool,
        /// Every store (what the other conditions select, when given with them).
        #[arg(long)]
        all: bool,
        /// Say what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}
