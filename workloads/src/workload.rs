//! Workload files: a dataset source, an ordered list of named steps, and sweep defaults, loaded
//! strictly from YAML (unknown keys, unknown ops, bad parameters and impossible splits are errors
//! naming the file, the line and what is allowed). Strategies are derived from the steps.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use thiserror::Error;

use crate::options::{CacheMode, Codec, OnError};
use crate::registry::{find_step, step_ops, StepSpec};
use crate::step::Step;
use crate::storage::StorageProfile;

/// The strategy name of split 0 (every step online, raw files read online).
pub const UNPROCESSED: &str = "unprocessed";

#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("cannot read workload file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        file: String,
        line: Option<usize>,
        message: String,
    },
}

/// Where the dataset comes from: a kind known to the `datasets` crate (a layout reader and a
/// generator), a path (generated there when missing), and how many samples a run uses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub kind: String,
    /// Relative paths are resolved against the data directory (`--data-dir`).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Samples a run uses unless `--samples` says otherwise (the first N in source order).
    #[serde(default = "default_samples")]
    pub samples: usize,
    /// Seed of the generator when the dataset has to be generated.
    #[serde(default)]
    pub seed: u64,
    /// Generator options of the dataset kind (e.g. `dtype: uint8`), checked by the kind.
    #[serde(default, deserialize_with = "scalar_map")]
    pub options: BTreeMap<String, String>,
}

/// A map whose values are YAML scalars, kept as their text (`0.64`, `uint8`, `true`).
fn scalar_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let raw: BTreeMap<String, serde_yaml_ng::Value> = BTreeMap::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_yaml_ng::Value::String(s) => s,
                serde_yaml_ng::Value::Number(n) => n.to_string(),
                serde_yaml_ng::Value::Bool(b) => b.to_string(),
                other => {
                    return Err(de::Error::custom(format!(
                        "option `{k}` must be a scalar, got {other:?}"
                    )))
                }
            };
            Ok((k, text))
        })
        .collect()
}

fn default_samples() -> usize {
    1000
}

/// Default settings of a sweep over this workload; the CLI overrides each.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepDefaults {
    /// Empty means every strategy the steps allow.
    #[serde(default)]
    pub strategies: Vec<String>,
    #[serde(default = "default_codecs")]
    pub codecs: Vec<Codec>,
    #[serde(default = "default_threads")]
    pub threads: Vec<usize>,
    #[serde(default = "default_cache")]
    pub cache: Vec<CacheMode>,
    #[serde(default = "default_trials")]
    pub trials: usize,
    #[serde(default = "default_epochs")]
    pub epochs: usize,
    /// Shards per materialized strategy (fixed, so one store serves every thread count).
    #[serde(default = "default_shards")]
    pub shards: usize,
    /// Dataset options swept as a dimension: every combination is its own dataset, swept as
    /// the variant `<name>@<key>=<value>,...` (e.g. the paper's twelve synthetic sample sizes).
    #[serde(default, deserialize_with = "scalar_lists")]
    pub dataset_options: BTreeMap<String, Vec<String>>,
    /// Size of each variant's dataset in MB (1e6 B): its sample count is this divided by its
    /// MB per sample, so every variant reads the same number of bytes (unless `--samples`).
    #[serde(default)]
    pub dataset_mb: Option<f64>,
    /// Storage profiles to measure under: `local`, `paper-ceph-hdd`, or one defined under the
    /// workload's `storage_profiles`.
    #[serde(default = "default_storage")]
    pub storage: Vec<String>,
}

fn default_storage() -> Vec<String> {
    vec![crate::storage::LOCAL.to_string()]
}

