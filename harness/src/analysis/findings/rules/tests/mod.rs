//! The rules on the paper's own figures (every sub-claim reproduced) and on numbers on the
//! other side of each (every sub-claim contradicted).

use super::*;
use crate::analysis::findings::observed::Storage;
use crate::analysis::findings::{published, Verdict, DECISION_BAND, MAX_TRIALS_FACTOR};

fn exact(v: f64) -> Figure {
    Ok(LogEstimate::exact(v).unwrap())
}

fn verdicts(obs: &Observations) -> Vec<(&'static str, Verdict, String)> {
    judge(obs)
        .into_iter()
        .flat_map(|f| f.sub_claims)
        .map(|s| {
            let detail = s
                .checks
                .iter()
                .map(|c| format!("{}: {} ({})", c.subject, c.measured, c.verdict.text()))
                .chain(s.note.clone())
                .collect::<Vec<_>>()
                .join("; ");
            (s.id, s.verdict, detail)
        })
        .collect()
}

#[test]
fn the_papers_own_figures_reproduce_every_sub_claim() {
    let all = verdicts(&published::observations());
    assert_eq!(all.len(), 17, "{all:#?}");
    for (id, verdict, detail) in &all {
        assert_eq!(*verdict, Verdict::Reproduced, "{id}: {detail}");
    }
}

fn strategies_mut(obs: &mut Observations) -> impl Iterator<Item = ((), &mut Strategy)> {
    obs.pipelines
        .iter_mut()
        .flat_map(|p| p.strategies.iter_mut())
        .map(|s| ((), s))
}

/// Every codec of every strategy changed by `f`.
fn each_codec(
    obs: &mut Observations,
    f: &dyn Fn(&mut crate::analysis::findings::observed::Compressed),
) {
    for (_, s) in strategies_mut(obs) {
        s.codecs.iter_mut().for_each(f);
    }
}

/// Every thread scaling set to `speedup`.
fn each_scaling(obs: &mut Observations, speedup: f64) {
    for (_, s) in strategies_mut(obs) {
        if let Some(sc) = &mut s.scaling {
            sc.speedup = exact(speedup);
        }
    }
}

/// The paper's figures changed by `change`, judged: the verdict of sub-claim `id`.
fn against(id: &str, change: impl Fn(&mut Observations)) -> (Verdict, String) {
    let mut obs = published::observations();
    change(&mut obs);
    let (_, verdict, detail) = verdicts(&obs)
        .into_iter()
        .find(|(i, _, _)| *i == id)
        .unwrap();
    (verdict, detail)
}

