//! How well the model's predictions match the measurements: errors per cell, whether each
//! group's best strategy is the measured best, and agreement with the paper's ranking.

use serde::Serialize;
use workloads::Codec;

use crate::results::{CacheState, Condition, StrategyCalibration};

use super::predict::*;

/// One measured configuration beside its prediction.
#[derive(Clone, Debug, Serialize)]
pub struct Checked {
    pub workload: String,
    pub condition: Condition,
    pub strategy: String,
    pub codec: Codec,
    pub threads: usize,
    pub cache: CacheState,
    pub epoch: u64,
    pub measured: f64,
    pub prediction: Prediction,
    /// Its epochs are under the floor ([`crate::analysis::cells::MIN_EPOCH_S`]): shown, but
    /// left out of the validation.
    pub short: bool,
}

impl Checked {
    /// Percentage error of the prediction (positive: predicted too high).
    pub fn signed_error_pct(&self) -> f64 {
        (self.prediction.predicted / self.measured - 1.0) * 100.0
    }

    /// Absolute percentage error of the prediction.
    pub fn error_pct(&self) -> f64 {
        self.signed_error_pct().abs()
    }

    /// The group whose strategies are ranked against each other.
    fn group(&self) -> (String, Condition, Codec, usize, CacheState, u64) {
        (
            self.workload.clone(),
            self.condition.clone(),
            self.codec,
            self.threads,
            self.cache,
            self.epoch,
        )
    }
}

/// How well the predictions matched.
#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    pub configurations: usize,
    pub median_error_pct: f64,
    pub max_error_pct: f64,
    /// Groups (same workload, condition, codec, threads, cache, epoch) with two or more
    /// strategies, and in how many the predicted best was the measured best.
    pub ranked_groups: usize,
    pub best_agrees: usize,
}

pub fn validate(checked: &[Checked]) -> Option<Validation> {
    if checked.is_empty() {
        return None;
    }
    let errors: Vec<f64> = checked.iter().map(Checked::error_pct).collect();
    let median = crate::analysis::stats::median(&errors);
    let mut groups: std::collections::BTreeMap<_, Vec<&Checked>> = Default::default();
    for c in checked {
        groups.entry(c.group()).or_default().push(c);
    }
    let (mut ranked, mut agree) = (0, 0);
    for members in groups.values().filter(|m| m.len() >= 2) {
        ranked += 1;
        let best = |f: &dyn Fn(&Checked) -> f64| {
            members
                .iter()
                .max_by(|a, b| f(a).total_cmp(&f(b)))
                .map(|c| c.strategy.clone())
        };
        if best(&|c| c.measured) == best(&|c| c.prediction.predicted) {
            agree += 1;
        }
    }
    Some(Validation {
        configurations: checked.len(),
        median_error_pct: median,
        max_error_pct: errors.iter().copied().fold(0.0, f64::max),
        ranked_groups: ranked,
        best_agrees: agree,
    })
}

/// Median and maximum error with the ranking agreement, in words.
pub fn validation_line(v: &Validation) -> String {
    format!(
        "Over {} measured configurations: median absolute error **{:.1} %**, max {:.1} %; the predicted best strategy was the measured best in **{} of {}** groups ({:.0} %). Targets: median under 15 %, best strategy right in 80 % of groups.",
        v.configurations,
        v.median_error_pct,
        v.max_error_pct,
        v.best_agrees,
        v.ranked_groups,
        if v.ranked_groups > 0 {
            v.best_agrees as f64 * 100.0 / v.ranked_groups as f64
        } else {
            0.0
        }
    )
}

// ------------------------------------------------------------------------------ what if

/// Kendall's tau between two orderings of the names they share, with the count (`None`
/// under two in common).
pub fn kendall(a: &[String], b: &[String]) -> Option<(f64, usize)> {
    let common: Vec<&String> = a.iter().filter(|x| b.contains(x)).collect();
    let rank = |list: &[String]| -> Vec<f64> {
        common
            .iter()
            .map(|x| list.iter().position(|y| y == *x).expect("common") as f64)
            .collect()
    };
    if common.len() < 2 {
        return None;
    }
    crate::analysis::stats::kendall_tau_b(&rank(a), &rank(b)).map(|tau| (tau, common.len()))
}

/// Our predicted ranking against the paper's measured one (cold, 8 threads), over the
/// strategies both have.
#[derive(Clone, Debug, Serialize)]
pub struct PaperAgreement {
    pub paper: Vec<String>,
    pub predicted: Vec<String>,
    /// Kendall's tau-a and the number of strategies.
    pub tau: Option<(f64, usize)>,
    pub best_agrees: bool,
}

pub fn paper_agreement(
    paper_pipeline: &str,
    ranked: &[(&StrategyCalibration, Prediction)],
) -> Option<PaperAgreement> {
    let paper = crate::analysis::paper::pipeline(paper_pipeline)?;
    let mut measured: Vec<_> = paper.strategies.iter().collect();
    measured.sort_by(|a, b| b.sps_epoch0.total_cmp(&a.sps_epoch0));
    let theirs: Vec<String> = measured.iter().map(|s| s.strategy.clone()).collect();
    let ours: Vec<String> = ranked
        .iter()
        .map(|(s, _)| s.strategy.clone())
        .filter(|s| theirs.contains(s))
        .collect();
    let theirs: Vec<String> = theirs.into_iter().filter(|s| ours.contains(s)).collect();
    if ours.is_empty() {
        return None;
    }
    Some(PaperAgreement {
        tau: kendall(&ours, &theirs),
        best_agrees: ours.first() == theirs.first(),
        paper: theirs,
        predicted: ours,
    })
}

/// Our predicted ranking on the paper's hardware against the paper's measured one, in words.
pub(super) fn paper_comparison(
    workload: &str,
    paper: Option<String>,
    ranked: &[(&StrategyCalibration, Prediction)],
) -> String {
    let Some(a) = paper.and_then(|p| paper_agreement(&p, ranked)) else {
        return format!("No paper figures for `{workload}`.\n");
    };
    let tau = a
        .tau
        .map(|(t, n)| format!("Kendall tau {t:.2} over {n} strategies"))
        .unwrap_or_else(|| "too few common strategies for Kendall tau".into());
    format!(
        "Paper's measured ranking (cold, 8 threads): {}. Predicted here: {}. Best strategy {}; {tau}.\n",
        a.paper.join(" > "),
        a.predicted.join(" > "),
        if a.best_agrees { "agrees" } else { "differs" }
    )
}
