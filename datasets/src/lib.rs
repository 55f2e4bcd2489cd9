//! prepbench's dataset sources: for each dataset kind a reader of the real dataset's on-disk
//! layout and a deterministic generator that writes the same layout, so pipelines only ever use
//! the layout readers.

pub mod audio;
pub mod coco;
pub mod commonvoice;
pub mod cream;
pub mod cubepp;
pub mod files;
pub mod folder;
pub mod imagenet;
pub mod librispeech;
pub mod openwebtext;
pub mod photo;
pub mod prose;
pub mod source;
pub mod speech;
pub mod synthetic;
pub mod webdataset;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use files::{Entry, Files, LocalFiles};
pub use source::{Source, SourceItem};

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Layout { path: String, message: String },
    #[error("unknown dataset kind `{0}`{2}; known kinds: {1}")]
    UnknownKind(String, String, String),
    #[error("generating data failed: {0}")]
    Generate(String),
}

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
        (self.open)(&files::local(), root, &Options::new())
    }

    /// Checks the request's options against the ones this kind accepts (generator and reader
    /// options alike).
    pub fn check_options(&self, options: &BTreeMap<String, String>) -> Result<(), DatasetError> {
        match options.keys().find(|key| !self.accepts(key)) {
            None => Ok(()),
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
}

/// Whether one of `documented` (`name=values`) is the option `key`.
fn names(documented: &[&str], key: &str) -> bool {
    documented.iter().any(|o| o.split('=').next() == Some(key))
}

pub static KINDS: &[DatasetKind] = &[
    imagenet::KIND,
    cubepp::PNG_KIND,
    cubepp::JPG_KIND,
    coco::KIND,
    openwebtext::KIND,
    commonvoice::KIND,
    librispeech::KIND,
    cream::KIND,
    synthetic::KIND,
    folder::KIND,
    webdataset::KIND,
];

/// MB per sample that `kind` generates with `options`, for kinds that can say (synthetic
/// arrays are sized exactly); `None` for kinds whose sizes vary per sample.
pub fn expected_mb(
    kind: &str,
    options: &BTreeMap<String, String>,
) -> Result<Option<f64>, DatasetError> {
    let request = GenerateRequest {
        root: PathBuf::new(),
        samples: 1,
        seed: 0,
        threads: 1,
        options: options.clone(),
    };
    match find_kind(kind)?.expected_mb {
        Some(f) => f(&request).map(Some),
        None => Ok(None),
    }
}

/// Checks what a workload asks of its dataset: a known kind, and generator options (its own
/// and those its sweep varies) that the kind has. `validate` reports these with the line, where
/// `run` would only fail when it came to generate the data.
pub fn check_workload(workload: &workloads::Workload) -> Result<(), workloads::WorkloadError> {
    let spec = &workload.dataset;
    let kind = find_kind(&spec.kind)
        .map_err(|e| workload.error_at(&format!("kind: {}", spec.kind), e.to_string()))?;
    if kind.generate_one.is_none() && spec.path.is_none() {
        return Err(workload.error_at(&format!("kind: {}", kind.name), kind.no_generator()));
    }
    if let (Some(key), None) = (kind.reader_option(&spec.options), &spec.path) {
        return Err(workload.error_at(key, reader_option_message(kind, key)));
    }
    let mut options = spec.options.clone();
    for (key, values) in &workload.sweep.dataset_options {
        options.insert(key.clone(), values.first().cloned().unwrap_or_default());
    }
    check_fields(workload, kind)?;
    kind.check_options(&options).map_err(|e| {
        let message = match e {
            DatasetError::Generate(m) => m,
            other => other.to_string(),
        };
        let key = options
            .keys()
            .find(|k| !kind.accepts(k))
            .cloned()
            .unwrap_or_else(|| "options".into());
        workload.error_at(&key, message)
    })
}

/// Why a reader option (where a user's own files lie) cannot go with generated data.
fn reader_option_message(kind: &DatasetKind, key: &str) -> String {
    format!(
        "option `{key}` of dataset `{}` says how to read your own files, named by dataset.path \
         (or --dataset); a generated stand-in has the standard layout ({})",
        kind.name, kind.layout
    )
}

/// The fields a kind's samples carry besides `path` (what its layout reader puts in them).
pub fn source_fields(kind: &str, options: &Options) -> &'static [&'static str] {
    match kind {
        "imagenet" => &["label"],
        "files" if options.get("label").is_some_and(|l| l == "parent") => &["label"],
        "coco" => &["boxes", "categories"],
        "commonvoice" => &["sentence"],
        "librispeech" => &["transcript"],
        "webdataset" => &[
            webdataset::KEY_FIELD,
            webdataset::SPAN_FIELD,
            webdataset::MEMBERS_FIELD,
        ],
        _ => &[],
    }
}

