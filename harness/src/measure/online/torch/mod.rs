//! The `torch` loader: each epoch's online phase in a real PyTorch `DataLoader`, in the
//! interpreter the run names (`--python`), with `num_workers` = the run's threads. Its process
//! (`prepbench/_loader.py`, in the Python package) reads a store with prepbench's reader, or
//! the raw items with the workload's read step, and runs the online Python steps in the
//! DataLoader's workers with the same chain code and seeds as the native engine, so that
//! `--verify` compares its outputs with native fully-online processing sample by sample.
//!
//! The epoch is timed from `go` (after PyTorch and the steps are imported, as a training job
//! has them before its first epoch) to the loader's answer; its CPU and I/O are the loader
//! process's and its reaped workers' over the same span (the process reports them, as
//! `getrusage` and `/proc/self/io` see them), and they are not the machine's foreign load.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

use indicatif::ProgressBar;
use serde::Deserialize;
use workloads::{OnError, Workload};

use super::engine::{Engine, OnlineInput, OnlineJob, OnlineResult};
use crate::measure::errors::RunError;
use crate::measure::metrics::Snapshot;
use crate::measure::steps::step_failed;

/// The loader's options, recorded with every run it makes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TorchOptions {
    pub batch_size: usize,
    /// Batches each worker loads ahead (`None`: PyTorch's default, 2).
    pub prefetch_factor: Option<usize>,
    pub pin_memory: bool,
    pub persistent_workers: bool,
}

impl Default for TorchOptions {
    fn default() -> TorchOptions {
        TorchOptions {
            batch_size: 32,
            prefetch_factor: None,
            pin_memory: false,
            persistent_workers: false,
        }
    }
}

/// `batch=32 prefetch=default pin=false persistent=false`.
impl std::fmt::Display for TorchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefetch = self
            .prefetch_factor
            .map_or_else(|| "default".to_string(), |p| p.to_string());
        write!(
            f,
            "batch={} prefetch={prefetch} pin={} persistent={}",
            self.batch_size, self.pin_memory, self.persistent_workers
        )
    }
}

impl std::str::FromStr for TorchOptions {
    type Err = String;

    /// `batch=64,prefetch=4,pin=true,persistent=true` (commas or spaces between them), each
    /// optional; those not named keep their defaults.
    fn from_str(text: &str) -> Result<TorchOptions, String> {
        let mut options = TorchOptions::default();
        let known = "batch=N, prefetch=K|default, pin=true|false, persistent=true|false";
        for option in text.split([',', ' ']).filter(|o| !o.trim().is_empty()) {
            let (key, value) = option.trim().split_once('=').ok_or_else(|| {
                format!("`{option}` is not KEY=VALUE; the torch loader takes {known}")
            })?;
            let count = |max: usize| {
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| format!("{key}={value}: a count from 1 to {max}"))
            };
            let flag = || {
                value
                    .parse::<bool>()
                    .map_err(|_| format!("{key}={value}: true or false"))
            };
            match key {
                "batch" => options.batch_size = count(65_536)?,
                "prefetch" if value == "default" => options.prefetch_factor = None,
                "prefetch" => options.prefetch_factor = Some(count(1_024)?),
                "pin" => options.pin_memory = flag()?,
                "persistent" => options.persistent_workers = flag()?,
                _ => return Err(format!("no option `{key}`; the torch loader takes {known}")),
            }
        }
        Ok(options)
    }
}

/// Bumped with `PROTOCOL` in `prepbench/_loader.py`.
const PROTOCOL: u32 = 2;

pub struct Torch;

pub mod steps;

/// Why the online steps `[split, n)` of `workload` cannot run under a loader that runs Python
/// steps and the ops of [`steps::OPS`] (after the read step, for raw input); `None` when they
/// can.
pub fn step_refusal(workload: &Workload, split: usize, loader: &str) -> Option<String> {
    let first = if split == 0 {
        let read = &workload.steps[0];
        if read.step.python_link().is_some() || read.spec.facts.fan_out {
            return Some(format!(
                "step `{}` (op {}) cannot read the raw items under the {loader} loader",
                read.name, read.spec.op
            ));
        }
        1
    } else {
        split
    };
    let first = first.min(workload.steps.len());
    workload.steps[first..]
        .iter()
        .zip(&workload.spec.steps[first..])
        .filter(|(def, _)| def.step.python_link().is_none())
        .find_map(|(def, config)| steps::refusal(def, &config.params))
}

