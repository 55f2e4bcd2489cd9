//! Ratios of two cells taken from pairs: the epochs of one run (a warm epoch over the cold one
//! before it), or the same trial of two codecs of a strategy run side by side (GZIP over
//! none), each pair's own ratio, so that the interval leaves out what the pair shares: the
//! run, or the machine's drift while it ran; and the independent ratio they fall back to.

use std::collections::HashMap;
use std::time::SystemTime;

use crate::analysis::cells::{Cell, Results, MIN_EPOCH_S};
use crate::analysis::findings::observed::Figure;
use crate::analysis::stats::LogEstimate;
use crate::results::RunRow;

/// The two runs of a trial's pair start this close together at most, s. A sweep runs each
/// strategy's runs of a trial side by side (`plan::matrix::run_order`): in `quick-ca` a
/// strategy's runs of a trial started within 3 s of each other (median of 89; 14 s at most).
/// A folder swept in a shuffled order (before that order, or merged from sweeps run apart)
/// has most pairs minutes apart, sharing no drift: those are left out.
pub const PAIR_WINDOW_S: f64 = 30.0;

/// Pairs a ratio of two settings needs before it is taken from them. A pair's ratio has n - 1
/// degrees of freedom where the two cells apart have about 2n - 2: at 3 trials Student's t is
/// 4.30 against 2.78, so pairing narrows the interval only where the pairs spread under 65 %
/// of the cells apart; at 6, 2.57 against 2.23, under 87 %, and the trials past the first 3
/// are those settling adds to a check whose interval reached across its line. Side by side in
/// `quick-ca` and `quick-cb` a codec's pairs spread 0.90 and 0.81 of the cells apart (median
/// of 12 ratios each; 0.24 for CV `concatenated` under tf.data, the most they narrowed), so
/// codecs pair from 6. Thread counts (1.00 and 0.95, 4 ratios: NILM's cold
/// reads vary from run to run, not with the moment) and the application cache over the page
/// cache (0.89 and 1.01, 11 ratios) do not pay for the degrees of freedom, and stay
/// independent (docs/decisions.md, "Statistics and reports").
pub const MIN_PAIRS: usize = 6;

/// A cell's throughput as an estimate, or why there is none.
pub(super) fn throughput(cell: Option<&Cell>) -> Option<Figure> {
    let cell = cell?;
    Some(if !cell.long_enough() {
        Err(format!(
            "epochs of {:.2} s, under the {MIN_EPOCH_S} s floor",
            cell.online.median
        ))
    } else {
        LogEstimate::of_mean(&cell.throughput)
            .ok_or_else(|| format!("{} trial: no interval", cell.throughput.n))
    })
}

pub(super) fn over(a: Option<Figure>, b: Option<Figure>) -> Option<Figure> {
    let (a, b) = (a?, b?);
    Some(match (a, b) {
        (Ok(a), Ok(b)) => Ok(a.over(&b)),
        (Err(e), _) | (_, Err(e)) => Err(e),
    })
}

/// `a` over `b` where their trials are paired, the epochs of one run: the geometric mean of
/// each run's own ratio. Independent ([`over`]) when fewer than two runs have both, or
/// either cell is too short to judge (its reason).
pub(super) fn paired(results: &Results, a: Option<&Cell>, b: Option<&Cell>) -> Option<Figure> {
    from_pairs((a, b), 2, |a, b| {
        let base: HashMap<&str, f64> = rows(results, b)
            .map(|r| (r.run_id.as_str(), r.throughput_sps))
            .collect();
        let logs = rows(results, a)
            .filter_map(|r| Some((r.throughput_sps / base.get(r.run_id.as_str())?).ln()));
        Some(logs.collect())
    })
}

/// `a` over `b`, two codecs of one strategy, from their trials paired by trial number: the
/// geometric mean of each pair's own ratio, a pair being a trial both cells have whose two
/// runs started within [`PAIR_WINDOW_S`] of each other, where there are at least
/// [`MIN_PAIRS`] and neither cell records a trial twice; independent ([`over`]) otherwise, or
/// where either cell is too short to judge (its reason). Which trials pair is decided by when
/// they ran, never by what they measured.
pub(super) fn trial_paired(
    results: &Results,
    a: Option<&Cell>,
    b: Option<&Cell>,
) -> Option<Figure> {
    from_pairs((a, b), MIN_PAIRS, |a, b| {
        let (ta, tb) = (by_trial(results, a)?, by_trial(results, b)?);
        let logs = ta.iter().filter_map(|(trial, (sps, at))| {
            let (base, base_at) = tb.get(trial)?;
            let apart = (at.duration_since(*base_at)).unwrap_or_else(|e| e.duration());
            // Trials that ran apart (added to one setting for another check, or swept in a
            // shuffled order) share no moment of the machine: not a pair.
            (apart.as_secs_f64() <= PAIR_WINDOW_S).then(|| (sps / base).ln())
        });
        Some(logs.collect())
    })
}

/// `a` over `b` from the logs of their pairs' own ratios (`logs`, of two cells long enough to
/// judge), where there are at least `least` of them; independent ([`over`]) where there are
/// fewer, `logs` gives none, or either cell is too short (its reason).
fn from_pairs<'c>(
    (a, b): (Option<&'c Cell>, Option<&'c Cell>),
    least: usize,
    logs: impl FnOnce(&'c Cell, &'c Cell) -> Option<Vec<f64>>,
) -> Option<Figure> {
    let independent = || over(throughput(a), throughput(b));
    let (ca, cb) = (a?, b?);
    if !ca.long_enough() || !cb.long_enough() {
        return independent();
    }
    let estimate = logs(ca, cb)
        .filter(|logs| logs.len() >= least)
        .and_then(|logs| LogEstimate::of_logs(&logs));
    match estimate {
        Some(estimate) => Some(Ok(estimate)),
        None => independent(),
    }
}

