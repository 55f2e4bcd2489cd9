//! Settling a reproduction's undecided checks: the checks whose 95 % interval straddles the
//! threshold their estimate lies clear of ([`unsettled`]), and rounds of more trials of the
//! cells behind them, each asked of the sweep that recorded them ([`settle`]): online trials,
//! or for a claim about the offline phase, materializations.

use std::collections::HashMap;
use std::path::Path;

use workloads::Codec;

use crate::analysis::cells::{CellKey, Results};
use crate::analysis::findings::{grown_trials, measured, Caps, SettleCounts, OFFLINE_CLAIMS};
use crate::analysis::report::views;
use crate::plan::options::TrialTarget;
use crate::plan::sweep::{sweep, Places, SweepOptions, SweepOutcome};

mod allocate;
use allocate::allocated;

/// Rounds of settling trials at most.
const SETTLE_ROUNDS: usize = 3;

/// A check of a finding that more trials can settle, and the trials the settings behind it
/// need.
#[derive(Clone, Debug)]
pub struct Unsettled {
    pub claim: &'static str,
    pub subject: String,
    pub targets: Vec<TrialTarget>,
    /// The targets count materializations (offline trials), not online trials: the check is
    /// about the offline phase.
    pub offline: bool,
    /// What its targets are expected to cost, s: the trials (materializations) they add,
    /// each at what its setting's recorded ones took ([`cost`]).
    pub seconds: f64,
}

/// The checks of the findings in `dir` whose 95 % interval straddles the threshold their
/// estimate lies clear of, each with the trials that should narrow it enough (every cell's
/// trials times the check's [`crate::analysis::findings::Check::trials_factor`], at least one
/// more), held to `cap` trials of a setting where that still settles the check and left as
/// they are where it would not ([`targets_within_cap`]).
pub fn unsettled(dir: &Path, cap: usize) -> anyhow::Result<Vec<Unsettled>> {
    let results = Results::load(dir)?;
    let cells = results.cells();
    let counts = SettleCounts::of(&cells);
    // Each cell's spread from trial to trial (its throughput's coefficient of variation, a
    // slow epoch included: the trials go where the spread is, and a slow epoch weighs less the
    // more trials its cell has).
    let spread: HashMap<&CellKey, f64> = cells
        .iter()
        .filter_map(|c| Some((&c.key, c.throughput.cv?)))
        .collect();
    let views = views(&results, &cells);
    let mut found = measured::judge(&results, &views);
    found.extend(
        measured::judge_loaders(&results, &views)
            .into_iter()
            .flat_map(|(_, f)| f),
    );
    let mut out = Vec::new();
    for sub in found.iter().flat_map(|f| &f.sub_claims) {
        let offline = OFFLINE_CLAIMS.contains(&sub.id);
        let recorded = counts.for_claim(sub.id);
        let caps = counts.caps(sub.id, cap);
        for check in &sub.checks {
            let Some(targets) = targets(check, offline, (recorded, &spread), &caps) else {
                continue;
            };
            let seconds = cost(&targets, offline, &cells);
            out.push(Unsettled {
                claim: sub.id,
                subject: check.subject.clone(),
                targets,
                offline,
                seconds,
            });
        }
    }
    Ok(out)
}

/// What a trial under a loader in Python costs beyond its epochs, s: the eviction with its
/// priming read, the ask of the loader's process and the row's writing. From one trial's
/// start to the next one's, less its epochs, tf.data's took 1.25-1.26 s on average in
/// `quick-cl` to `quick-cn` (105-121 trials each).
const TRIAL_OVERHEAD_S: f64 = 1.5;

/// What a trial under prepbench's own engine costs beyond its epochs, s: 0.21-0.26 s on
/// average in the same runs (147-174 trials each), where a loader's price charged it six to
/// seven times that.
const NATIVE_TRIAL_OVERHEAD_S: f64 = 0.5;

