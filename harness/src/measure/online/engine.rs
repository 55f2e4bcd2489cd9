//! The online engines' contract: what the online phase of one epoch is given ([`OnlineJob`]),
//! what it gives back ([`OnlineResult`]), and the [`Engine`] trait that runs one. Given: the
//! input (raw files, a store's shards, or the application cache), the online steps, threads,
//! seed and epoch, the cache to fill, emulated storage, the consumer, what to do with bad
//! samples; back come the samples' count, bytes and arrivals, where the time went as far as the
//! engine knows it, the samples skipped, and the CPU and I/O of the processes it used.

use std::sync::Arc;

use datasets::Source;
use indicatif::ProgressBar;
use workloads::{ConsumerSpec, OnError, Sample, Workload};

use crate::measure::app_cache::AppCache;
use crate::measure::consumer::ConsumerMetrics;
use crate::measure::emulate::Throttle;
use crate::measure::errors::RunError;
use crate::measure::metrics::{steady_rate, Delta};
use crate::results::Skipped;
use crate::store::{StoreBackend, StoreManifest};

/// Where the online phase reads from.
#[derive(Clone, Copy)]
pub enum OnlineInput<'a> {
    /// The raw dataset files (split 0).
    Raw,
    /// A materialized store, here or in object storage.
    Store {
        backend: &'a dyn StoreBackend,
        manifest: &'a StoreManifest,
    },
    /// The samples an earlier epoch kept in the application cache.
    Memory(&'a AppCache),
}

#[derive(Clone, Copy)]
pub struct OnlineJob<'a> {
    /// The engine that runs it ([`crate::measure::online::ENGINES`]).
    pub engine: &'static dyn Engine,
    pub workload: &'a Workload,
    pub split: usize,
    pub source: &'a Source,
    /// Source items a raw epoch reads, cycling over the source beyond its length (the
    /// fully-online reference of a store larger than its source); `source.len()` otherwise.
    pub items: usize,
    pub input: OnlineInput<'a>,
    pub threads: usize,
    pub seed: u64,
    pub epoch: u64,
    /// Hash every output sample (for verification; off for timed runs).
    pub hash: bool,
    /// The fully-online reference's hashes by sample id, where `hash` is for `--verify`: an
    /// engine whose forms of the steps may differ from native processing within bounds (a
    /// loader in Python) compares an output with native processing only where its own hash
    /// is not the reference's.
    pub expected: Option<&'a std::collections::HashMap<u64, u64>>,
    /// Keep every deserialized sample in this application cache (the filling epoch).
    pub fill: Option<&'a AppCache>,
    /// Emulated storage every read goes through (raw files and shards); `None`: the local disk.
    pub throttle: Option<&'a Arc<Throttle>>,
    /// A simulated training step consuming the samples in batches; `None`: the consumer only
    /// touches each sample.
    pub consumer: Option<ConsumerSpec>,
    /// Whether a sample that cannot be read or processed stops the run or is skipped.
    pub on_error: OnError,
    /// The engine's options, as [`Engine::options`] spelled them out.
    pub loader_options: &'a str,
    /// An epoch served from a cache (the page cache warm, or the application cache) reads its
    /// input again, every worker its whole part, until it has lasted this long: a cached epoch
    /// lasts the floor without a store sized for the cache's speed. `None`: one pass (cold
    /// epochs, whose second pass would not be cold).
    pub min_s: Option<f64>,
    /// The epoch stops taking samples once it has lasted this long, its input read in part
    /// (a loader's probe, `sweep/parts.rs`: its rate over the span of the part it sizes, not
    /// the whole of a store sized for a faster engine); `None`: all of its input.
    pub max_s: Option<f64>,
    /// Called as the timed epoch begins, where an engine first starts a process and builds its
    /// pipeline (a loader in Python): the system sampler starts its intervals there, so that
    /// an epoch's CPU share and device rate are not diluted by the interpreter's start.
    pub timed_start: Option<&'a (dyn Fn() + Sync)>,
    /// Where an engine that runs in a process of its own keeps it for the run's next epoch (a
    /// loader in Python: one interpreter per run, as a training job has, and tf.data's
    /// application cache in it); `None`: a fresh process, ended after the epoch.
    pub kept: Option<&'a KeptProcess>,
}

/// A run's loader process, kept between its epochs; opaque here. It ends when taken and
/// dropped ([`KeptProcess::end`]), or with the run.
#[derive(Default)]
pub struct KeptProcess(std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>);

impl KeptProcess {
    /// Keeps `process` for the next epoch.
    pub fn keep(&self, process: Box<dyn std::any::Any + Send>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(process);
    }

    /// The kept process, taken for an epoch.
    pub fn take(&self) -> Option<Box<dyn std::any::Any + Send>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Ends the kept process, if any (before a run leaves its memory limit).
    pub fn end(&self) {
        drop(self.take());
    }
}

#[derive(Debug)]
pub struct OnlineResult {
    pub samples: u64,
    /// Bytes of the samples the consumer received.
    pub output_bytes: u64,
    pub delta: Delta,
    /// (sample id, content hash), when asked for.
    pub hashes: Vec<(u64, u64)>,
    /// Where the workers' and the consumer's time went.
    pub stages: StageTimes,
    /// The simulated training's measurements, with a consumer.
    pub consumer: Option<ConsumerMetrics>,
    /// The first sample the consumer received, kept with a consumer (the null-I/O control
    /// serves copies of it).
    pub template: Option<Sample>,
    /// When each sample reached the consumer, in seconds from the epoch's start, in order.
    pub arrivals_s: Vec<f64>,
    /// Samples left out under `on_error: skip`.
    pub skipped: Vec<Skipped>,
    /// Passes over the input (`OnlineJob::min_s`); `samples` counts every pass.
    pub passes: u64,
}

