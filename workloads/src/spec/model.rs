//! The workload spec's types and what can be read off them without building a step: its
//! strategies, variants, storage profiles and identity.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::WorkloadError;
use crate::op::{StepFacts, StepSpec};
use crate::options::OnError;
use crate::registry::find_step;
use crate::spec::dataset::DatasetSpec;
use crate::spec::sweep::SweepDefaults;
use crate::spec::variant::Variant;
use crate::storage::StorageProfile;

/// The strategy name of split 0 (every step online, raw files read online).
pub const UNPROCESSED: &str = "unprocessed";

/// Where a spec was read from: the file as named (a path, or `builtin:NAME`), and the folder
/// its Python steps' relative paths are resolved against (absolute; `None` for a built-in).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl Origin {
    /// A workload read from `file`, whose relative paths are resolved against `dir`.
    pub fn file(file: &str, dir: Option<&Path>) -> Origin {
        Origin {
            file: file.to_string(),
            dir: dir.map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf())),
        }
    }

    /// The folder relative paths resolve against: the file's, else the current one.
    pub fn dir_or_current(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| PathBuf::from("."))
    }
}

/// The file, as error messages name it.
impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.file)
    }
}

/// One step as configured: its name (which names the strategy that stores its output), its
/// op, its parameters in canonical form (read into the op's typed `Params`, every default
/// filled in, written back as JSON), and whether it is random (its op is, or the file says so).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    pub name: String,
    pub op: String,
    #[serde(default)]
    pub params: serde_json::Value,
    #[serde(default)]
    pub random: bool,
}

impl StepConfig {
    /// The op's registry entry; `None` for an op this build does not know (a spec written by
    /// another version).
    pub fn op_spec(&self) -> Option<&'static StepSpec> {
        find_step(&self.op)
    }

    /// The op's facts; an unknown op's are those of a pure step.
    pub fn facts(&self) -> StepFacts {
        self.op_spec().map_or(StepFacts::PURE, |s| s.facts)
    }

    /// The fields of the sample the step reads, as its parameters name them.
    pub fn reads(&self) -> Vec<&str> {
        let params = self.op_spec().map_or(&[][..], |op| op.reads);
        params.iter().filter_map(|p| self.text_param(p)).collect()
    }

    /// The fields of the sample the step writes: those its parameters name, and those its op
    /// always writes.
    pub fn writes(&self) -> Vec<&str> {
        let params = self.op_spec().map_or(&[][..], |op| op.writes);
        let named = params.iter().filter_map(|p| self.text_param(p));
        named
            .chain(self.facts().also_writes.iter().copied())
            .collect()
    }

    /// The text parameter `name`, when the step has it set.
    fn text_param(&self, name: &str) -> Option<&str> {
        self.params.get(name).and_then(serde_json::Value::as_str)
    }
}

/// A split point: steps `[0, split)` run offline, the rest online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    pub name: String,
    pub split: usize,
}

/// A workload as plain data. Made by [`WorkloadSpec::from_yaml`] (which checks everything a
/// file can get wrong) or read back from JSON (a manifest, another process).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The paper pipeline this workload reproduces (`cv`, `cv2-jpg`, ...), for reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
    pub dataset: DatasetSpec,
    pub steps: Vec<StepConfig>,
    #[serde(default)]
    pub sweep: SweepDefaults,
    /// Storage profiles this file defines, by name (besides the built-in ones).
    #[serde(
        default,
        deserialize_with = "named_profiles",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub storage_profiles: BTreeMap<String, StorageProfile>,
    /// What a run does with a sample it cannot read or process (the CLI's `--on-error` wins).
    #[serde(default)]
    pub on_error: OnError,
    /// The dataset options this variant of a sweep sets (already applied to `dataset.options`).
    #[serde(default, skip_serializing_if = "Variant::is_empty")]
    pub variant: Variant,
    #[serde(default)]
    pub origin: Origin,
    /// The text the spec was read from, for error messages that name its lines; not part of
    /// the spec.
    #[serde(skip)]
    pub source: Option<Arc<str>>,
}

/// Two specs are equal when they write the same JSON (the text they were read from aside).
impl PartialEq for WorkloadSpec {
    fn eq(&self, other: &WorkloadSpec) -> bool {
        serde_json::to_value(self).ok() == serde_json::to_value(other).ok()
    }
}

/// Storage profiles by name, each given its name (the map's key).
pub(crate) fn named_profiles<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, StorageProfile>, D::Error> {
    let raw: BTreeMap<String, StorageProfile> = BTreeMap::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(name, mut profile)| {
            profile.name = name.clone();
            (name, profile)
        })
        .collect())
}

impl WorkloadSpec {
    /// The name runs are recorded under: the workload's, with its variant's options after `@`
    /// (`synthetic-reading@mb_per_sample=0.01`).
    pub fn label(&self) -> String {
        crate::spec::variant::WorkloadLabel::format(&self.name, &self.variant)
    }

