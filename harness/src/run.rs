//! One measured run and the `prepbench run` command. A [`Session`] holds a workload and its
//! dataset; [`Session::store`] is the offline phase (materialize steps `[0, split)`, or reuse a
//! complete store) and [`Session::measure`] runs E epochs of the online phase, each after
//! preparing the page cache, returning a row per epoch.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use datasets::{GenerateRequest, Source};
use workloads::{CacheMode, Codec, OnError, Sample, StorageProfile, Strategy, Workload};

use crate::cache::{self, EvictPolicy};
use crate::emulate::Throttle;
use crate::execute::{run_online, OnlineInput, OnlineJob};
use crate::materialize::{materialize, MaterializeJob};
use crate::progress::Progress;
use crate::results::{
    self, Bound, CacheState, ErrorRow, InvocationEntry, Manifest, Place, RunRow, SampleRow,
    StageRow, Tables, Verdict, WorkloadEntry,
};
use crate::store::{self, remote, StoreKey, StoreManifest};
use crate::verify::{verify, Verification};
use crate::warnings::Warning;
use workloads::ConsumerSpec;

/// A cold epoch whose files are more resident than this after eviction is invalid.
pub const MAX_COLD_RESIDENCY_PCT: f64 = 5.0;

/// The dataset directory a workload uses under `data_dir` (either may be an `s3://` URL).
pub fn dataset_root(workload: &Workload, data_dir: &Path) -> anyhow::Result<PathBuf> {
    let spec = &workload.dataset;
    Ok(match &spec.path {
        Some(path) if path.is_absolute() || datasets::files::is_remote(path) => path.clone(),
        Some(path) => datasets::files::join(data_dir, &path.to_string_lossy()),
        None => datasets::files::join(
            data_dir,
            &datasets::default_dir_name(datasets::find_kind(&spec.kind)?, &spec.options, spec.seed),
        ),
    })
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
    let request = GenerateRequest {
        options: workload.dataset.options.clone(),
        root: listed_root,
        samples,
        seed: workload.dataset.seed,
        threads,
    };
    let bar = progress.bar(
        samples as u64,
        &format!("generate {}", workload.dataset.kind),
    );
    let source = datasets::prepare_in(&files, &workload.dataset.kind, &request, &|_| bar.inc(1))
        .with_context(|| {
            format!(
                "preparing dataset `{}` in {}",
                workload.dataset.kind,
                root.display()
            )
        })?;
    bar.finish_and_clear();
    Ok(source)
}

/// Resolves strategy names (`all` or none means every strategy), with the workload's errors.
pub fn resolve_strategies(workload: &Workload, names: &[String]) -> anyhow::Result<Vec<Strategy>> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(workload.strategies());
    }
    names
        .iter()
        .map(|name| {
            workload
                .strategy(name)
                .map_err(|e| anyhow::anyhow!("{}: {e}", workload.origin))
        })
        .collect()
}

/// A materialized strategy ready to be read online.
pub struct Materialized {
    pub dir: PathBuf,
    pub manifest: StoreManifest,
    pub reused: bool,
    /// System samples taken while it was materialized (empty when reused): device, samples.
    pub samples: (String, Vec<crate::sampler::SystemSample>),
    /// Where the shards are when the store is in object storage (`dir` is then only a name).
    pub remote: Option<remote::RemoteShards>,
}

/// How often the system is sampled during a phase.
const SAMPLE_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a run's samples come from and how it is measured.
pub struct RunSpec<'a> {
    pub run_id: String,
    pub strategy: &'a Strategy,
    /// `None` for `unprocessed` (raw files).
    pub stored: Option<&'a Materialized>,
    pub threads: usize,
    pub cache: CacheMode,
    pub epochs: u64,
    pub seed: u64,
    pub trial: usize,
    pub verify: bool,
    /// Memory the application cache (`--cache app`) may hold.
    pub app_cache_bytes: u64,
    /// The storage the online phase's reads are delayed to (`local`: not delayed).
    pub storage: &'a StorageProfile,
    /// A simulated training consumer, measured with its null-I/O control after the epochs.
    pub consumer: Option<ConsumerSpec>,
    /// Called after each epoch's cache is prepared, right before its timing starts (`--ranks`
    /// passes an MPI barrier here, so every rank starts together).
    pub start_gate: Option<&'a dyn Fn()>,
}