/// Checks that every step reads a field the dataset or an earlier step makes: the field its
/// `from` (or `field`) parameter names, given or by default. Fields a step writes are its `to`,
/// `field` and `length_field` (and the sample rate, for audio steps).
fn check_fields(
    workload: &workloads::Workload,
    kind: &DatasetKind,
) -> Result<(), workloads::WorkloadError> {
    let Ok(yaml) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&workload.yaml) else {
        return Ok(());
    };
    let mut available: Vec<String> = std::iter::once("path")
        .chain(
            source_fields(kind.name, &workload.dataset.options)
                .iter()
                .copied(),
        )
        .map(String::from)
        .collect();
    for (i, def) in workload.steps.iter().enumerate() {
        let given = &yaml["steps"][i]["params"];
        let param = |name: &str, by_default: bool| -> Option<String> {
            if let Some(v) = given.get(name).and_then(|v| v.as_str()) {
                return Some(v.to_string());
            }
            let doc = def.spec.params.iter().find(|p| p.name == name)?;
            by_default.then_some(doc.default?).map(String::from)
        };
        if let Some(input) = param("from", true).or_else(|| param("field", true)) {
            if !available.contains(&input) {
                return Err(workload.error_at(
                    &format!("name: {}", def.name),
                    format!(
                        "step `{}` (op {}) reads field `{input}`, which neither the dataset \
                         (`{}`) nor an earlier step makes; fields by then: {}",
                        def.name,
                        def.spec.op,
                        kind.name,
                        available.join(", ")
                    ),
                ));
            }
        }
        // A Python step's outputs, and the members a WebDataset sample holds, are known only
        // when it runs: the fields after it are not checked.
        if def.spec.facts.fields_at_run_time {
            return Ok(());
        }
        let written = [
            param("to", true),
            param("field", true),
            param("length_field", false),
        ];
        available.extend(written.into_iter().flatten());
        if def.spec.facts.audio || def.spec.op == "resample" {
            available.push(workloads::steps::SAMPLE_RATE_FIELD.to_string());
        }
    }
    Ok(())
}

pub fn find_kind(name: &str) -> Result<&'static DatasetKind, DatasetError> {
    KINDS.iter().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        DatasetError::UnknownKind(
            name.to_string(),
            names.join(", "),
            workloads::suggest::did_you_mean(name, names.iter().copied()),
        )
    })
}

/// The directory name a generated dataset gets: family, options, seed.
pub fn default_dir_name(
    kind: &DatasetKind,
    options: &BTreeMap<String, String>,
    seed: u64,
) -> String {
    let opts: String = options.iter().map(|(k, v)| format!("-{k}{v}")).collect();
    // Option values are the user's: they never make the name a path.
    workloads::path_component(&format!("{}{opts}-seed{seed}", kind.family))
}

/// Marks a directory as generated by prepbench, written once generation completed.
pub const MARKER: &str = ".prepbench-dataset.json";

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Marker {
    family: String,
    seed: u64,
    #[serde(default)]
    options: BTreeMap<String, String>,
    /// Files written (each of `samples_per_file` samples).
    files: usize,
    /// What decoding the generated JPEGs costs, measured after generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decode: Option<DecodeCost>,
}

/// prepbench's JPEG decode (`decode_jpeg`, one thread) timed on a spread of a dataset's JPEG
/// files, to compare with real photographs of the same bit rate (docs/decisions.md, Datasets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecodeCost {
    /// Files decoded.
    pub files: usize,
    /// Milliseconds per megapixel: the fastest of three decodes of each file, summed, over
    /// their megapixels.
    pub ms_per_mp: f64,
    /// Compressed bits per pixel of those files.
    pub bits_per_pixel: f64,
}

