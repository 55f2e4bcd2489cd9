//! What `run` and `sweep` share: the measurement settings (resolved from the command line once,
//! `None` taking the workload's defaults) and the places results, datasets and stores live.

use std::collections::BTreeMap;
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
    /// The memory, in MB, each run's epochs and their page cache may use (a memory cgroup,
    /// `--memory-limit-mb`); `None`: the machine's.
    pub memory_limit_mb: Option<u64>,
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
    /// The workload `name_or_path`, reading `--dataset` when given, checked; `samples` is
    /// `--samples` where given. A dataset the workload names must be there before anything is
    /// written (not even the results folder's lock).
    pub fn load_workload(
        &self,
        name_or_path: &str,
        samples: Option<usize>,
    ) -> anyhow::Result<workloads::Workload> {
        let mut workload = load_workload(name_or_path, self.dataset.as_deref())?;
        if workload.spec.dataset.path.is_some() {
            let root = dataset_root(&workload, &self.data_dir)?;
            if !datasets::files::is_remote(&root) {
                let kind = datasets::find_kind(&workload.spec.dataset.kind)?;
                datasets::check_present(kind, &root)?;
                self.at_most_the_folder(&mut workload, kind, &root, samples)?;
            }
        }
        Ok(workload)
    }

    /// A folder of your own holds what it holds: a workload's `dataset.samples` beyond it reads
    /// every sample there, said on the terminal. `--samples` beyond it is refused here, before
    /// anything is written or said about `dataset.samples`, which it overrides: an explicit
    /// request.
    fn at_most_the_folder(
        &self,
        workload: &mut workloads::Workload,
        kind: &'static datasets::DatasetKind,
        root: &std::path::Path,
        samples: Option<usize>,
    ) -> anyhow::Result<()> {
        let files = datasets::files::local();
        let source = (kind.open)(&files, root, &workload.spec.dataset.options)?;
        if !source.left_out.is_empty() {
            const SHOWN: usize = 5;
            let more = source.left_out.len().saturating_sub(SHOWN);
            let count = match source.left_out.len() {
                1 => "1 entry matching the dataset's pattern is not a regular file and is".into(),
                n => format!(
                    "{n} entries matching the dataset's pattern are not regular files and are"
                ),
            };
            self.progress.note(&format!(
                "{}: {}: {count} left out: {}{}",
                workload.spec.name,
                root.display(),
                source.left_out[..source.left_out.len().min(SHOWN)].join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        let have = source.len() * kind.samples_per_file;
        if let Some(asked) = samples {
            anyhow::ensure!(
                asked <= have,
                "{}: holds {have} samples where --samples asks for {asked}: ask for at most \
                 {have}, or leave --samples out to read them all",
                root.display()
            );
            return Ok(());
        }
        let asked = workload.spec.dataset.samples;
        if have < asked {
            self.progress.note(&format!(
                "{}: {} holds {have} samples where dataset.samples asks for {asked}{}: reading \
                 all {have}",
                workload.spec.name,
                root.display(),
                if asked == workloads::spec::DEFAULT_SAMPLES {
                    " (its default, where the workload sets none)"
                } else {
                    ""
                }
            ));
            workload.spec.dataset.samples = have;
        }
        Ok(())
    }

    /// Refuses, before anything is written, a results or store directory inside `workload`'s
    /// dataset (prepbench never writes into a dataset), and a results folder that holds runs
    /// of a workload of the same name with other steps or another dataset (their strategies
    /// would pool under the same names).
    pub fn check_outside_dataset(&self, workload: &workloads::Workload) -> anyhow::Result<()> {
        check_places(
            &[dataset_root(workload, &self.data_dir)?.as_path()],
            &[
                ("the results directory", &self.out),
                ("the store directory", &self.store_dir),
            ],
        )?;
        crate::measure::places::check_results_folder(&self.out)?;
        self.check_same_definition(&workload.spec)
    }

    fn check_same_definition(&self, spec: &workloads::WorkloadSpec) -> anyhow::Result<()> {
        let Some(manifest) = crate::results::Manifest::read(&self.out)? else {
            return Ok(());
        };
        let label = spec.label();
        for entry in manifest.workloads.values().filter(|e| e.name == label) {
            let Some(what) = entry.spec.as_ref().and_then(|old| difference(old, spec)) else {
                continue;
            };
            let origin = if entry.origin.is_empty() {
                String::new()
            } else {
                format!(" (from {})", entry.origin)
            };
            anyhow::bail!(
                "{}: holds runs of workload `{label}`{origin} with other {what} than this one \
                 ({}): their strategies would pool under the same names. Use another --out, \
                 or give this workload another `name:`",
                self.out.display(),
                spec.origin.file
            );
        }
        Ok(())
    }
}

/// What makes two definitions of a workload name measure different things: their steps, or
/// their dataset (kind, place, seed, options); its sample count and sweep defaults do not.
fn difference(
    old: &workloads::WorkloadSpec,
    new: &workloads::WorkloadSpec,
) -> Option<&'static str> {
    let steps = |s: &workloads::WorkloadSpec| serde_json::to_value(&s.steps).ok();
    fn data(
        s: &workloads::WorkloadSpec,
    ) -> (
        &str,
        Option<&std::path::Path>,
        u64,
        &BTreeMap<String, String>,
    ) {
        let d = &s.dataset;
        (&d.kind, d.path.as_deref(), d.seed, &d.options)
    }
    if steps(old) != steps(new) {
        Some("steps")
    } else if data(old) != data(new) {
        Some("dataset (kind, path, seed or options)")
    } else {
        None
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