#[test]
fn numbers_on_the_other_side_contradict_each_sub_claim() {
    type Change = Box<dyn Fn(&mut Observations)>;
    let last_of = |obs: &mut Observations, f: &dyn Fn(&mut Strategy)| {
        for p in &mut obs.pipelines {
            if let Some(s) = p.strategies.last_mut() {
                f(s);
            }
        }
    };
    let cases: Vec<(&str, Change)> = vec![
        (
            "1a",
            Box::new(move |o| last_of(o, &|s| s.cold = Some(exact(1e6)))),
        ),
        (
            "1b",
            Box::new(|o| {
                for (_, s) in strategies_mut(o) {
                    if s.name == "resized" || s.name == "bpe-encoded" {
                        s.cold = Some(exact(1.0));
                    }
                }
            }),
        ),
        (
            "2a",
            Box::new(|o| {
                for p in &mut o.pipelines {
                    let raw = p.strategy("unprocessed").and_then(|s| s.cold.clone());
                    if let (Some(raw), Some(cat)) = (
                        raw,
                        p.strategies.iter_mut().find(|s| s.name == "concatenated"),
                    ) {
                        cat.cold = Some(raw);
                    }
                }
            }),
        ),
        (
            "2b",
            Box::new(|o| {
                for p in o.pipelines.iter_mut().filter(|p| p.pipeline == "cv2-png") {
                    let raw = p.strategy("unprocessed").unwrap().cold.clone().unwrap();
                    let cat = p.strategies.iter_mut().find(|s| s.name == "concatenated");
                    cat.unwrap().cold = Some(Ok(raw.unwrap().scaled(3.0)));
                }
            }),
        ),
        (
            "3a",
            Box::new(|o| {
                for (_, s) in strategies_mut(o) {
                    if s.name == "pixel-centered" {
                        s.codecs.iter_mut().for_each(|c| c.speedup = exact(0.8));
                    }
                }
            }),
        ),
        (
            "3b",
            Box::new(|o| each_codec(o, &|c| c.stored_fraction = Some(0.9))),
        ),
        (
            "3c",
            Box::new(|o| each_codec(o, &|c| c.speedup = exact(1.5))),
        ),
        (
            "3d",
            Box::new(|o| each_codec(o, &|c| c.offline_growth = Some(exact(0.8)))),
        ),
        (
            "4a",
            Box::new(move |o| last_of(o, &|s| s.page_cache = Some(exact(0.9)))),
        ),
        (
            "4b",
            Box::new(move |o| last_of(o, &|s| s.app_cache = Some(exact(0.9)))),
        ),
        (
            "4c",
            Box::new(move |o| last_of(o, &|s| s.app_over_page = Some(exact(0.9)))),
        ),
        (
            "4d",
            Box::new(move |o| last_of(o, &|s| s.page_cache = Some(exact(2.0)))),
        ),
        (
            "5a",
            Box::new(|o| {
                for p in &mut o.sizes[0].sizes {
                    p.cold_mb_s = exact(100.0);
                }
            }),
        ),
        (
            "5b",
            Box::new(|o| {
                for p in &mut o.sizes[0].sizes {
                    p.warm_mb_s = Some(exact(100.0));
                }
            }),
        ),
        ("6a", Box::new(|o| each_scaling(o, 1.0))),
        ("6b", Box::new(|o| each_scaling(o, 7.5))),
        ("6c", Box::new(|o| each_scaling(o, 1.5))),
    ];
    assert_eq!(cases.len(), 17, "one case per sub-claim");
    for (id, change) in &cases {
        let (verdict, detail) = against(id, change);
        assert_eq!(verdict, Verdict::Contradicted, "{id}: {detail}");
    }
}

