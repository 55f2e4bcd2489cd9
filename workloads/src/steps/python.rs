//! `python`: runs a callable of the user's own Python code on each sample, in persistent worker
//! processes (one per worker thread that uses it, as PyTorch's DataLoader keeps its workers).
//!
//! The callable (`function: module:name`, `module:object.method` reaching attributes) gets the
//! field `from` alone, or without `from` a dict of every field; fields cross as NumPy arrays
//! (dtype and shape kept), `bytes` and `str`, and between two steps of one chain as they are (a
//! PIL Image stays one, as in a `Compose`). It returns a dict of fields (which, without
//! `from`, become the sample's fields; with it, join the other fields in place of `from`) or
//! one value, written to `to`. Before each call of a step marked `random: true` the worker
//! seeds Python's `random`, NumPy's and (when imported) torch's CPU generators from the
//! run's seed, the sample id, the epoch and the step's position, so that it gets a fresh draw
//! per sample and epoch that is the same whichever strategy runs it; a callable whose
//! signature names `sample_id`, `epoch` or `seed` gets them. An exception fails the sample (its message
//! here, its traceback in errors.csv); a worker that dies fails the sample it was on and is
//! replaced for the next. Within a run, consecutive Python steps of one phase run as one chain
//! in one worker ([`crate::python::Chain`]); this step alone runs as a chain of one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::python::{Chain, Link};
use crate::sample::{FieldName, Sample};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// the callable, `module:name` (a function or an object with `__call__`; `module:obj.attr` reaches attributes)
    pub function: String,
    /// folder put first on Python's module search path, relative to the workload file (default: the workload file's folder)
    #[serde(default)]
    pub path: Option<String>,
    /// the one field the callable gets (unset: a dict of every field)
    #[serde(default)]
    #[param(reads)]
    pub from: Option<FieldName>,
    /// field a single returned value is written to (default: `from`, else `data`)
    #[serde(default)]
    #[param(writes)]
    pub to: Option<FieldName>,
    /// arguments the callable is first called with, once per worker, to make the callable that runs on samples (a transform class and its settings: `function: "torchvision.transforms:Resize"`, `init: {size: 256}`); a list is positional, a map keyword arguments
    #[serde(default)]
    pub init: Option<serde_yaml_ng::Value>,
}

step_spec! { Python, "python", "run a Python callable of your own on each sample, in persistent worker processes", crate::op::StepFacts { fields_at_run_time: true, ..crate::op::StepFacts::PURE } }

/// Largest amount of Python source hashed into the step's identity.
const MAX_SOURCE_BYTES: u64 = 16 << 20;
/// Most folders of a package walked for its source.
const MAX_PACKAGE_DIRS: usize = 10_000;

pub struct Python {
    link: Link,
    /// xxh3 of the module's source files found under the search path ("installed" when the
    /// module is not there): materialized data of an edited module is not reused.
    source_hash: String,
    /// The step alone, with its own workers (the harness runs chains of the workload's).
    alone: Chain,
}

impl std::fmt::Debug for Python {
    /// What identifies the computation: a store made by this step is reused only when this
    /// text is unchanged, the module's source included.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `init` only when given, so that stores of steps without it keep their keys.
        let init = match &self.link.init {
            Some(init) => format!(", init: {init}"),
            None => String::new(),
        };
        write!(
            f,
            "Python {{ function: {:?}{init}, path: {:?}, from: {:?}, to: {:?}, source: {} }}",
            self.link.function,
            self.link.search_path,
            self.link.from,
            self.link.to,
            self.source_hash
        )
    }
}

/// Checks `module:callable` as written: a dotted module name and a dotted attribute path.
fn check_function(function: &str) -> Result<(), String> {
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                let mut chars = part.chars();
                chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && chars.all(|c| c.is_alphanumeric() || c == '_')
            })
    };
    match function.split_once(':') {
        Some((module, name)) if ident(module) && ident(name) => Ok(()),
        _ => Err(format!(
            "function `{function}`: expected `module:callable`, e.g. `my_pipeline:decode` or \
             `my_pipeline.steps:Normalize.__call__`"
        )),
    }
}

/// The module's source files below `search_path`: `a/b.py`, or every `.py` file of package
/// `a`; empty when the module is installed elsewhere.
fn module_sources(search_path: &Path, module: &str) -> Vec<PathBuf> {
    let top = module.split('.').next().unwrap_or(module);
    let package = search_path.join(top);
    if package.is_dir() {
        let mut found = Vec::new();
        let mut dirs = vec![package];
        // Folders visited at most: a link from a package to itself must not loop forever.
        let mut visits = 0;
        while let Some(dir) = dirs.pop() {
            visits += 1;
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    if visits + dirs.len() < MAX_PACKAGE_DIRS {
                        dirs.push(path);
                    }
                } else if path.extension().is_some_and(|e| e == "py") {
                    found.push(path);
                }
            }
        }
        found.sort();
        return found;
    }
    let file = search_path.join(format!("{top}.py"));
    if file.is_file() {
        vec![file]
    } else {
        Vec::new()
    }
}