impl OnlineResult {
    /// An epoch's result before its first sample.
    pub fn empty(steps: usize) -> OnlineResult {
        OnlineResult {
            samples: 0,
            output_bytes: 0,
            delta: Delta::default(),
            hashes: Vec::new(),
            stages: StageTimes::new(steps),
            consumer: None,
            template: None,
            arrivals_s: Vec::new(),
            skipped: Vec::new(),
            passes: 1,
        }
    }

    /// Seconds from the epoch's start to its first sample: thread start, shard opens, first
    /// reads, the first sample's steps.
    pub fn first_sample_s(&self) -> Option<f64> {
        self.arrivals_s.first().copied()
    }

    /// Samples per second between the 10th and the 90th percentile of arrivals: the rate once
    /// started and before the workers' tails; `None` under 20 samples.
    pub fn steady_sps(&self) -> Option<f64> {
        steady_rate(&self.arrivals_s)
    }
}

/// Seconds spent per stage of the online phase, summed over the workers (so up to threads x
/// wall time), plus the consumer's wait.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// In the shard files' `read` calls (storage, or the page cache when warm).
    pub read: f64,
    /// Decompressing and unframing records (CRC checks), beyond `read`.
    pub decompress: f64,
    /// Decoding record payloads into samples.
    pub deserialize: f64,
    /// Each workload step by index (only the online ones are non-zero).
    pub steps: Vec<f64>,
    /// Of `steps`, a Python step's time outside its callable: moving samples to and from its
    /// worker process.
    pub transfer: Vec<f64>,
    /// Workers blocked handing a sample to the consumer (a full queue: the consumer is slower).
    pub send_wait: f64,
    /// The consumer blocked waiting for a sample (the workers are slower).
    pub recv_wait: f64,
}

impl StageTimes {
    pub fn new(steps: usize) -> StageTimes {
        StageTimes {
            steps: vec![0.0; steps],
            transfer: vec![0.0; steps],
            ..Default::default()
        }
    }

    pub fn add(&mut self, other: &StageTimes) {
        self.read += other.read;
        self.decompress += other.decompress;
        self.deserialize += other.deserialize;
        self.send_wait += other.send_wait;
        for (a, b) in self.steps.iter_mut().zip(&other.steps) {
            *a += b;
        }
        for (a, b) in self.transfer.iter_mut().zip(&other.transfer) {
            *a += b;
        }
    }
}

/// Runs the online phase of one epoch. An engine reads the job's input, runs the online steps
/// `[split, n)` on `threads` workers of its own kind (threads, processes), hands every sample
/// to the job's consumer, and fills as much of the [`OnlineResult`] as it can observe: every
/// engine reports samples, bytes, arrivals, skipped samples and the CPU and I/O of every
/// process it used; stage times where it can see them (zeros elsewhere). It advances
/// `progress` by one per sample. It is stateless: whatever it starts (workers, processes) it
/// ends before returning, except the Python workers the workload keeps for its next epoch.
pub trait Engine: Sync {
    /// The name runs record and `--loader` takes.
    fn name(&self) -> &'static str;

    fn run(&self, job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError>;

    /// Why this engine cannot run the online steps from `split` of `workload`: a step it has
    /// no implementation of; `None` when it has one of each.
    fn step_refusal(&self, _workload: &Workload, _split: usize) -> Option<String> {
        None
    }

    /// Why this engine cannot skip bad samples (`--on-error skip`); `None` when it can.
    fn skip_refusal(&self) -> Option<String> {
        None
    }

    /// Why this engine has no application cache (`--cache app`); `None` when it has one.
    fn app_cache_refusal(&self) -> Option<String> {
        None
    }

    /// Why this engine cannot read a store of `codec`; `None` when it can.
    fn codec_refusal(&self, _codec: workloads::Codec) -> Option<String> {
        None
    }

    /// MB of memory its own processes hold besides the page cache at `threads` threads (its
    /// framework, once imported, and its workers): what a memory-limited run
    /// (`--memory-limit-mb`) must add to leave it the page cache prepbench's own engine has
    /// under the same limit.
    fn own_memory_mb(&self, _threads: usize) -> u64 {
        0
    }

    /// Why this engine cannot read through emulated storage (`--storage`) here; `None` when
    /// it can.
    fn storage_refusal(&self) -> Option<String> {
        None
    }

    /// Why this machine cannot run this engine at all (its interpreter lacks the framework);
    /// `None` when it can.
    fn runtime_refusal(&self) -> Option<String> {
        None
    }

    /// Why this engine cannot run the online steps from `split` of `workload` (a step it has
    /// no implementation of, its runtime missing), asked before anything runs; `None` when
    /// it can.
    fn refusal(&self, workload: &Workload, split: usize) -> Option<String> {
        self.step_refusal(workload, split)
    }

    /// Its options as runs record them, every one spelled out, from those asked for
    /// (`--loader-options`, `None`: its defaults); empty when it has none. An error says
    /// which option is wrong and what it takes.
    fn options(&self, asked: Option<&str>) -> Result<String, String> {
        match asked {
            None => Ok(String::new()),
            Some(_) => Err(format!("the {} loader takes no options", self.name())),
        }
    }
}