    /// A 64-bit hash of the canonical form (hex): two specs with the same identity describe
    /// the same runs. Where the file was read from and its description are no part of it; the
    /// folder is, for a workload with Python steps (their modules are found there).
    pub fn identity(&self) -> String {
        let mut canonical = self.clone();
        canonical.description.clear();
        canonical.origin.file.clear();
        if !canonical
            .steps
            .iter()
            .any(|s| s.op == crate::steps::python::SPEC.op)
        {
            canonical.origin.dir = None;
        }
        let text = serde_json::to_string(&canonical).expect("a spec serializes");
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
    }

    /// An error about this spec's file, at the line of the first `needle` (a key or value)
    /// when the text it was read from has one.
    pub fn error_at(&self, needle: &str, message: String) -> WorkloadError {
        self.invalid(Some(needle), message)
    }

    pub(crate) fn invalid(&self, needle: Option<&str>, message: String) -> WorkloadError {
        self.invalid_at(needle.map(|n| (n, 0)), message)
    }

    /// [`WorkloadSpec::invalid`] at the `nth` (from 0) line mentioning the needle: the second
    /// step of one name is where a name is used twice.
    pub(crate) fn invalid_at(
        &self,
        needle: Option<(&str, usize)>,
        message: String,
    ) -> WorkloadError {
        let text = self.source.as_deref().unwrap_or("");
        WorkloadError::Invalid {
            file: self.origin.file.clone(),
            line: needle.and_then(|(n, nth)| crate::spec::names::nth_line_of(text, n, nth)),
            message,
        }
    }

    /// The storage profile `name`: one this file defines, or a built-in one.
    pub fn storage_profile(&self, name: &str) -> Result<StorageProfile, String> {
        crate::storage::find_profile(name, &self.storage_profiles)
    }

    /// Every strategy the steps allow: `unprocessed`, then one per step output up to (not
    /// including) the first random step.
    pub fn strategies(&self) -> Vec<Strategy> {
        let mut out = vec![Strategy {
            name: UNPROCESSED.to_string(),
            split: 0,
        }];
        for (i, step) in self.steps.iter().enumerate() {
            if step.random {
                break;
            }
            out.push(Strategy {
                name: step.name.clone(),
                split: i + 1,
            });
        }
        out
    }

    /// Looks a strategy up by name; the error says why it is impossible and what is allowed.
    pub fn strategy(&self, name: &str) -> Result<Strategy, String> {
        if let Some(s) = self.strategies().into_iter().find(|s| s.name == name) {
            return Ok(s);
        }
        let allowed: Vec<String> = self.strategies().into_iter().map(|s| s.name).collect();
        let reason = match self.steps.iter().position(|d| d.name == name) {
            Some(i) => {
                let random = self.steps[..=i]
                    .iter()
                    .find(|d| d.random)
                    .map(|d| d.name.as_str());
                format!(
                    "strategy `{name}` would materialize the output of random step `{}`, which must run online every epoch",
                    random.unwrap_or(name)
                )
            }
            None => format!(
                "workload `{}` has no strategy `{name}`{}",
                self.label(),
                crate::suggest::did_you_mean(name, allowed.iter().map(String::as_str))
            ),
        };
        Err(format!(
            "{reason}; allowed strategies: {}",
            allowed.join(", ")
        ))
    }

    /// The strategies the sweep asks for (all allowed ones when it names none).
    pub fn sweep_strategies(&self) -> Vec<Strategy> {
        if self.sweep.strategies.is_empty() {
            return self.strategies();
        }
        self.strategies()
            .into_iter()
            .filter(|s| self.sweep.strategies.contains(&s.name))
            .collect()
    }

    /// Every combination of `sweep.dataset_options` (empty when the sweep has none), in a
    /// stable order.
    pub fn dataset_variants(&self) -> Vec<Variant> {
        if self.sweep.dataset_options.is_empty() {
            return Vec::new();
        }
        let mut combos = vec![BTreeMap::new()];
        for (key, values) in &self.sweep.dataset_options {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(key.clone(), v.clone());
                        c
                    })
                })
                .collect();
        }
        combos.into_iter().map(Variant::new).collect()
    }

    /// This spec with `variant`'s options set on its dataset.
    pub fn variant(&self, variant: &Variant) -> WorkloadSpec {
        let mut spec = self.clone();
        for (k, v) in variant.options() {
            spec.dataset.options.insert(k.clone(), v.clone());
        }
        spec.variant = variant.clone();
        spec
    }

    /// This spec reading the dataset at `path` (`--dataset`): the user's data, never
    /// generated. The path is part of the identity, so runs on different data are told apart.
    pub fn with_dataset(mut self, path: PathBuf) -> WorkloadSpec {
        self.dataset.path = Some(path);
        self
    }

    /// Index of the step that emits several samples per input, if any.
    pub fn fan_out_step(&self) -> Option<usize> {
        self.steps.iter().position(|d| d.facts().fan_out)
    }
}
