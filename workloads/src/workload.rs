//! A built workload: its spec, each step instantiated from its canonical parameters, and the
//! worker processes of its Python steps. A run builds one from the spec it is given.

use std::fmt;
use std::path::Path;

use crate::error::WorkloadError;
use crate::op::StepSpec;
use crate::registry::find_step;
use crate::spec::{Origin, StepConfig, WorkloadSpec};
use crate::step::Step;

/// One step of a workload, built into a runnable [`Step`].
pub struct StepDef {
    /// The step's name, which is also the name of the strategy that materializes its output.
    pub name: String,
    pub spec: &'static StepSpec,
    pub step: Box<dyn Step>,
    /// True when the op is random or the file says `random: true`.
    pub random: bool,
}

impl fmt::Debug for StepDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} {:?}", self.name, self.spec.op, self.step)
    }
}

impl StepDef {
    /// Builds the step `config` describes.
    fn build(config: &StepConfig, origin: &Origin) -> Result<StepDef, WorkloadError> {
        let invalid = |message: String| WorkloadError::Invalid {
            file: origin.file.clone(),
            line: None,
            message: format!("step `{}` (op `{}`): {message}", config.name, config.op),
        };
        let spec = find_step(&config.op).ok_or_else(|| {
            invalid(format!(
                "this build of prepbench has no op `{}`; known ops: {}",
                config.op,
                crate::registry::step_ops().join(", ")
            ))
        })?;
        let step = (spec.build)(&mut <dyn erased_serde::Deserializer>::erase(
            config.params.clone(),
        ))
        .map_err(|e| invalid(e.to_string()))?;
        Ok(StepDef {
            name: config.name.clone(),
            spec,
            step,
            random: config.random,
        })
    }
}

/// A workload ready to run: its spec and its built steps.
#[derive(Debug)]
pub struct Workload {
    pub spec: WorkloadSpec,
    /// The steps of `spec.steps`, built, in order.
    pub steps: Vec<StepDef>,
    /// The worker processes of its Python steps, by chain.
    pub python: crate::python::Pools,
    /// The step that emits several samples per input, if any.
    fan_out: Option<usize>,
}

impl Workload {
    /// Builds every step of `spec` (relative paths of Python steps resolved against the folder
    /// of the file it was read from).
    pub fn build(spec: WorkloadSpec) -> Result<Workload, WorkloadError> {
        let steps = crate::python::in_workload_dir(&spec.origin.dir_or_current(), || {
            spec.steps
                .iter()
                .map(|config| StepDef::build(config, &spec.origin))
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(Workload {
            fan_out: spec.fan_out_step(),
            spec,
            steps,
            python: Default::default(),
        })
    }

    /// Reads, checks and builds the workload file at `path`.
    pub fn from_path(path: &Path) -> Result<Workload, WorkloadError> {
        Workload::build(WorkloadSpec::from_path(path)?)
    }

    /// Parses, checks and builds `yaml`, read from `file` (named in error messages; relative
    /// paths resolve against the current folder).
    pub fn from_yaml(yaml: &str, file: &str) -> Result<Workload, WorkloadError> {
        Workload::build(WorkloadSpec::from_yaml(yaml, Origin::file(file, None))?)
    }

    /// The source item a sample came from when it is about to enter step `next_step` (its id
    /// is a child id once it has passed the fan-out step).
    pub fn item_of(&self, id: u64, next_step: usize) -> u64 {
        match self.fan_out {
            Some(f) if f < next_step => crate::step::parent_of(id).0,
            _ => id,
        }
    }

    /// Index of the step that emits several samples per input, if any (found once, at build).
    pub fn fan_out_step(&self) -> Option<usize> {
        self.fan_out
    }

    /// The built step named `name`, if the workload has one.
    pub fn step_named(&self, name: &str) -> Option<&dyn Step> {
        self.steps
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.step.as_ref())
    }

    /// A stable description of steps `[0, split)` and their parameters: two workloads whose
    /// prefixes describe equal compute the same materialized data.
    pub fn prefix_fingerprint(&self, split: usize) -> String {
        self.steps[..split]
            .iter()
            .map(|d| format!("{d:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The run of consecutive Python steps that starts at `start` and ends before `limit` or
    /// the first other step: `start..end` (empty when step `start` is not a Python step).
    pub fn python_run(&self, start: usize, limit: usize) -> std::ops::Range<usize> {
        let end = (start..limit)
            .find(|&i| self.steps[i].step.python_link().is_none())
            .unwrap_or(limit);
        start..end
    }

    /// The runs of consecutive Python steps within `range`: each runs as one chain, in one
    /// worker process per thread.
    pub fn python_chains(&self, range: std::ops::Range<usize>) -> Vec<std::ops::Range<usize>> {
        let mut chains = Vec::new();
        let mut i = range.start;
        while i < range.end {
            let run = self.python_run(i, range.end);
            i = run.end.max(i + 1);
            if !run.is_empty() {
                chains.push(run);
            }
        }
        chains
    }

    /// The chain running the Python steps `range`.
    pub fn python_chain(
        &self,
        range: std::ops::Range<usize>,
    ) -> std::sync::Arc<crate::python::Chain> {
        self.python.get(range.clone(), || {
            self.steps[range]
                .iter()
                .filter_map(|d| {
                    let link = d.step.python_link()?;
                    Some(crate::python::Link {
                        random: d.random,
                        ..link.clone()
                    })
                })
                .collect()
        })
    }

    /// Starts `threads` workers for every chain of Python steps within `range` (before a
    /// timed phase) and ends the idle workers of other chains; a failure names the step.
    pub fn start_python(
        &self,
        range: std::ops::Range<usize>,
        threads: usize,
    ) -> Result<(), (usize, crate::error::StepError)> {
        let chains = self.python_chains(range);
        self.python.retire_others(&chains);
        for chain in &chains {
            self.python_chain(chain.clone())
                .start_workers(threads)
                .map_err(|e| (chain.start + e.link, e.error))?;
        }
        Ok(())
    }

    /// Imports every Python step's callable in one interpreter: the first that fails, by step
    /// index, and why.
    pub fn check_python(&self) -> Result<(), (usize, String)> {
        let (indices, links): (Vec<usize>, Vec<crate::python::Link>) = self
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.step.python_link().map(|l| (i, l.clone())))
            .unzip();
        crate::python::check(&links).map_err(|(k, e)| (indices[k], e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::spec::tests::GOOD;

    #[test]
    fn prefix_fingerprint_changes_with_parameters() {
        let a = Workload::from_yaml(GOOD, "w.yaml").unwrap();
        let b = Workload::from_yaml(&GOOD.replace("size: 32", "size: 33"), "w.yaml").unwrap();
        assert_eq!(a.prefix_fingerprint(2), b.prefix_fingerprint(2));
        assert_ne!(a.prefix_fingerprint(3), b.prefix_fingerprint(3));
    }

    /// A step's description is its parameters: tables and filterbanks built on use are no part
    /// of it, or a store made before they were built would not match one made after (and the
    /// NLP embedding table once went, all 150 MB of it, into every store's manifest).
    #[test]
    fn prefix_fingerprints_are_parameters_only_before_and_after_set_up() {
        for (name, _) in crate::BUILTIN {
            let w = crate::load(name).unwrap();
            let before = w.prefix_fingerprint(w.steps.len());
            for step in &w.steps {
                step.step.prepare().unwrap();
            }
            let after = w.prefix_fingerprint(w.steps.len());
            assert_eq!(before, after, "{name}");
            assert!(after.len() < 16 * 1024, "{name}: {} bytes", after.len());
        }
    }
}