fn hash_sources(files: &[PathBuf]) -> String {
    if files.is_empty() {
        return "installed".into();
    }
    let mut text = Vec::new();
    for file in files {
        let Ok(meta) = std::fs::metadata(file) else {
            continue;
        };
        if text.len() as u64 + meta.len() > MAX_SOURCE_BYTES {
            break;
        }
        text.extend_from_slice(file.display().to_string().as_bytes());
        text.extend_from_slice(&std::fs::read(file).unwrap_or_default());
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&text))
}

impl Python {
    pub fn new(params: Params) -> Result<Python, String> {
        check_function(&params.function)?;
        let dir = crate::python::workload_dir();
        let search_path = match &params.path {
            Some(p) if Path::new(p).is_absolute() => PathBuf::from(p),
            Some(p) => dir.join(p),
            None => dir,
        };
        // Absolute, so that workers started from any folder find the module.
        let search_path = std::path::absolute(&search_path).unwrap_or(search_path);
        let module = params.function.split(':').next().unwrap_or_default();
        let source_hash = hash_sources(&module_sources(&search_path, module));
        let to = params
            .to
            .as_deref()
            .or(params.from.as_deref())
            .unwrap_or("data")
            .to_string();
        let init = match &params.init {
            None => None,
            Some(v @ (serde_yaml_ng::Value::Sequence(_) | serde_yaml_ng::Value::Mapping(_))) => {
                Some(serde_json::to_string(v).map_err(|e| {
                    format!("init: {e} (arguments are numbers, strings, booleans, lists and maps)")
                })?)
            }
            Some(_) => {
                return Err(
                    "init: a list (positional arguments) or a map (keyword arguments)".into(),
                )
            }
        };
        let link = Link {
            function: params.function,
            search_path,
            from: params.from.map(|f| f.to_string()),
            to,
            // Alone, the step cannot know whether the workload marks it random: seeded.
            random: true,
            init,
        };
        Ok(Python {
            alone: Chain::new(vec![link.clone()]),
            link,
            source_hash,
        })
    }
}

impl Step for Python {
    fn python_link(&self) -> Option<&Link> {
        Some(&self.link)
    }

    fn check(&self) -> Result<(), StepError> {
        crate::python::check(std::slice::from_ref(&self.link)).map_err(|(_, e)| {
            StepError::new(format!(
                "{}: {e} (interpreter {})",
                self.link.described(),
                crate::python::interpreter().display()
            ))
        })
    }

    fn apply(&self, sample: Sample, ctx: &StepContext) -> Result<Sample, StepError> {
        let seed = ctx.rng(sample.id).next_u64();
        self.alone
            .apply(sample, &[seed], ctx.epoch, &mut Vec::new())
            .map_err(|e| e.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_are_checked_as_written() {
        for good in ["m:f", "pkg.mod:Class.method", "_m:_f2"] {
            assert!(check_function(good).is_ok(), "{good}");
        }
        for bad in ["m", "m:", ":f", "m:f:g", "m.:f", "m:1f", "a/b:f", "m:f()"] {
            let err = check_function(bad).unwrap_err();
            assert!(err.contains("module:callable"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_identity_changes_when_the_module_is_edited() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.py"), "def f(x):\n    return x\n").unwrap();
        let params = || Params {
            function: "mine:f".into(),
            path: Some(dir.path().display().to_string()),
            from: None,
            to: None,
            init: None,
        };
        let before = format!("{:?}", Python::new(params()).unwrap());
        std::fs::write(dir.path().join("mine.py"), "def f(x):\n    return 2 * x\n").unwrap();
        let after = format!("{:?}", Python::new(params()).unwrap());
        assert_ne!(before, after);
        assert!(before.contains("mine:f"));
        let installed = Params {
            function: "json:dumps".into(),
            ..params()
        };
        assert!(format!("{:?}", Python::new(installed).unwrap()).contains("installed"));
        // `init` is a list or a map of arguments, and part of the identity.
        let init = |yaml: &str| Params {
            init: Some(serde_yaml_ng::from_str(yaml).unwrap()),
            ..params()
        };
        let err = Python::new(init("3")).unwrap_err();
        assert!(err.contains("init: a list"), "{err}");
        let a = format!("{:?}", Python::new(init("{size: 256}")).unwrap());
        let b = format!("{:?}", Python::new(init("{size: 224}")).unwrap());
        assert_ne!(a, b);
    }
}