/// Most files and megapixels timed by [`measure_decode`].
const DECODE_FILES: usize = 24;
const DECODE_MEGAPIXELS: f64 = 12.0;

/// Times prepbench's JPEG decode on up to 24 JPEG files spread evenly over `root` (sorted
/// paths), stopping after 12 megapixels: `None` when there is none. A file that does not decode
/// is an error naming it.
pub fn measure_decode(root: &Path) -> Result<Option<DecodeCost>, DatasetError> {
    let mut found = Vec::new();
    folder::walk(&LocalFiles, root, "", 0, &mut found)?;
    let mut jpegs: Vec<PathBuf> = found
        .into_iter()
        .filter(|(_, e)| {
            let name = e.name.to_ascii_lowercase();
            name.ends_with(".jpg") || name.ends_with(".jpeg")
        })
        .map(|(rel, _)| root.join(rel))
        .collect();
    jpegs.sort();
    if jpegs.is_empty() {
        return Ok(None);
    }
    let step = jpegs.len().div_ceil(DECODE_FILES);
    let (mut seconds, mut pixels, mut bytes, mut files) = (0.0, 0.0, 0.0, 0);
    for path in jpegs.iter().step_by(step) {
        let data = std::fs::read(path).map_err(io_err(path))?;
        let mut best = f64::INFINITY;
        let mut size = 0.0;
        for _ in 0..3 {
            let start = std::time::Instant::now();
            let image = workloads::steps::decode_jpeg::decode_rgb8(
                &data,
                workloads::steps::MAX_IMAGE_PIXELS,
                f64::INFINITY,
            )
            .map_err(|e| DatasetError::Generate(format!("{}: {}", path.display(), e.message)))?;
            best = best.min(start.elapsed().as_secs_f64());
            size = (image.shape()[0] * image.shape()[1]) as f64;
        }
        seconds += best;
        pixels += size;
        bytes += data.len() as f64;
        files += 1;
        if pixels >= DECODE_MEGAPIXELS * 1e6 {
            break;
        }
    }
    Ok(Some(DecodeCost {
        files,
        ms_per_mp: 1e3 * seconds / (pixels / 1e6).max(1e-9),
        bits_per_pixel: 8.0 * bytes / pixels.max(1.0),
    }))
}

