//! The workloads a results folder recorded, as specs (from its manifest, else the reference
//! workload of that name); which of them are prepbench's reference workloads, and which of
//! those are the paper's pipelines: the report compares only those with the paper, and leads
//! every other workload with its recommendation.

use workloads::WorkloadSpec;

use crate::analysis::cells::Results;
use crate::results::Manifest;

/// A workload as recorded in the manifest (its spec), else the reference workload of that name.
pub(crate) fn recorded_workload(results: &Results, workload: &str) -> Option<WorkloadSpec> {
    recorded_workload_in(&results.manifest, workload)
}

/// [`recorded_workload`] from a manifest alone.
pub fn recorded_workload_in(manifest: &Manifest, workload: &str) -> Option<WorkloadSpec> {
    manifest
        .workload_specs(workload)
        .next()
        .or_else(|| workloads::load_spec(workload).ok())
}

/// The paper pipeline of a workload, from its recorded YAML.
pub(crate) fn paper_name(results: &Results, workload: &str) -> Option<String> {
    paper_name_in(&results.manifest, workload)
}

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
type Pipeline = (String, Vec<(String, String)>);

fn pipeline(w: &workloads::WorkloadSpec) -> Pipeline {
    let steps = w
        .steps
        .iter()
        .map(|d| (d.name.clone(), d.op.clone()))
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
            .filter_map(|(name, _)| workloads::load_spec(name).ok())
            .map(|w| (pipeline(&w), w.paper.clone()))
            .collect()
    })
}

/// Whether the view named `view` (a workload, or a dataset variant `name@k=v`) is one of
/// prepbench's reference workloads (whatever copy of the data it read) rather than the user's
/// own.
pub(crate) fn is_reference(results: &Results, view: &str) -> bool {
    let base = workloads::WorkloadLabel::parse(view).base;
    recorded_workload(results, &base).is_some_and(|w| {
        let ours = pipeline(&w);
        reference_pipelines().iter().any(|(r, _)| *r == ours)
    })
}
