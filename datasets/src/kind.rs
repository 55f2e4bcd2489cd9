//! What a dataset kind is: its layout reader, its generator, its options, the fields its samples
//! carry, and the real dataset it is calibrated against. Each kind's module makes one; the
//! registry lists them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::DatasetError;
use crate::files::Files;
use crate::source::Source;

/// A dataset's options, as a workload gives them (`dtype: uint8`, `glob: "**/*.jpg"`).
pub type Options = BTreeMap<String, String>;

/// What to generate: `samples` samples of a kind under `root`, from `seed`, on `threads` threads,
/// with the kind's generator options (e.g. `dtype=uint8` for `synthetic`).
#[derive(Clone, Debug, Default)]
pub struct GenerateRequest {
    pub root: PathBuf,
    pub samples: usize,
    pub seed: u64,
    pub threads: usize,
    pub options: BTreeMap<String, String>,
}

impl GenerateRequest {
    /// Files to write: samples rounded up to whole files.
    pub fn files(&self, kind: &DatasetKind) -> usize {
        self.samples.div_ceil(kind.samples_per_file)
    }
}

/// The real dataset's mean size per sample, and how close a generated one must come.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    pub mb_per_sample: f64,
    /// Allowed relative deviation (0.15 for +-15 %).
    pub tolerance: f64,
}

impl Calibration {
    /// A kind's calibration: `mb_per_sample` on the real dataset, within `tolerance`.
    pub const fn of(mb_per_sample: f64, tolerance: f64) -> Option<Calibration> {
        Some(Calibration {
            mb_per_sample,
            tolerance,
        })
    }
}

/// Lists a dataset of a kind under a root, through its files, with the workload's options.
/// Writes file n of a generated dataset.
pub type GenerateFn = fn(&GenerateRequest, usize) -> Result<(), DatasetError>;
pub type OpenFn = fn(&Arc<dyn Files>, &Path, &Options) -> Result<Source, DatasetError>;
/// Writes what describes all generated files (annotations, transcripts).
pub type FinishFn = fn(&GenerateRequest) -> Result<(), DatasetError>;
/// The mean MB per sample a request's options call for.
pub type ExpectedMbFn = fn(&GenerateRequest) -> Result<f64, DatasetError>;

/// The fields a kind's samples carry besides `path`, given the workload's dataset options.
pub type FieldsFn = fn(&Options) -> &'static [&'static str];

/// A dataset kind: its layout reader, its generator, and what it is calibrated against.
pub struct DatasetKind {
    pub name: &'static str,
    /// Kinds of one family share one generated directory (Cube++'s PNG and JPG halves).
    pub family: &'static str,
    pub real: &'static str,
    pub layout: &'static str,
    /// Samples per file (CREAM: 360 ten-second windows per hourly file).
    pub samples_per_file: usize,
    pub calibration: Option<Calibration>,
    /// Generator options the kind accepts, documented as `name=values`.
    pub options: &'static [&'static str],
    /// Options that say where a user's own files lie or how to read them (`files`' glob, a
    /// COCO export's annotation file): accepted only with `dataset.path`, never generated.
    pub reader_options: &'static [&'static str],
    /// Lists a dataset in this layout under a root, through the files it is read from, with
    /// the workload's dataset options (`files` takes its glob and labelling from them).
    pub open: OpenFn,
    /// Writes file n of a generated dataset (deterministic in seed, options and n alone);
    /// `None` for a kind that only reads the user's own files (`files`).
    pub generate_one: Option<GenerateFn>,
    /// Writes what describes all files (annotations, transcripts) once they exist.
    pub finish: Option<FinishFn>,
    /// The expected mean MB per sample given the options (for kinds whose size is an option).
    pub expected_mb: Option<ExpectedMbFn>,
    /// The fields its layout reader puts in each sample besides `path`.
    pub fields: FieldsFn,
    /// Generated at about the disk's write speed (random tensors, no encoder): epochs sized by
    /// time may grow it up to the byte cap of a store, not only a few times its size.
    pub cheap_to_generate: bool,
}

impl DatasetKind {
    /// Why a kind without a generator cannot be generated, for every place that would try.
    pub fn no_generator(&self) -> String {
        format!(
            "dataset kind `{}` reads your own folder, named by the workload's dataset.path (or \
             --dataset); it has no generator",
            self.name
        )
    }

    /// Lists a dataset in this layout on the local file system.
    pub fn open_local(&self, root: &Path) -> Result<Source, DatasetError> {
        (self.open)(&crate::files::local(), root, &Options::new())
    }

    /// Checks the request's options against the ones this kind accepts (generator and reader
    /// options alike).
    pub fn check_options(&self, options: &BTreeMap<String, String>) -> Result<(), DatasetError> {
        match options.keys().find(|key| !self.accepts(key)) {
            None => {
                for (key, value) in options {
                    self.check_value(key, value)?;
                }
                Ok(())
            }
            Some(key) => {
                let all: Vec<&str> = self
                    .options
                    .iter()
                    .chain(self.reader_options)
                    .copied()
                    .collect();
                Err(DatasetError::Generate(format!(
                    "dataset `{}` has no option `{key}`; its options: {}",
                    self.name,
                    if all.is_empty() {
                        "(none)".to_string()
                    } else {
                        all.join(", ")
                    }
                )))
            }
        }
    }

    /// Checks an option's value as its documentation allows it: one of the listed values
    /// (`label=none|parent`), or a glob that compiles (`glob=PATTERN`, `shards=GLOB`), so
    /// `validate` refuses what the reader would.
    fn check_value(&self, key: &str, value: &str) -> Result<(), DatasetError> {
        let Some(spec) = self
            .options
            .iter()
            .chain(self.reader_options)
            .find_map(|o| o.split_once('=').filter(|(name, _)| *name == key))
            .map(|(_, spec)| spec)
        else {
            return Ok(());
        };
        let bad = |why: String| {
            DatasetError::Generate(format!(
                "dataset `{}` option {key}={value}: {why}",
                self.name
            ))
        };
        match spec {
            "PATTERN" | "GLOB" => globset::GlobBuilder::new(value)
                .literal_separator(true)
                .build()
                .map(drop)
                .map_err(|e| bad(format!("not a glob ({e})"))),
            listed if listed.contains('|') && !listed.contains("...") => {
                match listed.split('|').any(|allowed| allowed == value) {
                    true => Ok(()),
                    false => Err(bad(format!("allowed: {}", listed.replace('|', ", ")))),
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether `key` is one of this kind's options.
    pub fn accepts(&self, key: &str) -> bool {
        names(self.options, key) || names(self.reader_options, key)
    }

    /// The first of `options` that only describes a user's own files, if any.
    pub fn reader_option<'a>(&self, options: &'a BTreeMap<String, String>) -> Option<&'a str> {
        options
            .keys()
            .find(|key| names(self.reader_options, key))
            .map(String::as_str)
    }

    /// Why a reader option (where a user's own files lie) cannot go with generated data.
    pub fn reader_option_message(&self, key: &str) -> String {
        format!(
            "option `{key}` of dataset `{}` says how to read your own files, named by dataset.path \
             (or --dataset); a generated stand-in has the standard layout ({})",
            self.name, self.layout
        )
    }
}

/// Whether one of `documented` (`name=values`) is the option `key`.
fn names(documented: &[&str], key: &str) -> bool {
    documented.iter().any(|o| o.split('=').next() == Some(key))
}
