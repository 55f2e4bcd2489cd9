//! The verdicts of intervals against a claim's lines, and which of them more trials decide.

use workloads::Codec;

use crate::analysis::findings::rules::tests::{key, noisy};
use crate::analysis::findings::{Check, Expect, Verdict, DECISION_BAND, MAX_TRIALS_FACTOR};

/// A check not reproduced only because its interval reaches across the line of the claim's
/// opposite is open, like an unsettled one: more trials say whether it is contradicted (5a
/// natively, 0.69x [0.31, 1.55] in one run and 0.99x [0.86, 1.13], contradicted, in the
/// next). Not where its estimate lies on that line, where its interval reaches the claim's
/// region too (unsettled), or where it lies between the lines (decided).
#[test]
fn an_interval_across_the_opposite_line_alone_is_settled_by_more_trials() {
    let expect = Expect::AtLeast {
        holds: 2.0,
        opposite: 1.2,
    };
    let cells = vec![key(
        "decoded",
        Codec::None,
        2,
        crate::results::CacheState::Cold,
    )];
    let at = |value: f64, spread: f64| {
        Check::of("x".into(), &Ok(noisy(value, spread, 4)), expect, "x").cells(cells.clone())
    };
    // 0.7x from trials far apart: an interval from about 0.3x to 1.7x.
    let low = at(0.7, 0.45);
    let (lo, hi) = noisy(0.7, 0.45, 4).ci95();
    assert!(
        lo < 1.2 && hi > 1.2 * DECISION_BAND && hi < 2.0 / DECISION_BAND,
        "{lo} {hi}"
    );
    assert_eq!(low.verdict, Verdict::NotReproduced);
    let factor = low.trials_factor().expect("more trials decide it");
    assert!(factor > 1.0 && factor < MAX_TRIALS_FACTOR, "{factor}");
    assert!(low.settles_with(factor) && !low.settles_with(1.0));
    // The same from the other side: 1.5x reaching under 1.2x.
    let high = at(1.5, 0.12);
    let (lo, hi) = noisy(1.5, 0.12, 4).ci95();
    assert!(
        lo < 1.2 * DECISION_BAND && hi < 2.0 / DECISION_BAND,
        "{lo} {hi}"
    );
    assert_eq!(high.verdict, Verdict::NotReproduced);
    assert!(high.trials_factor().is_some());
    // On the opposite line: no number of trials decides it.
    let on = at(1.19, 0.2);
    assert_eq!(on.verdict, Verdict::NotReproduced);
    assert_eq!(on.trials_factor(), None);
    // Between the lines and clear of both, or clearly contradicted: decided.
    for (value, verdict) in [(1.5, Verdict::NotReproduced), (0.8, Verdict::Contradicted)] {
        let decided = at(value, 0.02);
        assert_eq!(decided.verdict, verdict);
        assert_eq!(decided.trials_factor(), None, "{value}");
    }
}
