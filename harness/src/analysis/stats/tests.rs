//! The statistics checked against worked examples and printed tables.

use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn log_estimates_combine_and_stay_positive() {
    let a = Summary::of(&[100.0, 110.0, 90.0]).unwrap();
    let b = Summary::of(&[10.0, 40.0, 25.0]).unwrap();
    let ratio = LogEstimate::of_mean(&a)
        .unwrap()
        .over(&LogEstimate::of_mean(&b).unwrap());
    let (lo, hi) = ratio.ci95();
    assert!(close(ratio.value(), 4.0, 1e-9));
    // A wide, noisy denominator: the interval is wide but never below zero.
    assert!(lo > 0.0 && lo < 4.0 && hi > 4.0, "[{lo}, {hi}]");
    // Exact figures give a point; a published range gives itself back.
    let exact = LogEstimate::exact(962.0)
        .unwrap()
        .over(&LogEstimate::exact(107.0).unwrap());
    assert_eq!(exact.ci95(), (exact.value(), exact.value()));
    let (lo, hi) = LogEstimate::range(6.0, 7.0).unwrap().ci95();
    assert!(close(lo, 6.0, 1e-9) && close(hi, 7.0, 1e-9), "[{lo}, {hi}]");
    // One trial, or a zero mean, is no estimate.
    assert!(LogEstimate::of_mean(&Summary::of(&[5.0]).unwrap()).is_none());
    assert!(LogEstimate::exact(0.0).is_none());
}

#[test]
fn intervals_of_times_and_rates_never_reach_below_zero() {
    // Two trials far apart (as "1941 [-84.97, 3966]" was): the plain interval of the mean
    // goes below zero, the one on the log scale does not, and it holds the mean.
    let values = [1000.0, 2882.0];
    let (plain_lo, _) = Summary::of(&values).unwrap().ci95.unwrap();
    assert!(plain_lo < 0.0);
    let s = Summary::of_positive(&values).unwrap();
    let (lo, hi) = s.ci95.unwrap();
    assert!(lo > 0.0 && lo < s.mean && s.mean < hi, "[{lo}, {hi}]");
    assert_eq!(s.ci95, Some(LogEstimate::of_mean(&s).unwrap().ci95()));
    // Tight trials: close to the plain interval.
    let tight = Summary::of_positive(&[100.0, 101.0, 99.0])
        .unwrap()
        .ci95
        .unwrap();
    let plain = Summary::of(&[100.0, 101.0, 99.0]).unwrap().ci95.unwrap();
    assert!(
        close(tight.0, plain.0, 0.1) && close(tight.1, plain.1, 0.1),
        "{tight:?} {plain:?}"
    );
    // A zero among the values: cut at zero; one value: no interval.
    let (lo, _) = Summary::of_positive(&[0.0, 0.0, 30.0])
        .unwrap()
        .ci95
        .unwrap();
    assert!(lo >= 0.0);
    assert_eq!(Summary::of_positive(&[5.0]).unwrap().ci95, None);
}

#[test]
fn t_quantiles_match_the_printed_tables() {
    // Two-sided 95 % critical values from standard t tables.
    for (df, expected) in [
        (1.0, 12.7062),
        (2.0, 4.3027),
        (4.0, 2.7764),
        (5.0, 2.5706),
        (10.0, 2.2281),
        (30.0, 2.0423),
        (1e6, 1.9600),
    ] {
        let t = t_quantile(0.975, df);
        assert!(close(t, expected, 5e-4), "df {df}: {t}");
    }
    assert!(close(t_quantile(0.025, 5.0), -2.5706, 5e-4));
    assert!(close(t_cdf(0.0, 3.0), 0.5, 1e-12));
    // df = 1 is the Cauchy distribution: P(T <= 1) = 3/4 exactly.
    assert!(close(t_cdf(1.0, 1.0), 0.75, 1e-10));
    assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
    assert!(close(
        ln_gamma(0.5),
        std::f64::consts::PI.sqrt().ln(),
        1e-12
    ));
}

