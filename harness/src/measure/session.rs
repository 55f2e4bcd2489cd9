//! One measured run and the `prepbench run` command. A [`Session`] holds a workload and its
//! dataset; [`Session::store`] is the offline phase (materialize steps `[0, split)`, or reuse a
//! complete store) and [`Session::measure`] runs E epochs of the online phase, each after
//! preparing the page cache, returning a row per epoch.

use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use datasets::{GenerateRequest, Source};
use workloads::{Codec, OnError, Strategy, Workload};

use crate::measure::cache::{self, EvictPolicy};
use crate::measure::materialize::{materialize, MaterializeJob};
use crate::measure::online::{OnlineInput, OnlineJob};
use crate::measure::verify::{reference, verify_against, Verification};
use crate::progress::Progress;
use crate::results::{self, InvocationEntry, Manifest, Place, WorkloadEntry};
use crate::store::{remote, LocalStore, StoreBackend, StoreKey, StoreManifest};

/// A cold epoch whose files are more resident than this after eviction is invalid.
pub const MAX_COLD_RESIDENCY_PCT: f64 = 5.0;

/// The dataset directory a workload uses under `data_dir` (either may be an `s3://` URL).
pub fn dataset_root(workload: &Workload, data_dir: &Path) -> anyhow::Result<PathBuf> {
    let spec = &workload.spec.dataset;
    Ok(match &spec.path {
        Some(path) if path.is_absolute() || datasets::files::is_remote(path) => path.clone(),
        Some(path) => datasets::files::join(data_dir, &path.to_string_lossy()),
        None => datasets::files::join(
            data_dir,
            &datasets::default_dir_name(datasets::find_kind(&spec.kind)?, &spec.options, spec.seed),
        ),
    })
}

/// What generating (or opening) the first `samples` of the workload's dataset at `root` asks
/// for, on `threads` threads.
pub fn generate_request(
    workload: &Workload,
    root: PathBuf,
    samples: usize,
    threads: usize,
) -> GenerateRequest {
    GenerateRequest {
        options: workload.spec.dataset.options.clone(),
        root,
        samples,
        seed: workload.spec.dataset.seed,
        threads,
    }
}

/// The first `samples` samples of the workload's dataset: a local one is generated first when
/// missing (on `threads` threads); one in object storage is listed there.
pub fn open_dataset(
    workload: &Workload,
    data_dir: &Path,
    samples: usize,
    threads: usize,
    progress: &Progress,
) -> anyhow::Result<Source> {
    let root = dataset_root(workload, data_dir)?;
    let (files, listed_root): (std::sync::Arc<dyn datasets::Files>, PathBuf) =
        if datasets::files::is_remote(&root) {
            let files = remote::RemoteFiles::new(remote::open(&root)?);
            let url = PathBuf::from(files.root());
            (std::sync::Arc::new(files), url)
        } else {
            (datasets::files::local(), root.clone())
        };
    let request = generate_request(workload, listed_root, samples, threads);
    let context = || {
        format!(
            "preparing dataset `{}` in {}",
            workload.spec.dataset.kind,
            root.display()
        )
    };
    // A dataset the workload names is the user's: read as it is, never generated into.
    if workload.spec.dataset.path.is_some() {
        let source = datasets::open_named(&files, &workload.spec.dataset.kind, &request)
            .with_context(context)?;
        return Ok(source);
    }
    // Files, as the generation counts them (a CREAM file is an hour, 360 samples).
    let to_write = datasets::generate::files_to_generate(&workload.spec.dataset.kind, &request)
        .with_context(context)?;
    let bar = progress.bar(
        to_write as u64,
        &format!("generate {}", workload.spec.dataset.kind),
    );
    let (source, generated) =
        datasets::prepare_counted(&files, &workload.spec.dataset.kind, &request, &|_| {
            bar.inc(1)
        })
        .with_context(context)?;
    bar.finish_and_clear();
    if generated > 0 {
        let kind = datasets::find_kind(&workload.spec.dataset.kind)?;
        progress.note(&format!(
            "generated {generated} files of `{}` samples, stand-ins for {} in its layout, in \
             {} (prepbench's data directory, --data-dir); to measure your own data, set the \
             workload's dataset.path",
            kind.name,
            kind.real,
            root.display()
        ));
    }
    Ok(source)
}

/// Resolves strategy names (`all` or none means every strategy), with the workload's errors.
pub fn resolve_strategies(workload: &Workload, names: &[String]) -> anyhow::Result<Vec<Strategy>> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(workload.spec.strategies());
    }
    names
        .iter()
        .map(|name| {
            workload
                .spec
                .strategy(name)
                .map_err(|e| anyhow::anyhow!("{}: {e}", workload.spec.origin))
        })
        .collect()
}

