//! Settling's trials for a check whose figure is a ratio of independent cells: given where
//! the spread is, the least total of trials that narrows the interval enough.

use std::collections::HashMap;

use crate::analysis::cells::CellKey;
use crate::analysis::findings::Caps;
use crate::plan::options::TrialTarget;

/// The trials each cell behind `check` should reach where its figure is a ratio of
/// independent cells ([`crate::analysis::findings::Check::figure_cells`], each with two
/// trials or more): the figure's log variance is the sum of each cell's squared spread over
/// its trials, and the trials go where they narrow it most for the fewest epochs (the least
/// total that brings the variance to its value over `factor`: each cell's trials in
/// proportion to its spread, none below what it has, none past `cap`). A noisy cell of 3
/// trials beside a steady one of 10 grows alone where growing both alike stops at the cap of
/// the other. The other cells of the check grow with the figure cell whose runs they are
/// epochs of. Each cell's spread is its typical one (`Summary::typical_sd`: a slow epoch
/// among steady ones is not planned for again in every trial added). `None`: not such a
/// figure (the caller grows every cell alike); `Some(None)`: not settled even with every cell
/// at the cap.
pub(super) fn allocated(
    check: &crate::analysis::findings::Check,
    factor: f64,
    (recorded, spread): (&HashMap<&CellKey, usize>, &HashMap<&CellKey, f64>),
    cap: &Caps,
) -> Option<Option<Vec<TrialTarget>>> {
    let figure: Vec<(&CellKey, usize, f64)> = (check.figure_cells.iter())
        .map(|k| Some((k, *recorded.get(k)?, *spread.get(k)?)))
        .collect::<Option<_>>()?;
    if figure.is_empty() || figure.iter().any(|&(_, n, s)| n < 2 || !s.is_finite()) {
        return None;
    }
    let cells: Vec<(usize, f64, usize)> = (figure.iter())
        .map(|&(key, n, s)| (n, s, cap.of(key)))
        .collect();
    let variance = |m: &[f64]| -> f64 { cells.iter().zip(m).map(|((_, s, _), m)| s * s / m).sum() };
    let now = variance(&cells.iter().map(|&(n, _, _)| n as f64).collect::<Vec<_>>());
    if now <= 0.0 {
        return None;
    }
    let trials = match water_fill(&cells, now / factor) {
        Some(m) => m,
        None => {
            let at_cap: Vec<f64> = cells.iter().map(|&(n, _, c)| n.max(c) as f64).collect();
            let growth = now / variance(&at_cap);
            if !(growth > 1.0 && check.settles_with(growth)) {
                return Some(None);
            }
            at_cap
        }
    };
    let grown: Vec<(&CellKey, usize)> = (figure.iter().zip(&trials))
        .map(|(&(key, n, _), &m)| (key, (m.ceil() as usize).max(n)))
        .collect();
    if grown.iter().zip(&figure).all(|((_, t), (_, n, _))| t <= n) {
        return None;
    }
    let targets = (check.cells.iter())
        .filter_map(|key| {
            let trials = grown
                .iter()
                .find(|(figure, _)| *figure == key || same_run(figure, key))
                .map(|&(_, t)| t)?;
            Some(TrialTarget {
                key: key.clone(),
                trials,
            })
        })
        .collect();
    Some(Some(targets))
}

/// The trials of each of `cells` (recorded trials, spread, cap) whose variance sum is `want` at
/// the least total: each in proportion to its spread, held between what it has and its cap;
/// `None` when even every cell at its cap leaves more.
fn water_fill(cells: &[(usize, f64, usize)], want: f64) -> Option<Vec<f64>> {
    let mut fixed: Vec<Option<f64>> = vec![None; cells.len()];
    loop {
        let left = want
            - (cells.iter().zip(&fixed))
                .filter_map(|((_, s, _), m)| Some(s * s / (*m)?))
                .sum::<f64>();
        let free: Vec<usize> = (0..cells.len()).filter(|&i| fixed[i].is_none()).collect();
        if free.is_empty() {
            return (left >= -1e-12).then(|| fixed.iter().flatten().copied().collect());
        }
        if left <= 0.0 {
            return None;
        }
        // Minimizing the total of m_i under the sum of s_i^2 / m_i = left: m_i = s_i * λ.
        let lambda = free.iter().map(|&i| cells[i].1).sum::<f64>() / left;
        let mut changed = false;
        for &i in &free {
            let (n, s, cap) = cells[i];
            let m = s * lambda;
            if m < n as f64 {
                fixed[i] = Some(n as f64);
                changed = true;
            } else if m > cap.max(n) as f64 {
                fixed[i] = Some(cap.max(n) as f64);
                changed = true;
            }
        }
        if !changed {
            for &i in &free {
                fixed[i] = Some(cells[i].1 * lambda);
            }
        }
    }
}

/// Whether cells `a` and `b` are epochs of the same runs: the same setting, one the cold (or
/// application-cache filling) epoch and the other the epoch after it.
fn same_run(a: &CellKey, b: &CellKey) -> bool {
    use crate::results::CacheState::{App, AppFill, Cold, Warm};
    let pair = |x, y| {
        matches!(
            (x, y),
            (Cold, Warm) | (Warm, Cold) | (AppFill, App) | (App, AppFill)
        )
    };
    a.workload == b.workload
        && a.condition == b.condition
        && a.split == b.split
        && a.strategy == b.strategy
        && a.codec == b.codec
        && a.threads == b.threads
        && pair(a.cache, b.cache)
}