/// The application cache's default limit: half the memory available now.
pub fn default_app_cache_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(4 << 30, |kb| kb * 1024 / 2)
}

/// The application cache's limit for `--app-cache-mb`.
pub fn app_cache_bytes(mb: Option<f64>) -> u64 {
    mb.map_or_else(default_app_cache_bytes, |mb| (mb.max(0.0) * 1e6) as u64)
}

/// What one run produced.
pub struct Measured {
    pub rows: Vec<RunRow>,
    /// Where each epoch's online time went, aligned with the epochs' `rows`.
    pub epoch_stages: Vec<Vec<crate::attribution::Stage>>,
    /// What bound each epoch, aligned with `rows` (`None`: no time recorded, or the null-I/O
    /// control).
    pub bounds: Vec<Option<Bound>>,
    /// System samples of the online epochs.
    pub samples: Vec<SampleRow>,
    /// Samples skipped offline (in the store) and in each epoch.
    pub errors: Vec<ErrorRow>,
    pub warnings: Vec<Warning>,
    pub verification: Option<Verification>,
}

impl Measured {
    /// stages.csv rows of the epochs.
    pub fn stage_rows(&self) -> Vec<StageRow> {
        self.rows
            .iter()
            .zip(&self.epoch_stages)
            .flat_map(|(row, stages)| {
                crate::attribution::rows(&row.run_id, row.epoch, stages, row.online_s)
            })
            .collect()
    }

    /// Appends the run to `tables`: its system samples, stages and skipped samples first, its
    /// rows in runs.csv last, so that a run interrupted in between is not taken as done.
    pub fn append_to(&self, tables: &Tables) -> Result<(), results::ResultsError> {
        tables.samples.append(&self.samples)?;
        tables.stages.append(&self.stage_rows())?;
        tables.errors.append(&self.errors)?;
        tables.runs.append(&self.rows)
    }
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
}

