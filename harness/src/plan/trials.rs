//! Noise handled as benchmark tools do: after a sweep's planned trials, one more trial of every
//! setting whose throughput's 95 % CI is still wider than the target, round after round, up to
//! a maximum (`--max-trials`). Extra trials get the next trial index, so their run ids are
//! stable and a resumed sweep skips them like any other.

use std::collections::HashMap;

use workloads::Workload;

use crate::plan::matrix::{Cell, Plan};
use crate::results;

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
    // Each setting once, with its number of trials.
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
    let mut extra = Vec::new();
    for (cell, n) in settings {
        if n >= max {
            continue;
        }
        let mut by_epoch: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
        for trial in 0..n {
            let id = plan.run_id(
                workload,
                seed,
                &Cell {
                    trial,
                    ..cell.clone()
                },
            );
            for row in by_id.get(id.as_str()).into_iter().flatten() {
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
}
