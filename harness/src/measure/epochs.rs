//! The online phase of one run: E epochs, each after preparing the page cache, with a row
//! per epoch, its stages, system samples and skipped samples, and the null-I/O control of a
//! run with a consumer.

use std::path::PathBuf;

use anyhow::{bail, Context};
use workloads::{CacheMode, Codec, ConsumerSpec, OnError, StorageProfile, Strategy};

use crate::measure::app_cache::AppCache;
use crate::measure::cache;
use crate::measure::emulate::Throttle;
use crate::measure::online::{KeptProcess, OnlineInput, OnlineJob, OnlineResult};
use crate::measure::session::{Materialized, Session, MAX_COLD_RESIDENCY_PCT};
use crate::measure::verify::Verification;
use crate::measure::warnings::Warning;
use crate::results::{
    self, Bound, CacheState, ErrorRow, RunRow, SampleRow, StageRow, Tables, Verdict,
};

/// Where a run's samples come from and how it is measured.
pub struct RunSpec<'a> {
    pub run_id: String,
    pub strategy: &'a Strategy,
    /// `None` for `unprocessed` (raw files).
    pub stored: Option<&'a Materialized>,
    /// Of raw files, the first this many items (an epoch under a loader slower than the
    /// dataset was sized for: `sweep`'s epochs sized per loader); `None`: every item.
    pub items: Option<usize>,
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
    /// The loader that runs the online phase (`crate::measure::online::ENGINES`).
    pub loader: &'static dyn crate::measure::online::Engine,
    /// Its options as [`crate::measure::online::Engine::options`] spelled them out.
    pub loader_options: &'a str,
    /// Epochs served from a cache repeat their passes until they last this long
    /// (`OnlineJob::min_s`); cold epochs are sized by their store instead.
    pub min_epoch_s: Option<f64>,
    /// Each epoch stops taking samples once it has lasted this long (`OnlineJob::max_s`: a
    /// loader's probe); `None`: every epoch reads all of its input.
    pub max_epoch_s: Option<f64>,
    /// Called after each epoch's cache is prepared, right before its timing starts (`--ranks`
    /// passes an MPI barrier here, so every rank starts together).
    pub start_gate: Option<&'a dyn Fn()>,
    /// The memory, in MB, the epochs and their page cache may use (`--memory-limit-mb`; a
    /// memory cgroup, `memory_limit.rs`); `None`: the machine's.
    pub memory_limit_mb: Option<u64>,
}

impl RunSpec<'_> {
    /// The samples its store left out when it was made (`on_error: skip`); none for raw files.
    fn store_skipped(&self) -> &[results::Skipped] {
        self.stored.map_or(&[], |m| &m.manifest.skipped)
    }
}

/// Refuses the application cache for a strategy that stores nothing: the cache keeps stored
/// records, and raw files have none.
pub fn check_cache_mode(strategy: &Strategy, cache: CacheMode) -> anyhow::Result<()> {
    if cache == CacheMode::App && strategy.split == 0 {
        bail!(
            "the application cache keeps stored records, and `{}` stores none: use --cache \
             cold or warm for it",
            strategy.name
        );
    }
    Ok(())
}

/// What one run produced.
pub struct Measured {
    pub rows: Vec<RunRow>,
    /// Where each epoch's online time went, aligned with the epochs' `rows`.
    pub epoch_stages: Vec<Vec<crate::results::stages::Stage>>,
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
                crate::results::stages::rows(&row.run_id, row.epoch, stages, row.online_s)
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

/// The page-cache state at the start of one epoch.
struct CachePrep {
    state: CacheState,
    method: String,
    before_pct: f64,
    after_pct: f64,
}

impl Session {
    fn prepare_cache(
        &self,
        files: &[PathBuf],
        epoch: u64,
        mode: CacheMode,
        limit_mb: Option<u64>,
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
                // Under a memory limit the read takes the limit's worth of page cache, then
                // recycles the cgroup's own pages: that much is read first at most.
                let within = limit_mb.map(|mb| mb << 20);
                let ev = cache::evict_for_cold_read(files, self.evict, within)?;
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
            Some(m) => !m.backend.is_local(),
            None => !self.source.is_local(),
        }
    }