/// The page-cache state at the start of one epoch.
struct CachePrep {
    state: CacheState,
    method: String,
    before_pct: f64,
    after_pct: f64,
}

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
            on_error: workload.on_error,
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
        let key = StoreKey {
            workload: self.workload.name.clone(),
            strategy: strategy.name.clone(),
            split: strategy.split,
            codec,
            shards,
            samples: self.source.len() as u64,
            source_fingerprint: self.source_fingerprint.clone(),
            prefix_fingerprint: self.workload.prefix_fingerprint(strategy.split),
        };
        let dir = key.dir(&self.store_dir);
        let remote = self.remote.as_ref().map(|store| remote::RemoteShards {
            store: store.clone(),
            prefix: remote::prefix(&key),
        });
        if !rematerialize {
            let found = match &remote {
                Some(r) => remote::find_complete(r, &key)?,
                None => store::find_complete(&dir, &key)?,
            };
            if let Some(manifest) = found {
                return Ok(Materialized {
                    dir,
                    manifest,
                    reused: true,
                    samples: Default::default(),
                    remote,
                });
            }
        }
        if cold && self.source.is_local() {
            // The offline phase reads the raw files from storage too: time it from a cold cache
            // (files in object storage are in no cache here).
            cache::evict(&self.source.paths(), self.evict)?;
        }
        let bar = self.progress.bar(
            self.source.len() as u64,
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
        let sampler = crate::sampler::Sampler::start(&self.source.root, SAMPLE_PERIOD);
        let mut manifest = materialize(&job, &bar)
            .with_context(|| format!("materializing `{}` into {}", strategy.name, dir.display()))?;
        if let Some(r) = &remote {
            // Made in the staging directory; uploaded now, the manifest last (with the upload
            // counted as offline writing time), then the staging copy removed.
            let start = std::time::Instant::now();
            let upload = || -> std::io::Result<()> {
                r.store.remove(&r.prefix)?;
                for shard in &manifest.shards {
                    r.store
                        .put_file(&dir.join(&shard.file), &r.key(&shard.file))?;
                }
                Ok(())
            };
            upload().with_context(|| format!("uploading `{}` to {}", strategy.name, r.url("")))?;
            let seconds = start.elapsed().as_secs_f64();
            manifest.offline_s += seconds;
            manifest.offline_writing_s += seconds;
            let text = serde_json::to_vec_pretty(&manifest)?;
            r.store
                .put(&r.key(store::STORE_MANIFEST), text)
                .with_context(|| format!("uploading the manifest to {}", r.url("")))?;
            // The staging directory held only this store.
            let _ = std::fs::remove_dir_all(&self.store_dir);
        }
        let device = sampler.device.clone();
        let samples = (device, sampler.finish());
        bar.finish_and_clear();
        Ok(Materialized {
            dir,
            manifest,
            reused: false,
            samples,
            remote,
        })
    }

    fn prepare_cache(
        &self,
        files: &[PathBuf],
        epoch: u64,
        mode: CacheMode,
    ) -> anyhow::Result<CachePrep> {
        if epoch > 0 {
            // Later epochs start from the cache the previous epoch left.
            let r = cache::residency(files)?.pct();
            return Ok(CachePrep {
                state: CacheState::Warm,
                method: "none".into(),
                before_pct: r,
                after_pct: r,
            });
        }
        Ok(match mode {
            CacheMode::Cold | CacheMode::App => {
                let ev = cache::evict(files, self.evict)?;
                CachePrep {
                    state: if mode == CacheMode::App {
                        CacheState::AppFill
                    } else {
                        CacheState::Cold
                    },
                    method: ev.method,
                    before_pct: ev.before.pct(),
                    after_pct: ev.after.pct(),
                }
            }
            CacheMode::Warm => {
                let before = cache::residency(files)?.pct();
                cache::prefetch(files)?;
                let after = cache::residency(files)?.pct();
                CachePrep {
                    state: CacheState::Warm,
                    method: "prefetch".into(),
                    before_pct: before,
                    after_pct: after,
                }
            }
        })
    }

    /// Whether a run reading `stored` (the raw files when `None`) reads from object storage.
    pub fn input_is_remote(&self, stored: Option<&Materialized>) -> bool {
        match stored {
            Some(m) => m.remote.is_some(),
            None => !self.source.is_local(),
        }
    }

    /// Runs `spec.epochs` epochs of the online phase and, when asked, verifies the output.
    pub fn measure(&self, spec: &RunSpec) -> anyhow::Result<Measured> {
        let strategy = spec.strategy;
        let (files, storage_bytes, input, codec, shards) = match spec.stored {
            None => (
                self.source.paths(),
                self.source.total_bytes(),
                OnlineInput::Raw,
                Codec::None,
                0,
            ),
            Some(m) => (
                m.manifest
                    .shards
                    .iter()
                    .map(|s| m.dir.join(&s.file))
                    .collect::<Vec<_>>(),
                m.manifest.storage_bytes(),
                OnlineInput::Store {
                    dir: &m.dir,
                    manifest: &m.manifest,
                    remote: m.remote.as_ref(),
                },
                m.manifest.codec,
                m.manifest.shards.len(),
            ),
        };
        let job = OnlineJob {
            workload: &self.workload,
            split: strategy.split,
            source: &self.source,
            input,
            threads: spec.threads,
            seed: spec.seed,
            epoch: 0,
            hash: false,
            fill: None,
            throttle: None,
            consumer: spec.consumer,
            on_error: self.on_error,
        };
        let store_skipped: &[results::Skipped] = spec.stored.map_or(&[], |m| &m.manifest.skipped);
        if let (OnError::Fail, Some(first)) = (self.on_error, store_skipped.first()) {
            bail!(
                "the store of `{}` was made with on_error: skip and left out {} samples (first: \
                 sample {} in {}, {}: {}); run with --on-error skip, or --rematerialize to fail \
                 on them",
                strategy.name,
                store_skipped.iter().map(|s| s.count).sum::<u64>(),
                first.sample,
                first.file,
                first.stage,
                first.message
            );
        }
        let store_skipped_count: u64 = store_skipped.iter().map(|s| s.count).sum();
        if spec.cache == CacheMode::App && strategy.split == 0 {
            bail!(
                "the application cache keeps stored records, and `{}` stores none: use \
                 --cache cold or warm for it",
                strategy.name
            );
        }
        let app_cache = crate::execute::AppCache::new(spec.app_cache_bytes);
        let mut measured = Measured {
            rows: Vec::new(),
            epoch_stages: Vec::new(),
            bounds: Vec::new(),
            samples: Vec::new(),
            errors: store_skipped
                .iter()
                .map(|s| s.row(&spec.run_id, None))
                .collect(),
            warnings: Vec::new(),
            verification: None,
        };
        // Outputs per source item: a fan-out step (NILM's windows) makes the kind's count.
        let per_item = match self.workload.fan_out_step() {
            Some(_) => {
                datasets::find_kind(&self.workload.dataset.kind).map_or(1, |k| k.samples_per_file)
            }
            None => 1,
        };
        // The last epoch's first sample, which the null-I/O control serves.
        let mut template = None;
        let remote = self.input_is_remote(spec.stored);
        if remote && spec.cache == CacheMode::Warm {
            bail!(
                "`{}` reads from object storage, which has no page cache to warm: use --cache \
                 cold (every epoch reads from the service) or app (samples kept in memory)",
                strategy.name
            );
        }
        if remote && !spec.storage.is_passthrough() {
            bail!(
                "storage profile `{}` is emulated over local files, and `{}` reads from object \
                 storage, measured as it is: use --storage local",
                spec.storage.name,
                strategy.name
            );
        }
        for epoch in 0..spec.epochs {
            // Nothing in object storage is cached here; the service's own caches are not ours
            // to drop (docs/cluster.md).
            let mut prep = if remote {
                CachePrep {
                    state: if spec.cache == CacheMode::App && epoch == 0 {
                        CacheState::AppFill
                    } else {
                        CacheState::Cold
                    },
                    method: results::rows::EVICT_REMOTE.into(),
                    before_pct: 0.0,
                    after_pct: 0.0,
                }
            } else {
                self.prepare_cache(&files, epoch, spec.cache)?
            };
            let app = spec.cache == CacheMode::App;
            let mut epoch_job = OnlineJob { epoch, ..job };
            if app && epoch == 0 {
                epoch_job.fill = Some(&app_cache);
            } else if app && app_cache.fits() {
                prep.state = CacheState::App;
                epoch_job.input = OnlineInput::Memory(&app_cache);
            } else if app {
                prep.state = CacheState::AppMiss;
                if epoch == 1 {
                    measured.warnings.push(Warning::AppCacheTooSmall {
                        strategy: strategy.name.clone(),
                        limit_mb: app_cache.limit_bytes as f64 / 1e6,
                    });
                }
            }
            let valid =
                !(prep.state == CacheState::Cold && prep.after_pct > MAX_COLD_RESIDENCY_PCT);
            if !valid {
                let fs_type = crate::system::filesystem_of(&files[0])
                    .map(|f| f.fs_type)
                    .unwrap_or_else(|| "unknown".into());
                measured.warnings.push(Warning::StillResident {
                    strategy: strategy.name.clone(),
                    pct: prep.after_pct,
                    fs_type,
                });
            }
            let bar = self.progress.bar(
                (self.source.len() * per_item) as u64,
                &format!("{} t{} epoch {epoch}", strategy.name, spec.threads),
            );
            // A fresh emulated storage per epoch: its links start idle.
            let throttle = Throttle::new(spec.storage);
            epoch_job.throttle = throttle.as_ref();
            if let Some(gate) = spec.start_gate {
                gate();
            }
            let sampler = crate::sampler::Sampler::start(&self.source.root, SAMPLE_PERIOD);
            let result = run_online(&epoch_job, &bar)
                .with_context(|| format!("online phase of `{}`, epoch {epoch}", strategy.name))?;
            let device = sampler.device.clone();
            let system = sampler.finish();
            let (device_read_mb_s, cpu_busy_pct) = crate::sampler::means(&system);
            measured.samples.extend(crate::sampler::rows(
                &spec.run_id,
                Some(epoch),
                &device,
                &system,
            ));
            bar.finish_and_clear();
            let online_s = result.delta.wall_s;
            let stages = crate::attribution::stages(&result.stages, &self.workload, strategy.split);
            measured
                .bounds
                .push(crate::attribution::classify(&stages).0);
            measured.epoch_stages.push(stages);
            if epoch + 1 == spec.epochs {
                template = result.template.clone();
            }
            let training = result.consumer.as_ref();
            measured.errors.extend(
                result
                    .stages
                    .skipped
                    .iter()
                    .map(|s| s.row(&spec.run_id, Some(epoch))),
            );
            let skipped_samples =
                store_skipped_count + result.stages.skipped.iter().map(|s| s.count).sum::<u64>();
            measured.rows.push(RunRow {
                run_id: spec.run_id.clone(),
                started_utc: results::utc_now(),
                workload: self.workload.name.clone(),
                strategy: strategy.name.clone(),
                split: strategy.split,
                codec,
                shards,
                threads: spec.threads,
                samples: result.samples,
                trial: spec.trial,
                epoch,
                cache: prep.state,
                seed: spec.seed,
                offline_s: spec.stored.map_or(0.0, |m| m.manifest.offline_s),
                offline_reused: spec.stored.is_some_and(|m| m.reused),
                storage_bytes,
                online_s,
                throughput_sps: if online_s > 0.0 {
                    result.samples as f64 / online_s
                } else {
                    0.0
                },
                read_bytes: result.delta.read_bytes,
                read_chars: result.delta.read_chars,
                output_bytes: result.output_bytes,
                cpu_user_s: result.delta.cpu_user_s,
                cpu_sys_s: result.delta.cpu_sys_s,
                evict_method: prep.method,
                residency_before_pct: prep.before_pct,
                residency_after_pct: prep.after_pct,
                valid,
                verified: None,
                storage: spec.storage.name.clone(),
                consumer: spec.consumer,
                au_pct: training.map(|m| m.au_pct(online_s)),
                stall_pct: training.map(|m| m.stall_pct(online_s)),
                first_batch_s: training.map(|m| m.first_batch_s),
                batch_wait_p50_ms: training.map(|m| m.wait_p50_ms),
                batch_wait_p99_ms: training.map(|m| m.wait_p99_ms),
                device_read_mb_s,
                cpu_busy_pct,
                skipped_samples,
            });
        }
        if let (Some(consumer), Some(template), Some(last)) =
            (spec.consumer, template, measured.rows.last())
        {
            measured
                .rows
                .push(null_io_row(last, consumer, &template, spec.seed));
            measured.bounds.push(None);
        }
        if spec.verify {
            let outcome = self.verify(strategy, spec.stored, spec.threads, spec.seed)?;
            let verdict = if outcome.passed() {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            measured
                .rows
                .iter_mut()
                .for_each(|r| r.verified = Some(verdict));
            measured.verification = Some(outcome);
        }
        Ok(measured)
    }

    /// Checks, untimed, that `strategy` read from `stored` (raw files when `None`) gives every
    /// sample exactly as fully-online processing does.
    pub fn verify(
        &self,
        strategy: &Strategy,
        stored: Option<&Materialized>,
        threads: usize,
        seed: u64,
    ) -> anyhow::Result<Verification> {
        let input = match stored {
            None => OnlineInput::Raw,
            Some(m) => OnlineInput::Store {
                dir: &m.dir,
                manifest: &m.manifest,
                remote: m.remote.as_ref(),
            },
        };
        let job = OnlineJob {
            workload: &self.workload,
            split: strategy.split,
            source: &self.source,
            input,
            threads,
            seed,
            epoch: 0,
            hash: true,
            fill: None,
            throttle: None,
            consumer: None,
            on_error: self.on_error,
        };
        verify(&job).with_context(|| format!("verifying `{}`", strategy.name))
    }

    /// The workload as the manifest records it.
    pub fn workload_entry(&self) -> WorkloadEntry {
        WorkloadEntry {
            name: self.workload.name.clone(),
            origin: self.workload.origin.clone(),
            yaml_hash: self.workload.yaml_hash(),
            yaml: self.workload.yaml.clone(),
        }
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
            build: crate::system::build(),
            workload: String::new(),
            data_dir: Place::of(data_dir),
            dataset: Some(Place::of(&self.source.root)),
            store_dir: Place::of(store_dir),
            can_drop_caches: cache::can_drop_caches(),
            evict_policy: format!("{:?}", self.evict).to_lowercase(),
            run_ids,
            shard: None,
        };
        Manifest::update(out, |m| {
            m.record_invocation(self.workload_entry(), invocation)
        })
        .map(drop)
    }
}