/// A verdict is decided where the whole interval lies in one region the claim's lines bound,
/// clearing each line by the 2 % noise floor, or where it lies clear of every region where the
/// claim holds (not reproduced, however far it reaches towards the opposite); an interval that
/// reaches into a region where the claim holds and out of it, on either side, is unsettled. An
/// exact figure need only reach its line.
#[test]
fn an_interval_across_the_claims_line_is_unsettled_and_no_figure_is_not_testable() {
    let expect = Expect::AtLeast {
        holds: 1.5,
        opposite: 1.1,
    };
    assert_eq!(expect.judge((1.6, 2.0)), Verdict::Reproduced);
    assert_eq!(expect.judge((1.2, 1.4)), Verdict::NotReproduced);
    assert_eq!(expect.judge((0.9, 1.05)), Verdict::Contradicted);
    // Across the claim's line, from below or above.
    for interval in [(1.2, 2.0), (1.4, 1.6), (0.9, 1.6)] {
        assert_eq!(expect.judge(interval), Verdict::Unsettled, "{interval:?}");
    }
    // Across the opposite line only: the claim fails either way.
    for interval in [(1.0, 1.3), (0.5, 1.46), (1.09, 1.12)] {
        assert_eq!(
            expect.judge(interval),
            Verdict::NotReproduced,
            "{interval:?}"
        );
    }
    // The margin an estimate has: from the claim's line only, between the lines; from both of
    // its region's lines for the decided margin of one where the opposite holds.
    let near_opposite = expect.margin(1.12).unwrap();
    assert!((near_opposite - (1.5f64 / 1.02 / 1.12).ln()).abs() < 1e-9);
    assert_eq!(expect.decided_margin(1.12), Some(near_opposite));
    assert!(expect.margin(1.49).is_none());
    assert!(expect.decided_margin(1.09).is_none());
    assert!((expect.margin(1.0).unwrap() - (1.5f64 / 1.02).ln()).abs() < 1e-9);
    // Clear of the line, but by less than the noise floor.
    assert_eq!(expect.judge((1.51, 1.7)), Verdict::Unsettled);
    assert_eq!(expect.judge((1.2, 1.49)), Verdict::Unsettled);
    assert_eq!(expect.judge((1.53, 1.7)), Verdict::Reproduced);
    // Exact figures: on the line is the stronger verdict.
    assert_eq!(expect.judge((1.5, 1.5)), Verdict::Reproduced);
    assert_eq!(expect.judge((1.1, 1.1)), Verdict::Contradicted);
    assert_eq!(expect.judge((1.49, 1.49)), Verdict::NotReproduced);
    let within = Expect::Within {
        lo: 1.0,
        hi: 1.5,
        below: 0.8,
        above: 2.0,
    };
    assert_eq!(within.judge((1.1, 1.4)), Verdict::Reproduced);
    assert_eq!(within.judge((0.85, 0.95)), Verdict::NotReproduced);
    assert_eq!(within.judge((1.6, 1.9)), Verdict::NotReproduced);
    assert_eq!(within.judge((0.9, 1.0)), Verdict::Unsettled);
    assert_eq!(within.judge((0.7, 0.97)), Verdict::NotReproduced);
    assert_eq!(within.judge((1.6, 2.5)), Verdict::NotReproduced);
    assert_eq!(within.judge((0.7, 1.2)), Verdict::Unsettled);
    assert_eq!(within.judge((2.1, 3.0)), Verdict::Contradicted);
    assert_eq!(within.judge((0.5, 0.7)), Verdict::Contradicted);
    let check = Check::of("x".into(), &Err("epochs of 0.05 s".into()), expect, "x");
    assert_eq!(check.verdict, Verdict::NotTestable);
    assert_eq!(
        Verdict::of_all([Verdict::Reproduced, Verdict::NotTestable]),
        Verdict::Reproduced
    );
    assert_eq!(
        Verdict::of_all([Verdict::Reproduced, Verdict::Contradicted]),
        Verdict::NotReproduced
    );
    assert_eq!(Verdict::of_all([]), Verdict::NotTestable);
}

#[test]
fn the_fastest_strategy_is_chosen_by_its_mean_even_when_it_cannot_be_judged() {
    // CV2-JPG's `resized` (the paper's fastest) with epochs too short to judge: 1a must say
    // so, not compare the next fastest with the last and call the claim contradicted.
    let mut obs = published::observations();
    for p in obs.pipelines.iter_mut().filter(|p| p.pipeline == "cv2-jpg") {
        for s in p.strategies.iter_mut().filter(|s| s.name == "resized") {
            s.cold = Some(Err("epochs of 0.44 s, under the 1 s floor".into()));
        }
    }
    let sub = &judge(&obs)[0].sub_claims[0];
    let check = sub
        .checks
        .iter()
        .find(|c| c.subject.starts_with("paper cv2-jpg"))
        .unwrap();
    assert!(
        check.subject.contains("resized / pixel-centered"),
        "{check:?}"
    );
    assert_eq!(check.verdict, Verdict::NotTestable, "{check:?}");
}

/// A mean over trials with a relative spread: `n` values around `mean`.
pub(crate) fn noisy(mean: f64, spread: f64, n: usize) -> LogEstimate {
    let values: Vec<f64> = (0..n)
        .map(|i| mean * (1.0 + spread * if i % 2 == 0 { 1.0 } else { -1.0 }))
        .collect();
    LogEstimate::of_mean(&crate::analysis::stats::Summary::of(&values).unwrap()).unwrap()
}

pub(crate) fn key(
    strategy: &str,
    codec: Codec,
    threads: usize,
    cache: crate::results::CacheState,
) -> CellKey {
    CellKey {
        workload: "nilm".into(),
        condition: Default::default(),
        split: 4,
        strategy: strategy.into(),
        codec,
        threads,
        cache,
        epoch: u64::from(cache == crate::results::CacheState::Warm),
    }
}

