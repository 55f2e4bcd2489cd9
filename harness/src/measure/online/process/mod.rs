//! What every loader written in Python shares (`torch`, `tf-data`): its process (a module of
//! the prepbench package, run in the `--python` interpreter), the job it reads (one JSON
//! line), its `ready` once its framework and the steps are imported, `go`, its answer, and the
//! epoch's result made of it as the native engine makes its own: samples, bytes, arrivals,
//! hashes, skipped samples, and the CPU and I/O of the loader's process and its workers
//! (reported by the process: `getrusage` and `/proc/self/io` for workers waited for,
//! `/proc/PID` for those alive), which are not counted as the machine's foreign load.
//!
//! The epoch is timed from `go` (after the framework and the steps are imported, as a training
//! job has them before its first epoch) to the loader's answer.

use indicatif::ProgressBar;
use workloads::{OnError, Workload};

use super::engine::{OnlineInput, OnlineJob, OnlineResult};
use crate::measure::errors::RunError;
use crate::measure::metrics::Snapshot;

mod answer;
mod emulated;
mod forms;
mod session;
pub use answer::take_stacks;
use answer::{failure, note_stack, Answer, Ready, Usage};
pub use forms::{audio_refusal, form_refusal, step_refusal};
pub(super) use session::loader_error;
pub use session::retire_idle;
use session::Session;

/// A loader written in Python.
pub(super) struct PythonLoader {
    /// The name runs record (`torch`).
    pub name: &'static str,
    /// The package module whose `main()` runs an epoch (`prepbench._loader`).
    pub module: &'static str,
    /// What the interpreter must import for it (`torch, numpy`).
    pub imports: &'static str,
    /// What it needs, as a refusal names it (`PyTorch`), and the package extra that installs
    /// it (`torch`).
    pub needs: &'static str,
    pub extra: &'static str,
    /// What the interpreter must import to decode audio (`torch, soundfile`), and what a
    /// refusal names (`soundfile`): the framework itself does not bring it.
    pub audio: (&'static str, &'static str),
    /// Why it has no application cache (`--cache app`); `None`: its process keeps the
    /// records in its own memory (tf.data's `.cache()`) and serves the run's next epochs.
    pub app_cache: Option<&'static str>,
    /// Bumped with the module's `PROTOCOL` when the job or the answer changes.
    pub protocol: u32,
    /// Why it cannot run the online steps from `split` of a workload.
    pub steps: fn(&Workload, usize) -> Option<String>,
}

impl PythonLoader {
    /// The job as the loader process reads it, with the loader's own `options` keys.
    fn job_json(
        &self,
        job: &OnlineJob,
        options: serde_json::Value,
    ) -> Result<serde_json::Value, RunError> {
        let loader_error = |m: &str| loader_error(self.name, m);
        let mut value = serde_json::json!({
            "protocol": self.protocol,
            "version": env!("CARGO_PKG_VERSION"),
            "spec": job.workload.spec,
            "split": job.split,
            "seed": job.seed,
            "epoch": job.epoch,
            "threads": job.threads,
            "options": options,
            "hash": job.hash,
            // The reference's hashes, [id, hash] pairs: an output hashing as the reference's
            // needs no native processing of its own to compare with.
            "expected": job.expected.map(|e| e.iter().collect::<Vec<_>>()),
            "on_error": if job.on_error == OnError::Skip { "skip" } else { "fail" },
            "min_s": job.min_s,
            "max_s": job.max_s,
        });
        match job.input {
            OnlineInput::Raw => {
                value["input"] = "raw".into();
                value["root"] = emulated::seen(self.name, job, &job.source.root)?
                    .display()
                    .to_string()
                    .into();
                value["items"] = job.items.into();
            }
            OnlineInput::Store {
                backend,
                manifest: read,
            } => {
                let manifest = backend
                    .local_path(crate::store::STORE_MANIFEST)
                    .ok_or_else(|| {
                        loader_error("reads stores on this machine only, not in object storage")
                    })?;
                let dir = manifest.parent().expect("a store file has a folder");
                value["input"] = "store".into();
                value["store"] = emulated::seen(self.name, job, dir)?
                    .display()
                    .to_string()
                    .into();
                // The shard files the epoch reads, the store's first ones: all of them, or
                // fewer where the run reads part of a store sized for a faster loader.
                value["shards"] = read.shards.len().into();
                // And of each, its first records only where the part stops within them.
                if let Some(cap) = read.records_per_shard {
                    value["records_per_shard"] = cap.into();
                }
                // The raw items, for --verify's native processing of each sample where prepbench's
                // ops run in the loader's own form.
                value["root"] = emulated::seen(self.name, job, &job.source.root)?
                    .display()
                    .to_string()
                    .into();
                value["items"] = job.items.into();
            }
            // Served by the process that filled the cache (`next_epoch`), with no job of its own.
            OnlineInput::Memory(_) => {
                return Err(loader_error(
                    "has no job for an epoch served from its cache",
                ))
            }
        }
        Ok(value)
    }