/// Batches the null-I/O control runs at the least, so that filling the first batch does not
/// weigh on its utilisation as it would over a run of one or two batches.
const MIN_CONTROL_BATCHES: u64 = 10;

/// The null-I/O control of a run with a consumer: the same consumer fed copies of one of the
/// run's samples from memory, as many as the run's last epoch had (at least
/// [`MIN_CONTROL_BATCHES`] batches). Its row follows the epochs (cache `null-io`, epoch after the
/// last) and keeps the run's storage and consumer labels, so reports show it beside the run,
/// though it reads nothing.
fn null_io_row(last: &RunRow, consumer: ConsumerSpec, template: &Sample, seed: u64) -> RunRow {
    let samples = last
        .samples
        .max(MIN_CONTROL_BATCHES * consumer.batch as u64);
    let (metrics, wall_s) = crate::consumer::null_io_control(consumer, template, samples, seed);
    RunRow {
        started_utc: results::utc_now(),
        epoch: last.epoch + 1,
        cache: CacheState::NullIo,
        samples,
        online_s: wall_s,
        throughput_sps: if wall_s > 0.0 {
            samples as f64 / wall_s
        } else {
            0.0
        },
        // It reads nothing: no storage behind its samples.
        storage_bytes: 0,
        read_bytes: 0,
        read_chars: 0,
        cpu_user_s: 0.0,
        cpu_sys_s: 0.0,
        evict_method: "none".into(),
        residency_before_pct: 0.0,
        residency_after_pct: 0.0,
        au_pct: Some(metrics.au_pct(wall_s)),
        stall_pct: Some(metrics.stall_pct(wall_s)),
        first_batch_s: Some(metrics.first_batch_s),
        batch_wait_p50_ms: Some(metrics.wait_p50_ms),
        batch_wait_p99_ms: Some(metrics.wait_p99_ms),
        device_read_mb_s: None,
        cpu_busy_pct: None,
        ..last.clone()
    }
}

