//! What a results folder concludes, for comparing two: each finding's verdicts and each
//! workload's fastest strategy.

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings::{self, Verdict};

/// What a results folder concludes: every sub-claim's verdict, and per workload and condition
/// the fastest strategy cold (codec none, at the most threads, epochs long enough).
#[derive(Clone, Debug)]
pub struct Conclusions {
    pub(super) verdicts: Vec<(String, Verdict)>,
    pub(super) best: Vec<(String, String)>,
}

/// The conclusions of a loaded folder and its cells.
pub fn conclusions_of(results: &Results, cells: &[Cell]) -> Conclusions {
    let views = crate::analysis::report::views(results, cells);
    let found = findings::measured::judge(results, &views);
    let verdicts = found
        .iter()
        .flat_map(|f| &f.sub_claims)
        .map(|s| (s.id.to_string(), s.verdict))
        .collect();
    let best = views
        .iter()
        .filter_map(|v| {
            let t = v.max_threads();
            let fastest = v
                .strategies
                .iter()
                .filter_map(|(_, s)| v.cold(s, workloads::Codec::None, t))
                .filter(|c| c.long_enough())
                .max_by(|x, y| x.throughput.mean.total_cmp(&y.throughput.mean))?;
            Some((v.title(), fastest.key.strategy.clone()))
        })
        .collect();
    Conclusions { verdicts, best }
}
