//! Settling's time: what a check's trials are expected to cost, and which checks fit in what
//! is left of a scale's budget for it.

use std::collections::HashMap;

use super::Unsettled;
use crate::analysis::cells::{Cell, CellKey};
use crate::plan::options::TrialTarget;

/// What a trial costs beyond its epochs, s: the eviction with its priming read, the ask of
/// the loader's process and the row's writing (1-3 s from one trial's end to the next one's
/// start in `quick-bo`'s tf-data sweeps).
const TRIAL_OVERHEAD_S: f64 = 1.5;

/// The setting whose trials record `key`'s cell, as settling's cost counts it: its cell with
/// the epoch and the cache's state left out, but whether the trials fill an application cache
/// (`app-fill`, then `app`) or read through the page cache (`cold`, then `warm`).
fn setting(key: &CellKey) -> (CellKey, bool) {
    use crate::results::CacheState;
    let app = matches!(
        key.cache,
        CacheState::App | CacheState::AppFill | CacheState::AppMiss
    );
    let mut setting = key.clone();
    setting.epoch = 0;
    setting.cache = CacheState::Cold;
    (setting, app)
}

/// What `targets` are expected to cost, s, from `cells` as recorded: each setting's trials
/// added, at its epochs' medians together and [`TRIAL_OVERHEAD_S`]; for a check about the
/// offline phase (`offline`), each materialization added at the mean one's time.
pub(super) fn cost(targets: &[TrialTarget], offline: bool, cells: &[Cell]) -> f64 {
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
            more as f64 * (each + TRIAL_OVERHEAD_S)
        })
        .sum()
}

/// Of `open`, the checks whose trials fit in `left` seconds, cheapest first, and the rest.
pub(super) fn within_budget(
    mut open: Vec<Unsettled>,
    left: f64,
) -> (Vec<Unsettled>, Vec<Unsettled>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::Summary;
    use crate::results::CacheState;

    fn key(cache: CacheState, epoch: u64, threads: usize) -> CellKey {
        super::super::nilm_aggregated(threads, cache, epoch)
    }

    /// A cell of `trials` rows whose epochs took `median` s.
    fn cell(key: CellKey, trials: usize, median: f64) -> Cell {
        let online = Summary::of(&vec![median; trials]).unwrap();
        Cell {
            key,
            samples: 100,
            storage_bytes: 1e6,
            throughput: online.clone(),
            online,
            first_sample: None,
            steady: None,
            foreign_load_pct: None,
            steal_pct: None,
            offline: None,
            offline_samples: None,
            invalid_runs: 0,
            verified: None,
            rows: (0..trials).collect(),
        }
    }

    fn target(key: CellKey, trials: usize) -> TrialTarget {
        TrialTarget { key, trials }
    }

    #[test]
    fn a_trial_costs_its_settings_epochs_together_and_its_overhead() {
        let (cold, warm) = (key(CacheState::Cold, 0, 1), key(CacheState::Warm, 1, 1));
        let (fill, app) = (key(CacheState::AppFill, 0, 1), key(CacheState::App, 1, 1));
        let cells = [
            cell(cold.clone(), 3, 2.0),
            cell(warm.clone(), 3, 1.0),
            cell(fill.clone(), 3, 4.0),
            cell(app.clone(), 3, 0.5),
        ];
        // Warm over cold: one setting (cold, then warm), grown from 3 trials to 5.
        let ratio = [target(cold.clone(), 5), target(warm.clone(), 5)];
        let each = 2.0 + 1.0 + TRIAL_OVERHEAD_S;
        assert!((cost(&ratio, false, &cells) - 2.0 * each).abs() < 1e-9);
        // App over warm: two settings, each grown by its own trials.
        let both = [target(app.clone(), 4), target(warm, 6)];
        let want = (4.0 + 0.5 + TRIAL_OVERHEAD_S) + 3.0 * each;
        assert!((cost(&both, false, &cells) - want).abs() < 1e-9);
        // Trials it has already cost nothing; a cell not recorded is not counted.
        assert_eq!(cost(&[target(fill, 3)], false, &cells), 0.0);
        assert_eq!(
            cost(&[target(key(CacheState::Cold, 0, 2), 9)], false, &cells),
            0.0
        );
    }

    fn open(claim: &'static str, seconds: f64) -> Unsettled {
        Unsettled {
            claim,
            subject: String::new(),
            targets: Vec::new(),
            offline: false,
            seconds,
        }
    }

    #[test]
    fn the_budget_takes_the_cheapest_checks_that_fit_and_leaves_the_rest_named() {
        let checks = vec![open("6b", 200.0), open("4a", 30.0), open("4c", 90.0)];
        let (fits, over) = within_budget(checks, 130.0);
        let claims = |u: &[Unsettled]| u.iter().map(|u| u.claim).collect::<Vec<_>>();
        assert_eq!(claims(&fits), ["4a", "4c"]);
        assert_eq!(claims(&over), ["6b"]);
        // Nothing left: every check stays open; room for all: none does.
        let (fits, over) = within_budget(vec![open("4a", 30.0), open("4b", 1.0)], 0.0);
        assert!(fits.is_empty() && over.len() == 2);
        let (fits, over) = within_budget(vec![open("4a", 30.0)], 1e9);
        assert!(fits.len() == 1 && over.is_empty());
    }
}
