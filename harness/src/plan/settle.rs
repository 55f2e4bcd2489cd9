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
            out.push(Unsettled {
                claim: sub.id,
                subject: check.subject.clone(),
                targets,
                offline,
            });
        }
    }
    Ok(out)
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

/// Rounds of trials for the checks [`unsettled`] finds, each sweep asked again for the trials
/// of its own cells, until none is left, a round runs nothing, or [`SETTLE_ROUNDS`].
pub fn settle(
    planned: &[(String, SweepOptions)],
    sweeps: &mut [(String, SweepOutcome)],
    cap: usize,
    places: &Places,
    command_line: &[String],
) -> anyhow::Result<()> {
    for round in 1..=SETTLE_ROUNDS {
        let open = unsettled(&places.out, cap)?;
        if open.is_empty() {
            break;
        }
        places.progress.note(&format!(
            "reproduce: settling {} checks with more trials (round {round}): {}",
            open.len(),
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
mod tests {
    use super::*;
    use crate::plan::reproduce::{emulated_options, scale, sweep_options, ScaleName};

    #[test]
    fn another_loaders_cells_are_settled_by_its_own_sweep() {
        use crate::results::{CacheState, Condition};
        let quick = scale(ScaleName::Quick);
        let key = |loader: Option<&str>| CellKey {
            workload: "cv".into(),
            condition: Condition {
                storage: None,
                consumer: None,
                loader: loader.map(str::to_string),
                memory_mb: None,
            },
            split: 3,
            strategy: "resized".into(),
            codec: Codec::None,
            threads: 2,
            cache: CacheState::Cold,
            epoch: 0,
        };
        let native = sweep_options("cv", &quick, 0);
        let tf = SweepOptions {
            loaders: Some(vec!["tf-data".into()]),
            ..native.clone()
        };
        assert!(swept_by(&native, &key(None)));
        assert!(!swept_by(&native, &key(Some("tf-data"))));
        assert!(swept_by(&tf, &key(Some("tf-data"))));
        assert!(!swept_by(&tf, &key(None)));
    }

    /// A check about the offline phase (3d) is settled by materializations: its sweep is asked
    /// again for its cells' strategy and codecs only, with as many offline trials as the
    /// most-wanting cell needs.
    #[test]
    fn offline_checks_are_settled_by_more_materializations_of_their_cells_only() {
        use crate::results::{CacheState, Condition};
        let quick = scale(ScaleName::Quick);
        let emulated = emulated_options("cv2-png", &quick, 0);
        let target = |workload: &str, codec: Codec, trials: usize| TrialTarget {
            key: CellKey {
                workload: workload.into(),
                condition: Condition {
                    storage: Some("paper-ceph-hdd".into()),
                    consumer: None,
                    loader: None,
                    memory_mb: None,
                },
                split: 3,
                strategy: "resized".into(),
                codec,
                threads: 2,
                cache: CacheState::Cold,
                epoch: 0,
            },
            trials,
        };
        let gzip = Codec::Gzip { level: 6 };
        let targets = [
            target("cv2-png", Codec::None, 7),
            target("cv2-png", gzip, 9),
            target("cv", Codec::None, 12),
        ];
        let more = rematerialize(&emulated, &targets).unwrap();
        assert_eq!(more.strategies, Some(vec!["resized".to_string()]));
        assert_eq!(more.codecs.as_ref().map(Vec::len), Some(2));
        assert_eq!(more.offline_trials, 9);
        assert_eq!(more.storage, emulated.storage);
        // A sweep that recorded none of the cells is not asked.
        assert!(rematerialize(&sweep_options("cv2-png", &quick, 0), &targets).is_none());
    }

    /// One slow epoch among steady ones (as NILM `aggregated` on one thread in `quick-aj`:
    /// 135,000 samples/s beside 172,000 and 173,000, 6b left unsettled at 1.19x [0.87, 1.62])
    /// stays in the interval, weighing less the more trials its cell has, but is not expected
    /// again in every trial added: settling asks for trials within the cap, where expecting
    /// each at the spread with it asked for more and was refused.
    #[test]
    fn a_slow_epoch_does_not_make_settling_give_up() {
        use crate::analysis::findings::{Check, Expect, Verdict};
        use crate::analysis::stats::{LogEstimate, Summary};
        use crate::results::CacheState;
        let cell = |threads: usize| nilm_aggregated(threads, CacheState::Cold, 0);
        let one = Summary::of(&[110.0, 172.0, 173.0, 170.0, 171.0]).unwrap();
        let two = Summary::of(&[186.0, 190.0, 187.0, 192.0, 189.0]).unwrap();
        assert_eq!((&one.outliers, &two.outliers), (&vec![0], &vec![]));
        let expect = Expect::AtMost {
            holds: 1.3,
            opposite: 1.5,
        };
        let keys = vec![cell(1), cell(2)];
        let check = |one: &Summary| {
            let ratio = LogEstimate::of_mean(&two)
                .unwrap()
                .over(&LogEstimate::of_mean(one).unwrap());
            Check::of("x".into(), &Ok(ratio), expect, "x")
                .cells_read(keys.clone(), &[CacheState::Cold])
        };
        let recorded: HashMap<&CellKey, usize> = keys.iter().map(|k| (k, 5)).collect();
        let spread = |one: &Summary| -> HashMap<&CellKey, f64> {
            HashMap::from([(&keys[0], one.cv.unwrap()), (&keys[1], two.cv.unwrap())])
        };
        let planned = check(&one);
        assert_eq!(planned.verdict, Verdict::Unsettled, "{}", planned.measured);
        let factor = planned.trials_factor().expect("more trials decide it");
        let targets = allocated(
            &planned,
            factor,
            (&recorded, &spread(&one)),
            &Caps::flat(16),
        )
        .expect("a ratio of independent cells")
        .expect("within the cap");
        let of = |k: &CellKey| targets.iter().find(|t| &t.key == k).map(|t| t.trials);
        // The trials go to the cell with the slow epoch, where it weighs less the more it has.
        assert!(
            of(&keys[0]).is_some_and(|t| (6..=16).contains(&t)),
            "{targets:?}"
        );
        assert!(of(&keys[1]).is_some_and(|t| t < 8), "{targets:?}");
        // Each trial added expected at the spread with the slow epoch: past the cap, refused.
        let as_typical = Summary {
            typical_sd: one.sd,
            ..one.clone()
        };
        let unplanned = check(&as_typical);
        assert_eq!(unplanned.measured, planned.measured);
        let f = unplanned.trials_factor().expect("within 16x");
        assert!(f > 2.0 * factor, "{f} {factor}");
        let refused = allocated(
            &unplanned,
            f,
            (&recorded, &spread(&as_typical)),
            &Caps::flat(16),
        );
        assert_eq!(refused, Some(None));
    }

    /// A check of three trials a cell, one of them slow (as NILM `aggregated` on one thread in
    /// `quick-ao`: 6b unsettled at 1.25x [0.66, 2.38]) asks past the cap from the spread of
    /// three: its cells get five trials first, and are refused only once they have them.
    #[test]
    fn a_check_of_three_trials_gets_five_before_settling_gives_up() {
        use crate::analysis::findings::{Check, Expect, Verdict};
        use crate::analysis::stats::{LogEstimate, Summary};
        use crate::results::CacheState;
        let keys = vec![
            nilm_aggregated(1, CacheState::Cold, 0),
            nilm_aggregated(2, CacheState::Cold, 0),
        ];
        let check = |one: &[f64], two: &[f64]| {
            let mean = |v: &[f64]| LogEstimate::of_mean(&Summary::of(v).unwrap()).unwrap();
            let expect = Expect::AtMost {
                holds: 1.3,
                opposite: 1.5,
            };
            Check::of("x".into(), &Ok(mean(two).over(&mean(one))), expect, "x")
                .cells_read(keys.clone(), &[CacheState::Cold])
        };
        let recorded =
            |n: usize| -> HashMap<&CellKey, usize> { keys.iter().map(|k| (k, n)).collect() };
        let spread = |cv: f64| -> HashMap<&CellKey, f64> { keys.iter().map(|k| (k, cv)).collect() };
        let two = [186.0, 190.0, 187.0];
        let slow = check(&[110.0, 172.0, 173.0], &two);
        assert_eq!(slow.verdict, Verdict::Unsettled, "{}", slow.measured);
        let asked = slow.trials_factor().map(|f| f * 3.0);
        assert!(asked.is_none_or(|n| n > 16.0), "{asked:?}");
        let first = targets(&slow, false, (&recorded(3), &spread(0.3)), &Caps::flat(16))
            .expect("five first");
        assert_eq!(first.len(), 2);
        assert!(first.iter().all(|t| t.trials == 5), "{first:?}");
        // As many already, the spread they show stands: past the cap, refused.
        assert!(targets(&slow, false, (&recorded(5), &spread(0.3)), &Caps::flat(16)).is_none());
        // Materializations too; within a cap under five, the cap.
        let offline = targets(&slow, true, (&recorded(2), &spread(0.3)), &Caps::flat(4)).unwrap();
        assert!(offline.iter().all(|t| t.trials == 4), "{offline:?}");
        // A decided check, or one on its line, gets none.
        let none_for = |c: &Check, s: f64| {
            targets(c, false, (&recorded(3), &spread(s)), &Caps::flat(16)).is_none()
        };
        let decided = check(&[172.0, 173.0, 171.0], &two);
        assert_eq!(decided.verdict, Verdict::Reproduced, "{}", decided.measured);
        assert!(none_for(&decided, 0.01));
        let on_line = check(&[100.0, 160.0, 130.0], &[169.0, 170.0, 168.0]);
        assert!(!on_line.open_to_trials(), "{}", on_line.measured);
        assert!(none_for(&on_line, 0.2));
    }

    /// A check whose trials factor asks past the cap is given the cap where that still
    /// settles it, and nothing where it would not.
    #[test]
    fn trials_past_the_cap_are_held_to_it_where_that_still_settles() {
        use crate::analysis::findings::{Check, Expect};
        use crate::analysis::stats::{LogEstimate, Summary};
        use crate::results::CacheState;
        let cell = |cache: CacheState, epoch: u64| nilm_aggregated(2, cache, epoch);
        let keys = vec![cell(CacheState::Warm, 1), cell(CacheState::App, 1)];
        let expect = Expect::AtLeast {
            holds: 1.05,
            opposite: 0.95,
        };
        // `n` trials each of two cells, the second `ratio` times the first, each spread by
        // `spread` of its mean.
        let check = |ratio: f64, spread: f64, n: usize| {
            let trials = |mean: f64| {
                let values: Vec<f64> = (0..n)
                    .map(|i| mean * (1.0 + spread * if i % 2 == 0 { 1.0 } else { -1.0 }))
                    .collect();
                LogEstimate::of_mean(&Summary::of(&values).unwrap()).unwrap()
            };
            Check::of(
                "x".into(),
                &Ok(trials(ratio).over(&trials(1.0))),
                expect,
                "x",
            )
            .cells(keys.clone())
        };
        let recorded =
            |n: usize| -> HashMap<&CellKey, usize> { keys.iter().map(|k| (k, n)).collect() };
        // The spread that makes nine trials each ask for `factor` (bisected).
        let asking = |factor: f64, n: usize| {
            let (mut lo, mut hi) = (0.001, 1.0);
            for _ in 0..60 {
                let mid = (lo + hi) / 2.0;
                match check(1.22, mid, n).trials_factor() {
                    Some(f) if f < factor => lo = mid,
                    _ => hi = mid,
                }
            }
            check(1.22, lo, n)
        };
        // Nine trials asked for about 2x: 18 each, past 16; 16 still settles.
        let near = asking(2.0, 9);
        let f = near.trials_factor().unwrap();
        assert!(f > 16.0 / 9.0 && f < 2.0, "{f}");
        let targets =
            targets_within_cap(&near, f, &recorded(9), &Caps::flat(16)).expect("held to the cap");
        assert!(targets.iter().all(|t| t.trials == 16), "{targets:?}");
        // Within the cap: as asked.
        let targets = targets_within_cap(&near, f, &recorded(9), &Caps::flat(24)).unwrap();
        assert!(targets.iter().all(|t| t.trials == 18), "{targets:?}");
        // Four asked for about 10x: 16 grows them 4x, not enough.
        let far = asking(10.0, 4);
        let f = far.trials_factor().unwrap();
        assert!(f > 8.0, "{f}");
        assert!(targets_within_cap(&far, f, &recorded(4), &Caps::flat(16)).is_none());
        // Cells of 1 s epochs may take the time 16 trials of 3 s epochs take (48 trials, the
        // most three times the cap allows): they settle it.
        let short = Caps::flat(crate::analysis::findings::cell_cap(16, 1.0));
        let targets = targets_within_cap(&far, f, &recorded(4), &short).expect("within its time");
        assert!(
            targets.iter().all(|t| t.trials > 16 && t.trials <= 48),
            "{targets:?}"
        );
        // Cells at the cap already cannot grow.
        assert!(targets_within_cap(&near, f, &recorded(16), &Caps::flat(16)).is_none());
    }

    /// A cell's settling cap grows where its epochs are short (the cap's trials of 3 s
    /// epochs), up to three times the scale's; long epochs, or none recorded, keep it.
    #[test]
    fn short_epochs_get_more_settling_trials_in_the_same_time() {
        use crate::analysis::findings::cell_cap;
        // 4d's cells in quick-ba: epochs of 1.2-1.5 s, 29 trials wanted.
        assert_eq!(cell_cap(16, 1.3), 36);
        assert_eq!(cell_cap(16, 0.5), 48);
        for long in [3.0, 10.0, f64::NAN, 0.0] {
            assert_eq!(cell_cap(16, long), 16, "{long}");
        }
    }

    #[test]
    fn settling_trials_go_to_the_sweep_that_recorded_the_cell() {
        use crate::results::{CacheState, Condition};
        let quick = scale(ScaleName::Quick);
        let plain = sweep_options("synthetic-reading", &quick, 0);
        let emulated = emulated_options("cv", &quick, 0);
        let key = |workload: &str, storage: Option<&str>| CellKey {
            workload: workload.into(),
            condition: Condition {
                storage: storage.map(str::to_string),
                consumer: None,
                loader: None,
                memory_mb: None,
            },
            split: 2,
            strategy: "decoded".into(),
            codec: Codec::None,
            threads: 2,
            cache: CacheState::Cold,
            epoch: 0,
        };
        let variant = "synthetic-reading@mb_per_sample=0.01";
        assert!(swept_by(&plain, &key(variant, None)));
        assert!(!swept_by(&plain, &key(variant, Some("paper-ceph-hdd"))));
        assert!(swept_by(&emulated, &key("cv", Some("paper-ceph-hdd"))));
        assert!(!swept_by(&emulated, &key("cv", None)));
        assert!(!swept_by(
            &emulated,
            &key("cv2-jpg", Some("paper-ceph-hdd"))
        ));
        // The paper's protocol keeps its fixed trials.
        assert_eq!(quick.settle_trials, Some(16));
        assert_eq!(scale(ScaleName::Paper).settle_trials, None);
    }
}
