//! The sentences of a recommendation, each made from the comparison it states: which criterion
//! chose the strategy (its cold throughput, or the weighted score and what the weights bought),
//! which way a shorter or longer training run moves the answer (from the two candidates'
//! offline time and per-epoch time, not from a fixed phrase), and interval language only
//! where both sides have intervals. A difference the measurements cannot carry (a ratio whose
//! interval reaches 1, one trial, one materialization) is said to be one, with the command that
//! would settle it.

use crate::analysis::candidate::{Candidate, Weights};
use crate::analysis::stats::DEFAULT_NOISE;
use crate::units::{duration, rate};

/// Whether the weights rank on cold throughput alone.
fn throughput_only(Weights(wp, ws, _): Weights) -> bool {
    wp == 0.0 && ws == 0.0
}

/// Why `best` was chosen, leading into its throughput: "It reads fastest cold", or its weighted
/// score and, where another reads faster, what the weights preferred it for.
pub fn criterion(best: &Candidate, list: &[Candidate], weights: Weights) -> String {
    if throughput_only(weights) {
        return "It reads fastest cold".into();
    }
    let Weights(wp, ws, _) = weights;
    let mut text = format!(
        "With weights {weights} it has the highest weighted score ({:.3})",
        best.score_cold
    );
    let fastest = list
        .iter()
        .max_by(|a, b| a.cold_sps.total_cmp(&b.cold_sps))
        .expect("non-empty");
    if fastest.cold_sps > best.cold_sps {
        let mut cheaper = Vec::new();
        if wp > 0.0 && best.offline_s < fastest.offline_s {
            cheaper.push("offline time");
        }
        if ws > 0.0 && best.storage_bytes < fastest.storage_bytes {
            cheaper.push("storage");
        }
        let why = if cheaper.is_empty() {
            String::new()
        } else {
            format!(", but costs more {}", cheaper.join(" and "))
        };
        text.push_str(&format!(
            ", not the highest throughput (`{}` ({}) reads faster cold, {} samples/s{why})",
            fastest.strategy,
            fastest.codec,
            rate(fastest.cold_sps)
        ));
    }
    text.push_str("; its cold throughput");
    text
}

/// Seconds before the first of the later epochs and seconds per later epoch: total(E) =
/// intercept + E x slope (the candidate's own model of a run).
fn line(c: &Candidate) -> (f64, f64) {
    let slope = c.samples / c.later_sps;
    (c.offline_s + c.samples / c.cold_sps - slope, slope)
}

/// The candidate's total over `epochs`, from the ends of its cold throughput interval
/// (quickest, slowest); `None` without an interval.
fn total_range(c: &Candidate) -> Option<(f64, f64)> {
    let (lo, hi) = c.cold_ci95?;
    let online = c.total_s - c.offline_s;
    (lo > 0.0).then(|| {
        (
            c.offline_s + online * c.cold_sps / hi,
            c.offline_s + online * c.cold_sps / lo,
        )
    })
}

