//! The offline phase: run steps `[0, split)` over every sample in parallel and write the outputs
//! round-robin into the store's shards (source item i, with every sample a fan-out step makes
//! of it, goes to shard i mod shards; worker w writes the
//! shards s with s mod threads = w). A store of more items than its source cycles over it:
//! item i is source item i mod len, numbered i, so records are distinct and content repeats;
//! the offline steps run once per source item (their outputs are written again under the later
//! cycles' ids), so its offline time is one pass of processing plus writing every record. Offline time covers processing and writing together, as
//! the paper measured it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use datasets::Source;
use indicatif::ProgressBar;
use workloads::{encoding, Codec, OnError, Workload};

use crate::measure::errors::{panic_message, spawn_worker, RunError};
use crate::measure::metrics::Snapshot;
use crate::measure::steps::apply_steps;
use crate::results::Skipped;
use crate::store::{self, ShardInfo, ShardWriter, StoreKey, StoreManifest};

pub struct MaterializeJob<'a> {
    pub workload: &'a Workload,
    pub source: &'a Source,
    pub key: &'a StoreKey,
    pub dir: &'a Path,
    pub threads: usize,
    /// Under `skip`, a sample the offline steps fail on is left out of the store and recorded
    /// in its manifest.
    pub on_error: OnError,
}

/// Seconds a materialization spent, summed over its workers: running the offline steps, and
/// encoding, compressing and writing their output (syncing included); and the samples left out.
#[derive(Clone, Debug, Default)]
struct Split {
    processing_s: f64,
    writing_s: f64,
    skipped: Vec<Skipped>,
}

/// Runs the offline steps `[0, split)` on source item `id`, handing every output to `emit`.
/// They are not random, so seed and epoch are 0.
fn offline_steps(
    job: &MaterializeJob,
    id: usize,
    step_seconds: &mut [f64],
    emit: &mut dyn FnMut(workloads::Sample) -> Result<bool, RunError>,
) -> Result<bool, RunError> {
    apply_steps(
        job.workload,
        0..job.key.split,
        job.source.cycled_sample(id),
        job.source,
        workloads::StepContext {
            seed: 0,
            epoch: 0,
            step_index: 0,
            files: Some(job.source.files.as_read()),
        },
        crate::measure::steps::StepSeconds::wall(step_seconds),
        emit,
    )
}

/// Outputs of the offline steps by source item, shared by the workers of a store that cycles
/// over its source: a later cycle writes them again under its own ids instead of running the
/// steps again (the offline steps are never random, so the content is the same). Held up to
/// [`MEMO_BYTES`]; beyond, items are processed again.
#[derive(Default)]
struct Memo {
    outputs: std::collections::HashMap<usize, std::sync::Arc<Vec<workloads::Sample>>>,
    bytes: usize,
}

/// Memory the outputs of a cycling store's first cycle may take.
const MEMO_BYTES: usize = 512 << 20;

fn write_shard(
    job: &MaterializeJob,
    shard: usize,
    stop: &AtomicBool,
    progress: &ProgressBar,
    split: &mut Split,
    memo: &std::sync::Mutex<Memo>,
) -> Result<ShardInfo, RunError> {
    let shards = job.key.shards;
    let items = job.source.len().max(1);
    let cycles = job.key.samples as usize > items;
    let fan_out = job.workload.steps[..job.key.split]
        .iter()
        .any(|s| s.spec.facts.fan_out);
    let mut writer = ShardWriter::create(job.dir, shard, shards, job.key.codec)?;
    let mut payload = Vec::new();
    let mut step_seconds = vec![0.0; job.workload.steps.len()];
    let mut writing_s = 0.0;
    let mut write = |sample: &workloads::Sample| -> Result<(), RunError> {
        let start = std::time::Instant::now();
        payload.clear();
        encoding::encode_into(sample, &mut payload);
        writer.write(&payload)?;
        writing_s += start.elapsed().as_secs_f64();
        Ok(())
    };
    for id in (shard..job.key.samples as usize).step_by(shards) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let item = id % items;
        let remembered = cycles
            .then(|| memo.lock().ok()?.outputs.get(&item).cloned())
            .flatten();
        if let Some(outputs) = remembered {
            for output in outputs.iter() {
                let mut again = output.clone();
                again.id = if fan_out {
                    workloads::child_id(id as u64, workloads::parent_of(output.id).1 as usize)
                        .map_err(|e| RunError::Panic(e.message))?
                } else {
                    id as u64
                };
                write(&again)?;
            }
            progress.inc(1);
            continue;
        }
        let mut kept = Vec::new();
        let outcome = offline_steps(job, id, &mut step_seconds, &mut |sample| {
            write(&sample)?;
            if cycles {
                kept.push(sample);
            }
            Ok(true)
        });
        match outcome {
            Ok(_) if cycles => {
                let size: usize = kept.iter().map(|s| s.size_bytes()).sum();
                if let Ok(mut memo) = memo.lock() {
                    if memo.bytes + size <= MEMO_BYTES && !memo.outputs.contains_key(&item) {
                        memo.bytes += size;
                        memo.outputs.insert(item, std::sync::Arc::new(kept));
                    }
                }
            }
            Ok(_) => {}
            Err(e) => match e.skipped().filter(|_| job.on_error == OnError::Skip) {
                Some(skipped) => split.skipped.push(skipped),
                None => return Err(e),
            },
        }
        progress.inc(1);
    }
    let start = std::time::Instant::now();
    let info = writer.finish()?;
    split.writing_s += writing_s + start.elapsed().as_secs_f64();
    split.processing_s += step_seconds.iter().sum::<f64>();
    Ok(info)
}

