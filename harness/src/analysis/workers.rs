//! How many workers a strategy needs: the fewest (a loader's `num_workers`, or prepbench's
//! threads) not measurably slower than the best measured, as `recommend` and the report say it.

use crate::analysis::cells::Cell;
use crate::analysis::stats::{LogEstimate, DEFAULT_NOISE};
use crate::analysis::view::WorkloadView;
use crate::units::rate;

/// The fewest workers (the loader's `num_workers`, or prepbench's threads) whose cold
/// throughput of `strategy` is within noise of the best measured: the 95 % interval of its
/// ratio to the best reaches 1 - noise. Says when the best was the most measured, and when that
/// is every core of the machine (more would need more cores than it has). `None` with fewer
/// than two counts measured.
pub fn workers_note(
    view: &WorkloadView,
    strategy: &str,
    codec: workloads::Codec,
    cores: Option<usize>,
) -> Option<String> {
    use LogEstimate;
    let mut cells: Vec<&Cell> = view
        .threads
        .iter()
        .filter_map(|&t| view.cold(strategy, codec, t))
        .collect();
    if cells.len() < 2 {
        return None;
    }
    cells.sort_by_key(|c| c.key.threads);
    let best = *cells
        .iter()
        .max_by(|a, b| a.throughput.mean.total_cmp(&b.throughput.mean))?;
    let within = |c: &Cell| {
        match (
            LogEstimate::of_mean(&c.throughput),
            LogEstimate::of_mean(&best.throughput),
        ) {
            (Some(a), Some(b)) => a.over(&b).reaches_within_noise_of_one(),
            // One trial has no interval: within noise only if its mean is.
            _ => c.throughput.mean >= best.throughput.mean * (1.0 - DEFAULT_NOISE),
        }
    };
    let chosen = cells.iter().find(|c| within(c)).copied().unwrap_or(best);
    let torch = |loader: &str| loader == "torch" || loader.starts_with("torch[");
    let workers = if view.condition.loader.as_deref().is_some_and(torch) {
        "num_workers"
    } else {
        "threads"
    };
    let measured: Vec<String> = cells.iter().map(|c| c.key.threads.to_string()).collect();
    let (t, bt) = (chosen.key.threads, best.key.threads);
    let mut note = if t == bt {
        format!(
            "**Workers:** `{strategy}` ({codec}) reads fastest with {workers} = {t}: {} \
             samples/s; {workers} measured: {}.",
            interval_of(best),
            measured.join(", ")
        )
    } else {
        let ratio = LogEstimate::of_mean(&chosen.throughput)
            .zip(LogEstimate::of_mean(&best.throughput))
            .map(|(a, b)| a.over(&b));
        let ratio_text = ratio.map_or_else(String::new, |r| {
            let (lo, hi) = r.ci95();
            format!(", {:.2} [{lo:.2}, {hi:.2}] of", r.value())
        });
        let mut text = format!(
            "**Workers:** `{strategy}` ({codec}) needs no more than {workers} = {t}: {} \
             samples/s, not measurably slower (beyond ±{:.0} % noise) than the best measured{} \
             {} samples/s with {bt}; {workers} measured: {}.",
            interval_of(chosen),
            DEFAULT_NOISE * 100.0,
            if ratio_text.is_empty() {
                ", against"
            } else {
                &ratio_text
            },
            interval_of(best),
            measured.join(", ")
        );
        if ratio.is_some_and(|r| r.ci95().0 < 0.9) {
            let trials = chosen.throughput.n.max(best.throughput.n);
            text.push_str(&format!(
                " The interval is wide: more trials would tell whether more {workers} help ({}).",
                crate::analysis::advice::more_trials(trials)
            ));
        }
        text
    };
    let most = cells.last().map_or(0, |c| c.key.threads);
    if best.key.threads == most && chosen.key.threads == most {
        match cores {
            Some(cores) if most >= cores => note.push_str(&format!(
                " Throughput was still highest at the most measured, {most}, which is all \
                 {cores} cores of this machine: more {workers} would need more cores than it has."
            )),
            _ => note.push_str(&format!(
                " Throughput was still highest at the most measured, {most}: measure more (sweep \
                 --threads) to find where it stops rising."
            )),
        }
    }
    if cells.iter().any(|c| c.throughput.n < 2) {
        note.push_str(" Some counts rest on one trial, which has no interval.");
    }
    Some(note)
}

