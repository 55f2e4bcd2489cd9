//! `prepbench run`: every requested strategy of a workload at one setting.

use workloads::{CacheMode, Codec, StorageProfile, Strategy, Workload};

use crate::measure::cache::{self, EvictPolicy};
use crate::measure::epochs::RunSpec;
use crate::measure::session::{app_cache_bytes, resolve_strategies};
use crate::measure::warnings::Warning;
use crate::plan::executor::Executor;
use crate::plan::settings::{Places, Settings};
use crate::results::{Bound, RunRow};

/// A run id unique to this process and moment: `r<unix seconds>-<pid>`.
pub fn fresh_run_prefix() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("r{secs}-{}", std::process::id())
}

/// What `prepbench run` runs: strategies of a workload at one setting.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub workload: String,
    /// Strategy names; empty means every strategy of the workload.
    pub strategies: Vec<String>,
    pub threads: usize,
    pub codec: Codec,
    pub cache: CacheMode,
    /// The storage profile to emulate; `None`: the workload's first `sweep.storage` (`local`).
    pub storage: Option<String>,
    pub settings: Settings,
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
    pub fn new(opts: &RunOptions, places: &Places) -> anyhow::Result<Resolved> {
        let workload = workloads::load(&opts.workload)?;
        places.check_outside_dataset(&workload)?;
        let strategies = resolve_strategies(&workload, &opts.strategies)?;
        let storage_name = opts
            .storage
            .clone()
            .unwrap_or_else(|| workload.sweep.storage[0].clone());
        let storage = workload
            .storage_profile(&storage_name)
            .map_err(|e| anyhow::anyhow!("{}: {e}", workload.origin))?;
        Ok(Resolved {
            samples: opts.settings.samples.unwrap_or(workload.dataset.samples),
            shards: opts.settings.shards.unwrap_or(workload.sweep.shards).max(1),
            epochs: opts.settings.epochs.unwrap_or(workload.sweep.epochs).max(1) as u64,
            strategies,
            storage,
            workload,
        })
    }
}

/// `prepbench run`: every requested strategy at one setting, rows appended to `places.out`.
pub fn run(
    opts: &RunOptions,
    places: &Places,
    command_line: Vec<String>,
) -> anyhow::Result<RunOutcome> {
    let Resolved {
        workload,
        strategies,
        samples,
        shards,
        epochs,
        storage,
    } = Resolved::new(opts, places)?;
    let executor = Executor::open(
        workload,
        places,
        samples,
        opts.threads,
        opts.settings.on_error,
        command_line,
    )?;
    let mut outcome = RunOutcome {
        rows: Vec::new(),
        bounds: Vec::new(),
        warnings: setting_warnings(
            &[opts.cache],
            places.evict,
            shards,
            opts.threads,
            strategies.iter().any(|s| s.split > 0),
        ),
        verify_failures: Vec::new(),
    };
    let prefix = fresh_run_prefix();
    for (index, strategy) in strategies.iter().enumerate() {
        let run_id = format!("{prefix}-{index}");
        let stored = match strategy.split {
            0 => None,
            _ => Some(executor.session.store(
                strategy,
                opts.codec,
                shards,
                opts.threads,
                opts.settings.rematerialize,
                opts.cache == CacheMode::Cold,
            )?),
        };
        if let Some(m) = &stored {
            executor.record_store(&run_id, m, None)?;
        }
        let spec = RunSpec {
            run_id,
            strategy,
            stored: stored.as_ref(),
            threads: opts.threads,
            cache: opts.cache,
            epochs,
            seed: opts.settings.seed,
            trial: 0,
            verify: opts.settings.verify,
            app_cache_bytes: app_cache_bytes(opts.settings.app_cache_mb),
            storage: &storage,
            consumer: opts.settings.consumer,
            start_gate: None,
        };
        let measured = executor.measure(&spec, |_| {})?;
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
    executor.finish(run_ids)?;
    Ok(outcome)
}