#[test]
fn summary_by_hand() {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample sd sqrt(32/7), median 4.5.
    let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert_eq!(
        (s.n, s.mean, s.median, s.min, s.max),
        (8, 5.0, 4.5, 2.0, 9.0)
    );
    let sd = (32.0f64 / 7.0).sqrt();
    assert!(close(s.sd.unwrap(), sd, 1e-12));
    // t(0.975, 7) = 2.3646 (tables; scipy: 2.364624).
    let half = 2.3646 * sd / 8f64.sqrt();
    let (lo, hi) = s.ci95.unwrap();
    assert!(
        close(lo, 5.0 - half, 1e-3) && close(hi, 5.0 + half, 1e-3),
        "{lo} {hi}"
    );
    assert!(close(s.cv.unwrap(), sd / 5.0, 1e-12));
    // |x - 4.5| sorted: 0.5 x5, 2.5, 2.5, 4.5 -> MAD 0.5; z(9) = 0.6745 * 4.5 / 0.5 = 6.07
    // flags 9, z(2) = z(7) = 3.37 stays under 3.5.
    assert_eq!(s.outliers, vec![7]);
}

#[test]
fn mad_outliers_by_hand() {
    // median 10, |deviations| 0,0,1,1,1,90 -> MAD 1; z(100) = 0.6745 * 90 = 60.7 > 3.5,
    // z(11) = 0.6745 < 3.5.
    let s = Summary::of(&[10.0, 11.0, 9.0, 10.0, 11.0, 100.0]).unwrap();
    assert_eq!(s.median, 10.5);
    let s = Summary::of(&[10.0, 11.0, 9.0, 10.0, 11.0, 100.0, 10.0]).unwrap();
    assert_eq!(s.median, 10.0);
    assert_eq!(s.outliers, vec![5]);
    let flat = Summary::of(&[3.0, 3.0, 3.0, 8.0]).unwrap();
    assert!(flat.outliers.is_empty(), "MAD 0: no modified z-score");
}

#[test]
fn invariants_are_checked_and_single_values_have_no_spread() {
    assert_eq!(Summary::of(&[]), Err(StatsError::Empty));
    assert_eq!(Summary::of(&[1.0, f64::NAN]), Err(StatsError::NotFinite(1)));
    let one = Summary::of(&[4.0]).unwrap();
    assert_eq!((one.sd, one.ci95, one.cv), (None, None, None));
}

#[test]
fn welch_matches_a_worked_example() {
    // a = 19.8 20.4 19.6 17.8 18.5 18.9 18.3 18.9 19.5 22.0
    // b = 28.2 26.6 20.1 23.3 25.2 22.1 17.7 27.6 20.6 13.7 23.2 17.5 20.6 18.0 23.9 21.6
    //     24.3 20.4 23.9 13.3
    // Reference values computed with scipy.stats.ttest_ind(b, a, equal_var=False):
    // t = 2.2255120, df = 24.524635, p = 0.0354845.
    let a = Summary::of(&[19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0]).unwrap();
    let b = Summary::of(&[
        28.2, 26.6, 20.1, 23.3, 25.2, 22.1, 17.7, 27.6, 20.6, 13.7, 23.2, 17.5, 20.6, 18.0, 23.9,
        21.6, 24.3, 20.4, 23.9, 13.3,
    ])
    .unwrap();
    let w = welch(&a, &b).unwrap();
    assert!(close(w.t, 2.2255120, 1e-6), "{w:?}");
    assert!(close(w.df, 24.524635, 1e-5), "{w:?}");
    assert!(close(w.p, 0.0354845, 1e-6), "{w:?}");
    let (ratio, lo, hi) = ratio_ci(&a, &b).unwrap();
    assert!(
        close(ratio, b.mean / a.mean, 1e-12) && lo < ratio && ratio < hi && lo > 1.0,
        "{lo} {ratio} {hi}"
    );
}

#[test]
fn kendall_tau_by_hand() {
    assert_eq!(
        kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]),
        Some(1.0)
    );
    assert_eq!(
        kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[4.0, 3.0, 2.0, 1.0]),
        Some(-1.0)
    );
    // Pairs: (1,2) C, (1,3) C, (2,3) D -> (2 - 1) / 3.
    assert!(close(
        kendall_tau_b(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]).unwrap(),
        1.0 / 3.0,
        1e-12
    ));
    // With a tie in x: pairs (1,2) tie_x, (1,3) C, (2,3) C -> 2 / sqrt(2 * 3).
    assert!(close(
        kendall_tau_b(&[1.0, 1.0, 2.0], &[1.0, 2.0, 3.0]).unwrap(),
        2.0 / 6f64.sqrt(),
        1e-12
    ));
    assert_eq!(kendall_tau_b(&[1.0], &[1.0]), None);
}

#[test]
fn erfc_matches_known_values() {
    for (x, want) in [
        (0.0, 1.0),
        (0.5, 0.479_500_122),
        (1.959_964, 0.05),
        (-1.0, 1.842_700_793),
    ] {
        let got = if x == 1.959_964 {
            erfc(x / std::f64::consts::SQRT_2)
        } else {
            erfc(x)
        };
        assert!(close(got, want, 2e-7), "erfc({x}) = {got}, want {want}");
    }
}

