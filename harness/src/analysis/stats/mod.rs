//! Statistics over repeated trials: summaries with Student-t confidence intervals, outliers by
//! modified z-score, Welch's t-test and a ratio CI for comparisons, Kendall's tau-b for
//! rankings. Pure functions over plain numbers.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum StatsError {
    #[error("no observations")]
    Empty,
    #[error("observation {0} is not finite")]
    NotFinite(usize),
}

/// The median of `values` (NaN for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// ln Γ(x) for x > 0, Lanczos approximation (g = 7, n = 9; relative error < 1e-13).
/// Reference: C. Lanczos, SIAM J. Numer. Anal. B 1 (1964); coefficients as tabulated by
/// P. Godfrey.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let series = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |acc, (i, c)| acc + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

/// Continued fraction of the incomplete beta function, evaluated with the modified Lentz method.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        for numerator in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + numerator * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + numerator / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1].
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast for x < (a+1)/(a+b+2); use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T <= t) for Student's t with `df` > 0 degrees of freedom (df may be fractional).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The complementary error function (Chebyshev fit, relative error under 1.2e-7: Press et al.,
/// Numerical Recipes, section 6.2).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The p-quantile of Student's t with `df` degrees of freedom, by bisection on [`t_cdf`].
pub fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0 && df > 0.0, "t_quantile({p}, {df})");
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Modified z-scores above this mark outliers (Iglewicz and Hoaglin, "How to Detect and Handle
/// Outliers", ASQC 1993).
pub const OUTLIER_Z: f64 = 3.5;

/// Changes smaller than this (as a fraction) are noise, whatever their p-value: criterion's
/// rule (its default is 1 %, for microbenchmarks on a quiet machine; docs/decisions.md, "Recommend
/// and compare").
pub const DEFAULT_NOISE: f64 = 0.02;

/// A summary of repeated measurements of one cell.
///
/// Invariants (checked by [`Summary::of`]): at least one observation, all finite. `sd`, `ci95`
/// and `cv` exist only with two or more observations.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1 denominator).
    pub sd: Option<f64>,
    /// 95 % confidence interval of the mean, mean ± t(0.975, n-1) · sd / √n.
    pub ci95: Option<(f64, f64)>,
    /// Coefficient of variation, sd / |mean|.
    pub cv: Option<f64>,
    /// Indices of observations whose modified z-score exceeds [`OUTLIER_Z`].
    pub outliers: Vec<usize>,
    /// Sample standard deviation of the observations that are not [`Summary::outliers`] (of
    /// them all where fewer than three are left): the spread settling expects of the trials
    /// it adds, so that one slow epoch among steady ones is not expected again in each
    /// (docs/decisions.md, "Settling plans from the typical spread"). The interval and every
    /// verdict still come from [`Summary::sd`], the slow epoch included.
    pub typical_sd: Option<f64>,
}

fn median_of(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    v
}

/// Sample standard deviation (n - 1 denominator); `None` with fewer than two values.
fn sample_sd(values: &[f64]) -> Option<f64> {
    let n = values.len();
    (n >= 2).then(|| {
        let mean = values.iter().sum::<f64>() / n as f64;
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    })
}

/// Indices of `values` (whose median is `median`) with a modified z-score over [`OUTLIER_Z`]
/// (none where the median absolute deviation is 0: over half the values equal, the score is
/// undefined).
fn outliers_of(values: &[f64], median: f64) -> Vec<usize> {
    let deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
    let mad = median_of(&sorted(&deviations));
    if mad > 0.0 {
        (values.iter().enumerate())
            .filter(|(_, v)| (0.6745 * (*v - median) / mad).abs() > OUTLIER_Z)
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    }
}

/// The values that are not `outliers`, where there are outliers and three values or more are
/// left; `None` otherwise (the spread of them all is the typical one). Of three trials, the
/// median absolute deviation flags any value over five times further from the median than the
/// nearer one, and the two left would say little of the spread.
fn typical(values: &[f64], outliers: &[usize]) -> Option<Vec<f64>> {
    let kept: Vec<f64> = (values.iter().enumerate())
        .filter(|(i, _)| !outliers.contains(i))
        .map(|(_, v)| *v)
        .collect();
    (!outliers.is_empty() && kept.len() >= 3).then_some(kept)
}

impl Summary {
    pub fn of(values: &[f64]) -> Result<Summary, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(StatsError::NotFinite(i));
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let order = sorted(values);
        let median = median_of(&order);
        let sd = sample_sd(values);
        let ci95 = sd.map(|sd| {
            let half = t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt();
            (mean - half, mean + half)
        });
        let cv = sd.filter(|_| mean != 0.0).map(|sd| sd / mean.abs());
        let outliers = outliers_of(values, median);
        let typical_sd = typical(values, &outliers).map_or(sd, |kept| sample_sd(&kept));
        Ok(Summary {
            n,
            mean,
            median,
            min: order[0],
            max: order[n - 1],
            sd,
            ci95,
            cv,
            outliers,
            typical_sd,
        })
    }

    /// As [`Summary::of`], for a quantity that cannot be negative (a throughput, a time): the
    /// 95 % interval of the mean is taken on the log scale (the delta method, as
    /// [`LogEstimate::of_mean`] and compare's ratios: mean · exp(± t(0.975, n-1) · cv / √n)),
    /// so it holds the mean, never reaches below zero, and widens upwards; with a mean of zero,
    /// the plain interval cut at zero.
    pub fn of_positive(values: &[f64]) -> Result<Summary, StatsError> {
        let mut summary = Summary::of(values)?;
        if let Some(estimate) = LogEstimate::of_mean(&summary) {
            summary.ci95 = Some(estimate.ci95());
        } else if let Some((lo, hi)) = summary.ci95 {
            summary.ci95 = Some((lo.max(0.0), hi));
        }
        Ok(summary)
    }
}