/// A map whose values are lists of YAML scalars, kept as their text.
fn scalar_lists<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
    let raw: BTreeMap<String, Vec<serde_yaml_ng::Value>> = BTreeMap::deserialize(d)?;
    raw.into_iter()
        .map(|(k, values)| {
            let texts = values
                .into_iter()
                .map(|v| match v {
                    serde_yaml_ng::Value::String(s) => Ok(s),
                    serde_yaml_ng::Value::Number(n) => Ok(n.to_string()),
                    serde_yaml_ng::Value::Bool(b) => Ok(b.to_string()),
                    other => Err(de::Error::custom(format!(
                        "values of `{k}` must be scalars, got {other:?}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((k, texts))
        })
        .collect()
}

fn default_codecs() -> Vec<Codec> {
    vec![Codec::None]
}
fn default_threads() -> Vec<usize> {
    vec![1, 2, 4, 8]
}
fn default_cache() -> Vec<CacheMode> {
    vec![CacheMode::Cold]
}
fn default_trials() -> usize {
    5
}
fn default_epochs() -> usize {
    2
}
fn default_shards() -> usize {
    16
}

impl Default for SweepDefaults {
    fn default() -> Self {
        SweepDefaults {
            strategies: Vec::new(),
            codecs: default_codecs(),
            threads: default_threads(),
            cache: default_cache(),
            trials: default_trials(),
            epochs: default_epochs(),
            shards: default_shards(),
            dataset_options: BTreeMap::new(),
            dataset_mb: None,
            storage: default_storage(),
        }
    }
}

/// One step of a workload as written in its file, built into a runnable [`Step`].
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

/// A split point: steps `[0, split)` run offline, the rest online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    pub name: String,
    pub split: usize,
}

/// A loaded, validated workload.
#[derive(Debug)]
pub struct Workload {
    pub name: String,
    pub description: String,
    /// The paper pipeline this workload reproduces (`cv`, `cv2-jpg`, ...), for reports.
    pub paper: Option<String>,
    pub dataset: DatasetSpec,
    pub steps: Vec<StepDef>,
    pub sweep: SweepDefaults,
    /// Storage profiles this file defines, by name (besides the built-in ones).
    pub storage_profiles: BTreeMap<String, StorageProfile>,
    /// What a run does with a sample it cannot read or process (the CLI's `--on-error` wins).
    pub on_error: OnError,
    /// The YAML text as loaded, kept for the results manifest.
    pub yaml: String,
    /// Where it was loaded from (a path, or `builtin:NAME`).
    pub origin: String,
    /// The worker processes of its Python steps, by chain.
    pub python: crate::python::Pools,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    paper: Option<String>,
    dataset: DatasetSpec,
    steps: Vec<StepDef>,
    #[serde(default)]
    sweep: SweepDefaults,
    #[serde(default)]
    storage_profiles: BTreeMap<String, StorageProfile>,
    #[serde(default)]
    on_error: OnError,
}

/// Largest YAML file (workload, hardware profile) prepbench parses.
pub const MAX_YAML_BYTES: usize = 1 << 20;
/// Deepest nesting of `[` and `{` in such a file: the parser's time grows with the square of
/// it (200,000 levels took 88 s), and no workload needs more than a few.
pub const MAX_YAML_NESTING: usize = 64;

/// Refuses YAML text too large or nested too deeply to be a workload or profile, before the
/// parser sees it: the line and what is wrong.
pub fn check_yaml_shape(text: &str) -> Result<(), (Option<usize>, String)> {
    if text.len() > MAX_YAML_BYTES {
        return Err((
            None,
            format!(
                "{} bytes, more than the {MAX_YAML_BYTES} a workload or profile file may have",
                text.len()
            ),
        ));
    }
    let mut depth = 0usize;
    for (n, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut previous = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some('"'), '\\') => {
                    chars.next();
                }
                (Some(q), c) if c == q => {
                    // `''` inside single quotes is a quote, not the end.
                    if q == '\'' && chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        quote = None;
                    }
                }
                (Some(_), _) => {}
                (None, '#') if previous.is_whitespace() => break,
                // A quote opens a scalar only where one starts (`the paper's` is plain text).
                (None, '"' | '\'') if previous.is_whitespace() || "[{,:".contains(previous) => {
                    quote = Some(c)
                }
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_YAML_NESTING {
                        return Err((
                            Some(n + 1),
                            format!(
                                "nested more than {MAX_YAML_NESTING} levels deep in `[` and `{{`; \
                                 a workload or profile needs a few"
                            ),
                        ));
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            previous = c;
        }
    }
    Ok(())
}

/// Longest workload or step name.
pub const MAX_NAME_CHARS: usize = 100;

/// Refuses a workload or step name that could act as a path: names become parts of folder
/// names (stores, plots, default results folders), so a name may not be empty, be longer than
/// [`MAX_NAME_CHARS`], hold `/`, `\\` or NUL, or start with `.` (`.`, `..`, hidden folders).
/// Other characters (commas, quotes, spaces, other scripts) are allowed: every folder made
/// from a name goes through [`path_component`].
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    let bad = name.chars().find(|c| matches!(c, '/' | '\\' | '\0'));
    let problem = if chars == 0 {
        Some("is empty".to_string())
    } else if chars > MAX_NAME_CHARS {
        Some(format!(
            "has {chars} characters, more than {MAX_NAME_CHARS}"
        ))
    } else if let Some(c) = bad {
        Some(format!("holds {c:?}"))
    } else if name.starts_with('.') {
        Some("starts with `.`".to_string())
    } else {
        None
    };
    match problem {
        Some(p) => Err(format!(
            "{what} name {name:?} {p}: a {what} name becomes part of folder names, so it may not \
             hold `/`, `\\` or NUL, start with `.`, or be longer than {MAX_NAME_CHARS} characters"
        )),
        None => Ok(()),
    }
}

