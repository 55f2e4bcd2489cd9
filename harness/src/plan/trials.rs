//! Noise handled as benchmark tools do: after a sweep's planned trials, one more trial of every
//! setting whose throughput's 95 % CI is still wider than the target, round after round, up to
//! a maximum (`--max-trials`). Extra trials get the next trial index, so their run ids are
//! stable and a resumed sweep skips them like any other: a setting counts the trials recorded
//! beyond the plan's as its own.
//!
//! Besides, a sweep can be asked for at least so many trials of the settings behind some cells
//! ([`TrialTarget`]): `reproduce` asks it of the cells behind a finding's check whose interval
//! straddles its threshold while its estimate lies clear of it.

use std::collections::HashMap;

use workloads::{CacheMode, Workload};

use crate::analysis::cells::CellKey;
use crate::plan::matrix::{Cell, Plan};
use crate::plan::options::TrialTarget;
use crate::results::{self, CacheState};

/// Whether the runs of `cell` (a cell of `plan` for `workload`) record rows of the cell `key`:
/// the same workload, strategy, codec, threads, storage and consumer, and a cache mode whose
/// epochs start in `key`'s cache state.
pub fn feeds(plan: &Plan, workload: &str, cell: &Cell, key: &CellKey) -> bool {
    let cache = match key.cache {
        CacheState::App | CacheState::AppFill | CacheState::AppMiss => cell.cache == CacheMode::App,
        CacheState::Cold => cell.cache == CacheMode::Cold,
        CacheState::Warm => cell.cache != CacheMode::App,
        CacheState::NullIo => plan.consumer.is_some(),
    };
    key.workload == workload
        && key.strategy == cell.strategy.name
        && key.codec == cell.codec
        && key.threads == cell.threads
        && key
            .condition
            .storage
            .as_deref()
            .unwrap_or(workloads::storage::LOCAL)
            == cell.storage.name
        && key.condition.consumer == plan.consumer
        && cache
}

/// The cells to add to `plan` (of `workload`) so that every setting some target's cell comes
/// from has that target's trials: trial indices from the plan's count up.
pub fn targeted(plan: &Plan, workload: &str, targets: &[TrialTarget]) -> Vec<Cell> {
    let mut extra = Vec::new();
    for (cell, planned) in settings(plan) {
        let want = targets
            .iter()
            .filter(|t| feeds(plan, workload, &cell, &t.key))
            .map(|t| t.trials)
            .max()
            .unwrap_or(0);
        extra.extend((planned..want).map(|trial| Cell {
            trial,
            ..cell.clone()
        }));
    }
    extra
}

/// Each setting of `plan` (a cell but for its trial) once, with its number of planned trials.
fn settings(plan: &Plan) -> Vec<(Cell, usize)> {
    let mut settings: Vec<(Cell, usize)> = Vec::new();
    for cell in &plan.cells {
        let same = |c: &Cell| {
            Cell {
                trial: 0,
                ..c.clone()
            } == Cell {
                trial: 0,
                ..cell.clone()
            }
        };
        match settings.iter_mut().find(|(c, _)| same(c)) {
            Some((_, n)) => *n = (*n).max(cell.trial + 1),
            None => settings.push((cell.clone(), cell.trial + 1)),
        }
    }
    settings
}

/// A setting's 95 % CI half-width, as a share of its mean, that needs no further trial.
pub const TARGET_CI_HALF_WIDTH: f64 = 0.05;

