//! Which workloads are prepbench's reference workloads, and which of those are the paper's
//! pipelines: the report compares only those with the paper, and leads every other workload
//! with its recommendation.

use crate::analysis::cells::Results;
use crate::results::Manifest;

use super::{recorded_workload, recorded_workload_in};

/// [`paper_name`] from a manifest alone. A workload is compared with the paper only when it is
/// the paper's pipeline: the `paper:` key of a reference workload whose dataset kind and steps
/// (names and ops, in order) it has, on whatever copy of the data. A file that copied the key
/// onto another pipeline or another kind of data is the user's own workload, reported without
/// paper columns. Parameters are not compared: a reference workload recorded by an earlier
/// version (before a parameter was added) is still the paper's.
pub fn paper_name_in(manifest: &Manifest, workload: &str) -> Option<String> {
    let recorded = recorded_workload_in(manifest, workload)?;
    let paper = recorded.paper.clone()?;
    let ours = pipeline(&recorded);
    reference_pipelines()
        .iter()
        .any(|(reference, its_paper)| *reference == ours && its_paper.as_deref() == Some(&paper))
        .then_some(paper)
}

/// What makes a workload one pipeline: its dataset kind and its steps' names and ops, in order.
type Pipeline = (String, Vec<(String, &'static str)>);

fn pipeline(w: &workloads::Workload) -> Pipeline {
    let steps = w
        .steps
        .iter()
        .map(|d| (d.name.clone(), d.spec.op))
        .collect();
    (w.dataset.kind.clone(), steps)
}

/// The reference workloads' pipelines and paper keys, loaded once.
fn reference_pipelines() -> &'static [(Pipeline, Option<String>)] {
    static REFERENCES: std::sync::OnceLock<Vec<(Pipeline, Option<String>)>> =
        std::sync::OnceLock::new();
    REFERENCES.get_or_init(|| {
        workloads::BUILTIN
            .iter()
            .filter_map(|(name, _)| workloads::load(name).ok())
            .map(|w| (pipeline(&w), w.paper.clone()))
            .collect()
    })
}

/// Whether the view named `view` (a workload, or a dataset variant `name@k=v`) is one of
/// prepbench's reference workloads (whatever copy of the data it read) rather than the user's
/// own.
pub(super) fn is_reference(results: &Results, view: &str) -> bool {
    let (base, _) = workloads::Workload::split_variant(view);
    recorded_workload(results, base).is_some_and(|w| {
        let ours = pipeline(&w);
        reference_pipelines().iter().any(|(r, _)| *r == ours)
    })
}