/// [`TRIAL_OVERHEAD_S`] or [`NATIVE_TRIAL_OVERHEAD_S`], by the loader that runs `setting`.
fn trial_overhead(setting: &CellKey) -> f64 {
    if setting.condition.loader.is_none() {
        NATIVE_TRIAL_OVERHEAD_S
    } else {
        TRIAL_OVERHEAD_S
    }
}

/// The setting whose trials record `key`'s cell, as settling's cost counts it: its cell with
/// the epoch and the cache's state left out, but whether the trials fill an application cache
/// (`app-fill`, then `app`) or read through the page cache (`cold`, then `warm`).
fn setting(key: &CellKey) -> (CellKey, bool) {
    let mut setting = key.clone();
    setting.epoch = 0;
    setting.cache = crate::results::CacheState::Cold;
    (setting, key.cache.of_app_cache_run())
}

/// What `targets` are expected to cost, s, from `cells` as recorded: each setting's trials
/// added, at its epochs' medians together and its loader's [`trial_overhead`]; for a check
/// about the offline phase (`offline`), each materialization added at the mean one's time.
fn cost(targets: &[TrialTarget], offline: bool, cells: &[crate::analysis::cells::Cell]) -> f64 {
    let mut added: HashMap<(CellKey, bool), usize> = HashMap::new();
    for t in targets {
        let Some(cell) = cells.iter().find(|c| c.key == t.key) else {
            continue;
        };
        let have = match &cell.offline {
            Some(o) if offline => o.n,
            _ => cell.rows.len(),
        };
        let more = added.entry(setting(&t.key)).or_default();
        *more = (*more).max(t.trials.saturating_sub(have));
    }
    added
        .iter()
        .map(|(of, &more)| {
            let each: f64 = if offline {
                (cells.iter())
                    .find(|c| setting(&c.key) == *of)
                    .and_then(|c| Some(c.offline.as_ref()?.mean))
                    .unwrap_or(0.0)
            } else {
                (cells.iter())
                    .filter(|c| setting(&c.key) == *of)
                    .map(|c| c.online.median)
                    .sum()
            };
            more as f64 * (each + trial_overhead(&of.0))
        })
        .sum()
}

/// Of `open`, the checks whose trials fit in `left` seconds, cheapest first, and the rest.
fn within_budget(mut open: Vec<Unsettled>, left: f64) -> (Vec<Unsettled>, Vec<Unsettled>) {
    open.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let mut spent = 0.0;
    let fits = open
        .iter()
        .take_while(|u| {
            spent += u.seconds;
            spent <= left
        })
        .count();
    let rest = open.split_off(fits);
    (open, rest)
}

/// Trials a cell has before settling gives up on a check behind it: of three, one slow epoch
/// sets the spread, and the typical spread leaves such an epoch out only where three values
/// are left beside it (`Summary::typical_sd`).
const SPREAD_TRIALS: usize = 5;

/// The trials each cell behind `check` should reach for it to settle (`offline`: the
/// materializations of a check about the offline phase), from each cell's `recorded` count
/// and `spread`: materializations grown alike; a ratio of independent cells where each needs
/// it ([`allocated`]); every cell alike otherwise ([`targets_within_cap`]). Where that asks past
/// `cap` (or past [`crate::analysis::findings::MAX_TRIALS_FACTOR`]) but more trials could still
/// decide the check, its cells of fewer than [`SPREAD_TRIALS`] get that many first, and the
/// next round plans from the spread they show.
fn targets(
    check: &crate::analysis::findings::Check,
    offline: bool,
    (recorded, spread): (&HashMap<&CellKey, usize>, &HashMap<&CellKey, f64>),
    cap: &Caps,
) -> Option<Vec<TrialTarget>> {
    let planned = check.trials_factor().and_then(|factor| {
        let allocation = (!offline)
            .then(|| allocated(check, factor, (recorded, spread), cap))
            .flatten();
        allocation.unwrap_or_else(|| targets_within_cap(check, factor, recorded, cap))
    });
    if planned.is_some() || !check.open_to_trials() {
        return planned;
    }
    let first = |key: &CellKey| SPREAD_TRIALS.min(cap.of(key));
    let few: Vec<TrialTarget> = (check.cells.iter())
        .filter(|key| recorded.get(key).is_some_and(|&n| n < first(key)))
        .map(|key| TrialTarget {
            key: key.clone(),
            trials: first(key),
        })
        .collect();
    (!few.is_empty()).then_some(few)
}