#[test]
fn the_ratio_test_agrees_with_its_interval_and_the_interval_is_never_negative() {
    // The case that gave [-0.18, 1.46] by the linear delta method: a wide numerator.
    let a = Summary::of(&[100.0, 101.0, 99.0]).unwrap();
    let b = Summary::of(&[5.0, 120.0, 70.0]).unwrap();
    let (ratio, lo, hi) = ratio_ci(&a, &b).unwrap();
    assert!(lo > 0.0 && lo < ratio && ratio < hi, "{ratio} [{lo}, {hi}]");
    for (xs, ys) in [
        (
            vec![100.0, 101.0, 99.0, 100.5],
            vec![104.0, 103.0, 105.0, 104.5],
        ),
        (vec![100.0, 110.0, 90.0], vec![101.0, 111.0, 91.0]),
        (vec![10.0, 12.0], vec![30.0, 33.0]),
    ] {
        let (a, b) = (Summary::of(&xs).unwrap(), Summary::of(&ys).unwrap());
        let est = LogEstimate::of_mean(&b)
            .unwrap()
            .over(&LogEstimate::of_mean(&a).unwrap());
        let (lo, hi) = est.ci95();
        let p = est.p_value_of_one();
        assert_eq!(p < 0.05, lo > 1.0 || hi < 1.0, "p {p}, [{lo}, {hi}]");
    }
    assert_eq!(LogEstimate::exact(1.0).unwrap().p_value_of_one(), 1.0);
    assert_eq!(LogEstimate::exact(2.0).unwrap().p_value_of_one(), 0.0);
    // A published range of (1.1, 1.3) is a normal 95 % interval wholly above 1.
    let range = LogEstimate::range(1.1, 1.3).unwrap();
    assert!(range.p_value_of_one() < 0.05);
}

/// The typical spread leaves the outliers out, where three values or more are left: the
/// spread settling expects of the trials it adds. The interval keeps every value.
#[test]
fn the_typical_spread_leaves_a_slow_epoch_out() {
    // Three steady epochs and one 60 % slower: flagged, and the typical spread is theirs.
    let s = Summary::of(&[1.00, 1.02, 0.99, 1.60]).unwrap();
    assert_eq!(s.outliers, vec![3]);
    let steady = Summary::of(&[1.00, 1.02, 0.99]).unwrap();
    assert!(close(s.typical_sd.unwrap(), steady.sd.unwrap(), 1e-12));
    assert!(s.sd.unwrap() > 10.0 * s.typical_sd.unwrap());
    // No outlier, or fewer than three values beside it: the spread of them all.
    let even = Summary::of(&[1.0, 1.1, 1.2]).unwrap();
    assert_eq!(even.typical_sd, even.sd);
    let three = Summary::of(&[1.35, 1.72, 1.73]).unwrap();
    assert_eq!(three.outliers, vec![0]);
    assert_eq!(three.typical_sd, three.sd);
    // Of a mean: the interval from every value, the plan from the typical ones.
    let e = LogEstimate::of_mean(&s).unwrap();
    let all = LogEstimate::of_mean(&Summary {
        typical_sd: s.sd,
        ..s.clone()
    })
    .unwrap();
    assert_eq!(e.ci95(), all.ci95());
    // At the trials recorded, the interval's own half-width; with more, the slow epoch weighs
    // less and less, where counted as typical it is expected again in every trial added.
    let (lo, hi) = e.ci95();
    assert!(close(
        e.half_width_with_trials(1.0),
        (hi / lo).ln() / 2.0,
        1e-9
    ));
    assert_eq!(
        e.half_width_with_trials(1.0),
        all.half_width_with_trials(1.0)
    );
    assert!(e.half_width_with_trials(4.0) < all.half_width_with_trials(4.0) * 0.55);
    // Of paired logs alike, and a ratio adds the plans of its parts.
    let logs = [0.10, 0.11, 0.09, 0.60];
    let paired = LogEstimate::of_logs(&logs).unwrap();
    let steady_logs = LogEstimate::of_logs(&logs[..3]).unwrap();
    let var = |e: &LogEstimate| (e.half_width_with_trials(1e9) / 1.96).powi(2) * 1e9;
    assert!(close(var(&paired) / var(&steady_logs), 3.0 / 4.0, 1e-3));
    let ratio = e.over(&paired);
    assert!(close(var(&ratio) / (var(&e) + var(&paired)), 1.0, 1e-3));
}
