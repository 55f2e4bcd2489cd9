//! Problems found in the cells, one line per kind, with what to do about them.

use crate::analysis::cells::Cell;
use crate::results::Verdict;

/// Cells whose throughput coefficient of variation exceeds this get a warning.
pub const MAX_CV: f64 = 0.10;
/// Cells with fewer trials than this get a warning.
pub const MIN_TRIALS: usize = 3;

/// Picks out a problem cell, with a detail to show beside its name.
type CellTest = fn(&Cell) -> Option<String>;

/// Problems found in the cells, one line per kind: how many cells, a few examples, what to do.
pub fn warnings(cells: &[Cell]) -> Vec<String> {
    let label = |c: &Cell| {
        let k = &c.key;
        let condition = if k.condition.is_plain() {
            String::new()
        } else {
            format!(" [{}]", k.condition)
        };
        format!(
            "{}/{}/{}/{}t/{} e{}{condition}",
            k.workload, k.strategy, k.codec, k.threads, k.cache, k.epoch
        )
    };
    let kinds: [(&str, &str, CellTest); 4] = [
        (
            "output differs from fully-online processing (verify failed)",
            "fix the step that is not deterministic, or mark it `random: true`",
            |c| (c.verified == Some(Verdict::Fail)).then(String::new),
        ),
        (
            "cold runs started with their files still cached (rows valid=false)",
            "put --data-dir and --store-dir on a disk (not tmpfs), or run as root so caches can be dropped",
            |c| (c.invalid_runs > 0).then(|| format!(" ({} runs)", c.invalid_runs)),
        ),
        (
            "throughput varies by more than 10 % (coefficient of variation)",
            "look for background load, add trials (--trials), or fix the CPU frequency",
            |c| c.throughput.cv.filter(|cv| *cv > MAX_CV).map(|cv| format!(" ({:.0} %)", cv * 100.0)),
        ),
        (
            "fewer than 3 trials, too few for a confidence interval",
            "rerun the sweep with --trials 3 or more (completed runs are kept)",
            |c| (c.throughput.n < MIN_TRIALS).then(|| format!(" (n={})", c.throughput.n)),
        ),
    ];
    let mut out = Vec::new();
    for (what, advice, test) in &kinds {
        let hits: Vec<String> = cells
            .iter()
            .filter_map(|c| test(c).map(|detail| format!("{}{detail}", label(c))))
            .collect();
        if hits.is_empty() {
            continue;
        }
        let shown = hits.iter().take(4).cloned().collect::<Vec<_>>().join(", ");
        let more = if hits.len() > 4 {
            format!(" and {} more", hits.len() - 4)
        } else {
            String::new()
        };
        out.push(format!(
            "{} cells: {what}, e.g. {shown}{more}. What to do: {advice}.",
            hits.len()
        ));
    }
    out
}