/// `path` made absolute and `.`/`..` resolved lexically (it need not exist yet).
fn lexical_absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    // Resolve symlinks in the longest existing prefix, so a link into the dataset is caught.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => {
                rest.push(name.to_os_string());
                existing.pop();
            }
            None => break,
        }
    }
    let mut resolved = std::fs::canonicalize(&existing).unwrap_or(existing);
    resolved.extend(rest.iter().rev());
    resolved
}

/// Refuses a results or store directory inside the dataset directory: prepbench writes and
/// clears there, and the dataset must stay as the user gave it.
pub fn check_places(dataset: &Path, places: &[(&str, &Path)]) -> anyhow::Result<()> {
    if datasets::files::is_remote(dataset) {
        // Only another URL can be inside it.
        let location = |p: &Path| {
            let text = p.to_string_lossy();
            let url = text.split('?').next().unwrap_or_default();
            format!("{}/", url.trim_end_matches('/'))
        };
        let dataset_url = location(dataset);
        for (what, path) in places {
            if datasets::files::is_remote(path) && location(path).starts_with(&dataset_url) {
                bail!(
                    "{what} {} is inside the dataset {}: prepbench never writes into a dataset; \
                     choose a prefix outside it",
                    path.display(),
                    dataset.display()
                );
            }
        }
        return Ok(());
    }
    let dataset_abs = lexical_absolute(dataset);
    for (what, path) in places {
        if datasets::files::is_remote(path) {
            continue;
        }
        if lexical_absolute(path).starts_with(&dataset_abs) {
            bail!(
                "{what} {} is inside the dataset directory {}: prepbench never writes into a \
                 dataset; choose a directory outside it",
                path.display(),
                dataset.display()
            );
        }
    }
    Ok(())
}

