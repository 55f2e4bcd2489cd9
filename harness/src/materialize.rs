//! The offline phase: run steps `[0, split)` over every sample in parallel and write the outputs
//! round-robin into the store's shards (source item i, with every sample a fan-out step makes
//! of it, goes to shard i mod shards; worker w writes the
//! shards s with s mod threads = w). Offline time covers processing and writing together, as
//! the paper measured it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use datasets::Source;
use indicatif::ProgressBar;
use workloads::{encoding, Workload};

use crate::metrics::Snapshot;
use crate::pipeline::{apply_steps, panic_message, RunError};
use crate::store::{self, ShardInfo, ShardWriter, StoreKey, StoreManifest};

pub struct MaterializeJob<'a> {
    pub workload: &'a Workload,
    pub source: &'a Source,
    pub key: &'a StoreKey,
    pub dir: &'a Path,
    pub threads: usize,
}

fn write_shard(
    job: &MaterializeJob,
    shard: usize,
    stop: &AtomicBool,
    progress: &ProgressBar,
) -> Result<ShardInfo, RunError> {
    let shards = job.key.shards;
    let mut writer = ShardWriter::create(job.dir, shard, shards, job.key.codec)?;
    let mut payload = Vec::new();
    let mut step_seconds = vec![0.0; job.workload.steps.len()];
    for id in (shard..job.source.len()).step_by(shards) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        apply_steps(
            job.workload,
            0..job.key.split,
            job.source.sample(id),
            job.source,
            0,
            0,
            &mut step_seconds,
            &mut |sample| {
                payload.clear();
                encoding::encode_into(&sample, &mut payload);
                writer.write(&payload)?;
                Ok(true)
            },
        )?;
        progress.inc(1);
    }
    Ok(writer.finish()?)
}

/// Materializes the store described by `job.key` into `job.dir` (cleared first) and completes it.
pub fn materialize(
    job: &MaterializeJob,
    progress: &ProgressBar,
) -> Result<StoreManifest, RunError> {
    store::clear(job.dir)?;
    std::fs::create_dir_all(job.dir).map_err(store::io_error(job.dir))?;
    let threads = job.threads.clamp(1, job.key.shards);
    let stop = AtomicBool::new(false);
    let start = Snapshot::now();
    let mut shards: Vec<(usize, ShardInfo)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let stop = &stop;
                scope.spawn(move || -> Result<Vec<(usize, ShardInfo)>, RunError> {
                    let mut done = Vec::new();
                    for shard in (w..job.key.shards).step_by(threads) {
                        match write_shard(job, shard, stop, progress) {
                            Ok(info) => done.push((shard, info)),
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok(done)
                })
            })
            .collect();
        let mut all = Vec::new();
        for worker in workers {
            all.extend(worker.join().map_err(panic_message)??);
        }
        Ok::<_, RunError>(all)
    })?;
    let delta = Snapshot::now().since(&start);
    shards.sort_by_key(|(index, _)| *index);
    let manifest = job.key.manifest(
        shards.into_iter().map(|(_, s)| s).collect(),
        delta.wall_s,
        delta.cpu_user_s,
        delta.cpu_sys_s,
    );
    store::complete(job.dir, &manifest)?;
    Ok(manifest)
}