/// Bytes the store will take, estimated from the first sample the offline steps accept (its
/// encoded records, framing included) times the samples; `None` when no sample could be
/// probed. Uncompressed: an upper bound for a compressing codec.
fn estimate_bytes(job: &MaterializeJob) -> Option<u64> {
    let mut step_seconds = vec![0.0; job.workload.steps.len()];
    for id in 0..job.source.len().min(4) {
        let mut bytes = 0u64;
        let probed = offline_steps(job, id, &mut step_seconds, &mut |sample| {
            let mut payload = Vec::new();
            encoding::encode_into(&sample, &mut payload);
            bytes += payload.len() as u64 + 16;
            Ok(true)
        });
        if probed.is_ok() {
            return Some(bytes * job.key.samples);
        }
    }
    None
}

/// Materializes the store described by `job.key` into `job.dir` (cleared first) and completes it.
/// Without room for it (uncompressed, estimated from one sample) it refuses before writing; if
/// the disk fills up anyway, the partial store is removed and the error says so.
pub fn materialize(
    job: &MaterializeJob,
    progress: &ProgressBar,
) -> Result<StoreManifest, RunError> {
    store::clear(job.dir)?;
    store::create(job.dir)?;
    // Uncompressed, the estimate decides before writing; compressed, it only explains a full
    // disk, so the probe runs then.
    let uncompressed = job.key.codec == Codec::None;
    let needed = if uncompressed {
        estimate_bytes(job)
    } else {
        None
    };
    if let (Some(needed), Some(free)) = (needed, store::free_bytes(job.dir)) {
        if needed > free {
            store::clear(job.dir)?;
            return Err(store::StoreError::NoSpace {
                dir: job.dir.display().to_string(),
                free_bytes: free,
                needed_bytes: Some(needed),
                during_write: false,
            }
            .into());
        }
    }
    match write_store(job, progress) {
        Err(RunError::Store(e)) if e.is_no_space() => {
            // Leave nothing half-written behind; earlier stores and results are untouched.
            store::clear(job.dir)?;
            Err(store::StoreError::NoSpace {
                dir: job.dir.display().to_string(),
                free_bytes: store::free_bytes(job.dir).unwrap_or(0),
                needed_bytes: needed.or_else(|| estimate_bytes(job)),
                during_write: true,
            }
            .into())
        }
        other => other,
    }
}

fn write_store(job: &MaterializeJob, progress: &ProgressBar) -> Result<StoreManifest, RunError> {
    let threads = job.threads.clamp(1, job.key.shards);
    workloads::steps::budget::set_workers(threads);
    let stop = AtomicBool::new(false);
    let memo = std::sync::Mutex::new(Memo::default());
    crate::measure::steps::start_workers(job.workload, 0..job.key.split, threads)?;
    // Others' dirty pages are written back before the clock starts (`flush_dirty_pages`).
    crate::measure::cache::flush_dirty_pages();
    let start = Snapshot::now();
    let (mut shards, split): (Vec<(usize, ShardInfo)>, Split) = std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        let mut failed_start = None;
        for w in 0..threads {
            let (stop, memo) = (&stop, &memo);
            let started = spawn_worker(
                scope,
                std::thread::Builder::new(),
                ("offline worker", w, threads),
                move || -> Result<(Vec<(usize, ShardInfo)>, Split), RunError> {
                    let mut done = Vec::new();
                    let mut split = Split::default();
                    for shard in (w..job.key.shards).step_by(threads) {
                        match write_shard(job, shard, stop, progress, &mut split, memo) {
                            Ok(info) => done.push((shard, info)),
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok((done, split))
                },
            );
            match started {
                Ok(worker) => workers.push(worker),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failed_start = Some(e);
                    break;
                }
            }
        }
        let mut all = Vec::new();
        let mut total = Split::default();
        for worker in workers {
            let (done, split) = worker.join().map_err(panic_message)??;
            all.extend(done);
            total.processing_s += split.processing_s;
            total.writing_s += split.writing_s;
            total.skipped.extend(split.skipped);
        }
        if let Some(e) = failed_start {
            return Err(e);
        }
        Ok::<_, RunError>((all, total))
    })?;
    let delta = Snapshot::now().since(&start);
    shards.sort_by_key(|(index, _)| *index);
    let mut manifest = job.key.manifest(
        shards.into_iter().map(|(_, s)| s).collect(),
        delta.wall_s,
        delta.cpu_user_s,
        delta.cpu_sys_s,
    );
    // A store may hold fewer items than the source (its first ones), or cycle over it.
    manifest.source_items = (job.source.len() as u64).min(job.key.samples);
    manifest.offline_processing_s = split.processing_s;
    manifest.offline_writing_s = split.writing_s;
    manifest.skipped = split.skipped;
    manifest.spec = serde_json::to_value(&job.workload.spec).ok();
    store::complete(job.dir, &manifest)?;
    let files: Vec<_> = manifest
        .shards
        .iter()
        .map(|s| job.dir.join(&s.file))
        .collect();
    crate::measure::cache::release_written(&files)?;
    Ok(manifest)
}
