//! What a results folder concludes, for comparing two: each finding's verdicts and each
//! workload's fastest strategy.

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings::{self, Verdict};
use crate::analysis::stats::LogEstimate;

/// What a results folder concludes: every sub-claim's verdict (under each loader that ran the
/// paper's pipelines), and per workload and condition the fastest strategy cold (codec none,
/// at the most threads, epochs long enough).
#[derive(Clone, Debug)]
pub struct Conclusions {
    pub(super) verdicts: Vec<(String, Verdict)>,
    /// Each claim's checks.
    pub(super) checks: Vec<SeenCheck>,
    pub(super) best: Vec<(String, Best)>,
}

/// One check of a claim as a folder judged it.
#[derive(Clone, Debug)]
pub(super) struct SeenCheck {
    pub claim: String,
    pub subject: String,
    /// What was measured, with what the claim needs of it.
    pub figure: String,
    pub verdict: Verdict,
    /// The figure's estimate, where it had one: what another folder's is tested against.
    pub estimate: Option<LogEstimate>,
}

/// A workload's fastest strategy cold, or none determined: faster strategies were measured
/// only on epochs too short to judge by.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Best {
    Strategy(String),
    Undetermined(Vec<String>),
}

impl std::fmt::Display for Best {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Best::Strategy(name) => f.write_str(name),
            Best::Undetermined(faster) => write!(
                f,
                "undetermined (`{}` reads faster on epochs under {} s)",
                faster.join("`, `"),
                crate::analysis::cells::MIN_EPOCH_S
            ),
        }
    }
}

/// The conclusions of a loaded folder and its cells.
pub fn conclusions_of(results: &Results, cells: &[Cell]) -> Conclusions {
    let views = crate::analysis::report::views(results, cells);
    // The paper's claims are about its pipelines: judged only where one of them ran.
    let paper = views
        .iter()
        .any(|v| crate::analysis::recorded::is_reference(results, &v.name));
    // Each loader's runs judged apart, as the report does: a claim under another loader than
    // prepbench's own is its own row (`1a [tf-data]`).
    let mut judged = Vec::new();
    if paper {
        judged.push((String::new(), findings::measured::judge(results, &views)));
        judged.extend(findings::measured::judge_loaders(results, &views));
    }
    let mut verdicts = Vec::new();
    let mut checks = Vec::new();
    for (loader, found) in &judged {
        let id = |claim: &str| {
            if loader.is_empty() {
                claim.to_string()
            } else {
                format!("{claim} [{loader}]")
            }
        };
        for s in found.iter().flat_map(|f| &f.sub_claims) {
            verdicts.push((id(s.id), s.verdict));
            for c in &s.checks {
                checks.push(SeenCheck {
                    claim: id(s.id),
                    subject: c.subject.clone(),
                    figure: format!("{} (needs {})", c.measured, c.needs),
                    verdict: c.verdict,
                    estimate: c.estimate(),
                });
            }
        }
    }
    let best = views
        .iter()
        .filter_map(|v| {
            let t = v.max_threads();
            let cold: Vec<&Cell> = v
                .strategies
                .iter()
                .filter_map(|(_, s)| v.cold(s, workloads::Codec::None, t))
                .collect();
            let fastest = cold
                .iter()
                .filter(|c| c.long_enough())
                .max_by(|x, y| x.throughput.mean.total_cmp(&y.throughput.mean))?;
            // A faster strategy measured on epochs too short to judge leaves the best open:
            // naming the slower one judged would be wrong whichever way the short one goes.
            let short: Vec<String> = cold
                .iter()
                .filter(|c| !c.long_enough() && c.throughput.mean > fastest.throughput.mean)
                .map(|c| c.key.strategy.clone())
                .collect();
            let best = if short.is_empty() {
                Best::Strategy(fastest.key.strategy.clone())
            } else {
                Best::Undetermined(short)
            };
            Some((v.title(), best))
        })
        .collect();
    Conclusions {
        verdicts,
        checks,
        best,
    }
}
