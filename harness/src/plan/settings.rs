//! What `run` and `sweep` share: the measurement settings (resolved from the command line once,
//! `None` taking the workload's defaults) and the places results, datasets and stores live.

use std::path::PathBuf;

use workloads::{ConsumerSpec, OnError};

use crate::measure::cache::EvictPolicy;
use crate::measure::places::check_places;
use crate::measure::session::dataset_root;
use crate::progress::Progress;

/// How each run is measured, whatever the matrix around it.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Samples per run: the first N of the dataset; `None`: the workload's.
    pub samples: Option<usize>,
    /// Shards per materialized strategy; `None`: the workload's `sweep.shards`.
    pub shards: Option<usize>,
    /// Epochs per run; `None`: the workload's `sweep.epochs`.
    pub epochs: Option<usize>,
    /// Limit of the application cache in MB; `None`: half the memory available.
    pub app_cache_mb: Option<f64>,
    /// Seed of random online steps (and of a sweep's run order).
    pub seed: u64,
    /// Check each strategy's output against fully-online processing.
    pub verify: bool,
    /// Materialize again even when a complete matching store exists.
    pub rematerialize: bool,
    /// A simulated training consumer for every online run.
    pub consumer: Option<ConsumerSpec>,
    /// `fail` or `skip` bad samples; `None`: the workload's `on_error`.
    pub on_error: Option<OnError>,
    /// Size stores (and the dataset, for raw files) from the calibration so every epoch lasts
    /// at least this many seconds; `None`: the samples asked for, whatever the epoch length.
    pub min_epoch_s: Option<f64>,
    /// The options of the loaders that take them (`--loader-options`); `None`: their defaults.
    pub loader_options: Option<String>,
}

/// Where a run or sweep reads and writes.
#[derive(Clone, Debug)]
pub struct Places {
    /// The results folder.
    pub out: PathBuf,
    pub data_dir: PathBuf,
    /// The user's dataset (`--dataset`), in place of the workload's.
    pub dataset: Option<PathBuf>,
    pub store_dir: PathBuf,
    pub evict: EvictPolicy,
    pub progress: Progress,
}

impl Places {
    /// The workload `name_or_path`, reading `--dataset` when given, checked.
    /// A dataset the workload names must be there before anything is written (not even the
    /// results folder's lock).
    pub fn load_workload(&self, name_or_path: &str) -> anyhow::Result<workloads::Workload> {
        let workload = load_workload(name_or_path, self.dataset.as_deref())?;
        if workload.spec.dataset.path.is_some() {
            let root = dataset_root(&workload, &self.data_dir)?;
            if !datasets::files::is_remote(&root) {
                datasets::check_present(datasets::find_kind(&workload.spec.dataset.kind)?, &root)?;
            }
        }
        Ok(workload)
    }

    /// Refuses a results or store directory inside `workload`'s dataset, before anything is
    /// written: prepbench never writes into a dataset.
    pub fn check_outside_dataset(&self, workload: &workloads::Workload) -> anyhow::Result<()> {
        check_places(
            &dataset_root(workload, &self.data_dir)?,
            &[
                ("the results directory", &self.out),
                ("the store directory", &self.store_dir),
            ],
        )
    }
}
/// Loads a reference workload or a workload file, reading the dataset at `dataset` when given
/// (`--dataset`, in place of the file's `dataset.path`), and checks what it asks of its dataset
/// (a known kind, options the kind has, fields its steps read): what `validate` checks, so that
/// `run` and `sweep` refuse the same files before doing anything.
pub fn load_workload(
    name_or_path: &str,
    dataset: Option<&std::path::Path>,
) -> anyhow::Result<workloads::Workload> {
    let mut spec = workloads::load_spec(name_or_path)?;
    if let Some(path) = dataset {
        let path = if datasets::files::is_remote(path) {
            path.to_path_buf()
        } else {
            std::path::absolute(path)?
        };
        spec = spec.with_dataset(path);
    }
    datasets::check_workload(&spec)?;
    Ok(workloads::Workload::build(spec)?)
}