/// A materialized strategy ready to be read online.
pub struct Materialized {
    /// Where its shards are: a folder here, or object storage.
    pub backend: std::sync::Arc<dyn StoreBackend>,
    pub manifest: StoreManifest,
    pub reused: bool,
    /// System samples taken while it was materialized (empty when reused): device, samples.
    pub samples: (String, Vec<crate::measure::sysmon::SystemSample>),
}

impl Materialized {
    /// The shard files' paths, when they are on this machine (for page-cache control); empty
    /// in object storage.
    pub fn local_paths(&self) -> Vec<PathBuf> {
        self.manifest
            .shards
            .iter()
            .filter_map(|s| self.backend.local_path(&s.file))
            .collect()
    }

    /// The store's first `shards` shard files alone, and of each its first `per_shard`
    /// records where given, as a run reads them when its loader is slower than the store was
    /// sized for (`sweep`'s epochs sized per loader): the same records in the same files,
    /// fewer of them. `None` when that is the whole store.
    pub fn part(&self, shards: usize, per_shard: Option<u64>) -> Option<Materialized> {
        let all = self.manifest.shards.len();
        let most = self.manifest.shards.iter().map(|s| s.records).max();
        let capped = per_shard.filter(|&k| k > 0 && most.is_some_and(|m| k < m));
        if shards == 0 || (shards >= all && capped.is_none()) {
            return None;
        }
        let mut manifest = self.manifest.clone();
        manifest.part_of = Some(all);
        manifest.shards.truncate(shards);
        manifest.records_per_shard = capped;
        Some(self.listing(manifest))
    }

    /// The store's first `shards` shard files alone, read whole (`part`).
    pub fn first_shards(&self, shards: usize) -> Option<Materialized> {
        self.part(shards, None)
    }

    /// This part with every record of its shards, as `--verify` judges it: the records a
    /// capped part leaves out of its timed epochs are the same store's, and a check over its
    /// shards whole knows which items they hold (`StoreManifest::holds_item`).
    pub fn whole_shards(&self) -> Option<Materialized> {
        self.manifest.records_per_shard?;
        let mut manifest = self.manifest.clone();
        manifest.records_per_shard = None;
        Some(self.listing(manifest))
    }

    /// The same store's files listed by `manifest` (a part of them), without the samples
    /// its making took.
    fn listing(&self, manifest: StoreManifest) -> Materialized {
        Materialized {
            backend: self.backend.clone(),
            manifest,
            reused: self.reused,
            samples: (self.samples.0.clone(), Vec::new()),
        }
    }

    /// What the online phase reads.
    pub fn input(&self) -> OnlineInput<'_> {
        OnlineInput::Store {
            backend: self.backend.as_ref(),
            manifest: &self.manifest,
        }
    }
}

/// The application cache's default limit: half the memory available now.
pub fn default_app_cache_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| crate::results::system::meminfo_kib(&t, "MemAvailable:"))
        .map_or(4 << 30, |kb| kb * 1024 / 2)
}

/// The application cache's limit for `--app-cache-mb`.
pub fn app_cache_bytes(mb: Option<f64>) -> u64 {
    mb.map_or_else(default_app_cache_bytes, |mb| (mb.max(0.0) * 1e6) as u64)
}

/// A workload with its dataset prepared, and where stores go.
pub struct Session {
    pub workload: Workload,
    pub source: Source,
    /// The source's fingerprint (a stat of every file), computed once when the session opens.
    pub source_fingerprint: String,
    pub store_dir: PathBuf,
    pub evict: EvictPolicy,
    pub progress: Progress,
    /// What happens to a sample that cannot be read or processed (the workload's `on_error`
    /// unless the caller sets it).
    pub on_error: OnError,
    /// The object store holding the stores when `--store-dir` is `s3://...`; `store_dir` is
    /// then a local staging directory stores are made in before they are uploaded.
    pub remote: Option<std::sync::Arc<dyn remote::RemoteStore>>,
    /// Removes that staging directory when the session ends, however it ends.
    _staging: Option<crate::scratch::ScratchDir>,
    /// Fully-online reference hashes of `source` by (items, seed): every store of the source is
    /// verified against one reference run, not one each (`--ranks`, which swaps the source for
    /// a rank's part, never verifies).
    references: std::sync::Mutex<References>,
}

type References = std::collections::HashMap<(usize, u64), std::collections::HashMap<u64, u64>>;

