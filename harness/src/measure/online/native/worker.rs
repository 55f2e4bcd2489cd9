//! One online worker thread: its share of the input (raw files, store shards or the
//! application cache), pass after pass, through the online steps to the consumer's queue, with
//! the samples it keeps queued in a Python chain's worker finished at the end of each pass.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use workloads::{encoding, OnError, ReadFiles, Sample, StepContext};

use crate::measure::app_cache::AppCache;
use crate::measure::errors::RunError;
use crate::measure::online::engine::{OnlineInput, OnlineJob, StageTimes};
use crate::measure::passes::Passes;
use crate::measure::steps::{apply_steps, Lookahead, StepSeconds};
use crate::results::Skipped;
use crate::store::{ShardInfo, ShardReader};

use super::batch::{Batch, Delivered, Message, BATCH_SAMPLES};

/// What one worker thread measured: its stage times and the samples it skipped.
pub(super) struct Tally {
    pub times: StageTimes,
    pub skipped: Vec<Skipped>,
}

/// Where a worker thread's samples go: the consumer's queue, after those it keeps queued in a
/// Python worker (see [`Lookahead`]).
struct Outlet<'a> {
    queue: &'a mpsc::SyncSender<Message>,
    ahead: std::cell::RefCell<Lookahead>,
    batch: std::cell::RefCell<Batch>,
}

/// The step context of the online steps of `job`.
fn online_context<'a>(job: &'a OnlineJob<'a>) -> StepContext<'a> {
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
    }
}

/// Hands a sample to the consumer, alone or in a batch of those made quickly after one another
/// ([`BATCH_GAP`]); only time blocked on a full queue counts as waiting (a send that succeeds at
/// once costs nothing here, whatever the scheduler does around it).
fn send(job: &OnlineJob, outlet: &Outlet, sample: Delivered, wait: &mut f64) -> bool {
    let hash = if job.hash {
        sample.sample().unordered_hash()
    } else {
        0
    };
    let mut batch = outlet.batch.borrow_mut();
    let now = std::time::Instant::now();
    if !batch.add(sample, hash, now) {
        batch.ready = Some(now);
        return true;
    }
    // Time blocked on a full queue is not the next sample's making.
    let sent = flush(outlet.queue, &mut batch, wait);
    batch.ready = Some(std::time::Instant::now());
    sent
}