/// `name` as one safe path component: characters other than letters, digits and `-_.@=,+`
/// become `_`, and so does a leading `.`; never empty. For names made of user values (a dataset
/// variant's options) that become folder names.
pub fn path_component(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.@=,+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.replace_range(..out.chars().next().map_or(0, char::len_utf8), "_");
        if out.is_empty() {
            out.push('_');
        }
    }
    out
}

impl Workload {
    pub fn from_path(path: &Path) -> Result<Workload, WorkloadError> {
        let io = |source| WorkloadError::Io {
            path: path.display().to_string(),
            source,
        };
        let bytes = crate::storage::read_regular(path).map_err(io)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "not UTF-8 text (first invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            ))
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        crate::python::in_workload_dir(&dir, || {
            Workload::from_yaml(&text, &path.display().to_string())
        })
    }

    /// Parses and validates `yaml`; `origin` names the file in error messages.
    pub fn from_yaml(yaml: &str, origin: &str) -> Result<Workload, WorkloadError> {
        check_yaml_shape(yaml).map_err(|(line, message)| WorkloadError::Invalid {
            file: origin.to_string(),
            line,
            message,
        })?;
        let file: WorkloadFile = serde_yaml_ng::from_str(yaml).map_err(|e| {
            let (inner, message) = locate(&e.to_string());
            // The innermost location is the offending key; the outer one its step or section.
            let line = inner.or(e.location().map(|l| l.line()));
            WorkloadError::Invalid {
                file: origin.to_string(),
                line,
                message,
            }
        })?;
        let workload = Workload {
            name: file.name,
            description: file.description,
            paper: file.paper,
            dataset: file.dataset,
            steps: file.steps,
            sweep: file.sweep,
            storage_profiles: file
                .storage_profiles
                .into_iter()
                .map(|(name, mut profile)| {
                    profile.name = name.clone();
                    (name, profile)
                })
                .collect(),
            on_error: file.on_error,
            yaml: yaml.to_string(),
            origin: origin.to_string(),
            python: Default::default(),
        };
        workload.validate()?;
        Ok(workload)
    }

    /// An error about this workload's file, at the line of the first `needle` (a key or value)
    /// when the file has one: for checks made outside this crate (the dataset kind).
    pub fn error_at(&self, needle: &str, message: String) -> WorkloadError {
        self.invalid(Some(needle), message)
    }