/// The decode cost a generation marker in `root` records, when it has one.
pub fn recorded_decode(root: &Path) -> Option<DecodeCost> {
    let text = std::fs::read(root.join(MARKER)).ok()?;
    serde_json::from_slice::<Marker>(&text).ok()?.decode
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `bytes` to `path` through a temporary name and a rename, so a reader never sees a
/// partial file under the final name.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), DatasetError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    // Unique per process: shards of a sweep may generate the same dataset at once (the same
    // bytes; each rename is whole).
    let tmp = path.with_extension(format!("prepbench-tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(io_err(&tmp))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(io_err(path)));
    if written.is_err() {
        // A full disk leaves no half-written temporary behind; the old file stays as it was.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The files a generation marker (its bytes, read from `path`) records, when it is of `kind`'s
/// family with the request's seed and options; an error naming the path otherwise.
pub fn marker_files(
    text: &[u8],
    path: &Path,
    kind: &DatasetKind,
    request: &GenerateRequest,
) -> Result<usize, DatasetError> {
    let m = serde_json::from_slice::<Marker>(text).map_err(|e| DatasetError::Layout {
        path: path.display().to_string(),
        message: format!("unreadable generation marker: {e}"),
    })?;
    if m.family != kind.family || m.seed != request.seed || m.options != request.options {
        return Err(DatasetError::Layout {
            path: request.root.display().to_string(),
            message: format!(
                "holds a generated `{}` dataset with seed {} and options {:?}; asked for `{}` \
                 with seed {} and options {:?}: use another directory",
                m.family, m.seed, m.options, kind.family, request.seed, request.options
            ),
        });
    }
    Ok(m.files)
}

/// Runs `work(i)` for every `i` in `range` on `threads` threads (each taking the next index
/// when it is free) and returns the first error; a thread that panics gives `panicked()`.
pub fn for_each_index<E: Send>(
    threads: usize,
    range: std::ops::Range<usize>,
    panicked: impl Fn() -> E + Sync,
    work: impl Fn(usize) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let next = AtomicUsize::new(range.start);
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= range.end {
            return Ok(());
        }
        work(i)?;
    };
    std::thread::scope(|scope| {
        // Workers share one counter, so fewer threads than asked (the system refused some) do
        // the same work; with none started, this thread does it.
        let workers: Vec<_> = (0..threads.max(1))
            .map_while(|_| std::thread::Builder::new().spawn_scoped(scope, worker).ok())
            .collect();
        if workers.is_empty() {
            return worker();
        }
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or_else(|_| Err(panicked())))
    })
}

/// Generates files `[from, files)` with `generate_one` in parallel; `progress` gets each
/// finished count.
fn generate_range(
    generate_one: GenerateFn,
    request: &GenerateRequest,
    from: usize,
    files: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(), DatasetError> {
    let done = AtomicUsize::new(0);
    for_each_index(
        request.threads,
        from..files,
        || DatasetError::Generate("a generator thread panicked".into()),
        |n| {
            generate_one(request, n)?;
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            Ok(())
        },
    )
}

/// Generates (or extends) a dataset of `request.samples` samples; returns how many files were
/// written. Generation is deterministic per file index, so extending a smaller generated dataset
/// with the same seed gives the same files as generating the larger one at once.
pub fn generate(
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<usize, DatasetError> {
    let kind = find_kind(kind_name)?;
    kind.check_options(&request.options)?;
    let Some(generate_one) = kind.generate_one else {
        return Err(DatasetError::Generate(kind.no_generator()));
    };
    if let Some(key) = kind.reader_option(&request.options) {
        return Err(DatasetError::Generate(reader_option_message(kind, key)));
    }
    let marker_path = request.root.join(MARKER);
    let from = match std::fs::read(&marker_path) {
        Ok(text) => marker_files(&text, &marker_path, kind, request)?,
        Err(_) if request.root.exists() && std::fs::read_dir(&request.root).map_err(io_err(&request.root))?.next().is_some() => {
            return Err(DatasetError::Layout {
                path: request.root.display().to_string(),
                message: "exists, is not empty and was not generated by prepbench: refusing to write into it".into(),
            })
        }
        Err(_) => 0,
    };
    let claimed = marker_path.exists();
    let files = request.files(kind);
    let from = from.min(files);
    if from >= files {
        return Ok(0);
    }
    if !claimed {
        // Claim the (empty or new) directory before writing into it, so that a generation
        // killed part-way is recognised as ours and redone rather than refused.
        std::fs::create_dir_all(&request.root).map_err(io_err(&request.root))?;
        let claim = Marker {
            family: kind.family.to_string(),
            seed: request.seed,
            options: request.options.clone(),
            files: 0,
            decode: None,
        };
        let text = serde_json::to_string_pretty(&claim).expect("marker serializes");
        write_atomically(&marker_path, text.as_bytes())?;
    }
    // The marker is only (re)written after every file exists: an interrupted generation leaves
    // the old marker, and the next call regenerates from there.
    generate_range(generate_one, request, from, files, progress)?;
    if let Some(finish) = kind.finish {
        finish(&GenerateRequest {
            samples: files * kind.samples_per_file,
            ..request.clone()
        })?;
    }
    let marker = Marker {
        family: kind.family.to_string(),
        seed: request.seed,
        options: request.options.clone(),
        files,
        decode: measure_decode(&request.root)?,
    };
    let text = serde_json::to_string_pretty(&marker).expect("marker serializes");
    write_atomically(&marker_path, text.as_bytes())?;
    Ok(files - from)
}

/// How a dataset's size per sample compares with the real dataset's.
#[derive(Clone, Debug)]
pub struct CalibrationCheck {
    pub line: String,
    pub within: bool,
    /// Measured mean over the reference mean, minus one (0 without a reference).
    pub deviation: f64,
}

/// Compares the mean MB per sample of `source` with what `kind` is calibrated against.
pub fn check_calibration(
    kind: &DatasetKind,
    source: &Source,
    request: &GenerateRequest,
) -> Result<CalibrationCheck, DatasetError> {
    let samples = (source.len() * kind.samples_per_file).max(1) as f64;
    let measured = source.total_bytes() as f64 / samples / 1e6;
    let (expected, tolerance) = match (kind.expected_mb, kind.calibration) {
        (Some(f), _) => (f(request)?, 0.01),
        // A small dataset's mean size is a noisy estimate of a calibrated mean: widen the
        // tolerance by three standard errors of the mean (from the files' own spread), which
        // vanishes as samples grow.
        (None, Some(c)) => (
            c.mb_per_sample,
            c.tolerance + 3.0 * relative_standard_error(source),
        ),
        (None, None) => {
            return Ok(CalibrationCheck {
                line: format!(
                    "{}: {measured:.4} MB per sample (no reference size)",
                    kind.name
                ),
                within: true,
                deviation: 0.0,
            })
        }
    };
    let deviation = measured / expected - 1.0;
    let within = deviation.abs() <= tolerance;
    let line = format!(
        "{}: {measured:.4} MB per sample generated vs {expected:.4} in {} ({:+.1} %, tolerance +-{:.0} %){}",
        kind.name,
        kind.real,
        deviation * 100.0,
        tolerance * 100.0,
        if within { "" } else { ": OUTSIDE THE TOLERANCE" }
    );
    Ok(CalibrationCheck {
        line,
        within,
        deviation,
    })
}

/// The standard error of the mean file size over the mean (0 for fewer than two files).
fn relative_standard_error(source: &Source) -> f64 {
    let n = source.items.len();
    if n < 2 {
        return 0.0;
    }
    let sizes = source.items.iter().map(|i| i.size_bytes as f64);
    let mean = sizes.clone().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let variance = sizes.map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    variance.sqrt() / mean / (n as f64).sqrt()
}

/// Opens a local dataset for a run: generates it first when `root` does not hold enough samples
/// of a prepbench-generated dataset, then lists it and keeps the first `samples`.
pub fn prepare(
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Source, DatasetError> {
    prepare_in(&files::local(), kind_name, request, progress)
}

/// [`prepare`] for a dataset read through `files`. Only local datasets are generated in place;
/// one elsewhere (object storage) must already hold the samples.
pub fn prepare_in(
    files: &Arc<dyn Files>,
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Source, DatasetError> {
    prepare_counted(files, kind_name, request, progress).map(|(source, _)| source)
}

/// [`prepare_in`], with the number of files it generated (0 when the dataset was complete).
pub fn prepare_counted(
    files: &Arc<dyn Files>,
    kind_name: &str,
    request: &GenerateRequest,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(Source, usize), DatasetError> {
    let kind = find_kind(kind_name)?;
    kind.check_options(&request.options)?;
    let mut generated = 0;
    if files.is_local() {
        let ours = request.root.join(MARKER).exists();
        let empty = std::fs::read_dir(&request.root)
            .map(|mut d| d.next().is_none())
            .unwrap_or(true);
        if empty || ours {
            generated = generate(kind_name, request, progress)?;
        }
    }
    Ok((open_enough(files, kind, request)?, generated))
}

/// Lists the dataset a user named (a workload's `dataset.path`): read as it is, never
/// generated. A missing or empty folder is an error naming it and the layout expected.
pub fn open_named(
    files: &Arc<dyn Files>,
    kind_name: &str,
    request: &GenerateRequest,
) -> Result<Source, DatasetError> {
    let kind = find_kind(kind_name)?;
    if files.is_local() {
        check_present(kind, &request.root)?;
    }
    open_enough(files, kind, request)
}

/// Refuses a local folder named as the user's dataset that is missing or empty, saying what
/// layout was expected: prepbench never generates into it.
pub fn check_present(kind: &DatasetKind, root: &Path) -> Result<(), DatasetError> {
    let problem = match std::fs::read_dir(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        Err(e) => return Err(io_err(root)(e)),
        Ok(mut entries) => match entries.next() {
            None => "is empty",
            Some(_) => return Ok(()),
        },
    };
    Err(DatasetError::Layout {
        path: root.display().to_string(),
        message: format!(
            "{problem}: a dataset named by dataset.path or --dataset is your data, which \
             prepbench reads as it is and never generates; expected a folder in the {} layout \
             ({}). To benchmark a generated stand-in instead, name no path",
            kind.name, kind.layout
        ),
    })
}

/// Opens the dataset at the request's root and keeps its first `request.samples`, or says
/// how many it holds when that is fewer.
fn open_enough(
    files: &Arc<dyn Files>,
    kind: &'static DatasetKind,
    request: &GenerateRequest,
) -> Result<Source, DatasetError> {
    let source = (kind.open)(files, &request.root, &request.options)?;
    let wanted = request.files(kind);
    if source.len() < wanted {
        let hint = if files.is_local() {
            String::new()
        } else {
            format!(
                "; datasets in object storage are not generated in place: `prepbench generate \
                 {} --samples {} --out {}` uploads one",
                kind.name,
                request.samples,
                request.root.display()
            )
        };
        return Err(DatasetError::Layout {
            path: request.root.display().to_string(),
            message: format!(
                "holds {have} samples where {} were asked for (ask for at most {have} with \
                 --samples or dataset.samples); the `{}` kind reads {}{hint}",
                request.samples,
                kind.name,
                kind.layout,
                have = source.len() * kind.samples_per_file,
            ),
        });
    }
    Ok(source.truncated(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(root: &Path, samples: usize) -> GenerateRequest {
        GenerateRequest {
            root: root.to_path_buf(),
            samples,
            seed: 7,
            threads: 2,
            options: Default::default(),
        }
    }

    #[test]
    fn a_named_folder_with_too_few_samples_says_how_many_it_holds_and_what_the_kind_reads() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..3 {
            std::fs::write(dir.path().join(format!("{n}.bin")), b"x").unwrap();
        }
        let err = open_named(&files::local(), "files", &request(dir.path(), 10))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&dir.path().display().to_string()),
            "names the folder: {err}"
        );
        assert!(
            err.contains("holds 3 samples where 10 were asked for")
                && err.contains("at most 3 with --samples or dataset.samples")
                && err.contains("the `files` kind reads any folder"),
            "{err}"
        );
        assert_eq!(
            open_named(&files::local(), "files", &request(dir.path(), 3))
                .unwrap()
                .len(),
            3
        );
    }

    #[test]
    fn the_marker_records_the_decode_cost_of_generated_jpegs_and_none_without_jpegs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a");
        generate("imagenet", &request(&root, 30), &|_| ()).unwrap();
        let cost = recorded_decode(&root).expect("a decode cost in the marker");
        // 30 files spread over 24: every second one.
        assert_eq!(cost.files, 15);
        assert!(
            cost.ms_per_mp > 0.0 && cost.ms_per_mp.is_finite(),
            "{cost:?}"
        );
        // ImageNet-like files are a few bits per pixel (not flat, not raw).
        assert!((1.0..12.0).contains(&cost.bits_per_pixel), "{cost:?}");
        let text = dir.path().join("t");
        generate("openwebtext", &request(&text, 3), &|_| ()).unwrap();
        assert_eq!(recorded_decode(&text), None);
        // A JPEG that does not decode is an error naming it.
        std::fs::write(
            root.join("train").join("broken.jpg"),
            b"\xff\xd8 not a jpeg",
        )
        .unwrap();
        let err = measure_decode(&root).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("broken.jpg"), "{err}");
    }

    #[test]
    fn generated_imagenet_is_deterministic_extensible_and_in_source_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        assert_eq!(generate("imagenet", &request(&a, 6), &|_| ()).unwrap(), 6);
        assert_eq!(
            generate("imagenet", &request(&a, 12), &|_| ()).unwrap(),
            6,
            "extends"
        );
        assert_eq!(
            generate("imagenet", &request(&a, 12), &|_| ()).unwrap(),
            0,
            "complete"
        );
        generate("imagenet", &request(&b, 12), &|_| ()).unwrap();
        let (sa, sb) = (
            prepare("imagenet", &request(&a, 12), &|_| ()).unwrap(),
            imagenet::KIND.open_local(&b).unwrap(),
        );
        assert_eq!(sa.len(), 12);
        for (n, (x, y)) in sa.items.iter().zip(&sb.items).enumerate() {
            assert_eq!(
                std::fs::read(&x.path).unwrap(),
                std::fs::read(&y.path).unwrap(),
                "sample {n}"
            );
            let (expected, class) = imagenet::generated_path(&a, n);
            assert_eq!(x.path, expected);
            assert_eq!(
                x.fields[0].1,
                workloads::Field::Tensor(workloads::Tensor::scalar_i32(class as i32))
            );
        }
        assert_eq!(
            sa.fingerprint(),
            prepare("imagenet", &request(&a, 12), &|_| ())
                .unwrap()
                .fingerprint()
        );
        assert_eq!(
            prepare("imagenet", &request(&a, 5), &|_| ()).unwrap().len(),
            5
        );
    }

    #[test]
    fn refuses_foreign_directories_other_seeds_and_short_datasets() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), b"x").unwrap();
        let err = generate("imagenet", &request(dir.path(), 2), &|_| ()).unwrap_err();
        assert!(
            err.to_string().contains("not generated by prepbench"),
            "{err}"
        );
        let gen = dir.path().join("g");
        generate("imagenet", &request(&gen, 2), &|_| ()).unwrap();
        let other_seed = GenerateRequest {
            seed: 8,
            ..request(&gen, 2)
        };
        assert!(generate("imagenet", &other_seed, &|_| ())
            .unwrap_err()
            .to_string()
            .contains("seed 7"));
        // A real (unmarked) copy with too few files is an error naming the path.
        std::fs::remove_file(gen.join(MARKER)).unwrap();
        let err = prepare("imagenet", &request(&gen, 3), &|_| ()).unwrap_err();
        assert!(err.to_string().contains("holds 2 samples"), "{err}");
        assert!(find_kind("mnist").is_err());
    }

    /// ImageNet's mean is ~0.115 MB per JPEG; the generator must land near it (issue 4 tightens
    /// this to +-15 % over larger samples).
    #[test]
    fn generated_jpegs_are_imagenet_sized() {
        let dir = tempfile::tempdir().unwrap();
        let source = prepare("imagenet", &request(dir.path(), 60), &|_| ()).unwrap();
        let mean_mb = source.total_bytes() as f64 / source.len() as f64 / 1e6;
        println!("mean {mean_mb:.4} MB per image");
        assert!(
            (0.08..0.15).contains(&mean_mb),
            "mean {mean_mb:.4} MB per image"
        );
    }
}

