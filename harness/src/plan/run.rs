//! `prepbench run`: every requested strategy of a workload at one setting.

use workloads::{CacheMode, Codec, Workload};

use crate::measure::cache::{self, EvictPolicy};
use crate::measure::epochs::check_cache_mode;
use crate::measure::epochs::RunSpec;
use crate::measure::session::resolve_strategies;
use crate::measure::warnings::Warning;
use crate::plan::executor::Executor;
use crate::plan::matrix::Plan;
use crate::plan::options::SweepOptions;
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
    /// The loader of the online phase (`native`, `torch`).
    pub loader: String,
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

/// A run resolved against its workload: a plan of one cell per strategy (one codec, thread
/// count, cache mode and storage profile, one trial), with the workload's defaults applied.
pub struct Resolved {
    pub workload: Workload,
    pub plan: Plan,
}

impl Resolved {
    /// Resolves `opts` against its workload, refusing results or stores inside the dataset,
    /// and the application cache for a strategy that stores nothing, before anything is
    /// written.
    pub fn new(opts: &RunOptions, places: &Places) -> anyhow::Result<Resolved> {
        let workload = places.load_workload(&opts.workload, opts.settings.samples)?;
        places.check_outside_dataset(&workload)?;
        for strategy in resolve_strategies(&workload, &opts.strategies)? {
            check_cache_mode(&strategy, opts.cache)?;
        }
        let storage = opts
            .storage
            .clone()
            .unwrap_or_else(|| workload.spec.sweep.storage[0].clone());
        let plan = Plan::new(
            &workload,
            &SweepOptions {
                workload: opts.workload.clone(),
                strategies: Some(opts.strategies.clone()),
                codecs: Some(vec![opts.codec]),
                threads: Some(vec![opts.threads]),
                cache: Some(vec![opts.cache]),
                trials: Some(1),
                storage: Some(vec![storage]),
                loaders: Some(vec![opts.loader.clone()]),
                settings: opts.settings.clone(),
                ..SweepOptions::default()
            },
        )?;
        Ok(Resolved { workload, plan })
    }
}

/// `prepbench run`: every requested strategy at one setting, a plan of one cell per strategy
/// measured by the executor sweeps use, rows appended to `places.out`.
pub fn run(
    opts: &RunOptions,
    places: &Places,
    command_line: Vec<String>,
) -> anyhow::Result<RunOutcome> {
    let Resolved { workload, plan } = Resolved::new(opts, places)?;
    let _lock = crate::results::lock::folder(&places.out)?;
    let executor = Executor::open(
        workload,
        places,
        plan.samples,
        opts.threads,
        Some(plan.on_error),
        command_line,
    )?;
    let mut outcome = RunOutcome {
        rows: Vec::new(),
        bounds: Vec::new(),
        warnings: setting_warnings(
            &[opts.cache],
            places.evict,
            plan.shards,
            opts.threads,
            plan.cells.iter().any(|c| c.strategy.split > 0),
        ),
        verify_failures: Vec::new(),
    };
    // The plan's cells in order, each a fresh run: `run` always records new rows.
    let prefix = fresh_run_prefix();
    for (index, cell) in plan.cells.iter().enumerate() {
        let run_id = format!("{prefix}-{index}");
        let stored = match cell.strategy.split {
            0 => None,
            _ => Some(executor.session.store(
                &cell.strategy,
                cell.codec,
                plan.shards,
                cell.threads,
                opts.settings.rematerialize,
                cell.cache == CacheMode::Cold,
            )?),
        };
        if let Some(m) = &stored {
            executor.record_store(&run_id, m, None)?;
        }
        let spec = RunSpec {
            verify: opts.settings.verify,
            ..plan.spec(cell, run_id, stored.as_ref(), &opts.settings)
        };
        let measured = executor.measure(&spec, |_| {})?;
        if let Some(v) = measured.verification.filter(|v| !v.passed()) {
            let name =
                crate::measure::online::verify_label(&cell.strategy.name, cell.codec, cell.loader);
            outcome.verify_failures.push((name, v.mismatched));
        }
        outcome.warnings.extend(measured.warnings);
        outcome.rows.extend(measured.rows);
        outcome.bounds.extend(measured.bounds);
    }
    if let Some(warning) = short_epochs(outcome.rows.iter().map(|r| (r.samples, r.online_s))) {
        outcome.warnings.push(warning);
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

/// The warning for epochs under the floor a sweep judges (`analysis::cells::MIN_EPOCH_S`),
/// among `epochs` (samples delivered, online seconds) that delivered any; `None` where every
/// one lasted it.
fn short_epochs(epochs: impl Iterator<Item = (u64, f64)>) -> Option<Warning> {
    let floor_s = crate::analysis::cells::MIN_EPOCH_S;
    let timed: Vec<f64> = epochs.filter(|(n, _)| *n > 0).map(|(_, s)| s).collect();
    let short: Vec<f64> = timed.iter().copied().filter(|s| *s < floor_s).collect();
    let shortest_s = short.iter().copied().reduce(f64::min)?;
    Some(Warning::ShortEpochs {
        short: short.len(),
        epochs: timed.len(),
        shortest_s,
        floor_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_under_the_judged_floor_are_warned_of_and_counted() {
        assert_eq!(short_epochs([(100, 1.5), (100, 1.0)].into_iter()), None);
        // An epoch that delivered nothing is warned of on its own (NothingDelivered).
        assert_eq!(short_epochs([(0, 0.01), (100, 2.0)].into_iter()), None);
        let w = short_epochs([(100, 0.4), (100, 1.2), (100, 0.02)].into_iter()).unwrap();
        assert_eq!(
            w,
            Warning::ShortEpochs {
                short: 2,
                epochs: 3,
                shortest_s: 0.02,
                floor_s: 1.0
            }
        );
        let text = w.to_string();
        assert!(
            text.contains("2 of 3 epochs lasted under 1 s (the shortest 0.020 s)")
                && text.contains("--min-epoch-s 1"),
            "{text}"
        );
    }
}