    /// Runs `spec.epochs` epochs of the online phase and, when asked, verifies the output:
    /// the checks, then each epoch (its cache prepared, run, recorded), then the null-I/O
    /// control of a run with a consumer, then verification.
    pub fn measure(&self, spec: &RunSpec) -> anyhow::Result<Measured> {
        let input = self.run_input(spec);
        self.check_run(spec)?;
        let mut measured = Measured {
            rows: Vec::new(),
            epoch_stages: Vec::new(),
            bounds: Vec::new(),
            samples: Vec::new(),
            errors: spec
                .store_skipped()
                .iter()
                .map(|s| s.row(&spec.run_id, None))
                .collect(),
            warnings: Vec::new(),
            verification: None,
        };
        let app_cache = crate::measure::app_cache::AppCache::new(spec.app_cache_bytes);
        // The last epoch's first sample, which the null-I/O control serves.
        let mut template = None;
        // Held over the epochs alone: eviction, reads and the loader's processes (one a run,
        // `kept`, ended before it) are inside the limit, verification is not.
        let limit = crate::measure::memory_limit::enter(spec.memory_limit_mb)?;
        let kept = KeptProcess::default();
        for epoch in 0..spec.epochs {
            let run = self.run_epoch(spec, &input, epoch, (&app_cache, &kept), &mut measured)?;
            if epoch + 1 == spec.epochs {
                template = run.result.template.clone();
            }
            record_epoch(self, spec, &input, run, &mut measured);
        }
        kept.end();
        drop(limit);
        if let (Some(consumer), Some(template), Some(last)) =
            (spec.consumer, template, measured.rows.last())
        {
            measured.rows.push(crate::measure::consumer::null_io_row(
                last, consumer, &template, spec.seed,
            ));
            measured.bounds.push(None);
        }
        if spec.verify {
            self.verify_run(spec, &mut measured)?;
        }
        Ok(measured)
    }

    /// What a run reads: the raw files, or its store.
    fn run_input<'s>(&'s self, spec: &RunSpec<'s>) -> RunInput<'s> {
        match spec.stored {
            None => {
                let read = &self.source.items[..self.raw_items(spec)];
                RunInput {
                    files: read.iter().map(|i| i.path.clone()).collect(),
                    storage_bytes: read.iter().map(|i| i.size_bytes).sum(),
                    online: OnlineInput::Raw,
                    codec: Codec::None,
                    shards: 0,
                }
            }
            Some(m) => RunInput {
                files: m.local_paths(),
                storage_bytes: m.manifest.part_bytes(),
                online: m.input(),
                codec: m.manifest.codec,
                // The store's layout, also where the run reads its first shards alone.
                shards: m.manifest.part_of.unwrap_or(m.manifest.shards.len()),
            },
        }
    }

    /// The raw items a run of `spec` reads.
    fn raw_items(&self, spec: &RunSpec) -> usize {
        spec.items
            .map_or(self.source.len(), |n| n.min(self.source.len()))
    }

    /// Refuses what the run cannot measure before any epoch: a store with left-out samples
    /// under `on_error: fail`, the application cache of raw files, and a remote input warmed
    /// or under emulated storage.
    fn check_run(&self, spec: &RunSpec) -> anyhow::Result<()> {
        let strategy = spec.strategy;
        let store_skipped = spec.store_skipped();
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
        check_cache_mode(strategy, spec.cache)?;
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
        Ok(())
    }

    /// The page cache at the start of `epoch`, prepared as the run's cache mode asks. Nothing
    /// in object storage is cached here; the service's own caches are not ours to drop
    /// (docs/cluster.md).
    fn epoch_cache(
        &self,
        spec: &RunSpec,
        files: &[PathBuf],
        epoch: u64,
    ) -> anyhow::Result<CachePrep> {
        if !self.input_is_remote(spec.stored) {
            return self.prepare_cache(files, epoch, spec.cache, spec.memory_limit_mb);
        }
        Ok(CachePrep {
            state: if spec.cache == CacheMode::App && epoch == 0 {
                CacheState::AppFill
            } else {
                CacheState::Cold
            },
            method: results::rows::EVICT_REMOTE.into(),
            before_pct: 0.0,
            after_pct: 0.0,
        })
    }