#[test]
fn a_straddling_check_names_its_cells_and_the_trials_that_settle_it() {
    use crate::results::CacheState::{Cold, Warm};
    // NILM's last strategy: warm over cold about 2x, but four noisy trials straddle 1.05x.
    let warm = noisy(200.0, 0.1, 4);
    let cold = noisy(100.0, 0.45, 4);
    let mut obs = published::observations();
    let mine = vec![
        key("aggregated", Codec::None, 8, Cold),
        key("aggregated", Codec::None, 8, Warm),
        key("aggregated", Codec::None, 1, Cold),
        key("aggregated", Codec::Gzip { level: 6 }, 8, Cold),
    ];
    for p in obs.pipelines.iter_mut().filter(|p| p.pipeline == "nilm") {
        let last = p.strategies.last_mut().unwrap();
        last.page_cache = Some(Ok(warm.over(&cold)));
        last.cells = mine.clone();
    }
    let found = judge(&obs);
    let check = found[3].sub_claims[0]
        .checks
        .iter()
        .find(|c| c.subject.contains("nilm"))
        .unwrap()
        .clone();
    assert_eq!(check.verdict, Verdict::Unsettled, "{check:?}");
    // Only the cells its ratio comes from: codec none at the pipeline's threads.
    assert_eq!(check.cells, mine[..2].to_vec());
    let factor = check.trials_factor().expect("more trials settle it");
    assert!(factor > 1.0 && factor < MAX_TRIALS_FACTOR, "{factor}");
    // With that many times the trials (the same spread), the interval clears 1.05x.
    let (warm_n, cold_n) = (
        noisy(200.0, 0.1, (4.0 * factor).ceil() as usize),
        noisy(100.0, 0.45, (4.0 * factor).ceil() as usize),
    );
    let (lo, _) = warm_n.over(&cold_n).ci95();
    assert!(lo > 1.05, "{lo}");

    // Checks that more trials cannot settle give no factor: an estimate on the opposite line,
    // one a hair past the claim's line, a decided one, and the paper's own.
    let expect = Expect::AtLeast {
        holds: 1.05,
        opposite: 1.0,
    };
    let at = |value: f64| {
        Check::of("x".into(), &Ok(noisy(value, 0.5, 4)), expect, "x").cells(mine.clone())
    };
    assert!(at(2.0).trials_factor().is_some());
    assert_eq!(at(1.01).trials_factor(), None, "on the opposite line");
    assert_eq!(
        at(1.051).trials_factor(),
        None,
        "beyond any number of trials"
    );
    // Clearly below `opposite`, a contradiction can be settled too.
    assert!(at(0.5).trials_factor().is_some());
    let decided = Check::of("x".into(), &Ok(noisy(3.0, 0.01, 4)), expect, "x").cells(mine);
    assert_eq!(decided.verdict, Verdict::Reproduced);
    assert_eq!(decided.trials_factor(), None);
    assert!(verdicts(&published::observations()).len() == 17);
    for f in judge(&published::observations()) {
        for sub in f.sub_claims {
            assert!(sub.checks.iter().all(|c| c.trials_factor().is_none()));
        }
    }
}