/// One more trial of each setting of `plan` (a cell but for its trial) with fewer than `max`
/// trials whose throughput's 95 % CI, in any epoch, is wider than [`TARGET_CI_HALF_WIDTH`] of
/// its mean, judged on the rows recorded so far.
pub fn more_trials(
    plan: &Plan,
    workload: &Workload,
    seed: u64,
    rows: &[results::RunRow],
    max: usize,
) -> Vec<Cell> {
    let mut by_id: HashMap<&str, Vec<&results::RunRow>> = HashMap::new();
    for row in rows {
        by_id.entry(row.run_id.as_str()).or_default().push(row);
    }
    let id_of = |cell: &Cell, trial: usize| {
        plan.run_id(
            workload,
            seed,
            &Cell {
                trial,
                ..cell.clone()
            },
        )
    };
    let mut extra = Vec::new();
    for (cell, planned) in settings(plan) {
        // Trials recorded beyond the plan (an earlier round, or a sweep resumed) count too.
        let mut n = planned;
        while by_id.contains_key(id_of(&cell, n).as_str()) {
            n += 1;
        }
        if n >= max {
            continue;
        }
        let mut by_epoch: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
        for trial in 0..n {
            for row in by_id
                .get(id_of(&cell, trial).as_str())
                .into_iter()
                .flatten()
            {
                by_epoch
                    .entry(row.epoch)
                    .or_default()
                    .push(row.throughput_sps);
            }
        }
        let noisy = by_epoch.values().any(|values| {
            crate::analysis::stats::Summary::of(values)
                .ok()
                .and_then(|s| Some((s.ci95?, s.mean)))
                .is_some_and(|((lo, hi), mean)| {
                    mean > 0.0 && (hi - lo) / 2.0 / mean > TARGET_CI_HALF_WIDTH
                })
        });
        if noisy {
            extra.push(Cell { trial: n, ..cell });
        }
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sweep::SweepOptions;

    #[test]
    fn noisy_settings_get_one_more_trial_up_to_the_maximum() {
        let cv = workloads::load("cv").unwrap();
        // cv's own codecs (none) and cache modes (cold); two strategies, one thread count.
        let opts = SweepOptions {
            strategies: Some(vec!["resized".into(), "decoded".into()]),
            threads: Some(vec![2]),
            trials: Some(3),
            ..Default::default()
        };
        let mut plan = Plan::new(&cv, &opts).unwrap();
        let row = |plan: &Plan, cell: &Cell, epoch: u64, sps: f64| results::RunRow {
            run_id: plan.run_id(&cv, 0, cell),
            epoch,
            throughput_sps: sps,
            ..Default::default()
        };
        // resized is steady (within 1 %); decoded's epoch 1 varies by 30 %.
        let mut rows = Vec::new();
        for cell in &plan.cells {
            let t = cell.trial as f64;
            let (e0, e1) = if cell.strategy.name == "resized" {
                (1000.0 + t, 1200.0 - t)
            } else {
                (500.0 + t, 400.0 + 60.0 * t)
            };
            rows.push(row(&plan, cell, 0, e0));
            rows.push(row(&plan, cell, 1, e1));
        }
        let extra = more_trials(&plan, &cv, 0, &rows, 5);
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert_eq!(
            (extra[0].strategy.name.as_str(), extra[0].trial),
            ("decoded", 3)
        );
        // At the maximum, no more.
        assert!(more_trials(&plan, &cv, 0, &rows, 3).is_empty());
        // Its fourth trial lands near the others: still wide, so a fifth, then the cap.
        plan.cells.extend(extra.iter().cloned());
        rows.push(row(&plan, &extra[0], 0, 503.0));
        rows.push(row(&plan, &extra[0], 1, 460.0));
        let fifth = more_trials(&plan, &cv, 0, &rows, 5);
        assert_eq!(fifth.len(), 1);
        assert_eq!(fifth[0].trial, 4);
        plan.cells.extend(fifth.iter().cloned());
        assert!(more_trials(&plan, &cv, 0, &rows, 5).is_empty());
    }

    fn plan_of(opts: SweepOptions) -> (Workload, Plan) {
        let cv = workloads::load("cv").unwrap();
        let plan = Plan::new(&cv, &opts).unwrap();
        (cv, plan)
    }

    #[test]
    fn a_resumed_sweep_counts_the_trials_recorded_beyond_its_plan() {
        let (cv, plan) = plan_of(SweepOptions {
            strategies: Some(vec!["decoded".into()]),
            threads: Some(vec![2]),
            trials: Some(3),
            ..Default::default()
        });
        // Trials 0-2 as planned and a noisy 4th from the first time the sweep ran.
        let mut rows = Vec::new();
        for trial in 0..4 {
            let cell = Cell {
                trial,
                ..plan.cells[0].clone()
            };
            rows.push(results::RunRow {
                run_id: plan.run_id(&cv, 0, &cell),
                throughput_sps: 100.0 + 40.0 * (trial % 2) as f64,
                ..Default::default()
            });
        }
        // Run again, the sweep asks for a 5th trial, never the 4th a second time.
        let extra = more_trials(&plan, &cv, 0, &rows, 6);
        assert_eq!(extra.iter().map(|c| c.trial).collect::<Vec<_>>(), vec![4]);
        assert!(more_trials(&plan, &cv, 0, &rows, 4).is_empty());
    }

    #[test]
    fn targets_add_trials_to_the_settings_behind_their_cells_only() {
        use crate::results::CacheState;
        let (cv, plan) = plan_of(SweepOptions {
            strategies: Some(vec!["decoded".into(), "resized".into()]),
            codecs: Some(vec![
                workloads::Codec::None,
                workloads::Codec::Gzip { level: 6 },
            ]),
            threads: Some(vec![1, 2]),
            trials: Some(3),
            ..Default::default()
        });
        let key = |strategy: &str, threads: usize, cache: CacheState| CellKey {
            workload: cv.spec.label(),
            condition: Default::default(),
            split: 2,
            strategy: strategy.into(),
            codec: workloads::Codec::None,
            threads,
            cache,
            epoch: 1,
        };
        let targets = vec![
            // The warm epoch of resized at 2 threads comes from its cold-mode runs.
            TrialTarget {
                key: key("resized", 2, CacheState::Warm),
                trials: 6,
            },
            // Fewer than planned asks for nothing.
            TrialTarget {
                key: key("decoded", 1, CacheState::Cold),
                trials: 2,
            },
        ];
        let extra = targeted(&plan, &cv.spec.label(), &targets);
        let got: Vec<(&str, usize, String, usize)> = extra
            .iter()
            .map(|c| {
                (
                    c.strategy.name.as_str(),
                    c.threads,
                    c.codec.to_string(),
                    c.trial,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("resized", 2, "none".to_string(), 3),
                ("resized", 2, "none".to_string(), 4),
                ("resized", 2, "none".to_string(), 5),
            ]
        );
        // Another workload's, another storage's or an app-cache cell feeds none of them.
        let mut other = key("resized", 2, CacheState::Warm);
        other.workload = "cv2-jpg".into();
        let mut emulated = key("resized", 2, CacheState::Warm);
        emulated.condition.storage = Some("paper-ceph-hdd".into());
        for k in [other, emulated, key("resized", 2, CacheState::App)] {
            assert!(targeted(
                &plan,
                &cv.spec.label(),
                &[TrialTarget { key: k, trials: 6 }]
            )
            .is_empty());
        }
    }
}
