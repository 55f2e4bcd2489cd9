//! The online phase: N worker threads, each owning a disjoint set of shards (or raw files for
//! `unprocessed`), read, decompress, decode and apply steps `[split, n)`, handing samples to a
//! consumer over a bounded queue; the consumer touches every page of every sample.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use datasets::Source;
use indicatif::ProgressBar;
use workloads::{encoding, Field, Sample, Workload};

use crate::metrics::{Delta, Snapshot};
use crate::pipeline::{apply_steps, panic_message, RunError};
use crate::store::{ShardReader, StoreManifest};

/// Where the online phase reads from.
#[derive(Clone, Copy)]
pub enum OnlineInput<'a> {
    /// The raw dataset files (split 0).
    Raw,
    /// A materialized store.
    Store {
        dir: &'a Path,
        manifest: &'a StoreManifest,
    },
}

pub struct OnlineJob<'a> {
    pub workload: &'a Workload,
    pub split: usize,
    pub source: &'a Source,
    pub input: OnlineInput<'a>,
    pub threads: usize,
    pub seed: u64,
    pub epoch: u64,
    /// Hash every output sample (for verification; off for timed runs).
    pub hash: bool,
}

#[derive(Debug)]
pub struct OnlineResult {
    pub samples: u64,
    /// Bytes of the samples the consumer received.
    pub output_bytes: u64,
    pub delta: Delta,
    /// (sample id, content hash), when asked for.
    pub hashes: Vec<(u64, u64)>,
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

fn send(job: &OnlineJob, tx: &mpsc::SyncSender<Message>, sample: Sample) -> bool {
    let hash = if job.hash { sample.content_hash() } else { 0 };
    tx.send(Ok((sample, hash))).is_ok()
}

fn raw_worker(
    job: &OnlineJob,
    worker: usize,
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<Message>,
) -> Result<(), RunError> {
    let n = job.workload.steps.len();
    for id in (worker..job.source.len()).step_by(job.threads) {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let more = apply_steps(
            job.workload,
            0..n,
            job.source.sample(id),
            job.source,
            job.seed,
            job.epoch,
            &mut |sample| Ok(send(job, tx, sample)),
        )?;
        if !more {
            return Ok(());
        }
    }
    Ok(())
}

fn store_worker(
    job: &OnlineJob,
    shards: &[PathBuf],
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<Message>,
    manifest: &StoreManifest,
) -> Result<(), RunError> {
    let n = job.workload.steps.len();
    let mut payload = Vec::new();
    for path in shards {
        let mut reader = ShardReader::open(path, manifest.codec())?;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let record = reader.record_index();
            if !reader.next_into(&mut payload)? {
                break;
            }
            let shard = || reader.path().display().to_string();
            let sample = encoding::decode(&payload).map_err(|source| RunError::Decode {
                shard: shard(),
                record,
                source,
            })?;
            if job.workload.item_of(sample.id, job.split) as usize >= job.source.len() {
                return Err(RunError::UnknownSample {
                    shard: shard(),
                    record,
                    id: sample.id,
                    samples: job.source.len(),
                });
            }
            let more = apply_steps(
                job.workload,
                job.split..n,
                sample,
                job.source,
                job.seed,
                job.epoch,
                &mut |sample| Ok(send(job, tx, sample)),
            )?;
            if !more {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Runs one epoch of the online phase and measures it.
pub fn run_online(job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
    let threads = job.threads.max(1);
    let shard_paths: Vec<PathBuf> = match job.input {
        OnlineInput::Raw => Vec::new(),
        OnlineInput::Store { dir, manifest } => {
            manifest.shards.iter().map(|s| dir.join(&s.file)).collect()
        }
    };
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Message>(threads * QUEUE_PER_WORKER);
    let start = Snapshot::now();
    let mut result = OnlineResult {
        samples: 0,
        output_bytes: 0,
        delta: Delta::default(),
        hashes: Vec::new(),
    };
    let mut first_error: Option<RunError> = None;
    let mut checksum = 0u64;
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for w in 0..threads {
            let tx = tx.clone();
            let (stop, shard_paths) = (&stop, &shard_paths);
            workers.push(scope.spawn(move || {
                let outcome = match job.input {
                    OnlineInput::Raw => raw_worker(job, w, stop, &tx),
                    OnlineInput::Store { manifest, .. } => {
                        let mine: Vec<PathBuf> = shard_paths
                            .iter()
                            .skip(w)
                            .step_by(threads)
                            .cloned()
                            .collect();
                        store_worker(job, &mine, stop, &tx, manifest)
                    }
                };
                if let Err(e) = outcome {
                    stop.store(true, Ordering::Relaxed);
                    let _ = tx.send(Err(e));
                }
            }));
        }
        drop(tx);
        for message in rx.iter() {
            match message {
                Ok((sample, hash)) => {
                    checksum = checksum.wrapping_add(touch(&sample));
                    result.samples += 1;
                    result.output_bytes += sample.size_bytes() as u64;
                    if job.hash {
                        result.hashes.push((sample.id, hash));
                    }
                    progress.inc(1);
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
            }
        }
        for w in workers {
            if let Err(payload) = w.join() {
                first_error.get_or_insert(panic_message(payload));
            }
        }
    });
    std::hint::black_box(checksum);
    result.delta = Snapshot::now().since(&start);
    match first_error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}