/// A run id unique to this process and moment: `r<unix seconds>-<pid>`.
pub fn fresh_run_prefix() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("r{secs}-{}", std::process::id())
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub workload: String,
    /// Strategy names; empty means every strategy of the workload.
    pub strategies: Vec<String>,
    pub threads: usize,
    pub samples: Option<usize>,
    pub codec: Codec,
    pub shards: Option<usize>,
    pub cache: CacheMode,
    /// Limit of the application cache in MB; `None`: half the memory available.
    pub app_cache_mb: Option<f64>,
    pub epochs: Option<usize>,
    pub out: PathBuf,
    pub data_dir: PathBuf,
    pub store_dir: PathBuf,
    pub seed: u64,
    pub verify: bool,
    pub evict: EvictPolicy,
    pub rematerialize: bool,
    pub progress: Progress,
    /// The storage profile to emulate; `None`: the workload's first `sweep.storage` (`local`).
    pub storage: Option<String>,
    /// A simulated training consumer.
    pub consumer: Option<ConsumerSpec>,
    /// `fail` or `skip` bad samples; `None`: the workload's `on_error`.
    pub on_error: Option<OnError>,
}

/// What `prepbench run` produced.
pub struct RunOutcome {
    pub rows: Vec<RunRow>,
    /// What bound each row's epoch, aligned with `rows`.
    pub bounds: Vec<Option<Bound>>,
    pub warnings: Vec<Warning>,
    /// Strategies whose output differed from fully-online processing, with the sample ids.
    pub verify_failures: Vec<(String, Vec<u64>)>,
}