    fn invalid(&self, needle: Option<&str>, message: String) -> WorkloadError {
        WorkloadError::Invalid {
            file: self.origin.clone(),
            line: needle.and_then(|n| line_of(&self.yaml, n)),
            message,
        }
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        check_name("workload", &self.name).map_err(|m| self.invalid(Some("name"), m))?;
        for def in &self.steps {
            check_name("step", &def.name).map_err(|m| self.invalid(Some(&def.name), m))?;
        }
        if self.steps.is_empty() {
            return Err(self.invalid(Some("steps"), "a workload needs at least one step".into()));
        }
        let mut seen = vec![UNPROCESSED];
        for def in &self.steps {
            if seen.contains(&def.name.as_str()) {
                return Err(self.invalid(
                    Some(&def.name),
                    format!("step name `{}` is used twice (or is reserved); step names name strategies and must be unique", def.name),
                ));
            }
            seen.push(&def.name);
        }
        let fan_outs: Vec<&str> = self
            .steps
            .iter()
            .filter(|d| d.spec.facts.fan_out)
            .map(|d| d.name.as_str())
            .collect();
        if fan_outs.len() > 1 {
            return Err(self.invalid(
                Some(fan_outs[1]),
                format!(
                    "steps `{}` both emit several samples per input; a workload may have one such step",
                    fan_outs.join("`, `")
                ),
            ));
        }
        if self.dataset.samples == 0 {
            return Err(self.invalid(Some("samples"), "dataset.samples must be at least 1".into()));
        }
        let sweep = &self.sweep;
        for (what, bad) in [
            (
                "threads",
                sweep.threads.is_empty() || sweep.threads.contains(&0),
            ),
            ("codecs", sweep.codecs.is_empty()),
            ("cache", sweep.cache.is_empty()),
            ("trials", sweep.trials == 0),
            ("epochs", sweep.epochs == 0),
            ("shards", sweep.shards == 0),
            (
                "dataset_options",
                sweep.dataset_options.values().any(|v| v.is_empty()),
            ),
            (
                "dataset_mb",
                sweep
                    .dataset_mb
                    .is_some_and(|mb| !(mb > 0.0 && mb.is_finite())),
            ),
        ] {
            if bad {
                return Err(self.invalid(
                    Some(what),
                    format!("sweep.{what} must be non-empty and positive"),
                ));
            }
        }
        for name in &sweep.strategies {
            self.strategy(name)
                .map_err(|message| self.invalid(Some("strategies"), message))?;
        }
        for (name, profile) in &self.storage_profiles {
            profile
                .validate()
                .map_err(|message| self.invalid(Some(name), message))?;
        }
        if sweep.storage.is_empty() {
            return Err(self.invalid(
                Some("storage"),
                "sweep.storage must name at least one storage profile".into(),
            ));
        }
        for name in &sweep.storage {
            self.storage_profile(name)
                .map_err(|message| self.invalid(Some("storage"), message))?;
        }
        Ok(())
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
        for (i, def) in self.steps.iter().enumerate() {
            if def.random {
                break;
            }
            out.push(Strategy {
                name: def.name.clone(),
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
                self.name,
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
    pub fn dataset_variants(&self) -> Vec<BTreeMap<String, String>> {
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
        combos
    }

    /// This workload with `options` set on its dataset, named `<name>@k=v,...`.
    pub fn variant(&self, options: &BTreeMap<String, String>) -> Result<Workload, WorkloadError> {
        // Python steps' paths stay relative to the workload file's folder.
        let dir = match Path::new(&self.origin).parent() {
            Some(p) if !self.origin.starts_with("builtin:") && !p.as_os_str().is_empty() => {
                p.to_path_buf()
            }
            _ => PathBuf::from("."),
        };
        let mut w =
            crate::python::in_workload_dir(&dir, || Workload::from_yaml(&self.yaml, &self.origin))?;
        for (k, v) in options {
            w.dataset.options.insert(k.clone(), v.clone());
        }
        let tag: Vec<String> = options.iter().map(|(k, v)| format!("{k}={v}")).collect();
        w.name = format!("{}@{}", self.name, tag.join(","));
        Ok(w)
    }

    /// The workload a variant name (`<name>@k=v,...`) came from, and the variant's options.
    pub fn split_variant(name: &str) -> (&str, Option<&str>) {
        match name.split_once('@') {
            Some((base, tag)) => (base, Some(tag)),
            None => (name, None),
        }
    }

    /// The step named `name`, if the workload has one.
    pub fn step_named(&self, name: &str) -> Option<&dyn crate::step::Step> {
        self.steps
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.step.as_ref())
    }

    /// Index of the step that emits several samples per input, if any.
    pub fn fan_out_step(&self) -> Option<usize> {
        self.steps.iter().position(|d| d.spec.facts.fan_out)
    }

    /// The source item a sample came from when it is about to enter step `next_step` (its id
    /// is a child id once it has passed the fan-out step).
    pub fn item_of(&self, id: u64, next_step: usize) -> u64 {
        match self.fan_out_step() {
            Some(f) if f < next_step => crate::step::parent_of(id).0,
            _ => id,
        }
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
    ) -> Result<(), (usize, crate::step::StepError)> {
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

    /// This workload reading the dataset at `path` (`--dataset`): the user's data, never
    /// generated. The file's text gains a comment naming it, so run ids and the YAML recorded
    /// in the manifest tell runs on different data apart.
    pub fn with_dataset(mut self, path: PathBuf) -> Workload {
        self.yaml
            .push_str(&format!("\n# --dataset {}\n", path.display()));
        self.dataset.path = Some(path);
        self
    }

    /// xxh3 of the YAML text, as hex.
    pub fn yaml_hash(&self) -> String {
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(self.yaml.as_bytes()))
    }
}

/// A parser message without its ` at line N column M` parts (an error inside a step's
/// parameters carries one per level) or path prefixes repeated by those levels, and the line of
/// the innermost location (the first written), which is the offending key.
fn locate(message: &str) -> (Option<usize>, String) {
    let mut line = None;
    let mut rest = message;
    let mut text = String::new();
    while let Some(i) = rest.find(" at line ") {
        text.push_str(&rest[..i]);
        let after = &rest[i + " at line ".len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        if line.is_none() {
            line = digits.parse().ok();
        }
        let after = &after[digits.len()..];
        let skip = after
            .strip_prefix(" column ")
            .map(|c| " column ".len() + c.chars().take_while(char::is_ascii_digit).count())
            .unwrap_or(0);
        rest = &after[skip..];
    }
    text.push_str(rest);
    let mut parts: Vec<&str> = Vec::new();
    for part in text.split(": ") {
        if parts.last() != Some(&part) {
            parts.push(part);
        }
    }
    // A location is said once, at its most precise: `steps[2]` and `steps[2].params` go when
    // `steps[2].params.size` follows.
    let refined = |i: usize| {
        let part = parts[i];
        is_path(part)
            && parts[i + 1..].iter().any(|later| {
                later.len() > part.len()
                    && later.starts_with(part)
                    && matches!(later.as_bytes()[part.len()], b'.' | b'[')
            })
    };
    let kept: Vec<&str> = (0..parts.len())
        .filter(|&i| !refined(i))
        .map(|i| parts[i])
        .collect();
    (line, kept.join(": "))
}

/// Whether `text` is a location serde writes (`steps[2].params.size`, `dataset`).
fn is_path(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.[]".contains(c))
}

/// 1-based line of the first line mentioning `needle` as a whole word, if any.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            line.match_indices(needle).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                let after = line[i + needle.len()..].chars().next();
                let word = |c: Option<char>| {
                    c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                };
                !word(before) && !word(after)
            })
        })
        .map(|i| i + 1)
}