/// Welch's unequal-variances t-test of two summaries.
#[derive(Clone, Debug, PartialEq)]
pub struct Welch {
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's test of mean(b) vs mean(a); `None` unless both have two or more observations.
/// Reference: B. L. Welch, Biometrika 34 (1947).
pub fn welch(a: &Summary, b: &Summary) -> Option<Welch> {
    let (sa, sb) = (a.sd?, b.sd?);
    let (va, vb) = (sa * sa / a.n as f64, sb * sb / b.n as f64);
    let se2 = va + vb;
    if se2 == 0.0 {
        let p = if a.mean == b.mean { 1.0 } else { 0.0 };
        return Some(Welch {
            t: if p == 1.0 { 0.0 } else { f64::INFINITY },
            df: (a.n + b.n - 2) as f64,
            p,
        });
    }
    let t = (b.mean - a.mean) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64);
    let p = 2.0 * (1.0 - t_cdf(t.abs(), df));
    Some(Welch {
        t,
        df,
        p: p.clamp(0.0, 1.0),
    })
}

/// mean(b) / mean(a) with its 95 % CI, taken on the log scale ([`LogEstimate`]: delta method,
/// Welch degrees of freedom), so that the interval is never negative and is as wide in either
/// direction as the ratio's inverse; `None` without two observations on each side or without
/// positive means.
pub fn ratio_ci(a: &Summary, b: &Summary) -> Option<(f64, f64, f64)> {
    let ratio = LogEstimate::of_mean(b)?.over(&LogEstimate::of_mean(a)?);
    let (lo, hi) = ratio.ci95();
    Some((ratio.value(), lo, hi))
}

/// A positive quantity on the log scale, so that ratios of independent estimates keep their
/// uncertainty and their intervals stay positive: the log of its value, the variance of that log
/// (by the delta method, sd² / (n · mean²) for a mean over n trials), and the terms of the
/// Welch–Satterthwaite degrees of freedom. A published figure is exact (variance 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogEstimate {
    pub log: f64,
    pub var: f64,
    /// Σ var_i² / df_i over the independent estimates combined (0: exact or infinite df).
    df_terms: f64,
    /// The variance more trials are planned from ([`LogEstimate::half_width_with_trials`]):
    /// `var` of the trials' typical spread, outliers left out ([`Summary::typical_sd`]).
    plan_var: f64,
}

impl LogEstimate {
    /// An exact positive value (a published figure); `None` unless positive and finite.
    pub fn exact(value: f64) -> Option<LogEstimate> {
        (value > 0.0 && value.is_finite()).then(|| LogEstimate {
            log: value.ln(),
            var: 0.0,
            df_terms: 0.0,
            plan_var: 0.0,
        })
    }

    /// Whether it is exact (no variance): a published figure, or a count such as a store's
    /// bytes over its uncompressed bytes.
    pub fn is_exact(&self) -> bool {
        self.var <= 0.0
    }

    /// A published range read as a 95 % interval (normal on the log scale).
    pub fn range(lo: f64, hi: f64) -> Option<LogEstimate> {
        let (a, b) = (LogEstimate::exact(lo)?, LogEstimate::exact(hi)?);
        let half = (b.log - a.log).abs() / 2.0 / 1.96;
        Some(LogEstimate {
            log: (a.log + b.log) / 2.0,
            var: half * half,
            df_terms: 0.0,
            plan_var: half * half,
        })
    }

    /// The mean of a summary of trials; `None` with fewer than two trials (no spread to judge
    /// by) or a mean that is not positive.
    pub fn of_mean(s: &Summary) -> Option<LogEstimate> {
        let sd = s.sd?;
        if s.mean <= 0.0 {
            return None;
        }
        let of_sd = |sd: f64| sd * sd / (s.n as f64 * s.mean * s.mean);
        let var = of_sd(sd);
        Some(LogEstimate {
            log: s.mean.ln(),
            var,
            df_terms: var * var / (s.n - 1) as f64,
            plan_var: s.typical_sd.map_or(var, of_sd),
        })
    }