/// Warnings that depend only on the settings, raised before any work.
pub fn setting_warnings(
    cache: &[CacheMode],
    evict: EvictPolicy,
    shards: usize,
    max_threads: usize,
    any_stored: bool,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if cache.contains(&CacheMode::Cold) && evict == EvictPolicy::Auto && !cache::can_drop_caches() {
        warnings.push(Warning::NoDropCaches);
    }
    if shards < max_threads && any_stored {
        warnings.push(Warning::FewShards {
            shards,
            threads: max_threads,
        });
    }
    warnings
}

/// A run's settings with the workload's defaults applied.
pub struct Resolved {
    pub workload: Workload,
    pub strategies: Vec<Strategy>,
    pub samples: usize,
    pub shards: usize,
    pub epochs: u64,
    pub storage: StorageProfile,
}

impl Resolved {
    /// Resolves `opts` against its workload, refusing results or stores inside the dataset
    /// before anything is written.
    pub fn new(opts: &RunOptions) -> anyhow::Result<Resolved> {
        let workload = workloads::load(&opts.workload)?;
        check_places(
            &dataset_root(&workload, &opts.data_dir)?,
            &[
                ("the results directory", &opts.out),
                ("the store directory", &opts.store_dir),
            ],
        )?;
        let strategies = resolve_strategies(&workload, &opts.strategies)?;
        let storage_name = opts
            .storage
            .clone()
            .unwrap_or_else(|| workload.sweep.storage[0].clone());
        let storage = workload
            .storage_profile(&storage_name)
            .map_err(|e| anyhow::anyhow!("{}: {e}", workload.origin))?;
        Ok(Resolved {
            samples: opts.samples.unwrap_or(workload.dataset.samples),
            shards: opts.shards.unwrap_or(workload.sweep.shards).max(1),
            epochs: opts.epochs.unwrap_or(workload.sweep.epochs).max(1) as u64,
            strategies,
            storage,
            workload,
        })
    }
}