#[cfg(test)]
mod tests {
    use super::super::targets_within_cap;
    use super::*;

    /// A ratio of a noisy cell of 3 trials over a steady one of 10 against 6b's 1.3x line:
    /// growing both alike (2.4x) is held at the cap after 1.6x and refused; the trials go to
    /// the noisy cell alone instead, and the warm epochs of its runs follow it.
    #[test]
    fn trials_go_to_the_noisy_cell_of_a_ratio() {
        use crate::analysis::findings::{Check, Expect};
        use crate::analysis::stats::{LogEstimate, Summary};
        use crate::results::CacheState;
        let key = |threads: usize, cache: CacheState| {
            super::super::nilm_aggregated(threads, cache, u64::from(cache == CacheState::Warm))
        };
        let one = Summary::of(&[5.6, 6.3, 6.6]).unwrap();
        let two = Summary::of(&[6.9, 6.8, 7.4, 6.2, 7.6, 7.7, 7.4, 7.5, 7.1, 7.3]).unwrap();
        let ratio = LogEstimate::of_mean(&two)
            .unwrap()
            .over(&LogEstimate::of_mean(&one).unwrap());
        let expect = Expect::AtMost {
            holds: 1.3,
            opposite: 1.5,
        };
        let (c1, w1) = (key(1, CacheState::Cold), key(1, CacheState::Warm));
        let (c2, w2) = (key(2, CacheState::Cold), key(2, CacheState::Warm));
        let check = Check::of("x".into(), &Ok(ratio), expect, "x").cells_read(
            vec![c1.clone(), w1.clone(), c2.clone(), w2.clone()],
            &[CacheState::Cold],
        );
        let factor = check.trials_factor().expect("settles with more trials");
        let recorded: HashMap<&CellKey, usize> =
            HashMap::from([(&c1, 3), (&w1, 3), (&c2, 10), (&w2, 10)]);
        let spread: HashMap<&CellKey, f64> =
            HashMap::from([(&c1, one.cv.unwrap()), (&c2, two.cv.unwrap())]);
        // Alike: the 2-thread cells stop the growth at 1.6x, which does not settle it.
        assert!(targets_within_cap(&check, factor, &recorded, &Caps::flat(16)).is_none());
        let targets = allocated(&check, factor, (&recorded, &spread), &Caps::flat(16))
            .expect("a ratio of independent cells")
            .expect("settled within the cap");
        let of = |k: &CellKey| targets.iter().find(|t| &t.key == k).map(|t| t.trials);
        let (t1, t2) = (of(&c1).unwrap(), of(&c2).unwrap());
        assert!(t1 > 3 && t1 <= 16, "{targets:?}");
        assert_eq!(t2, 10, "{targets:?}");
        assert_eq!(of(&w1), Some(t1));
        assert_eq!(of(&w2), Some(t2));
        // What the targets leave: the variance the factor asks for, or less.
        let now = one.cv.unwrap().powi(2) / 3.0 + two.cv.unwrap().powi(2) / 10.0;
        let then = one.cv.unwrap().powi(2) / t1 as f64 + two.cv.unwrap().powi(2) / t2 as f64;
        assert!(then <= now / factor * 1.0001, "{then} {now} {factor}");
        // A check without independent figure cells (paired epochs) is grown alike.
        let paired = Check::of("x".into(), &Ok(ratio), expect, "x")
            .cells_read(vec![c1.clone(), w1.clone()], &[]);
        assert!(allocated(&paired, factor, (&recorded, &spread), &Caps::flat(16)).is_none());
    }

    /// Trials in proportion to each cell's spread, none below what a cell has, none past the
    /// cap; `None` where every cell at the cap leaves more than asked.
    #[test]
    fn water_filling_holds_its_bounds() {
        let sum = |cells: &[(usize, f64, usize)], m: &[f64]| -> f64 {
            cells.iter().zip(m).map(|((_, s, _), m)| s * s / m).sum()
        };
        // Two alike: equal trials.
        let cells = [(3, 0.1, 16), (3, 0.1, 16)];
        let m = water_fill(&cells, sum(&cells, &[3.0, 3.0]) / 4.0).unwrap();
        assert!(
            (m[0] - 12.0).abs() < 1e-9 && (m[1] - 12.0).abs() < 1e-9,
            "{m:?}"
        );
        // Twice the spread: twice the trials.
        let cells = [(2, 0.2, 100), (2, 0.1, 100)];
        let m = water_fill(&cells, 0.0015).unwrap();
        assert!((m[0] / m[1] - 2.0).abs() < 1e-9, "{m:?}");
        assert!((sum(&cells, &m) - 0.0015).abs() < 1e-12);
        // A steady cell keeps what it has; the cap holds the other and the rest is refused.
        let cells = [(10, 0.001, 16), (3, 0.2, 16)];
        let m = water_fill(&cells, 0.2 * 0.2 / 12.0).unwrap();
        assert_eq!(m[0], 10.0);
        assert!(m[1] > 12.0 && m[1] <= 16.0, "{m:?}");
        assert!(water_fill(&cells, 0.2 * 0.2 / 40.0).is_none());
    }
}
