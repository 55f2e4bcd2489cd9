//! Reading a workload spec from YAML strictly: unknown keys, unknown ops, bad parameters and
//! impossible splits are errors naming the file, the line and what is allowed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::error::WorkloadError;
use crate::op::StepSpec;
use crate::options::OnError;
use crate::registry::{find_step, step_ops};
use crate::spec::dataset::DatasetSpec;
use crate::spec::model::{named_profiles, Origin, StepConfig, WorkloadSpec};
use crate::spec::sweep::SweepDefaults;
use crate::storage::StorageProfile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    paper: Option<String>,
    dataset: DatasetSpec,
    steps: Vec<YamlStep>,
    #[serde(default)]
    sweep: SweepDefaults,
    #[serde(default, deserialize_with = "named_profiles")]
    storage_profiles: BTreeMap<String, StorageProfile>,
    #[serde(default, deserialize_with = "keyed_on_error")]
    on_error: OnError,
}

/// `on_error`, its errors named by the key (the parser gives a value's own error no path).
fn keyed_on_error<'de, D: Deserializer<'de>>(d: D) -> Result<OnError, D::Error> {
    OnError::deserialize(d).map_err(|e| de::Error::custom(format!("on_error: {e}")))
}

impl WorkloadSpec {
    /// Reads and checks the workload file at `path`.
    pub fn from_path(path: &Path) -> Result<WorkloadSpec, WorkloadError> {
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
        WorkloadSpec::from_yaml(&text, Origin::file(&path.display().to_string(), Some(&dir)))
    }

    /// Parses and checks `yaml`, read from `origin` (named in error messages).
    pub fn from_yaml(yaml: &str, origin: Origin) -> Result<WorkloadSpec, WorkloadError> {
        let file = |line, message| WorkloadError::Invalid {
            file: origin.file.clone(),
            line,
            message,
        };
        check_yaml_shape(yaml).map_err(|(line, message)| file(line, message))?;
        let parsed: WorkloadFile = crate::python::in_workload_dir(&origin.dir_or_current(), || {
            serde_yaml_ng::from_str(yaml)
        })
        .map_err(|e| {
            let (inner, message) = locate(&e.to_string());
            // The innermost location is the offending key; the outer one its step or section.
            // An error of a top-level key's value lies on that key's line or after it (a value
            // that its own type refuses, as `on_error: sometimes`, is placed at the document's
            // start by the parser).
            let line = inner.or(e.location().map(|l| l.line()));
            let key = message.split([':', '.', '[']).next().unwrap_or("");
            let key_line = crate::spec::names::key_line(yaml, key);
            file(line.max(key_line), message)
        })?;
        let spec = WorkloadSpec {
            name: parsed.name,
            description: parsed.description,
            paper: parsed.paper,
            dataset: parsed.dataset,
            steps: parsed.steps.into_iter().map(|s| s.0).collect(),
            sweep: parsed.sweep,
            storage_profiles: parsed.storage_profiles,
            on_error: parsed.on_error,
            variant: Default::default(),
            origin,
            source: Some(Arc::from(yaml)),
        };
        spec.validate()?;
        Ok(spec)
    }
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

const STEP_KEYS: &[&str] = &["name", "op", "params", "random"];

/// A step as a workload file writes it, read into its [`StepConfig`]: the op looked up, its
/// parameters read into the op's typed `Params` where they are written (so an error names their
/// line) and the step built once from them, so that whatever the op refuses is refused here.
struct YamlStep(StepConfig);

impl<'de> Deserialize<'de> for YamlStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<YamlStep, D::Error> {
        d.deserialize_map(StepVisitor)
    }
}

struct StepVisitor;

/// Reads a step's parameters straight from the YAML deserializer into their canonical form,
/// then builds the step from it once, so parameter errors keep their location.
struct ParamsSeed(&'static StepSpec);

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = serde_json::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<serde_json::Value, D::Error> {
        let op = |e: erased_serde::Error| de::Error::custom(format!("op `{}`: {e}", self.0.op));
        let canonical =
            (self.0.canonical)(&mut <dyn erased_serde::Deserializer>::erase(d)).map_err(op)?;
        canonical_builds(self.0, &canonical).map_err(op)?;
        Ok(canonical)
    }
}

/// Builds the step of `op` from `params` and drops it: what its constructor refuses.
fn canonical_builds(
    op: &'static StepSpec,
    params: &serde_json::Value,
) -> Result<(), erased_serde::Error> {
    (op.build)(&mut <dyn erased_serde::Deserializer>::erase(params.clone())).map(drop)
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
    type Value = YamlStep;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step: a map with `name`, `op`, optional `params` and `random`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YamlStep, A::Error> {
        let mut name: Option<String> = None;
        let mut spec: Option<&'static StepSpec> = None;
        let mut params: Option<serde_json::Value> = None;
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
                    Some(s) => params = Some(map.next_value_seed(ParamsSeed(s))?),
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
        let params = match params {
            Some(params) => params,
            None => {
                let given =
                    deferred.unwrap_or_else(|| serde_yaml_ng::Value::Mapping(Default::default()));
                let canonical =
                    (spec.canonical)(&mut <dyn erased_serde::Deserializer>::erase(given))
                        .map_err(context)?;
                canonical_builds(spec, &canonical).map_err(context)?;
                canonical
            }
        };
        if spec.facts.random && random == Some(false) {
            return Err(de::Error::custom(format!(
                "step `{name}`: op `{}` is random and always runs online; remove `random: false`",
                spec.op
            )));
        }
        Ok(YamlStep(StepConfig {
            name,
            op: spec.op.to_string(),
            params,
            random: spec.facts.random || random.unwrap_or(false),
        }))
    }
}