/// `prepbench run`: every requested strategy at one setting, rows appended to `opts.out`.
pub fn run(opts: &RunOptions, command_line: Vec<String>) -> anyhow::Result<RunOutcome> {
    let started_utc = results::utc_now();
    let Resolved {
        workload,
        strategies,
        samples,
        shards,
        epochs,
        storage,
    } = Resolved::new(opts)?;
    // Open the results first: a conflicting folder fails before any work is done.
    let tables = Tables::open(&opts.out)?;
    let mut session = Session::open(
        workload,
        &opts.data_dir,
        samples,
        opts.threads,
        &opts.store_dir,
        opts.evict,
        opts.progress,
    )?;
    if let Some(on_error) = opts.on_error {
        session.on_error = on_error;
    }
    let mut outcome = RunOutcome {
        rows: Vec::new(),
        bounds: Vec::new(),
        warnings: setting_warnings(
            &[opts.cache],
            opts.evict,
            shards,
            opts.threads,
            strategies.iter().any(|s| s.split > 0),
        ),
        verify_failures: Vec::new(),
    };
    let prefix = fresh_run_prefix();
    for (index, strategy) in strategies.iter().enumerate() {
        let stored = match strategy.split {
            0 => None,
            _ => Some(session.store(
                strategy,
                opts.codec,
                shards,
                opts.threads,
                opts.rematerialize,
                opts.cache == CacheMode::Cold,
            )?),
        };
        let spec = RunSpec {
            run_id: format!("{prefix}-{index}"),
            strategy,
            stored: stored.as_ref(),
            threads: opts.threads,
            cache: opts.cache,
            epochs,
            seed: opts.seed,
            trial: 0,
            verify: opts.verify,
            app_cache_bytes: app_cache_bytes(opts.app_cache_mb),
            storage: &storage,
            consumer: opts.consumer,
            start_gate: None,
        };
        let measured = session.measure(&spec)?;
        if let Some(m) = stored.as_ref() {
            let (device, samples) = &m.samples;
            tables
                .samples
                .append(&crate::sampler::rows(&spec.run_id, None, device, samples))?;
        }
        measured.append_to(&tables)?;
        if let Some(v) = measured.verification.filter(|v| !v.passed()) {
            outcome
                .verify_failures
                .push((strategy.name.clone(), v.mismatched));
        }
        outcome.warnings.extend(measured.warnings);
        outcome.rows.extend(measured.rows);
        outcome.bounds.extend(measured.bounds);
    }
    let run_ids = outcome
        .rows
        .iter()
        .map(|r| r.run_id.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    session.record_invocation(
        &opts.out,
        started_utc,
        command_line,
        (&opts.data_dir, &opts.store_dir),
        run_ids,
    )?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_stores_inside_the_dataset_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data/imagenet-seed0");
        std::fs::create_dir_all(&data).unwrap();
        let inside = data.join("results");
        let err = check_places(&data, &[("the results directory", &inside)]).unwrap_err();
        assert!(
            err.to_string().contains("inside the dataset directory"),
            "{err}"
        );
        // Through `..` and a symlink too.
        let sneaky = root.path().join("data/other/../imagenet-seed0/store");
        assert!(check_places(&data, &[("the store directory", &sneaky)]).is_err());
        let bucket = Path::new("s3://bucket/imagenet?range_mb=4");
        for inside in ["s3://bucket/imagenet/stores", "s3://bucket/imagenet"] {
            let err = check_places(bucket, &[("the store directory", Path::new(inside))]);
            assert!(err.unwrap_err().to_string().contains("inside the dataset"));
        }
        for outside in [
            "s3://bucket/imagenet-stores",
            "s3://other/imagenet/x",
            "store",
        ] {
            check_places(bucket, &[("the store directory", Path::new(outside))]).unwrap();
        }
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        assert!(check_places(&data, &[("out", &link.join("out"))]).is_err());
        // Beside it is fine, even with a name that starts the same.
        for ok in [
            "out",
            "data/imagenet-seed0-results",
            "data/imagenet-seed0/../x",
        ] {
            check_places(&data, &[("out", &root.path().join(ok))]).unwrap();
        }
    }
}