/// Which candidate finishes `epochs` soonest against the recommended one, and for which run
/// lengths it keeps that lead.
pub fn run_length(best: &Candidate, list: &[Candidate], epochs: u64) -> String {
    let fastest = list
        .iter()
        .min_by(|a, b| a.total_s.total_cmp(&b.total_s))
        .expect("non-empty");
    if fastest.total_s >= best.total_s {
        return format!(
            "It is also the quickest way through {epochs} epochs ({} including materialization).",
            duration(best.total_s)
        );
    }
    let name = format!("`{}` ({})", fastest.strategy, fastest.codec);
    let mut text = format!(
        "Counting materialization once and {epochs} epochs, {name} finishes sooner: {} against {}",
        duration(fastest.total_s),
        duration(best.total_s)
    );
    let ((a_f, s_f), (a_b, s_b)) = (line(fastest), line(best));
    let tie = 1e-9 * s_b.max(s_f).max(1e-12);
    if (s_f - s_b).abs() <= tie {
        text.push_str(", by the same margin at every run length.");
    } else if s_f < s_b && a_f <= a_b {
        text.push_str(
            ", and at every run length: the recommendation comes from the weights, not from time.",
        );
    } else if s_f < s_b {
        let from = ((a_f - a_b) / (s_b - s_f)).ceil().max(1.0);
        text.push_str(&format!(
            "; it does more before training and less in each epoch, so its lead grows with the run: prefer it for runs of {from:.0} epochs or more."
        ));
    } else {
        let until = ((a_b - a_f) / (s_f - s_b)).floor().max(1.0);
        text.push_str(&format!(
            "; it does less before training and more in each epoch, so `{}` catches up over longer runs: prefer {name} only for runs of {until:.0} epochs or fewer.",
            best.strategy
        ));
    }
    match (total_range(fastest), total_range(best)) {
        (Some((_, f_slow)), Some((b_quick, _))) if f_slow < b_quick => {}
        (Some(_), Some(_)) => text.push_str(
            " The difference is within these measurements' noise: over the 95 % intervals of their cold throughput the two totals overlap.",
        ),
        _ => text.push_str(
            " The difference rests on one trial, which has no interval: sweep with `--trials 3` before acting on it.",
        ),
    }
    let once = |c: &Candidate| c.offline_n == 1 && c.offline_s > 0.0;
    if (once(fastest) || once(best)) && fastest.offline_s != best.offline_s {
        text.push_str(
            " Its offline times come from one materialization each: `--offline-trials 3` would show whether they differ.",
        );
    }
    text
}

/// How to narrow intervals of settings that have up to `trials` trials: ask for twice as many
/// (at 3 trials to 6, about 2.4x narrower: t falls from 4.30 to 2.57), where a sweep resumes.
pub fn more_trials(trials: usize) -> String {
    format!(
        "the same `sweep` into the same folder with `--trials {}` adds trials to the settings it has, keeping those measured",
        2 * trials.max(1)
    )
}