fn loader_error(message: impl Into<String>) -> RunError {
    RunError::Loader {
        loader: "torch",
        message: message.into(),
    }
}

#[derive(Deserialize)]
struct Usage {
    user_s: f64,
    sys_s: f64,
    read_bytes: u64,
    read_chars: u64,
}

#[derive(Deserialize)]
struct Ready {
    ready: Option<Usage>,
    error: Option<String>,
    detail: Option<String>,
}

#[derive(Deserialize)]
struct Answer {
    arrivals: Vec<(u64, f64)>,
    samples: u64,
    bytes: u64,
    hashes: Vec<(u64, u64)>,
    /// (sample id, step, message, detail).
    skipped: Vec<Failure>,
    failed: Option<Failure>,
    passes: u64,
    usage: Usage,
}

/// The job as the loader process reads it.
fn job_json(job: &OnlineJob, options: &TorchOptions) -> Result<serde_json::Value, RunError> {
    let mut value = serde_json::json!({
        "protocol": PROTOCOL,
        "version": env!("CARGO_PKG_VERSION"),
        "spec": job.workload.spec,
        "split": job.split,
        "seed": job.seed,
        "epoch": job.epoch,
        "threads": job.threads,
        "batch_size": options.batch_size,
        "prefetch_factor": options.prefetch_factor,
        "pin_memory": options.pin_memory,
        "persistent_workers": options.persistent_workers,
        "hash": job.hash,
        "on_error": if job.on_error == OnError::Skip { "skip" } else { "fail" },
        "min_s": job.min_s,
    });
    match job.input {
        OnlineInput::Raw => {
            value["input"] = "raw".into();
            value["root"] = job.source.root.display().to_string().into();
            value["items"] = job.items.into();
        }
        OnlineInput::Store { backend, .. } => {
            let manifest = backend
                .local_path(crate::store::STORE_MANIFEST)
                .ok_or_else(|| {
                    loader_error("reads stores on this machine only, not in object storage")
                })?;
            let dir = manifest.parent().expect("a store file has a folder");
            value["input"] = "store".into();
            value["store"] = dir.display().to_string().into();
            // The raw items, for --verify's native processing of each sample where prepbench's
            // ops run in their PyTorch form.
            value["root"] = job.source.root.display().to_string().into();
            value["items"] = job.items.into();
        }
        OnlineInput::Memory(_) => {
            return Err(loader_error(
                "has no application cache (--cache app): use --loader native",
            ))
        }
    }
    Ok(value)
}

/// What the torch loader cannot take of a job, before anything starts.
fn refused(job: &OnlineJob) -> Option<String> {
    if job.fill.is_some() {
        return Some("has no application cache (--cache app): use --loader native".into());
    }
    if job.throttle.is_some() {
        return Some("reads the local disk only, not emulated storage (--storage)".into());
    }
    if job.consumer.is_some() {
        return Some(
            "is its own consumer (the training loop iterating it): drop --consumer".into(),
        );
    }
    step_refusal(job.workload, job.split, "torch")
}

/// The loader process's answer line, or the error it reported, or its end.
fn answer_line(out: &mut impl BufRead, child: &mut Child) -> Result<String, RunError> {
    let mut line = String::new();
    let read = out
        .read_line(&mut line)
        .map_err(|e| loader_error(format!("its answer: {e}")))?;
    if read == 0 {
        let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
        return Err(loader_error(format!(
            "its process ended ({status}) without answering"
        )));
    }
    Ok(line)
}

impl Torch {
    fn spawn(&self) -> Result<(Child, std::thread::JoinHandle<String>), RunError> {
        let python = workloads::python::interpreter();
        let mut child = Command::new(&python)
            .args(["-c", "from prepbench._loader import main; main()"])
            .env(workloads::python::WORKER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| loader_error(format!("starting {}: {e}", python.display())))?;
        // Its stderr (the user's prints, PyTorch's warnings), kept for an error's message.
        let mut err = child.stderr.take().expect("piped");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        Ok((child, stderr))
    }
}

