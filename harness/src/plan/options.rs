//! A sweep's options, as the command line and `reproduce` resolve them.

use workloads::{CacheMode, Codec};

use crate::analysis::cells::CellKey;
use crate::plan::settings::Settings;

/// Settings of a sweep; `None` takes the workload's `sweep:` default.
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    pub workload: String,
    pub strategies: Option<Vec<String>>,
    pub codecs: Option<Vec<Codec>>,
    pub threads: Option<Vec<usize>>,
    /// Thread counts below the most run only these strategies (`None`: every strategy at
    /// every count): a thread-scaling check without the whole matrix at every count.
    pub scaling_strategies: Option<Vec<String>>,
    pub cache: Option<Vec<CacheMode>>,
    /// The application cache (`--cache app`) runs only these strategies, at the most threads
    /// (`None`: every strategy that has a store, at every count): a cache check without the
    /// whole matrix twice.
    pub app_cache_strategies: Option<Vec<String>>,
    /// Cold runs of only these strategies go on to their page-cache epochs; the others' runs
    /// end after the cold one (`None`: every strategy runs every epoch): a page-cache check
    /// without a warm epoch of every strategy.
    pub page_cache_strategies: Option<Vec<String>>,
    pub trials: Option<usize>,
    /// Materializations per (strategy, codec); each is timed and recorded in `offline.csv`.
    pub offline_trials: usize,
    /// Add trials, one at a time, to settings whose 95 % CI half-width is over 5 % of the mean,
    /// up to this many; `None`: `trials` only.
    pub max_trials: Option<usize>,
    /// MB per dataset variant (see `sweep.dataset_mb`); `samples` wins when both are set.
    pub dataset_mb: Option<f64>,
    /// At most this many dataset variants, evenly spread with the first and last kept;
    /// `None`: all.
    pub variants: Option<usize>,
    /// Storage profiles to measure under (a sweep dimension); `None`: the workload's
    /// `sweep.storage`.
    pub storage: Option<Vec<String>>,
    /// Loaders to measure under (a sweep dimension: `native`, `torch`); `None`: `native`.
    pub loaders: Option<Vec<String>>,
    /// How each run is measured.
    pub settings: Settings,
    /// Calibrate the prediction model before the online runs (`calibrate.rs`): the machine
    /// (cached) and each (strategy, codec) not yet calibrated in the results folder.
    pub calibrate: bool,
    /// Measure the machine again instead of using its cached calibration.
    pub recalibrate: bool,
    /// Only calibrate (`prepbench calibrate`): no runs.
    pub calibrate_only: bool,
    /// Run only this shard's cells, into `OUT/shard-I-of-N` (`shard.rs`).
    pub shard: Option<crate::results::Shard>,
    /// At least so many trials of the settings behind some cells (`reproduce` settling a
    /// finding's check); when set, dataset variants that no target names are left alone.
    pub trials_at_least: Vec<TrialTarget>,
}

/// At least `trials` trials of the setting whose runs record the cell `key`.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialTarget {
    pub key: CellKey,
    pub trials: usize,
}

/// The epoch floor a sweep of your own pipeline gets unless told otherwise.
pub const USER_MIN_EPOCH_S: f64 = 1.0;

impl SweepOptions {
    /// A first sweep of your own pipeline that can be judged: for a workload that is not one of
    /// the paper's, epochs of at least [`USER_MIN_EPOCH_S`] unless `--min-epoch-s` or
    /// `--no-calibrate` says otherwise, and no more threads than this machine has cores unless
    /// `--threads` names them; each said on the terminal. prepbench's own workloads keep theirs.
    pub fn for_workload(
        &self,
        spec: &workloads::WorkloadSpec,
        progress: &crate::progress::Progress,
    ) -> SweepOptions {
        let mut opts = self.clone();
        // prepbench's own workloads (the paper's, the synthetic ones) keep their settings.
        if spec.paper.is_some() || spec.origin.file.starts_with("builtin:") {
            return opts;
        }
        if opts.settings.min_epoch_s.is_none() && opts.calibrate && !opts.calibrate_only {
            opts.settings.min_epoch_s = Some(USER_MIN_EPOCH_S);
            progress.note(&format!(
                "{}: epochs sized to last at least {USER_MIN_EPOCH_S} s (--min-epoch-s; \
                 --no-calibrate runs the samples as asked)",
                spec.name
            ));
        }
        if opts.threads.is_none() {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let asked = &spec.sweep.threads;
            let mut kept: Vec<usize> = asked.iter().copied().filter(|t| *t <= cores).collect();
            if kept.len() < asked.len() {
                if kept.is_empty() {
                    kept.push(cores);
                }
                progress.note(&format!(
                    "{}: threads {} (this machine has {cores} cores; --threads runs more)",
                    spec.name,
                    kept.iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
                opts.threads = Some(kept);
            }
        }
        opts
    }
}