    /// One epoch: its cache prepared, its job set (the application cache filled or served, a
    /// cached epoch's floor), run on the job's engine while the system is sampled.
    fn run_epoch(
        &self,
        spec: &RunSpec,
        input: &RunInput,
        epoch: u64,
        (app_cache, kept): (&AppCache, &KeptProcess),
        measured: &mut Measured,
    ) -> anyhow::Result<EpochRun> {
        let strategy = spec.strategy;
        let mut prep = self.epoch_cache(spec, &input.files, epoch)?;
        let mut job = OnlineJob {
            engine: spec.loader,
            loader_options: spec.loader_options,
            consumer: spec.consumer,
            epoch,
            kept: Some(kept),
            ..self.online_job(strategy, input.online, spec.threads, spec.seed)
        };
        if spec.stored.is_none() {
            job.items = self.raw_items(spec);
        }
        job.max_s = spec.max_epoch_s;
        let app = spec.cache == CacheMode::App;
        if app && epoch == 0 {
            job.fill = Some(app_cache);
        } else if app && app_cache.fits() {
            prep.state = CacheState::App;
            job.input = OnlineInput::Memory(app_cache);
        } else if app {
            prep.state = CacheState::AppMiss;
            if epoch == 1 {
                measured.warnings.push(Warning::AppCacheTooSmall {
                    strategy: strategy.name.clone(),
                    limit_mb: app_cache.limit_bytes as f64 / 1e6,
                });
            }
        }
        if matches!(prep.state, CacheState::Warm | CacheState::App) {
            job.min_s = spec.min_epoch_s;
        }
        let valid = !(prep.state == CacheState::Cold && prep.after_pct > MAX_COLD_RESIDENCY_PCT);
        if !valid {
            let fs_type = input
                .files
                .first()
                .and_then(|f| crate::results::system::filesystem_of(f))
                .map(|f| f.fs_type)
                .unwrap_or_else(|| "unknown".into());
            measured.warnings.push(Warning::StillResident {
                strategy: strategy.name.clone(),
                pct: prep.after_pct,
                fs_type,
            });
        }
        // Outputs per source item: a fan-out step (NILM's windows) makes the kind's count.
        let per_item = match self.workload.fan_out_step() {
            Some(_) => datasets::find_kind(&self.workload.spec.dataset.kind)
                .map_or(1, |k| k.samples_per_file),
            None => 1,
        };
        let bar = self.progress.bar(
            (self.source.len() * per_item) as u64,
            &format!("{} t{} epoch {epoch}", strategy.name, spec.threads),
        );
        // A fresh emulated storage per epoch: its links start idle.
        let throttle = Throttle::new(spec.storage);
        job.throttle = throttle.as_ref();
        if let Some(gate) = spec.start_gate {
            gate();
        }
        let sampler = crate::measure::sysmon::Sampler::start(
            &self.source.root,
            crate::measure::sysmon::SAMPLE_PERIOD,
        );
        let restart = sampler.restarter();
        job.timed_start = Some(&restart);
        let result = crate::measure::online::run(&job, &bar)
            .with_context(|| format!("online phase of `{}`, epoch {epoch}", strategy.name))?;
        let device = sampler.device.clone();
        let system = sampler.finish();
        let (device_read_mb_s, cpu_busy_pct) = crate::measure::sysmon::means(&system);
        measured.samples.extend(crate::measure::sysmon::rows(
            &spec.run_id,
            Some(epoch),
            &device,
            &system,
        ));
        bar.finish_and_clear();
        Ok(EpochRun {
            epoch,
            result,
            prep,
            valid,
            device_read_mb_s,
            cpu_busy_pct,
        })
    }

    /// Checks the run's output against fully-online processing and marks its rows.
    fn verify_run(&self, spec: &RunSpec, measured: &mut Measured) -> anyhow::Result<()> {
        let outcome = self.verify(
            spec.strategy,
            (spec.stored, spec.items),
            spec.threads,
            spec.seed,
            (spec.loader, spec.loader_options),
        )?;
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
        Ok(())
    }
}