/// The last lines of the loader's stderr, for an error.
fn tail(stderr: std::thread::JoinHandle<String>) -> String {
    let text = stderr.join().unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

/// Why the interpreter cannot run the loader (PyTorch or prepbench's package missing, another
/// version of it); asked once per interpreter.
fn runtime_refusal() -> Option<String> {
    static ASKED: std::sync::Mutex<Vec<(std::path::PathBuf, Option<String>)>> =
        std::sync::Mutex::new(Vec::new());
    let python = workloads::python::interpreter();
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, why)) = asked.iter().find(|(p, _)| *p == python) {
        return why.clone();
    }
    let check = format!(
        "import torch, numpy\nimport prepbench._loader\nfrom prepbench import native\nv = \
         native().VERSION\nassert v == {:?}, f'its prepbench package is version {{v}}, this \
         command line {}'",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_VERSION")
    );
    let out = Command::new(&python)
        .args(["-c", &check])
        .env(workloads::python::WORKER_ENV, "1")
        .output();
    let why = match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stderr);
            let last = text.lines().last().unwrap_or("").to_string();
            Some(format!(
                "needs PyTorch and the prepbench package in {} ({last}): pip install \
                 \".[torch]\" from the prepbench repository into it, or name another \
                 interpreter with --python",
                python.display()
            ))
        }
        Err(e) => Some(format!("cannot start {}: {e}", python.display())),
    };
    asked.push((python, why.clone()));
    why
}

impl Engine for Torch {
    fn name(&self) -> &'static str {
        "torch"
    }

    fn options(&self, asked: Option<&str>) -> Result<String, String> {
        let options: TorchOptions = asked.unwrap_or("").parse()?;
        Ok(options.to_string())
    }

    fn refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        step_refusal(workload, split, "torch")
            .or_else(runtime_refusal)
            .map(|why| format!("the torch loader {why}"))
    }

    fn run(&self, job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
        if let Some(why) = refused(job) {
            return Err(loader_error(why));
        }
        let options: TorchOptions = job.loader_options.parse().map_err(loader_error)?;
        let request = job_json(job, &options)?;
        let (mut child, stderr) = self.spawn()?;
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let wrote = writeln!(stdin, "{request}");
        if wrote.is_err() {
            let _ = child.wait();
            return Err(loader_error(format!(
                "its process ended before reading the job:\n{}",
                tail(stderr)
            )));
        }
        let line = match answer_line(&mut stdout, &mut child) {
            Ok(line) => line,
            Err(e) => {
                return Err(loader_error(format!(
                    "{e}; is the prepbench package (with PyTorch) installed in {}? (pip \
                     install \".[torch]\" from the prepbench repository)\n{}",
                    workloads::python::interpreter().display(),
                    tail(stderr)
                )))
            }
        };
        let ready: Ready = serde_json::from_str(&line)
            .map_err(|e| loader_error(format!("its greeting {line:?}: {e}")))?;
        let Some(before) = ready.ready else {
            let _ = child.wait();
            let _ = tail(stderr);
            return Err(loader_error(format!(
                "{}\n{}",
                ready.error.unwrap_or_default(),
                ready.detail.unwrap_or_default()
            )));
        };
        let start = Snapshot::now();
        writeln!(stdin, "go").map_err(|e| loader_error(format!("starting the epoch: {e}")))?;
        let line = answer_line(&mut stdout, &mut child)?;
        let end = Snapshot::now();
        drop(stdin);
        let _ = child.wait();
        let _ = tail(stderr);
        let answer: Answer = serde_json::from_str(&line).map_err(|e| {
            let error: Option<Ready> = serde_json::from_str(&line).ok();
            match error.and_then(|r| r.error.map(|m| (m, r.detail))) {
                Some((message, detail)) => {
                    loader_error(format!("{message}\n{}", detail.unwrap_or_default()))
                }
                None => loader_error(format!("its answer {line:?}: {e}")),
            }
        })?;
        self.result(job, start, end, before, answer, progress)
    }
}