/// The trials each cell behind `check` should reach: its recorded count times `factor` (one
/// more at least). Where that passes `cap` for a cell, every cell is held to the cap, which
/// is taken if the least growth it leaves any cell would still settle the check without the
/// factor's 10 % margin (nine trials asked for 2.0x, given 16, grow 1.78x: enough), and
/// refused otherwise (four asked for 10x grow 4x: not enough, and the trials would be
/// spent for nothing). `None` when no cell can grow.
fn targets_within_cap(
    check: &crate::analysis::findings::Check,
    factor: f64,
    recorded: &HashMap<&CellKey, usize>,
    cap: &Caps,
) -> Option<Vec<TrialTarget>> {
    let wanted: Vec<(TrialTarget, usize)> = check
        .cells
        .iter()
        .filter_map(|key| {
            let n = *recorded.get(key)?;
            let trials = grown_trials(n, factor);
            Some((
                TrialTarget {
                    key: key.clone(),
                    trials,
                },
                n,
            ))
        })
        .collect();
    if wanted.is_empty() {
        return None;
    }
    if wanted.iter().all(|(t, _)| t.trials <= cap.of(&t.key)) {
        return Some(wanted.into_iter().map(|(t, _)| t).collect());
    }
    let growth = wanted
        .iter()
        .map(|(t, n)| t.trials.min(cap.of(&t.key)) as f64 / *n as f64)
        .fold(f64::INFINITY, f64::min);
    (growth > 1.0 && check.settles_with(growth)).then(|| {
        wanted
            .into_iter()
            .map(|(t, _)| TrialTarget {
                trials: t.trials.min(cap.of(&t.key)),
                ..t
            })
            .collect()
    })
}

/// Whether a cell was recorded by the sweep `opts` asks for: its workload (or a dataset
/// variant of it) under the same storage, memory limit and loader.
fn swept_by(opts: &SweepOptions, key: &CellKey) -> bool {
    let base = workloads::WorkloadLabel::parse(&key.workload).base;
    let storage = opts.storage.as_ref().and_then(|p| p.first());
    let loader = opts
        .loaders
        .as_ref()
        .and_then(|l| l.first())
        .filter(|l| !crate::measure::online::is_default(l));
    base == opts.workload
        && key.condition.storage.as_ref() == storage
        && key.condition.memory_mb == opts.settings.memory_limit_mb
        && key.condition.loader.as_ref() == loader
}

/// `1 check`, `3 checks`: the progress named one check "1 checks".
fn checks(n: usize) -> String {
    format!("{n} check{}", if n == 1 { "" } else { "s" })
}