impl Session {
    /// Loads the workload and opens (generating when needed) the first `samples` samples.
    pub fn open(
        workload: Workload,
        data_dir: &Path,
        samples: usize,
        threads: usize,
        store_dir: &Path,
        evict: EvictPolicy,
        progress: Progress,
    ) -> anyhow::Result<Session> {
        if samples == 0 || threads == 0 {
            bail!("samples and threads must be at least 1");
        }
        let source = open_dataset(&workload, data_dir, samples, threads, &progress)?;
        for def in &workload.steps {
            def.step
                .prepare()
                .map_err(|e| anyhow::anyhow!("preparing step `{}`: {}", def.name, e.message))?;
        }
        // Every Python step's callable imports (one interpreter for all), before anything runs.
        workload.check_python().map_err(|(index, e)| {
            let def = &workload.steps[index];
            let link = def.step.python_link().expect("a Python step");
            anyhow::anyhow!(
                "preparing step `{}`: cannot import `{}` (module search path {}, interpreter \
                 {}): {e}",
                def.name,
                link.function,
                link.search_path.display(),
                workloads::python::interpreter().display()
            )
        })?;
        let (remote, staging) = if datasets::files::is_remote(store_dir) {
            let staging =
                std::env::temp_dir().join(format!("prepbench-staging-{}", std::process::id()));
            (
                Some(remote::open(store_dir)?),
                Some(crate::scratch::ScratchDir::new(staging)),
            )
        } else {
            (None, None)
        };
        Ok(Session {
            on_error: workload.spec.on_error,
            workload,
            source_fingerprint: source.fingerprint(),
            source,
            store_dir: staging
                .as_ref()
                .map_or(store_dir, |s| s.path())
                .to_path_buf(),
            evict,
            progress,
            remote,
            _staging: staging,
            references: Default::default(),
        })
    }

    /// The offline phase: a complete matching store is reused unless `rematerialize`; a fresh
    /// one is made with `threads` threads, from evicted raw files when `cold`.
    pub fn store(
        &self,
        strategy: &Strategy,
        codec: Codec,
        shards: usize,
        threads: usize,
        rematerialize: bool,
        cold: bool,
    ) -> anyhow::Result<Materialized> {
        let layout = (shards, self.source.len());
        self.store_sized(strategy, codec, layout, threads, rematerialize, cold)
    }

    /// [`Session::store`] of `items` source items into `shards` shards: beyond the source's
    /// length the items cycle over it (distinct records, repeated content), below it the store
    /// holds the source's first `items`; the store manifest says how many source items it
    /// holds.
    pub fn store_sized(
        &self,
        strategy: &Strategy,
        codec: Codec,
        (shards, items): (usize, usize),
        threads: usize,
        rematerialize: bool,
        cold: bool,
    ) -> anyhow::Result<Materialized> {
        let items = items.max(1);
        let key = StoreKey {
            workload: self.workload.spec.label(),
            strategy: strategy.name.clone(),
            split: strategy.split,
            codec,
            shards,
            samples: items as u64,
            // A store of the source's first items depends on those alone: the same store of a
            // dataset that later grew (for the raw files' epochs) is found again.
            source_fingerprint: if items < self.source.len() {
                self.source.fingerprint_first(items)
            } else {
                self.source_fingerprint.clone()
            },
            prefix_fingerprint: self.workload.prefix_fingerprint(strategy.split),
        };
        // Made here (in the staging folder when it goes to object storage).
        let dir = key.dir(&self.store_dir);
        // One process makes a store at a time; another waits, then finds it complete.
        let _lock = match &self.remote {
            Some(_) => None,
            None => Some(store_lock(&dir, &|line| self.progress.note(line))?),
        };
        let backend: std::sync::Arc<dyn StoreBackend> = match &self.remote {
            Some(store) => std::sync::Arc::new(remote::RemoteShards {
                store: store.clone(),
                prefix: remote::prefix(&key),
            }),
            None => std::sync::Arc::new(LocalStore { dir: dir.clone() }),
        };
        if !rematerialize {
            if let Some(manifest) = backend.find_complete(&key)? {
                return Ok(Materialized {
                    backend,
                    manifest,
                    reused: true,
                    samples: Default::default(),
                });
            }
        }
        if cold && self.source.is_local() {
            // The offline phase reads the raw files from storage too: time it from a cold cache
            // (files in object storage are in no cache here).
            cache::evict(&self.source.paths(), self.evict)?;
        }
        let bar = self.progress.bar(
            items as u64,
            &format!("materialize {} {codec}", strategy.name),
        );
        let job = MaterializeJob {
            workload: &self.workload,
            source: &self.source,
            key: &key,
            dir: &dir,
            threads,
            on_error: self.on_error,
        };
        let sampler = crate::measure::sysmon::Sampler::start(
            &self.source.root,
            crate::measure::sysmon::SAMPLE_PERIOD,
        );
        let mut manifest = materialize(&job, &bar)
            .with_context(|| format!("materializing `{}` into {}", strategy.name, dir.display()))?;
        backend
            .publish(&dir, &mut manifest)
            .with_context(|| format!("putting `{}` in {}", strategy.name, backend.location()))?;
        let device = sampler.device.clone();
        let samples = (device, sampler.finish());
        bar.finish_and_clear();
        Ok(Materialized {
            backend,
            manifest,
            reused: false,
            samples,
        })
    }

