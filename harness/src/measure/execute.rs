//! The online phase: N worker threads, each owning a disjoint set of shards (or raw files for
//! `unprocessed`), read, decompress, decode and apply steps `[split, n)`, handing samples to a
//! consumer over a bounded queue; the consumer touches every page of every sample.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use datasets::Source;
use indicatif::ProgressBar;
use workloads::{encoding, Field, OnError, ReadFiles, Sample, StepContext, Workload};

pub use crate::measure::app_cache::AppCache;
use crate::measure::consumer::{ConsumerMetrics, Trainer};
use crate::measure::emulate::Throttle;
use crate::measure::metrics::{steady_rate, Delta, Snapshot};
use crate::measure::passes::Passes;
use crate::measure::pipeline::{apply_steps, panic_message, spawn_worker, RunError};
use crate::results::Skipped;
use crate::store::{ShardInfo, ShardReader, StoreBackend, StoreManifest};
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
    fn new(steps: usize) -> StageTimes {
        StageTimes {
            steps: vec![0.0; steps],
            transfer: vec![0.0; steps],
            ..Default::default()
        }
    }

    fn add(&mut self, other: &StageTimes) {
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

type Message = Result<(Sample, u64), RunError>;

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

/// Hands a sample to the consumer; only time blocked on a full queue counts as waiting (a send
/// that succeeds at once costs nothing here, whatever the scheduler does around it).
fn send(job: &OnlineJob, tx: &mpsc::SyncSender<Message>, sample: Sample, wait: &mut f64) -> bool {
    let hash = if job.hash { sample.content_hash() } else { 0 };
    match tx.try_send(Ok((sample, hash))) {
        Ok(()) => true,
        Err(mpsc::TrySendError::Disconnected(_)) => false,
        Err(mpsc::TrySendError::Full(message)) => {
            let start = std::time::Instant::now();
            let sent = tx.send(message).is_ok();
            *wait += start.elapsed().as_secs_f64();
            sent
        }
    }
}

/// Runs the online steps `[split, n)` on one sample, timing each into `times.steps`, and hands
/// every output to the consumer; `Ok(false)` when the consumer is gone.
fn online_steps(
    job: &OnlineJob,
    sample: Sample,
    tx: &mpsc::SyncSender<Message>,
    times: &mut StageTimes,
) -> Result<bool, RunError> {
    let StageTimes {
        steps,
        transfer,
        send_wait,
        ..
    } = times;
    apply_steps(
        job.workload,
        job.split..job.workload.steps.len(),
        sample,
        job.source,
        StepContext {
            seed: job.seed,
            epoch: job.epoch,
            step_index: 0,
            // Raw files are read through the emulated storage when there is one, else from
            // where the dataset is (local disk or object storage).
            files: Some(
                job.throttle
                    .map_or(job.source.files.as_read(), |t| &**t as &dyn ReadFiles),
            ),
        },
        crate::measure::pipeline::StepSeconds {
            wall: steps,
            transfer: Some(transfer),
        },
        &mut |sample| Ok(send(job, tx, sample, send_wait)),
    )
}

/// Under `on_error: skip`, records an error about one sample and lets the worker go on;
/// otherwise, or for an error of the machine rather than the input, returns it.
fn skip_or_fail(job: &OnlineJob, error: RunError, times: &mut StageTimes) -> Result<(), RunError> {
    if job.on_error == OnError::Skip {
        if let Some(skipped) = error.skipped() {
            times.skipped.push(skipped);
            return Ok(());
        }
    }
    Err(error)
}

/// Runs the online steps on one sample; `Ok(false)` when the consumer is gone. A skipped
/// sample counts as handled.
fn process(
    job: &OnlineJob,
    sample: Sample,
    tx: &mpsc::SyncSender<Message>,
    times: &mut StageTimes,
) -> Result<bool, RunError> {
    match online_steps(job, sample, tx, times) {
        Err(e) => skip_or_fail(job, e, times).map(|()| true),
        other => other,
    }
}

fn raw_worker(
    job: &OnlineJob,
    worker: usize,
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<Message>,
    times: &mut StageTimes,
) -> Result<(), RunError> {
    for id in (worker..job.items).step_by(job.threads) {
        if stop.load(Ordering::Relaxed) || !process(job, job.source.cycled_sample(id), tx, times)? {
            break;
        }
    }
    Ok(())
}

/// Online worker `w` of `threads`: reads its part of the input, pass after pass while the
/// epoch wants more, and sends each processed sample (or its first error) to the consumer.
fn online_worker(
    job: &OnlineJob,
    (w, threads): (usize, usize),
    stop: &AtomicBool,
    passes: &Passes,
    tx: mpsc::SyncSender<Message>,
) -> StageTimes {
    let mut times = StageTimes::new(job.workload.steps.len());
    let mine: Vec<&ShardInfo> = match job.input {
        OnlineInput::Store { manifest, .. } => {
            manifest.shards.iter().skip(w).step_by(threads).collect()
        }
        _ => Vec::new(),
    };
    // A worker with nothing to read makes no passes (and so decides none).
    let idle = match job.input {
        OnlineInput::Raw => w >= job.items,
        OnlineInput::Memory(cache) => cache.part_count() <= w,
        OnlineInput::Store { .. } => mine.is_empty(),
    };
    let mut done = 0;
    let outcome = loop {
        let pass = match job.input {
            OnlineInput::Raw => raw_worker(job, w, stop, &tx, &mut times),
            OnlineInput::Memory(cache) => memory_worker(job, cache, w, stop, &tx, &mut times),
            OnlineInput::Store { .. } => store_worker(job, &mine, stop, &tx, &mut times),
        };
        done += 1;
        if pass.is_err() || idle || !passes.another(done, stop) {
            break pass;
        }
    };
    if let Err(e) = outcome {
        stop.store(true, Ordering::Relaxed);
        let _ = tx.send(Err(e));
    }
    times
}

fn store_worker(
    job: &OnlineJob,
    shards: &[&ShardInfo],
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<Message>,
    times: &mut StageTimes,
) -> Result<(), RunError> {
    let OnlineInput::Store { backend, manifest } = job.input else {
        unreachable!("store_worker reads stores only");
    };
    let mut payload = Vec::new();
    let mut outcome = Ok(());
    let mut kept = Vec::new();
    for shard in shards {
        // Reads of a local store through emulated storage count as read time.
        let (label, file) = match (job.throttle, backend.local_path(&shard.file)) {
            (Some(t), Some(path)) => {
                let file = t.open(&path).map_err(crate::store::io_error(&path))?;
                (path, Box::new(file) as Box<dyn std::io::Read + Send>)
            }
            _ => backend.open(&shard.file, shard.bytes)?,
        };
        let mut reader = ShardReader::from_read(&label, manifest.codec, file)?.expecting(shard);
        let result = read_shard(
            job,
            &mut reader,
            shard.records,
            stop,
            tx,
            &mut payload,
            times,
            &mut kept,
        );
        times.read += reader.read_seconds();
        times.decompress += reader.unframe_seconds();
        match result {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    if let Some(cache) = job.fill {
        cache.store_part(kept);
    }
    outcome
}

/// Serves the application cache's parts `worker`, `worker + threads`, ... through the online
/// steps; each sample is cloned out of the cache (timed as `deserialize`), as the steps consume
/// their input.
fn memory_worker(
    job: &OnlineJob,
    cache: &AppCache,
    worker: usize,
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<Message>,
    times: &mut StageTimes,
) -> Result<(), RunError> {
    // Take this worker's parts and let go of the lock: workers serve in parallel.
    let mine: Vec<std::sync::Arc<Vec<Sample>>> = cache
        .parts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .skip(worker)
        .step_by(job.threads)
        .cloned()
        .collect();
    for sample in mine.iter().flat_map(|part| part.iter()) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let start = std::time::Instant::now();
        let sample = sample.clone();
        times.deserialize += start.elapsed().as_secs_f64();
        if !process(job, sample, tx, times)? {
            break;
        }
    }
    Ok(())
}

/// Reads one shard of `records` records through the online steps; `Ok(false)` when the run
/// should stop. Under `on_error: skip` a bad record is stepped over, and a shard whose framing
/// breaks is left, its remaining records counted as skipped.
#[allow(clippy::too_many_arguments)]
fn read_shard(
    job: &OnlineJob,
    reader: &mut ShardReader,
    records: u64,
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<Message>,
    payload: &mut Vec<u8>,
    times: &mut StageTimes,
    kept: &mut Vec<Sample>,
) -> Result<bool, RunError> {
    // A store may hold more items than the source (it cycles over it): ids run up to its own
    // item count. Known once per shard, not per record.
    let items = match job.input {
        OnlineInput::Store { manifest, .. } => (manifest.samples as usize).max(job.source.len()),
        _ => job.source.len(),
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let record = reader.record_index();
        match reader.next_into(payload) {
            Ok(true) => {}
            Ok(false) => return Ok(true),
            Err(e) => {
                skip_or_fail(job, e.into(), times)?;
                if reader.can_continue() {
                    continue;
                }
                let rest = records.saturating_sub(record + 1);
                if rest > 0 {
                    times.skipped.push(Skipped {
                        sample: format!("records {} to {}", record + 1, records - 1),
                        file: reader.path().display().to_string(),
                        stage: crate::results::StageName::Read,
                        count: rest,
                        message: format!("unreadable after the error at record {record}"),
                        detail: String::new(),
                    });
                }
                return Ok(true);
            }
        }
        let shard = || reader.path().display().to_string();
        let start = std::time::Instant::now();
        let decoded = encoding::decode(payload).map_err(|source| RunError::Decode {
            shard: shard(),
            record,
            source,
        });
        times.deserialize += start.elapsed().as_secs_f64();
        let sample = match decoded {
            Ok(sample) => sample,
            Err(e) => {
                skip_or_fail(job, e, times)?;
                continue;
            }
        };
        if job.workload.item_of(sample.id, job.split) as usize >= items {
            skip_or_fail(
                job,
                RunError::UnknownSample {
                    shard: shard(),
                    record,
                    id: sample.id,
                    samples: items,
                },
                times,
            )?;
            continue;
        }
        if let Some(cache) = job.fill {
            cache.keep(&sample, kept);
        }
        if !process(job, sample, tx, times)? {
            return Ok(false);
        }
    }
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