/// `1,234 [1,100, 1,380]` (samples/s and its 95 % interval on the log scale), or the mean
/// alone from one trial.
fn interval_of(cell: &Cell) -> String {
    match LogEstimate::of_mean(&cell.throughput) {
        Some(e) => {
            let (lo, hi) = e.ci95();
            format!(
                "{} [{}, {}]",
                rate(cell.throughput.mean),
                rate(lo),
                rate(hi)
            )
        }
        None => rate(cell.throughput.mean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fewest workers within noise of the best are named with their interval; a best at
    /// every core says more would need more cores; the torch loader's are `num_workers`.
    #[test]
    fn the_fewest_workers_within_noise_of_the_best_are_named() {
        use crate::analysis::cells::Results;
        use crate::results::folder::Recorded;
        use crate::results::RunRow;
        let row = |threads: usize, trial: usize, sps: f64, loader: &str| RunRow {
            run_id: format!("{loader}-{threads}-{trial}"),
            workload: "w".into(),
            strategy: "s".into(),
            split: 1,
            threads,
            trial,
            samples: 1000,
            online_s: 1000.0 / sps,
            throughput_sps: sps,
            loader: loader.into(),
            ..RunRow::default()
        };
        // 1: 100/s, 2: 190/s, 4: 197/s, 8: 199/s (3 trials each, 1 % spread).
        let mut runs = Vec::new();
        for (threads, sps) in [(1, 100.0), (2, 190.0), (4, 197.0), (8, 199.0)] {
            for (trial, f) in [0.99, 1.0, 1.01].into_iter().enumerate() {
                runs.push(row(threads, trial, sps * f, "torch"));
                runs.push(row(threads, trial, sps * f, "native"));
            }
        }
        let results = Results::of(Recorded {
            runs,
            ..Recorded::default()
        });
        let cells = results.cells();
        let mut conditions = results.conditions();
        conditions.sort();
        let torch = conditions.iter().find(|(_, c)| c.loader.is_some()).unwrap();
        let view = WorkloadView::new(&torch.0, &torch.1, &cells, None);
        let note = workers_note(&view, "s", workloads::Codec::None, Some(16)).unwrap();
        assert!(note.contains("no more than num_workers = 4"), "{note}");
        assert!(note.contains("[") && note.contains("1, 2, 4, 8"), "{note}");
        assert!(!note.contains("more cores"), "{note}");
        // Still rising at the most measured, which is every core: more would need more cores.
        let native = conditions.iter().find(|(_, c)| c.loader.is_none()).unwrap();
        let view = WorkloadView::new(&native.0, &native.1, &cells, None);
        let rising: Vec<&crate::analysis::cells::Cell> = view
            .cells
            .iter()
            .copied()
            .filter(|c| c.key.threads != 4)
            .collect();
        let mut view = view;
        view.cells = rising;
        view.threads = vec![1, 2, 8];
        let note = workers_note(&view, "s", workloads::Codec::None, Some(8)).unwrap();
        assert!(note.contains("fastest with threads = 8"), "{note}");
        assert!(note.contains("all 8 cores"), "{note}");
        // One thread scattered so far that it is within noise of two: said wide, with what
        // would narrow it (twice its trials, into the same folder).
        let runs = [(1, [60.0, 100.0, 160.0]), (2, [195.0, 200.0, 205.0])]
            .into_iter()
            .flat_map(|(t, sps)| sps.into_iter().enumerate().map(move |(i, s)| (t, i, s)))
            .map(|(threads, trial, sps)| row(threads, trial, sps, "native"))
            .collect();
        let results = Results::of(Recorded {
            runs,
            ..Recorded::default()
        });
        let cells = results.cells();
        let (label, condition) = &results.conditions()[0];
        let view = WorkloadView::new(label, condition, &cells, None);
        let note = workers_note(&view, "s", workloads::Codec::None, Some(2)).unwrap();
        assert!(note.contains("no more than threads = 1"), "{note}");
        assert!(
            note.contains("The interval is wide") && note.contains("`--trials 6` adds trials"),
            "{note}"
        );
    }
}