/// What a run reads, in the terms its rows record.
struct RunInput<'s> {
    /// The local files whose page cache is prepared (none for object storage).
    files: Vec<PathBuf>,
    storage_bytes: u64,
    online: OnlineInput<'s>,
    codec: Codec,
    shards: usize,
}

/// One epoch as run: its result, the cache it started from, whether it started cold enough to
/// count, and what the system did meanwhile.
struct EpochRun {
    epoch: u64,
    result: OnlineResult,
    prep: CachePrep,
    valid: bool,
    device_read_mb_s: Option<f64>,
    cpu_busy_pct: Option<f64>,
}

/// Records one epoch: where its time went, what bound it, its skipped samples and its row.
fn record_epoch(
    session: &Session,
    spec: &RunSpec,
    input: &RunInput,
    run: EpochRun,
    measured: &mut Measured,
) {
    let (strategy, epoch, result) = (spec.strategy, run.epoch, &run.result);
    let stages =
        crate::measure::attribution::stages(&result.stages, &session.workload, strategy.split);
    measured
        .bounds
        .push(crate::results::stages::classify(&stages).0);
    measured.epoch_stages.push(stages);
    measured.errors.extend(
        result
            .skipped
            .iter()
            .map(|s| s.row(&spec.run_id, Some(epoch))),
    );
    let skipped_samples = spec
        .store_skipped()
        .iter()
        .chain(&result.skipped)
        .map(|s| s.count)
        .sum::<u64>();
    // An epoch of no samples has no throughput to speak of, whatever its time.
    let delivered = result.samples > 0;
    if !delivered {
        measured.warnings.push(Warning::NothingDelivered {
            strategy: strategy.name.clone(),
            epoch,
            skipped: skipped_samples,
        });
    }
    let row = epoch_row(session, spec, input, &run, delivered, skipped_samples);
    measured.rows.push(row);
}

/// The runs.csv row of one epoch.
fn epoch_row(
    session: &Session,
    spec: &RunSpec,
    input: &RunInput,
    run: &EpochRun,
    delivered: bool,
    skipped_samples: u64,
) -> RunRow {
    let (strategy, result) = (spec.strategy, &run.result);
    let online_s = result.delta.wall_s;
    let training = result.consumer.as_ref();
    RunRow {
        run_id: spec.run_id.clone(),
        started_utc: results::utc_now(),
        workload: session.workload.spec.label(),
        strategy: strategy.name.clone(),
        split: strategy.split,
        codec: input.codec,
        shards: input.shards,
        threads: spec.threads,
        samples: result.samples,
        trial: spec.trial,
        epoch: run.epoch,
        cache: run.prep.state,
        seed: spec.seed,
        offline_s: spec.stored.map_or(0.0, |m| m.manifest.offline_s),
        offline_reused: spec.stored.is_some_and(|m| m.reused),
        storage_bytes: input.storage_bytes,
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
        evict_method: run.prep.method.clone(),
        residency_before_pct: run.prep.before_pct,
        residency_after_pct: run.prep.after_pct,
        valid: run.valid && delivered,
        verified: None,
        storage: spec.storage.name.clone(),
        loader: spec.loader.name().to_string(),
        loader_options: spec.loader_options.to_string(),
        memory_limit_mb: spec.memory_limit_mb,
        consumer: spec.consumer,
        au_pct: training.map(|m| m.au_pct(online_s)),
        stall_pct: training.map(|m| m.stall_pct(online_s)),
        first_batch_s: training.map(|m| m.first_batch_s),
        batch_wait_p50_ms: training.map(|m| m.wait_p50_ms),
        batch_wait_p99_ms: training.map(|m| m.wait_p99_ms),
        device_read_mb_s: run.device_read_mb_s,
        cpu_busy_pct: run.cpu_busy_pct,
        skipped_samples,
        first_sample_s: result.first_sample_s(),
        steady_sps: result.steady_sps(),
        foreign_load_pct: result.delta.foreign_load_pct(),
        steal_pct: result.delta.steal_pct(),
        passes: result.passes,
    }
}