#[test]
fn margins_are_measured_to_the_lines_that_change_the_verdict() {
    let band = DECISION_BAND.ln();
    let at_least = Expect::AtLeast {
        holds: 2.0,
        opposite: 1.0,
    };
    let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
    // Settling's margin: to the band of the claim's line, wherever the estimate is (an
    // interval across the opposite line alone is decided).
    assert!(close(at_least.margin(4.0), 2f64.ln() - band));
    assert!(close(at_least.margin(0.5), 4f64.ln() - band));
    assert!(close(at_least.margin(1.5), (2.0f64 / 1.5).ln() - band));
    assert!(close(at_least.margin(0.99), (2.0f64 / 0.99).ln() - band));
    assert_eq!(at_least.margin(2.01), None);
    // A decided verdict's margin: both lines of a region where the claim or its opposite
    // holds, the claim's line alone between them.
    assert!(close(at_least.decided_margin(4.0), 2f64.ln() - band));
    assert!(close(at_least.decided_margin(0.5), 2f64.ln() - band));
    assert!(close(
        at_least.decided_margin(1.5),
        (2.0f64 / 1.5).ln() - band
    ));
    assert!(close(
        at_least.decided_margin(1.01),
        (2.0f64 / 1.01).ln() - band
    ));
    assert_eq!(at_least.decided_margin(0.99), None);
    let at_most = Expect::AtMost {
        holds: 1.1,
        opposite: 1.25,
    };
    assert!(at_most.margin(1.0).is_some() && at_most.margin(2.0).is_some());
    assert!(at_most.margin(1.17).is_some());
    assert!(at_most.margin(1.25).is_some());
    assert_eq!(at_most.margin(1.11), None);
    assert_eq!(at_most.decided_margin(1.26), None);
    let within = Expect::Within {
        lo: 1.0,
        hi: 1.5,
        below: 0.8,
        above: 2.0,
    };
    assert!(close(within.margin(1.2), 1.2f64.ln() - band));
    assert!(within.margin(0.5).is_some() && within.margin(3.0).is_some());
    assert!(within.margin(0.9).is_some() && within.margin(0.8).is_some());
    assert_eq!(within.margin(1.01), None);
    assert_eq!(within.decided_margin(0.8), None);
    // Every margin is one the interval can be decided within: an interval of that half-width
    // around the estimate is not unsettled, and one of the decided margin judges as the region
    // the estimate is in.
    for value in [0.5, 0.9, 1.2, 1.7, 3.0] {
        let m = within.margin(value).unwrap() * 0.999;
        let verdict = within.judge((value / m.exp(), value * m.exp()));
        assert_ne!(verdict, Verdict::Unsettled, "{value}");
        let d = within.decided_margin(value).unwrap() * 0.999;
        let decided = within.judge((value / d.exp(), value * d.exp()));
        assert_eq!(decided, within.judge((value, value)), "{value}");
    }
}

/// Beside each verdict, whether our figure has the paper's size: a claim can hold (1a at
/// 1.05x) while the size the paper saw (3-13x) does not.
#[test]
fn each_check_says_whether_the_papers_size_reproduces() {
    let expect = Expect::AtLeast {
        holds: 1.05,
        opposite: 0.95,
    };
    let ours = Ok(LogEstimate::range(1.08, 1.12).unwrap());
    let check =
        |paper: LogEstimate| Check::of("x".into(), &ours, expect, "x").paper(Some(Ok(paper)));
    let far = check(LogEstimate::range(3.0, 13.0).unwrap());
    assert_eq!(far.verdict, Verdict::Reproduced);
    let size = far.size.clone().unwrap();
    assert!(
        size.contains("the paper's 3.00x to 13.00x") && size.contains("not within a factor of 2"),
        "{size}"
    );
    let near = check(LogEstimate::exact(1.5).unwrap());
    assert!(near.size.unwrap().ends_with(": within a factor of 2"));
    // No figure of ours (one trial): no size line.
    let none = Check::of("x".into(), &Err("one trial".into()), expect, "x")
        .paper(Some(Ok(LogEstimate::exact(2.0).unwrap())));
    assert_eq!(none.size, None);
    // The paper's own figures all have the paper's size.
    for f in judge(&published::observations()) {
        for sub in f.sub_claims {
            for c in sub.checks {
                if let Some(size) = c.size {
                    assert!(
                        size.ends_with(": within a factor of 2"),
                        "{}: {size}",
                        c.subject
                    );
                }
            }
        }
    }
}

