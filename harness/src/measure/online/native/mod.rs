//! prepbench's own online engine: worker threads ([`worker`]) read their share of the input
//! and run the online steps; this thread is the consumer, timing each arrival.

mod batch;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use indicatif::ProgressBar;
use workloads::{Field, Sample};

use crate::measure::consumer::Trainer;
use crate::measure::errors::{panic_message, spawn_worker, RunError};
use crate::measure::metrics::Snapshot;
use crate::measure::online::engine::{Engine, OnlineJob, OnlineResult};
use crate::measure::passes::Passes;
use batch::Message;
use worker::online_worker;

/// Queue slots per worker between the workers and the consumer.
const QUEUE_PER_WORKER: usize = 4;
const PAGE: usize = 4096;

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

/// prepbench's own engine: `threads` worker threads, each owning a disjoint set of shards (or
/// raw files), reading, decompressing, decoding and running the online steps in process, and
/// handing samples to the consumer over a bounded queue; the consumer touches every page of
/// every sample.
pub struct Native;

impl Engine for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    fn run(&self, job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
        run_native(job, progress)
    }
}

/// Runs one epoch of the online phase on worker threads and measures it.
fn run_native(job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
    let threads = job.threads.max(1);
    let stop = AtomicBool::new(false);
    let capacity = job
        .consumer
        .map_or(threads * QUEUE_PER_WORKER, |c| c.queue_capacity());
    let (tx, rx) = mpsc::sync_channel::<Message>(capacity);
    crate::measure::steps::start_workers(
        job.workload,
        job.split..job.workload.steps.len(),
        threads,
    )?;
    let start = Snapshot::now();
    let mut trainer = job
        .consumer
        .map(|spec| Trainer::new(spec, job.seed, job.epoch, std::time::Instant::now()));
    let mut result = OnlineResult::empty(job.workload.steps.len());
    let passes = Passes::new(job.min_s);
    let mut first_error: Option<RunError> = None;
    let mut checksum = 0u64;
    let mut out_of_time = false;
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
                // Past `max_s` the workers are stopped, and what they had sent is not taken.
                Ok(_) if out_of_time => {}
                Ok(samples) => {
                    progress.inc(samples.len() as u64);
                    for (delivered, hash) in samples {
                        let sample = delivered.sample();
                        result.arrivals_s.push(start.at.elapsed().as_secs_f64());
                        checksum = checksum.wrapping_add(touch(sample));
                        result.samples += 1;
                        result.output_bytes += sample.size_bytes() as u64;
                        if job.hash {
                            result.hashes.push((sample.id, hash));
                        }
                        if let Some(trainer) = trainer.as_mut() {
                            if result.template.is_none() {
                                result.template = Some(sample.clone());
                            }
                            trainer.take();
                        }
                    }
                    if job
                        .max_s
                        .is_some_and(|m| start.at.elapsed().as_secs_f64() >= m)
                    {
                        out_of_time = true;
                        stop.store(true, Ordering::Relaxed);
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
                Ok(tally) => {
                    result.stages.add(&tally.times);
                    result.skipped.extend(tally.skipped);
                }
                Err(payload) => {
                    first_error.get_or_insert(panic_message(payload));
                }
            }
        }
    });
    std::hint::black_box(checksum);
    result.consumer = trainer.map(Trainer::finish);
    result.delta = Snapshot::now().since(&start);
    result.passes = passes.made();
    match first_error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}
