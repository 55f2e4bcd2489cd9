//! The online phase: N worker threads, each owning a disjoint set of shards (or raw files for
//! `unprocessed`), read, decompress, decode and apply steps `[split, n)`, handing samples to a
//! consumer over a bounded queue; the consumer touches every page of every sample.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use datasets::Source;
use indicatif::ProgressBar;
use workloads::{Field, OnError, Sample, Workload};

pub use crate::measure::app_cache::AppCache;
use crate::measure::consumer::{ConsumerMetrics, Trainer};
use crate::measure::emulate::Throttle;
use crate::measure::metrics::{steady_rate, Delta, Snapshot};
use crate::measure::passes::Passes;
use crate::measure::pipeline::{panic_message, spawn_worker, RunError};
use crate::measure::workers::online_worker;
use crate::results::Skipped;
use crate::store::{StoreBackend, StoreManifest};
use workloads::ConsumerSpec;

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

pub struct OnlineJob<'a> {
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
    /// Keep every deserialized sample in this application cache (the filling epoch).
    pub fill: Option<&'a AppCache>,
    /// Emulated storage every read goes through (raw files and shards); `None`: the local disk.
    pub throttle: Option<&'a Arc<Throttle>>,
    /// A simulated training step consuming the samples in batches; `None`: the consumer only
    /// touches each sample.
    pub consumer: Option<ConsumerSpec>,
    /// Whether a sample that cannot be read or processed stops the run or is skipped.
    pub on_error: OnError,
    /// An epoch served from a cache (the page cache warm, or the application cache) reads its
    /// input again, every worker its whole part, until it has lasted this long: a cached epoch
    /// lasts the floor without a store sized for the cache's speed. `None`: one pass (cold
    /// epochs, whose second pass would not be cold).
    pub min_s: Option<f64>,
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
    /// Seconds from the epoch's start to its first sample: thread start, shard opens, first
    /// reads, the first sample's steps.
    pub first_sample_s: Option<f64>,
    /// Samples per second between the 10th and the 90th percentile of arrivals: the rate once
    /// started and before the workers' tails; `None` under 20 samples.
    pub steady_sps: Option<f64>,
    /// Passes over the input (`OnlineJob::min_s`); `samples` counts every pass.
    pub passes: u64,
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
    /// Samples left out under `on_error: skip`.
    pub skipped: Vec<Skipped>,
}

impl StageTimes {
    pub(crate) fn new(steps: usize) -> StageTimes {
        StageTimes {
            steps: vec![0.0; steps],
            transfer: vec![0.0; steps],
            ..Default::default()
        }
    }

    pub(crate) fn add(&mut self, other: &StageTimes) {
        self.read += other.read;
        self.decompress += other.decompress;
        self.deserialize += other.deserialize;
        self.send_wait += other.send_wait;
        self.skipped.extend(other.skipped.iter().cloned());
        for (a, b) in self.steps.iter_mut().zip(&other.steps) {
            *a += b;
        }
        for (a, b) in self.transfer.iter_mut().zip(&other.transfer) {
            *a += b;
        }
    }
}

/// Queue slots per worker between the workers and the consumer.
const QUEUE_PER_WORKER: usize = 4;
const PAGE: usize = 4096;

pub(crate) type Message = Result<(Sample, u64), RunError>;

/// Reads one byte per page of every field, as a training step would touch its input.
fn touch(sample: &Sample) -> u64 {
    sample.fields().iter().fold(0u64, |acc, (_, field)| {
        let bytes: &[u8] = match field {
            Field::Tensor(t) => t.data().as_bytes(),
            Field::Bytes(b) => b,
            Field::Text(s) => s.as_bytes(),
        };
        bytes
            .iter()
            .step_by(PAGE)
            .fold(acc, |a, &b| a.wrapping_add(b as u64))
    })
}

/// Runs one epoch of the online phase and measures it.
pub fn run_online(job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
    let threads = job.threads.max(1);
    let stop = AtomicBool::new(false);
    let capacity = job
        .consumer
        .map_or(threads * QUEUE_PER_WORKER, |c| c.queue_capacity());
    let (tx, rx) = mpsc::sync_channel::<Message>(capacity);
    crate::measure::pipeline::start_workers(
        job.workload,
        job.split..job.workload.steps.len(),
        threads,
    )?;
    let start = Snapshot::now();
    let mut trainer = job
        .consumer
        .map(|spec| Trainer::new(spec, job.seed, job.epoch, std::time::Instant::now()));
    let mut result = OnlineResult {
        samples: 0,
        output_bytes: 0,
        delta: Delta::default(),
        hashes: Vec::new(),
        stages: StageTimes::new(job.workload.steps.len()),
        consumer: None,
        template: None,
        first_sample_s: None,
        steady_sps: None,
        passes: 1,
    };
    let passes = Passes::new(job.min_s);
    let mut arrivals: Vec<f64> = Vec::new();
    let mut first_error: Option<RunError> = None;
    let mut checksum = 0u64;
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for w in 0..threads {
            let tx = tx.clone();
            let stop = &stop;
            let passes = &passes;
            let started = spawn_worker(
                scope,
                std::thread::Builder::new(),
                ("online worker", w, threads),
                move || online_worker(job, (w, threads), stop, passes, tx),
            );
            match started {
                Ok(worker) => workers.push(worker),
                Err(e) => {
                    // The shards of the workers not started would go unread: stop them all.
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                    break;
                }
            }
        }
        drop(tx);
        loop {
            // Only time blocked on an empty queue counts as the consumer waiting.
            let message = match rx.try_recv() {
                Ok(m) => m,
                Err(mpsc::TryRecvError::Disconnected) => break,
                Err(mpsc::TryRecvError::Empty) => {
                    let start = std::time::Instant::now();
                    let Ok(m) = rx.recv() else {
                        break;
                    };
                    result.stages.recv_wait += start.elapsed().as_secs_f64();
                    m
                }
            };
            match message {
                Ok((sample, hash)) => {
                    arrivals.push(start.at.elapsed().as_secs_f64());
                    checksum = checksum.wrapping_add(touch(&sample));
                    result.samples += 1;
                    result.output_bytes += sample.size_bytes() as u64;
                    if job.hash {
                        result.hashes.push((sample.id, hash));
                    }
                    progress.inc(1);
                    if let Some(trainer) = trainer.as_mut() {
                        if result.template.is_none() {
                            result.template = Some(sample);
                        }
                        trainer.take();
                    }
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
            }
        }
        for w in workers {
            match w.join() {
                Ok(times) => result.stages.add(&times),
                Err(payload) => {
                    first_error.get_or_insert(panic_message(payload));
                }
            }
        }
    });
    std::hint::black_box(checksum);
    result.consumer = trainer.map(Trainer::finish);
    result.delta = Snapshot::now().since(&start);
    result.first_sample_s = arrivals.first().copied();
    result.steady_sps = steady_rate(&arrivals);
    result.passes = passes.made();
    match first_error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}