fn rows<'r>(results: &'r Results, cell: &'r Cell) -> impl Iterator<Item = &'r RunRow> {
    cell.rows.iter().map(|&i| &results.rows[i])
}

/// A cell's throughput and start by trial; `None` where a trial is recorded twice or a start
/// cannot be read.
fn by_trial(results: &Results, cell: &Cell) -> Option<HashMap<usize, (f64, SystemTime)>> {
    let mut out = HashMap::new();
    for row in rows(results, cell) {
        let at = humantime::parse_rfc3339(&row.started_utc).ok()?;
        if out.insert(row.trial, (row.throughput_sps, at)).is_some() {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::findings::measured::tests::epoch_row;
    use crate::results::folder::Recorded;

    /// Cold runs of CV `resized` at 1 and 2 threads, trial by trial: `(trial, sps at 1, sps at
    /// 2, seconds between the two runs' starts)`, the trials a minute apart.
    fn threads(trials: &[(usize, f64, f64, u64)]) -> Results {
        let at = |s: u64| {
            humantime::format_rfc3339_seconds(
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000 + s),
            )
            .to_string()
        };
        let mut runs = Vec::new();
        for &(trial, one, two, apart) in trials {
            let start = 60 * trial as u64;
            for (threads, sps, when) in [(1, one, start), (2, two, start + apart)] {
                runs.push(RunRow {
                    threads,
                    trial,
                    started_utc: at(when),
                    ..epoch_row(&format!("t{threads}-{trial}"), "native", "resized", 0, sps)
                });
            }
        }
        Results::of(Recorded {
            runs,
            ..Recorded::default()
        })
    }

    /// 2 threads over 1 both ways: from the pairs, and from the two cells apart.
    fn both(results: &Results) -> (LogEstimate, LogEstimate) {
        let cells = results.cells();
        let of = |n: usize| cells.iter().find(|c| c.key.threads == n);
        let paired = trial_paired(results, of(2), of(1)).unwrap().unwrap();
        let apart = over(throughput(of(2)), throughput(of(1))).unwrap().unwrap();
        (paired, apart)
    }

    /// Trials of two settings run side by side share the machine's drift (here each trial
    /// 100 to 300 samples/s, 2 threads 1.5x 1 within 1 %; two thread counts stand in for two
    /// codecs, as the pairing reads trials and starts, not settings): their pairs' ratios give a far
    /// narrower interval than the cells apart. Pairs started too far apart, too few of them,
    /// or a trial recorded twice give the independent ratio.
    #[test]
    fn settings_side_by_side_are_compared_trial_by_trial() {
        let drift = [100.0, 300.0, 180.0, 250.0, 120.0, 210.0, 160.0, 280.0];
        let wobble = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.01, 0.99];
        let trials: Vec<(usize, f64, f64, u64)> = (0..drift.len())
            .map(|k| (k, drift[k], 1.5 * drift[k] * wobble[k], 4))
            .collect();
        let (paired, apart) = both(&threads(&trials));
        assert!((paired.value() - 1.5).abs() < 0.02, "{}", paired.value());
        let width = |e: &LogEstimate| e.ci95().1 / e.ci95().0;
        assert!(
            width(&paired) < 1.02 && width(&apart) > 1.5,
            "paired {:?}, apart {:?}",
            paired.ci95(),
            apart.ci95()
        );
        // Trials started 31 s apart did not run side by side: left out of the pairs, and
        // with five pairs left, too few.
        let mut far = trials.clone();
        far[3].3 = PAIR_WINDOW_S as u64 + 1;
        let (paired, _) = both(&threads(&far));
        assert!(
            width(&paired) < 1.02,
            "seven pairs left: {:?}",
            paired.ci95()
        );
        for k in [1, 5] {
            far[k].3 = PAIR_WINDOW_S as u64 + 1;
        }
        let (paired, apart) = both(&threads(&far));
        assert_eq!(paired.ci95(), apart.ci95());
        // Fewer pairs than the least that pays for their lost degrees of freedom.
        let (paired, apart) = both(&threads(&trials[..MIN_PAIRS - 1]));
        assert_eq!(paired.ci95(), apart.ci95());
        // A trial of one setting without its pair is left out; the rest still pair.
        let mut extra = trials.clone();
        extra.push((8, 200.0, 300.0, 4));
        let mut runs = threads(&extra).rows;
        runs.retain(|r| !(r.threads == 2 && r.trial == 8));
        let (paired, _) = both(&Results::of(Recorded {
            runs,
            ..Recorded::default()
        }));
        assert!(width(&paired) < 1.02, "{:?}", paired.ci95());
        // A trial recorded twice (by runs of another id, as folders merged): no pairs.
        let mut runs = threads(&trials).rows;
        runs.push(RunRow {
            run_id: "again".into(),
            ..runs[0].clone()
        });
        let twice = Results::of(Recorded {
            runs,
            ..Recorded::default()
        });
        let (paired, apart) = both(&twice);
        assert_eq!(paired.ci95(), apart.ci95());
    }
}