/// The candidates the measurements cannot separate from `best` on cold throughput (when
/// ranking on it alone), said as what they are: a ratio whose 95 % interval reaches within
/// noise of 1 (as `compare` and the workers note judge; two intervals that overlap can still
/// differ), or one trial.
pub fn ties(best: &Candidate, list: &[Candidate], weights: Weights) -> String {
    if !throughput_only(weights) {
        return String::new();
    }
    let name = |c: &Candidate| format!("`{}` ({})", c.strategy, c.codec);
    let mut tied = Vec::new();
    let mut single = Vec::new();
    // The most trials any of the tied settings has ([`more_trials`]).
    let mut trials = best.trials;
    let same = |c: &Candidate| c.strategy == best.strategy && c.codec == best.codec;
    for c in list.iter().filter(|c| !same(c)) {
        match (best.cold_estimate, c.cold_estimate) {
            (Some(a), Some(b)) => {
                if b.over(&a).reaches_within_noise_of_one() {
                    let ratio = a.over(&b);
                    let (lo, hi) = ratio.ci95();
                    tied.push(format!(
                        "{} ({:.2}x [{lo:.2}, {hi:.2}])",
                        name(c),
                        ratio.value()
                    ));
                    trials = trials.max(c.trials);
                }
            }
            _ => single.push(name(c)),
        }
    }
    let mut text = String::new();
    if !tied.is_empty() {
        text.push_str(&format!(
            " The measurements do not separate it from {}: the 95 % interval of its cold throughput over theirs reaches within {:.0} % of 1 ({}; or prefer the one cheaper in storage and offline time).",
            tied.join(", "),
            DEFAULT_NOISE * 100.0,
            more_trials(trials)
        ));
    }
    if !single.is_empty() {
        let lead = if tied.is_empty() {
            "The measurements cannot rank it against"
        } else {
            "Nor can they rank it against"
        };
        let why = if best.cold_estimate.is_none() {
            "it rests on one trial".to_string()
        } else if single.len() == 1 {
            format!("{} rests on one trial", single[0])
        } else {
            "they rest on one trial each".to_string()
        };
        text.push_str(&format!(
            " {lead} {}: {why}, which has no interval (sweep with `--trials 3`).",
            single.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::{LogEstimate, Summary};

    /// A candidate of 1000 samples read at `sps` cold and later, after `offline_s`.
    fn candidate(name: &str, offline_s: f64, sps: f64, ci: Option<f64>, epochs: u64) -> Candidate {
        let samples = 1000.0;
        Candidate {
            strategy: name.into(),
            codec: workloads::Codec::None,
            samples,
            offline_s,
            storage_bytes: 1e9 + offline_s * 1e6,
            cold_sps: sps,
            cold_ci95: ci.map(|f| (sps / f, sps * f)),
            cold_estimate: ci.and_then(|f| {
                let trials = Summary::of(&[sps / f, sps, sps * f]).ok()?;
                LogEstimate::of_mean(&trials)
            }),
            long_enough: true,
            trials: if ci.is_some() { 3 } else { 1 },
            epoch_s: samples / sps,
            measured_samples: 1000,
            warm_sps: None,
            score_cold: 0.0,
            score_warm: None,
            pareto: true,
            total_s: offline_s + epochs as f64 * samples / sps,
            later_sps: sps,
            offline_n: 3,
            fits_in_memory: false,
        }
    }

    #[test]
    fn a_strategy_that_does_more_offline_is_for_long_runs() {
        // The case: the slowest strategy won on a weighted score, and a strategy that
        // does more offline finishes 10 epochs sooner. Its lead grows with the run: from 4
        // epochs on (30 + 4 x 1 = 34 s against 4 x 10 = 40 s; at 3 epochs 33 s against 30 s).
        let mut best = candidate("unprocessed", 0.0, 100.0, Some(1.05), 10);
        best.score_cold = 2.069;
        let fast = candidate("normalized", 30.0, 1000.0, Some(1.05), 10);
        let list = vec![best.clone(), fast];
        let why = criterion(&best, &list, Weights(1.0, 1.0, 1.0));
        assert!(why.contains("highest weighted score (2.069)"), "{why}");
        assert!(
            why.contains("not the highest throughput (`normalized`"),
            "{why}"
        );
        assert!(why.contains("costs more offline time and storage"), "{why}");
        assert!(!why.contains("on cold throughput"), "{why}");
        let runs = run_length(&best, &list, 10);
        assert!(
            runs.contains("`normalized` (none) finishes sooner: 40.0 s against"),
            "{runs}"
        );
        assert!(
            runs.contains("prefer it for runs of 4 epochs or more"),
            "{runs}"
        );
        assert!(!runs.contains("short"), "{runs}");
        assert!(!runs.contains("noise"), "{runs}");
    }

    #[test]
    fn a_strategy_that_does_less_offline_is_for_short_runs_only() {
        // Best: 100 s offline, 1 s per epoch; the other: none, 5 s per epoch. Equal at 25.
        let best = candidate("resized", 100.0, 1000.0, Some(1.01), 10);
        let other = candidate("unprocessed", 0.0, 200.0, Some(1.01), 10);
        let list = vec![best.clone(), other];
        let runs = run_length(&best, &list, 10);
        assert!(
            runs.contains("`resized` catches up over longer runs"),
            "{runs}"
        );
        assert!(
            runs.contains("only for runs of 25 epochs or fewer"),
            "{runs}"
        );
        // Ranked on throughput, the criterion is throughput.
        assert_eq!(
            criterion(&best, &list, Weights(0.0, 0.0, 1.0)),
            "It reads fastest cold"
        );
    }

    #[test]
    fn a_lead_inside_the_noise_or_from_one_trial_is_said_to_be_one() {
        // Offline 0.695 s against 0.941 s, throughputs within each other's intervals.
        let mut best = candidate("resized", 0.941, 1000.0, Some(1.5), 10);
        let mut other = candidate("pixel-centered", 0.695, 990.0, Some(1.5), 10);
        best.offline_n = 1;
        other.offline_n = 1;
        let list = vec![best.clone(), other.clone()];
        let runs = run_length(&best, &list, 10);
        assert!(runs.contains("within these measurements' noise"), "{runs}");
        assert!(runs.contains("one materialization each"), "{runs}");
        let single = candidate("pixel-centered", 0.695, 990.0, None, 10);
        let runs = run_length(&best, &[best.clone(), single], 10);
        assert!(runs.contains("rests on one trial"), "{runs}");
        // Measured apart: no hedge.
        let apart = candidate("decoded", 0.0, 5000.0, Some(1.01), 10);
        let tight = candidate("resized", 0.0, 1000.0, Some(1.01), 10);
        let runs = run_length(&tight, &[tight.clone(), apart], 10);
        assert!(
            !runs.contains("noise") && !runs.contains("one trial"),
            "{runs}"
        );
    }

    /// A candidate measured in `trials` (samples/s of its cold epochs).
    fn measured(name: &str, trials: &[f64]) -> Candidate {
        let summary = Summary::of(trials).unwrap();
        Candidate {
            cold_ci95: summary.ci95,
            cold_estimate: LogEstimate::of_mean(&summary),
            trials: trials.len(),
            ..candidate(name, 0.0, summary.mean, Some(1.1), 10)
        }
    }

    /// Two settings whose own 95 % intervals overlap can still differ: tied only where the
    /// interval of their ratio reaches within noise of 1.
    #[test]
    fn a_tie_is_judged_on_the_ratio_not_on_overlapping_intervals() {
        let w = Weights(0.0, 0.0, 1.0);
        let best = measured("resized", &[103.8, 104.8, 105.8]);
        let apart = measured("decoded", &[99.0, 100.0, 101.0]);
        let (b, a) = (best.cold_ci95.unwrap(), apart.cold_ci95.unwrap());
        assert!(b.0 < a.1, "the intervals overlap: {b:?} {a:?}");
        let text = ties(&best, &[best.clone(), apart], w);
        assert!(text.is_empty(), "{text}");
        let close = measured("decoded", &[101.0, 103.0, 105.0]);
        let text = ties(&best, &[best.clone(), close], w);
        assert!(
            text.contains("do not separate it from `decoded` (none) (1.02x [")
                && text.contains("reaches within 2 % of 1"),
            "{text}"
        );
    }

    #[test]
    fn interval_language_only_where_both_sides_have_intervals() {
        let w = Weights(0.0, 0.0, 1.0);
        let best = candidate("resized", 0.0, 1731.0, None, 10);
        let other = candidate("decoded", 0.0, 1500.0, Some(1.2), 10);
        let text = ties(&best, &[best.clone(), other.clone()], w);
        assert!(!text.contains("reaches within"), "{text}");
        assert!(
            text.contains("cannot rank it against `decoded` (none): it rests on one trial"),
            "{text}"
        );
        let best = candidate("resized", 0.0, 1731.0, Some(1.2), 10);
        let text = ties(&best, &[best.clone(), other], w);
        assert!(text.contains("reaches within 2 % of 1"), "{text}");
        // What would separate them: twice the trials they have, added to the same folder.
        assert!(text.contains("with `--trials 6` adds trials"), "{text}");
        assert!(!text.contains("one trial"), "{text}");
        // A weighted ranking does not rank on throughput: nothing said of ties in it.
        assert!(ties(&best, std::slice::from_ref(&best), Weights(1.0, 0.0, 1.0)).is_empty());
    }

    #[test]
    fn the_quickest_way_through_is_said_only_of_the_quickest() {
        let best = candidate("resized", 1.0, 1000.0, Some(1.01), 10);
        let slow = candidate("unprocessed", 0.0, 100.0, Some(1.01), 10);
        let text = run_length(&best, &[best.clone(), slow], 10);
        assert!(
            text.starts_with("It is also the quickest way through 10 epochs"),
            "{text}"
        );
    }
}