    /// The geometric mean of paired ratios given as their logs (each trial's own ratio, as the
    /// two epochs of one run): the mean log and its standard error, on n - 1 degrees of
    /// freedom; `None` with fewer than two or a log that is not finite.
    pub fn of_logs(logs: &[f64]) -> Option<LogEstimate> {
        if logs.len() < 2 || logs.iter().any(|l| !l.is_finite()) {
            return None;
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0) / n;
        let plan_var = typical(logs, &outliers_of(logs, median_of(&sorted(logs))))
            .and_then(|kept| sample_sd(&kept))
            .map_or(var, |sd| sd * sd / n);
        Some(LogEstimate {
            log: mean,
            var,
            df_terms: var * var / (n - 1.0),
            plan_var,
        })
    }

    /// This divided by `other` (independent).
    pub fn over(&self, other: &LogEstimate) -> LogEstimate {
        LogEstimate {
            log: self.log - other.log,
            var: self.var + other.var,
            df_terms: self.df_terms + other.df_terms,
            plan_var: self.plan_var + other.plan_var,
        }
    }

    /// Whether this ratio (a setting over the best one) could be within noise of 1: its 95 %
    /// interval reaches `1 - DEFAULT_NOISE`. The test by which `recommend` and the workers note
    /// call a setting not measurably slower than the best.
    pub fn reaches_within_noise_of_one(&self) -> bool {
        self.ci95().1 >= 1.0 - DEFAULT_NOISE
    }

    /// This times `other` (independent).
    pub fn times(&self, other: &LogEstimate) -> LogEstimate {
        LogEstimate {
            log: self.log + other.log,
            ..self.over(other)
        }
    }

    /// The value scaled by an exact positive factor.
    pub fn scaled(&self, factor: f64) -> LogEstimate {
        LogEstimate {
            log: self.log + factor.ln(),
            ..*self
        }
    }

    pub fn value(&self) -> f64 {
        self.log.exp()
    }

    /// The 95 % half-width on the log scale that the same estimate would have with `f` (one or
    /// more) times the trials behind each of its parts, and degrees of freedom at least `f`
    /// times as many (each part's n - 1 grows to f·n - 1 >= f·(n - 1)). The trials recorded
    /// stay in it, slow epochs and all, and weigh 1/f² of their variance; those added are
    /// expected at the typical spread (`plan_var`: a slow epoch among steady ones is not
    /// expected again in every trial added), (f - 1)/f² of its variance. With no outlier,
    /// the variance over `f`; at `f` = 1, the interval's own half-width.
    pub fn half_width_with_trials(&self, f: f64) -> f64 {
        if self.var <= 0.0 || f <= 0.0 {
            return 0.0;
        }
        let f = f.max(1.0);
        let t = if self.df_terms > 0.0 {
            t_quantile(0.975, (f * self.var * self.var / self.df_terms).max(1.0))
        } else {
            1.96
        };
        let projected = (self.var + (f - 1.0) * self.plan_var) / (f * f);
        t * projected.sqrt()
    }

    /// Degrees of freedom of the estimate (Welch–Satterthwaite); `None` for an exact figure or
    /// a published range (a normal distribution).
    fn df(&self) -> Option<f64> {
        (self.var > 0.0 && self.df_terms > 0.0)
            .then(|| (self.var * self.var / self.df_terms).max(1.0))
    }

    /// Two-sided p-value of the hypothesis that the value is 1 (log 0): Student's t with
    /// Welch–Satterthwaite degrees of freedom, so that p < 0.05 exactly when [`Self::ci95`]
    /// excludes 1. An exact figure has p 0 unless it is 1.
    pub fn p_value_of_one(&self) -> f64 {
        if self.var <= 0.0 {
            return if self.log == 0.0 { 1.0 } else { 0.0 };
        }
        let t = self.log.abs() / self.var.sqrt();
        let upper = match self.df() {
            Some(df) => 1.0 - t_cdf(t, df),
            None => 0.5 * erfc(t / std::f64::consts::SQRT_2),
        };
        (2.0 * upper).clamp(0.0, 1.0)
    }

    /// The 95 % interval (Student's t with Welch–Satterthwaite degrees of freedom; normal for
    /// published ranges; a point for exact figures).
    pub fn ci95(&self) -> (f64, f64) {
        if self.var <= 0.0 {
            return (self.value(), self.value());
        }
        let t = if self.df_terms > 0.0 {
            t_quantile(0.975, (self.var * self.var / self.df_terms).max(1.0))
        } else {
            1.96
        };
        let half = t * self.var.sqrt();
        ((self.log - half).exp(), (self.log + half).exp())
    }
}

/// Kendall's tau-b rank correlation of paired values (ties handled); `None` with fewer than two
/// pairs or when one side is constant. Reference: M. G. Kendall, Biometrika 33 (1945).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    let (mut concordant, mut discordant, mut ties_x, mut ties_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = (x[i] - x[j]).partial_cmp(&0.0)?;
            let dy = (y[i] - y[j]).partial_cmp(&0.0)?;
            use std::cmp::Ordering::Equal;
            match (dx, dy) {
                (Equal, Equal) => {}
                (Equal, _) => ties_x += 1,
                (_, Equal) => ties_y += 1,
                _ if dx == dy => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let denom =
        (((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) as f64).sqrt();
    (denom > 0.0).then(|| (concordant - discordant) as f64 / denom)
}

#[cfg(test)]
mod tests;