/// Rounds of trials for the checks [`unsettled`] finds, each sweep asked again for the trials
/// of its own cells, until none is left, a round runs nothing, or [`SETTLE_ROUNDS`]. With a
/// `budget`, a round takes the checks whose expected trials fit in what is left of it,
/// cheapest first, and names those left open: the same command into the same folder settles
/// them further.
pub fn settle(
    planned: &[(String, SweepOptions)],
    sweeps: &mut [(String, SweepOutcome)],
    (cap, budget): (usize, Option<std::time::Duration>),
    places: &Places,
    command_line: &[String],
) -> anyhow::Result<()> {
    let deadline = budget.map(|b| std::time::Instant::now() + b);
    for round in 1..=SETTLE_ROUNDS {
        let mut open = unsettled(&places.out, cap)?;
        if let (Some(deadline), Some(budget)) = (deadline, budget) {
            let now = std::time::Instant::now();
            let left = deadline.saturating_duration_since(now).as_secs_f64();
            let (fits, over) = within_budget(open, left);
            if !over.is_empty() {
                // The cheaper checks go first: what is left open can need less than is left
                // of the budget, and more than is left beside them (a message read "about 224
                // s past what is left of it (240 s)").
                let beside = match fits.len() {
                    0 => String::new(),
                    n => format!(
                        " beside the {} taken this round (about {:.0} s)",
                        checks(n),
                        fits.iter().map(|u| u.seconds).sum::<f64>()
                    ),
                };
                places.progress.note(&format!(
                    "reproduce: settling stops at {:.0} minutes at this scale; {} {} left open, \
                     their trials (about {:.0} s) past what is left of it ({left:.0} s){beside}: \
                     {}. The same command into the same folder settles them further",
                    budget.as_secs_f64() / 60.0,
                    checks(over.len()),
                    if over.len() == 1 { "is" } else { "are" },
                    over.iter().map(|u| u.seconds).sum::<f64>(),
                    over.iter()
                        .map(|u| format!("{} {}", u.claim, u.subject))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
            open = fits;
        }
        if open.is_empty() {
            break;
        }
        places.progress.note(&format!(
            "reproduce: settling {} with more trials (round {round}): {}",
            checks(open.len()),
            open.iter()
                .map(|u| format!("{} {}", u.claim, u.subject))
                .collect::<Vec<_>>()
                .join("; ")
        ));
        let (offline, online): (Vec<Unsettled>, Vec<Unsettled>) =
            open.into_iter().partition(|u| u.offline);
        let targets: Vec<TrialTarget> = online.into_iter().flat_map(|u| u.targets).collect();
        let remake: Vec<TrialTarget> = offline.into_iter().flat_map(|u| u.targets).collect();
        let mut ran = 0;
        for ((_, opts), (_, outcome)) in planned.iter().zip(sweeps.iter_mut()) {
            let mine: Vec<TrialTarget> = targets
                .iter()
                .filter(|t| swept_by(opts, &t.key))
                .cloned()
                .collect();
            let mut asks: Vec<SweepOptions> = rematerialize(opts, &remake).into_iter().collect();
            if !mine.is_empty() {
                asks.push(SweepOptions {
                    trials_at_least: mine,
                    ..opts.clone()
                });
            }
            for ask in asks {
                let more = sweep(&ask, places, command_line.to_vec())?;
                // A rematerialization runs no online trial: its new stores are the progress.
                ran += more.ran.max(usize::from(ask.trials_at_least.is_empty()));
                outcome.ran += more.ran;
                outcome.warnings.extend(more.warnings);
                outcome.verify_failures.extend(more.verify_failures);
            }
        }
        if ran == 0 {
            break;
        }
    }
    Ok(())
}

/// The sweep `opts` asked again for the materializations `targets` want of the cells it
/// recorded: only their strategies and codecs, each to the most any of them wants (their
/// online cells are done, so only the new offline trials run); `None` when it recorded none.
fn rematerialize(opts: &SweepOptions, targets: &[TrialTarget]) -> Option<SweepOptions> {
    let mine: Vec<&TrialTarget> = targets.iter().filter(|t| swept_by(opts, &t.key)).collect();
    let most = mine.iter().map(|t| t.trials).max()?;
    let mut strategies: Vec<String> = mine.iter().map(|t| t.key.strategy.clone()).collect();
    let mut codecs: Vec<Codec> = mine.iter().map(|t| t.key.codec).collect();
    strategies.sort();
    strategies.dedup();
    codecs.sort_by_key(|c| c.to_string());
    codecs.dedup();
    Some(SweepOptions {
        strategies: Some(strategies),
        codecs: Some(codecs),
        offline_trials: most.max(opts.offline_trials),
        ..opts.clone()
    })
}

/// A cell of NILM `aggregated` on the local disk under prepbench's engine (the settling
/// tests' subject: 4c's and 6b's cells).
#[cfg(test)]
fn nilm_aggregated(threads: usize, cache: crate::results::CacheState, epoch: u64) -> CellKey {
    CellKey {
        workload: "nilm".into(),
        condition: crate::results::Condition::default(),
        split: 4,
        strategy: "aggregated".into(),
        codec: Codec::None,
        threads,
        cache,
        epoch,
    }
}

#[cfg(test)]
mod tests;