/// Sends the samples `batch` holds, if any; `false` when the consumer is gone.
fn flush(queue: &mpsc::SyncSender<Message>, batch: &mut Batch, wait: &mut f64) -> bool {
    if batch.samples.is_empty() {
        return true;
    }
    match queue.try_send(Ok(batch.take())) {
        Ok(()) => true,
        Err(mpsc::TrySendError::Disconnected(_)) => false,
        Err(mpsc::TrySendError::Full(message)) => {
            let start = std::time::Instant::now();
            let sent = queue.send(message).is_ok();
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
    outlet: &Outlet,
    tally: &mut Tally,
) -> Result<bool, RunError> {
    let StageTimes {
        steps,
        transfer,
        send_wait,
        ..
    } = &mut tally.times;
    let mut ahead = outlet.ahead.borrow_mut();
    apply_steps(
        job.workload,
        job.split..job.workload.steps.len(),
        sample,
        job.source,
        online_context(job),
        StepSeconds {
            wall: steps,
            transfer: Some(transfer),
            ahead: Some(&mut ahead),
        },
        &mut |sample| Ok(send(job, outlet, Delivered::Made(sample), send_wait)),
    )
}

/// Finishes the samples a worker keeps queued in a Python worker (the end of a pass): each
/// through the rest of its steps to the consumer, an error skipped or returned as
/// `process` does. `Ok(false)` when the consumer is gone.
fn finish_queued(job: &OnlineJob, outlet: &Outlet, tally: &mut Tally) -> Result<bool, RunError> {
    loop {
        let StageTimes {
            steps,
            transfer,
            send_wait,
            ..
        } = &mut tally.times;
        let next = outlet.ahead.borrow_mut().finish_next(
            job.workload,
            job.source,
            online_context(job),
            StepSeconds {
                wall: steps,
                transfer: Some(transfer),
                ahead: None,
            },
            &mut |sample| Ok(send(job, outlet, Delivered::Made(sample), send_wait)),
        );
        match next {
            None => return Ok(true),
            Some(Ok(true)) => {}
            Some(Ok(false)) => return Ok(false),
            Some(Err(e)) => skip_or_fail(job, e, tally)?,
        }
    }
}

/// Under `on_error: skip`, records an error about one sample and lets the worker go on;
/// otherwise, or for an error of the machine rather than the input, returns it.
fn skip_or_fail(job: &OnlineJob, error: RunError, tally: &mut Tally) -> Result<(), RunError> {
    if job.on_error == OnError::Skip {
        if let Some(skipped) = error.skipped() {
            tally.skipped.push(skipped);
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
    outlet: &Outlet,
    tally: &mut Tally,
) -> Result<bool, RunError> {
    match online_steps(job, sample, outlet, tally) {
        Err(e) => skip_or_fail(job, e, tally).map(|()| true),
        other => other,
    }
}

fn raw_worker(
    job: &OnlineJob,
    worker: usize,
    stop: &AtomicBool,
    outlet: &Outlet,
    tally: &mut Tally,
) -> Result<(), RunError> {
    for id in (worker..job.items).step_by(job.threads) {
        if stop.load(Ordering::Relaxed)
            || !process(job, job.source.cycled_sample(id), outlet, tally)?
        {
            break;
        }
    }
    Ok(())
}

/// Online worker `w` of `threads`: reads its part of the input, pass after pass while the
/// epoch wants more, and sends each processed sample (or its first error) to the consumer.
pub(crate) fn online_worker(
    job: &OnlineJob,
    (w, threads): (usize, usize),
    stop: &AtomicBool,
    passes: &Passes,
    tx: mpsc::SyncSender<Message>,
) -> Tally {
    let mut tally = Tally {
        times: StageTimes::new(job.workload.steps.len()),
        skipped: Vec::new(),
    };
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
    let out = Outlet {
        queue: &tx,
        ahead: Default::default(),
        // A simulated training step's queue counts samples: one a message.
        batch: std::cell::RefCell::new(Batch::new(if job.consumer.is_some() {
            1
        } else {
            BATCH_SAMPLES
        })),
    };
    let mut done = 0;
    let outcome = loop {
        let pass = match job.input {
            OnlineInput::Raw => raw_worker(job, w, stop, &out, &mut tally),
            OnlineInput::Memory(cache) => memory_worker(job, cache, w, stop, &out, &mut tally),
            OnlineInput::Store { .. } => store_worker(job, &mine, stop, &out, &mut tally),
        };
        // The samples still queued in a Python worker belong to this pass.
        let pass = pass.and_then(|()| {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            finish_queued(job, &out, &mut tally).map(|_| ())
        });
        // Whatever is left (an error, a stop) is given up with its worker's replies; what the
        // pass made goes before its error, and before the worker waits for the next pass.
        out.ahead.replace(Lookahead::default());
        if !flush(&tx, &mut out.batch.borrow_mut(), &mut tally.times.send_wait) {
            stop.store(true, Ordering::Relaxed);
        }
        done += 1;
        if pass.is_err() || idle || !passes.another(done, stop) {
            break pass;
        }
    };
    if let Err(e) = outcome {
        stop.store(true, Ordering::Relaxed);
        let _ = tx.send(Err(e));
    }
    tally
}

fn store_worker(
    job: &OnlineJob,
    shards: &[&ShardInfo],
    stop: &AtomicBool,
    outlet: &Outlet,
    tally: &mut Tally,
) -> Result<(), RunError> {
    let OnlineInput::Store { backend, manifest } = job.input else {
        unreachable!("store_worker reads stores only");
    };
    let mut payload = Vec::new();
    let mut outcome = Ok(());
    let mut kept = Vec::new();
    for shard in shards {
        // Reads of a local store through emulated storage count as read time; a reader goes
        // on at a restart after damage through the same storage.
        let (label, file, again) = match (job.throttle, backend.local_path(&shard.file)) {
            (Some(t), Some(path)) => {
                let file = t.open(&path).map_err(crate::store::io_error(&path))?;
                let again = throttled_reopen(t.clone(), path.clone());
                (
                    path,
                    Box::new(file) as Box<dyn std::io::Read + Send>,
                    Some(again),
                )
            }
            _ => {
                let (label, file) = backend.open(&shard.file, shard.bytes)?;
                (label, file, backend.reopen(&shard.file, shard.bytes))
            }
        };
        let mut reader = ShardReader::from_read(&label, manifest.codec, file)?.expecting(shard);
        if let Some(again) = again {
            reader = reader.reopening(again);
        }
        let result = read_shard(
            job,
            &mut reader,
            shard.records,
            stop,
            outlet,
            &mut payload,
            tally,
            &mut kept,
        );
        tally.times.read += reader.read_seconds();
        tally.times.decompress += reader.unframe_seconds();
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

/// Opens a local shard again at an offset through the run's emulated storage, for a reader
/// that goes on at a restart after an error.
fn throttled_reopen(
    throttle: std::sync::Arc<crate::measure::emulate::Throttle>,
    path: std::path::PathBuf,
) -> crate::store::Reopen {
    Box::new(move |at| {
        let mut file = throttle.open(&path)?;
        file.seek_to(at)?;
        Ok(Box::new(file) as Box<dyn std::io::Read + Send>)
    })
}

/// Serves the application cache's parts `worker`, `worker + threads`, ... through the online
/// steps: each sample cloned out of the cache (timed as `deserialize`) where online steps
/// consume it, handed on as the cache holds it where none follows the split.
fn memory_worker(
    job: &OnlineJob,
    cache: &AppCache,
    worker: usize,
    stop: &AtomicBool,
    outlet: &Outlet,
    tally: &mut Tally,
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
    let stepped = job.split < job.workload.steps.len();
    for part in &mine {
        for (i, sample) in part.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let going = if stepped {
                let start = std::time::Instant::now();
                let sample = sample.clone();
                tally.times.deserialize += start.elapsed().as_secs_f64();
                process(job, sample, outlet, tally)?
            } else {
                let cached = Delivered::Cached(part.clone(), i);
                send(job, outlet, cached, &mut tally.times.send_wait)
            };
            if !going {
                return Ok(());
            }
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
    outlet: &Outlet,
    payload: &mut Vec<u8>,
    tally: &mut Tally,
    kept: &mut Vec<Sample>,
) -> Result<bool, RunError> {
    // A store may hold more items than the source (it cycles over it): ids run up to its own
    // item count. Known once per shard, not per record.
    let (items, cap) = match job.input {
        OnlineInput::Store { manifest, .. } => (
            (manifest.samples as usize).max(job.source.len()),
            manifest.records_per_shard,
        ),
        _ => (job.source.len(), None),
    };
    // A part of a store that reads each shard's first records only (`Materialized::part`).
    let records = cap.map_or(records, |cap| records.min(cap));
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let record = reader.record_index();
        if cap.is_some() && record >= records {
            return Ok(true);
        }
        match reader.next_into(payload) {
            Ok(true) => {}
            Ok(false) => return Ok(true),
            Err(e) => {
                skip_or_fail(job, e.into(), tally)?;
                let going_on = reader.can_continue();
                if record < records && going_on {
                    continue;
                }
                // A compressed shard goes on at its next restart, where it has one.
                let resumed_at = match going_on || record >= records {
                    true => None,
                    false => reader.resume()?,
                };
                if let Some(own) = tally.skipped.pop() {
                    tally
                        .skipped
                        .extend(crate::measure::errors::read_error_rows(
                            own, record, records, going_on, resumed_at,
                        ));
                }
                if resumed_at.is_some_and(|at| at < records) {
                    continue;
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
        tally.times.deserialize += start.elapsed().as_secs_f64();
        let sample = match decoded {
            Ok(sample) => sample,
            Err(e) => {
                skip_or_fail(job, e, tally)?;
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
                tally,
            )?;
            continue;
        }
        if let Some(cache) = job.fill {
            cache.keep(&sample, kept);
        }
        if !process(job, sample, outlet, tally)? {
            return Ok(false);
        }
    }
}