/// (sample id, step, message, detail) of a sample the loader could not deliver.
type Failure = (u64, String, String, String);

/// A sample the loader could not deliver, as the native engine names it: by the workload's step
/// (the read step for raw input), or, for a stored record it could not read, as `deserialize`.
fn failure(job: &OnlineJob, (id, step, message, detail): Failure) -> RunError {
    let at = job.workload.steps.iter().position(|d| d.name == step);
    let error = workloads::StepError {
        message,
        detail: (!detail.is_empty()).then_some(detail),
    };
    match step_failed(job.workload, job.source, id, at.unwrap_or(0), error) {
        RunError::Step {
            sample,
            file,
            message,
            detail,
            ..
        } if at.is_none() && step != "read" => RunError::Step {
            sample,
            file,
            step,
            op: "python",
            message,
            detail,
        },
        named => named,
    }
}

impl Torch {
    fn result(
        &self,
        job: &OnlineJob,
        start: Snapshot,
        end: Snapshot,
        before: Usage,
        answer: Answer,
        progress: &ProgressBar,
    ) -> Result<OnlineResult, RunError> {
        if let Some(failed) = answer.failed {
            return Err(failure(job, failed));
        }
        let mut delta = end.since(&start);
        let user = (answer.usage.user_s - before.user_s).max(0.0);
        let sys = (answer.usage.sys_s - before.sys_s).max(0.0);
        delta.cpu_user_s += user;
        delta.cpu_sys_s += sys;
        delta.read_bytes += answer.usage.read_bytes.saturating_sub(before.read_bytes);
        delta.read_chars += answer.usage.read_chars.saturating_sub(before.read_chars);
        // The loader's processes are this run's, not the machine's other load.
        delta.foreign_cpu_s = delta.foreign_cpu_s.map(|f| (f - user - sys).max(0.0));
        let mut result = OnlineResult::empty(job.workload.steps.len());
        result.samples = answer.samples;
        result.output_bytes = answer.bytes;
        result.delta = delta;
        result.hashes = answer.hashes;
        result.passes = answer.passes;
        for (count, at) in answer.arrivals {
            result
                .arrivals_s
                .extend(std::iter::repeat_n(at, count as usize));
        }
        result.skipped = answer
            .skipped
            .into_iter()
            .filter_map(|f| failure(job, f).skipped())
            .collect();
        progress.inc(answer.samples);
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::online::{default_engine, ENGINES};
    use crate::results::rows::{default_loader_options, loader_label, DEFAULT_LOADER_OPTIONS};

    #[test]
    fn options_are_spelled_out_checked_and_their_defaults_known_to_results() {
        assert_eq!(
            Torch.options(Some("batch=64, pin=true")).unwrap(),
            "batch=64 prefetch=default pin=true persistent=false"
        );
        let spelled = Torch.options(Some("prefetch=4,persistent=true")).unwrap();
        // What runs record parses back to the same options.
        assert_eq!(Torch.options(Some(&spelled)).unwrap(), spelled);
        for (bad, says) in [
            ("batch=0", "from 1 to"),
            ("batch=x", "from 1 to"),
            ("pin=yes", "true or false"),
            ("workers=4", "no option `workers`"),
            ("batch", "KEY=VALUE"),
        ] {
            let error = Torch.options(Some(bad)).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        assert!(default_engine().options(Some("batch=64")).is_err());
        assert_eq!(default_engine().options(None).unwrap(), "");
        // Every engine's defaults are the ones results compare rows with.
        for engine in ENGINES {
            assert_eq!(
                engine.options(None).unwrap(),
                default_loader_options(engine.name()),
                "{}",
                engine.name()
            );
        }
        assert_eq!(DEFAULT_LOADER_OPTIONS.len(), ENGINES.len() - 1);
        // A run with other options is another condition, named by what differs.
        let defaults = Torch.options(None).unwrap();
        assert_eq!(loader_label("torch", &defaults), "torch");
        assert_eq!(loader_label("torch", ""), "torch");
        assert_eq!(
            loader_label("torch", &spelled),
            "torch[prefetch=4,persistent=true]"
        );
    }
}