/// Two runs whose estimates fall either side of a line (5b's 2x warm ratio at 1.96x and 2.08x,
/// 4d's 1.1x at 1.10x and 1.095x) measured the same thing: both are unsettled while their
/// intervals reach across it, whichever side the estimate is on, where the first used to be
/// "not reproduced" and the second "unsettled". Within the 2 % noise floor of the line the
/// estimate is on it, and no number of trials decides; clear of it, more trials can. A 1.01x
/// page cache against a needed 1.05x with a narrow interval is a missing effect, decided.
#[test]
fn an_interval_across_the_line_is_unsettled_from_either_side() {
    let twice = Expect::AtLeast {
        holds: 2.0,
        opposite: 1.2,
    };
    let at = |value: f64, spread: f64, expect: Expect| {
        Check::of("x".into(), &Ok(noisy(value, spread, 4)), expect, "x")
    };
    for value in [1.96, 2.08] {
        let check = at(value, 0.15, twice);
        assert_eq!(check.verdict, Verdict::Unsettled, "{check:?}");
        assert_eq!(check.on_threshold(), None, "{value}: clear of the 2 % band");
        assert!(check.straddles().is_some(), "{value}");
    }
    for value in [1.99, 2.03] {
        let check = at(value, 0.15, twice);
        assert_eq!(check.verdict, Verdict::Unsettled, "{check:?}");
        let (estimate, line) = check.on_threshold().expect("on the line");
        assert!(
            (estimate - value).abs() < 0.01 && line == 2.0,
            "{estimate} {line}"
        );
        assert_eq!(check.straddles(), None);
    }
    // Decided intervals are neither.
    for value in [1.5, 3.0] {
        let check = at(value, 0.05, twice);
        assert_ne!(check.verdict, Verdict::Unsettled, "{check:?}");
        assert_eq!(check.on_threshold(), None);
        assert_eq!(check.straddles(), None);
    }
    let at_most = Expect::AtMost {
        holds: 1.1,
        opposite: 1.5,
    };
    assert!(at(1.10, 0.1, at_most).on_threshold().is_some());
    assert!(at(1.095, 0.1, at_most).on_threshold().is_some());
    assert_eq!(at(1.06, 0.1, at_most).verdict, Verdict::Unsettled);
    assert_eq!(at(1.06, 0.1, at_most).on_threshold(), None);
    let small = Expect::AtLeast {
        holds: 1.05,
        opposite: 0.95,
    };
    assert_eq!(at(1.01, 0.01, small).verdict, Verdict::NotReproduced);
    // An estimate on the opposite line is not on a line that decides: with an interval clear
    // of the claim's side it is not reproduced, and where the interval reaches that side,
    // more trials decide it.
    assert_eq!(at(0.95, 0.01, small).verdict, Verdict::NotReproduced);
    let wide = at(0.95, 0.1, small);
    assert_eq!(wide.verdict, Verdict::Unsettled, "{wide:?}");
    assert_eq!(wide.on_threshold(), None);
    assert!(wide.straddles().is_some());
}

/// 5a's mechanism names a fixed cost per record only where small records read slower per
/// byte than large ones; where they read as fast (a cold read of the large ones slower), it
/// says no cost per record shows, never a negative one.
#[test]
fn a_cost_per_record_is_named_only_where_there_is_one() {
    let mechanism = |small_over_large: f64| {
        let mut obs = published::observations();
        for series in obs.sizes.iter_mut().filter(|s| s.judged) {
            let large = series
                .sizes
                .iter()
                .map(|p| p.mb_per_sample)
                .fold(0.0, f64::max);
            let rate = 1000.0;
            for p in &mut series.sizes {
                let ratio = if p.mb_per_sample < large {
                    small_over_large
                } else {
                    1.0
                };
                p.cold_mb_s = exact(rate * ratio);
            }
        }
        let found = judge(&obs);
        let sub = found
            .iter()
            .flat_map(|f| &f.sub_claims)
            .find(|s| s.id == "5a")
            .unwrap();
        sub.checks
            .iter()
            .find_map(|c| c.mechanism.clone())
            .unwrap_or_else(|| panic!("no mechanism in {:?}", sub.checks))
    };
    let slower = mechanism(0.25);
    assert!(slower.contains("a fixed cost of"), "{slower}");
    for same_or_faster in [1.0, 1.2] {
        let text = mechanism(same_or_faster);
        assert!(
            text.contains("no fixed cost per record shows") && !text.contains("-"),
            "{text}"
        );
    }
}

mod cells;
mod untestable;