const STEP_KEYS: &[&str] = &["name", "op", "params", "random"];

impl<'de> Deserialize<'de> for StepDef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StepDef, D::Error> {
        d.deserialize_map(StepVisitor)
    }
}

struct StepVisitor;

/// Builds a step straight from the YAML deserializer, so parameter errors keep their location.
struct ParamsSeed(&'static StepSpec);

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = Box<dyn Step>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Box<dyn Step>, D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        (self.0.build)(&mut erased)
            .map_err(|e| de::Error::custom(format!("op `{}`: {e}", self.0.op)))
    }
}

fn param_names(spec: &StepSpec) -> String {
    let names: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

impl<'de> Visitor<'de> for StepVisitor {
    type Value = StepDef;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step: a map with `name`, `op`, optional `params` and `random`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StepDef, A::Error> {
        let mut name: Option<String> = None;
        let mut spec: Option<&'static StepSpec> = None;
        let mut step: Option<Box<dyn Step>> = None;
        let mut deferred: Option<serde_yaml_ng::Value> = None;
        let mut random: Option<bool> = None;
        let mut keys: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            // A key given twice would silently lose one of its values (two `op:` lines).
            if keys.contains(&key) {
                return Err(de::Error::custom(format!(
                    "`{key}` is given twice in one step; a step has one name, op, params and random"
                )));
            }
            keys.push(key.clone());
            match key.as_str() {
                "name" => name = Some(map.next_value()?),
                "op" => {
                    let op: String = map.next_value()?;
                    spec = Some(find_step(&op).ok_or_else(|| {
                        let ops = step_ops();
                        de::Error::custom(format!(
                            "unknown op `{op}`{}; known ops: {}",
                            crate::suggest::did_you_mean(&op, ops.iter().copied()),
                            ops.join(", ")
                        ))
                    })?);
                }
                "params" => match spec {
                    Some(s) => step = Some(map.next_value_seed(ParamsSeed(s))?),
                    None => deferred = Some(map.next_value()?),
                },
                "random" => random = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, STEP_KEYS)),
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        let spec = spec.ok_or_else(|| de::Error::missing_field("op"))?;
        let context = |e: erased_serde::Error| {
            de::Error::custom(format!(
                "step `{name}` (op `{}`): {e}; its parameters: {}",
                spec.op,
                param_names(spec)
            ))
        };
        let step = match (step, deferred) {
            (Some(step), _) => step,
            (None, Some(value)) => {
                (spec.build)(&mut <dyn erased_serde::Deserializer>::erase(value))
                    .map_err(context)?
            }
            (None, None) => {
                let empty = serde_yaml_ng::Value::Mapping(Default::default());
                (spec.build)(&mut <dyn erased_serde::Deserializer>::erase(empty))
                    .map_err(context)?
            }
        };
        if spec.facts.random && random == Some(false) {
            return Err(de::Error::custom(format!(
                "step `{name}`: op `{}` is random and always runs online; remove `random: false`",
                spec.op
            )));
        }
        Ok(StepDef {
            name,
            spec,
            step,
            random: spec.facts.random || random.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn yaml_too_deep_or_too_large_is_refused_at_once_with_its_line() {
        let deep = format!(
            "name: x\nsteps: {}{}\n",
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        let err = Workload::from_yaml(&deep, "deep.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("deep.yaml:2") && err.contains("nested more than"),
            "{err}"
        );
        let big = format!("name: x\ndescription: \"{}\"\n", "a".repeat(MAX_YAML_BYTES));
        let err = Workload::from_yaml(&big, "big.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than the"), "{err}");
        // Brackets in quotes and comments, and apostrophes in plain text, do not count.
        let text = format!(
            "a: \"{}\"\nb: '{}' # {}\nc: the paper's [[x]]\n",
            "[".repeat(100),
            "{".repeat(100),
            "[".repeat(100)
        );
        check_yaml_shape(&text).unwrap();
        for builtin in crate::BUILTIN {
            check_yaml_shape(builtin.1).unwrap();
        }
    }

    #[test]
    fn names_that_could_be_paths_are_refused_and_folder_names_are_safe() {
        for bad in ["", "../x", "/abs", "a/b", "a\\b", ".hidden", "..", "nul\0"] {
            assert!(check_name("step", bad).is_err(), "{bad:?} passed");
        }
        for good in [
            "cv",
            "pixel-centered",
            "my, \"odd\"\nworkload",
            "café",
            "v1.2",
        ] {
            check_name("workload", good).unwrap();
        }
        assert!(check_name("step", &"x".repeat(101)).is_err());
        for (name, folder) in [
            ("../../etc", "_._.._etc"),
            ("/abs", "_abs"),
            ("", "_"),
            (
                "synthetic-reading@mb_per_sample=0.01",
                "synthetic-reading@mb_per_sample=0.01",
            ),
            ("a b\n", "a_b_"),
        ] {
            assert_eq!(path_component(name), folder, "{name:?}");
        }
    }

    use super::*;

    const GOOD: &str = "\
name: tiny
dataset:
  kind: imagenet
  samples: 10
steps:
  - name: concatenated
    op: read_file
  - name: decoded
    op: decode_jpeg
  - name: resized
    op: resize_shorter
    params: {size: 32}
  - name: cropped
    op: random_crop
    params: {height: 8, width: 8}
sweep:
  threads: [1, 2]
  codecs: [none, zstd:5]
";

    #[test]
    fn storage_profiles_are_defined_named_and_checked() {
        let w = Workload::from_yaml(GOOD, "w.yaml").unwrap();
        assert_eq!(w.sweep.storage, vec!["local".to_string()]);
        let yaml = format!(
            "{GOOD}  storage: [local, nfs, paper-ceph-hdd]\nstorage_profiles:\n  nfs:\n    description: our filer\n    stream_mb_s: 120\n    latency_ms: 0.5\n"
        );
        let w = Workload::from_yaml(&yaml, "w.yaml").unwrap();
        let nfs = w.storage_profile("nfs").unwrap();
        assert_eq!((nfs.name.as_str(), nfs.stream_mb_s), ("nfs", Some(120.0)));
        assert_eq!(nfs.request_kb, 4.0);
        assert_eq!(
            w.storage_profile("paper-ceph-hdd").unwrap().iops,
            Some(9853.0)
        );
        // An unknown profile in the sweep names the known ones and the line.
        let (line, message) = err(&format!("{GOOD}  storage: [ceph]\n"));
        assert!(
            line.is_some() && message.contains("paper-ceph-hdd"),
            "{message}"
        );
        // A bad figure names the profile and the figure; an unknown key is refused.
        let (_, message) = err(&format!("{GOOD}storage_profiles:\n  slow:\n    iops: -3\n"));
        assert!(
            message.contains("`slow`") && message.contains("iops"),
            "{message}"
        );
        let (_, message) = err(&format!(
            "{GOOD}storage_profiles:\n  slow:\n    bandwidth: 3\n"
        ));
        assert!(message.contains("bandwidth"), "{message}");
    }

    fn err(yaml: &str) -> (Option<usize>, String) {
        match Workload::from_yaml(yaml, "w.yaml").unwrap_err() {
            WorkloadError::Invalid {
                file,
                line,
                message,
            } => {
                assert_eq!(file, "w.yaml");
                (line, message)
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn strategies_stop_before_the_first_random_step() {
        let w = Workload::from_yaml(GOOD, "w.yaml").unwrap();
        let names: Vec<String> = w.strategies().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["unprocessed", "concatenated", "decoded", "resized"]);
        assert_eq!(w.strategy("decoded").unwrap().split, 2);
        assert_eq!(w.sweep.codecs, vec![Codec::None, Codec::Zstd { level: 5 }]);
        assert!(w.steps[3].random);
        let e = w.strategy("cropped").unwrap_err();
        assert!(
            e.contains("random step `cropped`") && e.contains("allowed strategies: unprocessed"),
            "{e}"
        );
        assert!(w
            .strategy("nope")
            .unwrap_err()
            .contains("has no strategy `nope`"));
    }

    #[test]
    fn unknown_top_level_key_names_key_and_line() {
        let (line, msg) = err(&GOOD.replace("sweep:", "sweeep:"));
        assert_eq!(line, Some(16));
        assert!(
            msg.contains("unknown field `sweeep`") && msg.contains("expected one of"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_param_names_param_line_and_allowed_values() {
        let (line, msg) = err(&GOOD.replace("{size: 32}", "{sise: 32}"));
        assert_eq!(line, Some(12), "the line of the parameter, not of its step");
        assert!(msg.contains("sise") && msg.contains("size"), "{msg}");
    }

    #[test]
    fn unknown_op_lists_known_ops() {
        let (line, msg) = err(&GOOD.replace("op: decode_jpeg", "op: decode_jpg"));
        assert_eq!(line, Some(8), "the line of the step");
        assert!(
            msg.contains("unknown op `decode_jpg`") && msg.contains("decode_jpeg"),
            "{msg}"
        );
    }

    #[test]
    fn bad_param_type_and_missing_param_are_errors() {
        let (line, msg) = err(&GOOD.replace("{size: 32}", "{size: big}"));
        assert_eq!(line, Some(12));
        assert!(msg.contains("invalid type"), "{msg}");
        let (_, msg) = err(&GOOD.replace("    params: {size: 32}\n", ""));
        assert!(
            msg.contains("missing field `size`") && msg.contains("step `resized`"),
            "{msg}"
        );
    }

    #[test]
    fn split_after_a_random_step_is_refused_with_its_line() {
        let (line, msg) =
            err(&GOOD.replace("  codecs:", "  strategies: [decoded, cropped]\n  codecs:"));
        assert_eq!(line, Some(18));
        assert!(msg.contains("random step `cropped`"), "{msg}");
    }

    #[test]
    fn duplicate_names_bad_codecs_and_random_false_are_errors() {
        let (_, msg) = err(&GOOD.replace("name: resized", "name: decoded"));
        assert!(msg.contains("used twice"), "{msg}");
        let (line, msg) = err(&GOOD.replace("zstd:5", "brotli"));
        assert_eq!(line, Some(18));
        assert!(msg.contains("unknown codec"), "{msg}");
        let (_, msg) = err(&GOOD.replace("op: random_crop", "op: random_crop\n    random: false"));
        assert!(msg.contains("always runs online"), "{msg}");
        let (_, msg) = err(&GOOD.replace("threads: [1, 2]", "threads: [0]"));
        assert!(msg.contains("sweep.threads"), "{msg}");
    }

    #[test]
    fn field_names_are_checked_when_loading() {
        let long = "x".repeat(256);
        let (_, msg) = err(&GOOD.replace("{size: 32}", &format!("{{size: 32, field: {long}}}")));
        assert!(msg.contains("1 to 255 bytes"), "{msg}");
        let (_, msg) = err(&GOOD.replace("{size: 32}", "{size: 32, field: ''}"));
        assert!(msg.contains("1 to 255 bytes"), "{msg}");
    }

    #[test]
    fn params_before_op_still_validate() {
        let yaml = GOOD.replace(
            "    op: resize_shorter\n    params: {size: 32}",
            "    params: {size: 32}\n    op: resize_shorter",
        );
        Workload::from_yaml(&yaml, "w.yaml").unwrap();
        let (_, msg) = err(&yaml.replace("{size: 32}", "{size: 32, x: 1}"));
        assert!(
            msg.contains("unknown field `x`") && msg.contains("step `resized`"),
            "{msg}"
        );
    }

    #[test]
    fn errors_inside_parameters_point_at_the_key_and_say_it_once() {
        let yaml = "name: w\ndataset: {kind: imagenet}\nsteps:\n  - name: concatenated\n    \
                    op: read_file\n  - name: decoded\n    op: decode_jpeg\n    params:\n      \
                    max_pixels: 10\n      max_pixel: 5\n";
        let e = Workload::from_yaml(yaml, "w.yaml").unwrap_err().to_string();
        assert!(e.starts_with("w.yaml:10: "), "{e}");
        assert_eq!(e.matches("steps[1].params").count(), 1, "{e}");
        assert!(!e.contains(" at line "), "{e}");
        // A wrong type inside parameters: the location once, at the key.
        let typed = yaml
            .replace("max_pixel: 5\n", "")
            .replace("max_pixels: 10", "max_pixels: many");
        let e = Workload::from_yaml(&typed, "w.yaml")
            .unwrap_err()
            .to_string();
        assert_eq!(e.matches("steps[1]").count(), 1, "{e}");
        assert!(
            e.contains("steps[1].params.max_pixels: invalid type"),
            "{e}"
        );
        let two = yaml.replace(
            "    op: decode_jpeg\n",
            "    op: decode_jpeg\n    op: decode_png\n",
        );
        let e = Workload::from_yaml(&two, "w.yaml").unwrap_err().to_string();
        assert!(e.contains("`op` is given twice"), "{e}");
    }

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