#[cfg(test)]
mod workload_checks {
    #[test]
    fn every_reference_workload_reads_only_fields_it_has() {
        for (name, _) in workloads::BUILTIN {
            let w = workloads::load(name).unwrap();
            super::check_workload(&w).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_field_no_step_makes_is_named_with_its_step_and_line() {
        let yaml = "name: w\ndataset: {kind: imagenet}\nsteps:\n  - name: concatenated\n    \
                    op: read_file\n  - name: decoded\n    op: decode_jpeg\n    \
                    params: {from: nothing_here}\n";
        let w = workloads::Workload::from_yaml(yaml, "w.yaml").unwrap();
        let e = super::check_workload(&w).unwrap_err().to_string();
        assert!(e.starts_with("w.yaml:6: step `decoded`"), "{e}");
        assert!(
            e.contains("reads field `nothing_here`") && e.contains("path, label, data"),
            "{e}"
        );
    }

    #[test]
    fn the_fields_declared_for_each_kind_are_the_fields_its_reader_gives() {
        let dir = tempfile::tempdir().unwrap();
        for kind in [
            "imagenet",
            "coco",
            "openwebtext",
            "librispeech",
            "commonvoice",
        ] {
            let root = dir.path().join(kind);
            let request = super::GenerateRequest {
                root: root.clone(),
                samples: 1,
                seed: 0,
                threads: 1,
                options: Default::default(),
            };
            let source = super::prepare(kind, &request, &|_| {}).unwrap();
            let mut names: Vec<String> = source
                .sample(0)
                .fields()
                .iter()
                .map(|(n, _)| n.clone())
                .filter(|n| n != "path")
                .collect();
            names.sort();
            let mut declared: Vec<&str> = super::source_fields(kind, &request.options).to_vec();
            declared.sort();
            assert_eq!(names, declared, "{kind}");
        }
    }
}