    /// Checks, untimed, that `strategy` read from `stored` (the raw files when `None`: their
    /// first `raw_items`, as a run reads them, all of them when `None`) gives every sample
    /// exactly as fully-online processing does.
    pub fn verify(
        &self,
        strategy: &Strategy,
        (stored, raw_items): (Option<&Materialized>, Option<usize>),
        threads: usize,
        seed: u64,
        (engine, loader_options): (&'static dyn crate::measure::online::Engine, &str),
    ) -> anyhow::Result<Verification> {
        let whole = stored.and_then(Materialized::whole_shards);
        let stored = whole.as_ref().or(stored);
        let input = stored.map_or(OnlineInput::Raw, Materialized::input);
        // The reference reads the source once; a store that cycles over it is checked on its
        // first cycle (later cycles are the same offline steps on the same items), one that
        // holds the source's first items on those; the raw files on the first items a run reads.
        let items = match stored.map(|m| m.manifest.source_items as usize) {
            // (0: a store from before the manifest said.)
            Some(held) if held > 0 => held.min(self.source.len()),
            Some(_) => self.source.len(),
            None => raw_items.unwrap_or(usize::MAX).min(self.source.len()),
        };
        let job = OnlineJob {
            hash: true,
            items,
            engine,
            loader_options,
            ..self.online_job(strategy, input, threads, seed)
        };
        let mut references = self.references.lock().unwrap_or_else(|e| e.into_inner());
        let outcome = match references.entry((items, seed)) {
            Entry::Occupied(known) => verify_against(&job, known.get()),
            Entry::Vacant(slot) => {
                reference(&job).and_then(|made| verify_against(&job, slot.insert(made)))
            }
        };
        outcome.with_context(|| format!("verifying `{}`", strategy.name))
    }

    /// Epoch 0 of `strategy` reading `input` on `threads` threads: the source read once, not
    /// hashed, no cache filled, local storage, no consumer, the session's `on_error`.
    pub fn online_job<'s>(
        &'s self,
        strategy: &Strategy,
        input: OnlineInput<'s>,
        threads: usize,
        seed: u64,
    ) -> OnlineJob<'s> {
        OnlineJob {
            engine: crate::measure::online::default_engine(),
            workload: &self.workload,
            split: strategy.split,
            source: &self.source,
            items: self.source.len(),
            input,
            threads,
            seed,
            epoch: 0,
            hash: false,
            expected: None,
            fill: None,
            throttle: None,
            consumer: None,
            on_error: self.on_error,
            min_s: None,
            max_s: None,
            timed_start: None,
            loader_options: "",
            kept: None,
        }
    }

    /// The workload as the manifest records it.
    pub fn workload_entry(&self) -> WorkloadEntry {
        WorkloadEntry::of(&self.workload.spec)
    }

    /// Records an invocation of this session in `out`'s manifest: when it started, the command
    /// line, its places and the runs it recorded.
    pub fn record_invocation(
        &self,
        out: &Path,
        started_utc: String,
        command_line: Vec<String>,
        (data_dir, store_dir): (&Path, &Path),
        run_ids: Vec<String>,
    ) -> Result<(), results::ResultsError> {
        let invocation = InvocationEntry {
            started_utc,
            command_line,
            build: crate::results::system::build(),
            workload: String::new(),
            data_dir: Place::of(data_dir),
            dataset: Some(Place::of(&self.source.root)),
            dataset_generated: self
                .source
                .is_local()
                .then(|| self.source.root.join(datasets::MARKER).exists()),
            store_dir: Place::of(store_dir),
            can_drop_caches: cache::can_drop_caches(),
            evict_policy: format!("{:?}", self.evict).to_lowercase(),
            run_ids,
            shard: None,
            page_reporting_min_free_ms: crate::results::system::page_reporting_min_free_ms(),
            page_reporting: crate::measure::page_reporting::state(),
            loaders: crate::measure::online::take_stacks(),
        };
        Manifest::update(out, |m| {
            m.record_invocation(self.workload_entry(), invocation)
        })
        .map(drop)
    }
}

/// The lock of the local store `dir`: a hidden file beside it, waited for while another
/// process holds it.
fn store_lock(dir: &Path, waiting: &dyn Fn(&str)) -> anyhow::Result<crate::results::lock::Lock> {
    use crate::results::lock::{take, Busy};
    let Some(path) = crate::store::lock_path(dir) else {
        anyhow::bail!("{}: not a store directory", dir.display());
    };
    let parent = path.parent().expect("a lock file beside the store");
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    Ok(take(
        &path,
        &format!("the store {}", dir.display()),
        Busy::Wait,
        waiting,
    )?)
}

#[cfg(test)]
mod tests;