    /// What a loader in Python cannot take of a job (yet), before anything starts.
    fn refused(&self, job: &OnlineJob) -> Option<String> {
        let cached = job.fill.is_some() || matches!(job.input, OnlineInput::Memory(_));
        if let (true, Some(why)) = (cached, self.app_cache) {
            return Some(why.into());
        }
        if let Some(why) = job.throttle.and_then(|_| crate::measure::view::refusal()) {
            return Some(why);
        }
        if job.consumer.is_some() {
            return Some(
                "is its own consumer (the training loop iterating it): drop --consumer".into(),
            );
        }
        (self.steps)(job.workload, job.split)
    }
}

impl PythonLoader {
    /// Why the loader cannot run the online steps from `split` of `workload`: a step it has no
    /// form of, or its interpreter lacking what it needs.
    pub(super) fn refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        (self.steps)(workload, split)
            .or_else(|| {
                self.import_refusal(self.imports, self.needs, &self.key_of(workload))
                    .map(|why| format!("the {} loader {why}", self.name))
            })
            .or_else(|| {
                let decodes = workload.steps[split.min(workload.steps.len())..]
                    .iter()
                    .any(|s| s.spec.op == "decode_audio");
                let (imports, needs) = self.audio;
                decodes
                    .then(|| self.import_refusal(imports, needs, &self.key_of(workload)))
                    .flatten()
                    .map(|why| {
                        format!(
                            "the {} loader decodes audio in {needs}: it {why}",
                            self.name
                        )
                    })
            })
    }

    /// Why the interpreter cannot run the loader (its framework or prepbench's package
    /// missing, another version of it); asked once per interpreter and loader.
    pub(super) fn runtime_refusal(&self) -> Option<String> {
        self.import_refusal(self.imports, self.needs, self.name)
    }

    /// Why the interpreter cannot import `imports` (what the loader needs, `needs` as a
    /// refusal names it) with the loader's module and prepbench's package of this version;
    /// asked once per interpreter and imports, of a loader process that is then kept idle for
    /// the first run of `key` ([`PythonLoader::checked`]).
    pub(super) fn import_refusal(&self, imports: &str, needs: &str, key: &str) -> Option<String> {
        type Asked = Vec<(std::path::PathBuf, String, Option<String>)>;
        static ASKED: std::sync::Mutex<Asked> = std::sync::Mutex::new(Vec::new());
        let python = workloads::python::interpreter();
        let asked_key = format!("{} {imports}", self.name);
        let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, why)) = (asked.iter()).find(|(p, k, _)| *p == python && *k == asked_key)
        {
            return why.clone();
        }
        let why = self.checked(imports, key).err().map(|check| match check {
            Check::Unstarted(message) => message,
            Check::Refused(last) => format!(
                "needs {needs} and the prepbench package in {} ({last}): pip install \".[{}]\" \
                 from the prepbench repository into it, or name another interpreter with \
                 --python",
                python.display(),
                self.extra
            ),
        });
        asked.push((python, asked_key, why.clone()));
        why
    }

    /// Asks a loader process whether it imports `imports` and speaks this command line's
    /// protocol and version: the process kept idle for `key`, else a fresh one, which is kept
    /// idle for `key`'s first run once it has. So a command imports the framework once (about
    /// 3 s for TensorFlow, 1.2-2 s for PyTorch on 2 cores), as a training job does, rather than
    /// once to check and again to run.
    fn checked(&self, imports: &str, key: &str) -> Result<(), Check> {
        let mut session = match Session::idle(key) {
            Some(session) => session,
            None => Session::start(self.name, self.module).map_err(|e| match e {
                RunError::Loader { message, .. } => Check::Unstarted(message),
                other => Check::Unstarted(other.to_string()),
            })?,
        };
        let ask = serde_json::json!({
            "check": imports.split(',').map(str::trim).collect::<Vec<_>>(),
            "protocol": self.protocol,
            "version": env!("CARGO_PKG_VERSION"),
        });
        // An interpreter that never answers (a wrapper that never starts Python, an import that
        // blocks) is ended after the limit Python steps' interpreters have, and named.
        let limit = workloads::python::start_timeout();
        let Ok(line) = session.ask_within(&ask.to_string(), limit) else {
            drop(session.end(std::time::Duration::ZERO));
            let python = workloads::python::interpreter();
            return Err(Check::Refused(workloads::python::no_answer(&python, limit)));
        };
        // `{"checked": null}`; a refusal names what stopped it, as does the error of a package
        // that does not know the check (another version's: its protocol is another).
        let said = line.as_deref().map(|line| {
            let answer: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            match (answer.get("checked"), answer.get("error")) {
                (Some(serde_json::Value::Null), _) => Ok(()),
                (Some(why), _) | (None, Some(why)) => {
                    Err(why.as_str().unwrap_or("its check failed").to_string())
                }
                (None, None) => {
                    let line: String = line.trim().chars().take(200).collect();
                    Err(format!("it answered {line:?}, not a check's answer"))
                }
            }
        });
        match said {
            Some(Ok(())) => {
                session.keep_idle(key.to_string());
                Ok(())
            }
            Some(Err(why)) => {
                drop(session.end(std::time::Duration::ZERO));
                Err(Check::Refused(why))
            }
            // Its last line of errors (a traceback's), or how it ended when it said nothing.
            None => {
                let tail = session.end(std::time::Duration::from_secs(5));
                let last = (tail.lines())
                    .rfind(|l| !l.trim().is_empty())
                    .map_or("it ended without answering and said nothing", str::trim);
                Err(Check::Refused(last.to_string()))
            }
        }
    }

    /// Runs one epoch of `job` in the loader's process, its `options` in the job: the process
    /// the run kept from its last epoch (`OnlineJob::kept`), asked for this one, else a fresh
    /// one; kept for the run's next epoch where the run keeps one, else ended. An epoch served
    /// from the application cache is the filling process's.
    pub(super) fn run(
        &self,
        job: &OnlineJob,
        options: serde_json::Value,
        progress: &ProgressBar,
    ) -> Result<OnlineResult, RunError> {
        let name = self.name;
        let loader_error = |m: String| loader_error(name, m);
        if let Some(why) = self.refused(job) {
            return Err(loader_error(why));
        }
        // Under emulated storage the loader reads views of its folders whose reads wait for
        // the epoch's throttle, from its start (which may read a store's manifest) to its end.
        let _throttling = match job.throttle {
            Some(throttle) => Some(emulated::throttling(self.name, job, throttle)?),
            None => None,
        };
        let resumed = job
            .kept
            .and_then(|k| k.take())
            .and_then(|process| process.downcast::<Kept>().ok())
            .and_then(|mut kept| kept.session.take());
        let (mut session, before) = match (resumed, &job.input) {
            (Some(session), _) => self.next_epoch(job, session)?,
            (None, OnlineInput::Memory(_)) => {
                return Err(loader_error(
                    "the process that filled the application cache is gone".into(),
                ))
            }
            (None, _) => self.start(job, options)?,
        };
        if let Some(timed) = job.timed_start {
            timed();
        }
        let start = Snapshot::now();
        session
            .send("go")
            .map_err(|e| loader_error(format!("starting the epoch: {e}")))?;
        let line = session.answer_line()?;
        let end = Snapshot::now();
        let answer: Answer = serde_json::from_str(&line).map_err(|e| {
            let error: Option<Ready> = serde_json::from_str(&line).ok();
            match error.and_then(|r| r.error.map(|m| (m, r.detail))) {
                Some((message, detail)) => {
                    loader_error(format!("{message}\n{}", detail.unwrap_or_default()))
                }
                None => loader_error(format!("its answer {line:?}: {e}")),
            }
        })?;
        if let Some(fill) = job.fill {
            // The records are in the process's memory, or were not kept (past the limit).
            match answer.cache.as_ref().filter(|c| c.kept) {
                Some(cache) => fill.kept_elsewhere(cache.bytes),
                None => fill.overflowed(),
            }
        }
        let key = self.key(job);
        match job.kept {
            Some(kept) => kept.keep(Box::new(Kept {
                session: Some(session),
                key,
            })),
            None => session.park(key),
        }
        self.result(job, start, end, before, answer, progress)
    }

    /// What a process kept idle between runs must have been started for: this loader, and
    /// the job's workload where it has Python steps (their modules are imported once per
    /// process). The workloads of prepbench's own steps share one process: a reproduction
    /// imported TensorFlow for each workload's sweep (3.1-4.6 s each here, the package with
    /// it), where a training job imports it once.
    fn key(&self, job: &OnlineJob) -> String {
        self.key_of(job.workload)
    }

    fn key_of(&self, workload: &Workload) -> String {
        session::process_key(self.name, workload)
    }

    /// A process given `job` (the one the last run under this loader left idle, where its key
    /// is the job's, else a fresh one), once it said `ready`: the session and its CPU and I/O so far.
    fn start(
        &self,
        job: &OnlineJob,
        options: serde_json::Value,
    ) -> Result<(Session, Usage), RunError> {
        let mut request = self.job_json(job, options)?;
        if let Some(fill) = job.fill {
            request["cache"] = serde_json::json!({ "limit_bytes": fill.limit_bytes });
        }
        // The process the last run under this loader left idle (of this workload, where it has
        // Python steps), where it takes the job; else a fresh one.
        if let Some(mut session) = Session::idle(&self.key(job)) {
            if session.send(&request.to_string()).is_ok() {
                if let Ok(line) = session.answer_line() {
                    return self.greeting(session, &line);
                }
            }
        }
        let mut session = Session::start(self.name, self.module)?;
        if session.send(&request.to_string()).is_err() {
            let tail = session.end(std::time::Duration::ZERO);
            return Err(loader_error(
                self.name,
                format!("its process ended before reading the job:\n{tail}"),
            ));
        }
        match session.answer_line() {
            Ok(line) => self.greeting(session, &line),
            Err(e) => {
                let tail = session.end(std::time::Duration::ZERO);
                // What it said, without the loader's name the error below starts with.
                let said = match e {
                    RunError::Loader { message, .. } => message,
                    other => other.to_string(),
                };
                Err(loader_error(
                    self.name,
                    format!(
                        "{said}; is the prepbench package (with {}) installed in {}? (pip \
                         install \".[{}]\" from the prepbench repository)\n{tail}",
                        self.needs,
                        workloads::python::interpreter().display(),
                        self.extra,
                    ),
                ))
            }
        }
    }

    /// The process kept from the run's last epoch, asked for `job`'s epoch (its epoch, seed,
    /// `min_s`, `max_s` and `hash`: the rest is the run's), once it said `ready`.
    fn next_epoch(
        &self,
        job: &OnlineJob,
        mut session: Session,
    ) -> Result<(Session, Usage), RunError> {
        let next = serde_json::json!({
            "epoch": job.epoch,
            "seed": job.seed,
            "min_s": job.min_s,
            "max_s": job.max_s,
            "hash": job.hash,
        });
        if let Err(e) = session.send(&next.to_string()) {
            let tail = session.end(std::time::Duration::ZERO);
            return Err(loader_error(
                self.name,
                format!("asking for epoch {}: {e}\n{tail}", job.epoch),
            ));
        }
        let line = session.answer_line()?;
        self.greeting(session, &line)
    }

    /// The session and its CPU and I/O so far, from its greeting `line`, or the error it
    /// reported.
    fn greeting(&self, session: Session, line: &str) -> Result<(Session, Usage), RunError> {
        let ready: Ready = serde_json::from_str(line)
            .map_err(|e| loader_error(self.name, format!("its greeting {line:?}: {e}")))?;
        match ready.ready {
            Some(before) => {
                note_stack(self.name, &ready.versions);
                // Its framework loaded, its workers not yet started.
                crate::measure::code_cache::loader_started();
                Ok((session, before))
            }
            None => {
                let _ = session.end(std::time::Duration::from_secs(5));
                Err(loader_error(
                    self.name,
                    format!(
                        "{}\n{}",
                        ready.error.unwrap_or_default(),
                        ready.detail.unwrap_or_default()
                    ),
                ))
            }
        }
    }
}

/// Why a loader process did not pass its check: it could not be started, or what stopped it.
enum Check {
    Unstarted(String),
    Refused(String),
}

/// A loader process kept between a run's epochs (`OnlineJob::kept`); when the run lets it go,
/// it is kept idle for the workload's next run under the loader (`Session::park`).
struct Kept {
    session: Option<Session>,
    key: String,
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            session.park(std::mem::take(&mut self.key));
        }
    }
}

impl PythonLoader {
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
        if let Some(failed) = answer.failed_read {
            return Err(failed.error());
        }
        let mut delta = end.since(&start);
        let user = (answer.usage.user_s - before.user_s).max(0.0);
        let sys = (answer.usage.sys_s - before.sys_s).max(0.0);
        delta.cpu_user_s += user;
        delta.cpu_sys_s += sys;
        delta.read_bytes += answer.usage.read_bytes.saturating_sub(before.read_bytes);
        if job.throttle.is_some() {
            // Under a view, this process's reads are the view's of the bytes the loader reads
            // through it: the loader's count stands for both (the device's, `read_bytes`, is
            // this process's alone, since reads of a FUSE file reach no block device).
            delta.read_chars = 0;
        }
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
            .chain(answer.unread.into_iter().flat_map(answer::Unread::skipped))
            .collect();
        progress.inc(answer.samples);
        Ok(result)
    }
}
