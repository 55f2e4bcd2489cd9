//! `prepbench run ... --ranks` under `mpirun`: every rank reads its partition of one strategy
//! at the same time, as MLPerf Storage measures shared storage. Built with `--features mpi`
//! (rsmpi; needs an MPI library and libclang); the default build has no MPI.
//!
//! Rank 0 prepares the dataset and materializes each store first; after a barrier the other
//! ranks open what it made. Each rank reads every `size`-th shard (or raw file) from its rank
//! on: its partition. Every epoch, each rank prepares its own cache (evicts its partition's
//! files when cold), then all ranks pass a barrier and the epoch starts. Rank 0 gathers each
//! rank's samples, bytes and seconds and writes `ranks.csv`: a row per rank and a row `all`
//! with the aggregate throughput (all samples over the slowest rank's time) and the straggler
//! spread (the slowest rank's time over the fastest's, less one). `runs.csv` is not written:
//! a rank's run covers a partition, not the strategy.

use std::path::Path;

use anyhow::{bail, Context};
use mpi::traits::*;
use workloads::Strategy;

use crate::results::{self, CsvTable};
use crate::run::{Materialized, Resolved, RunOptions, RunSpec, Session};

pub const RANK_COLUMNS: [&str; 16] = [
    "run_id",
    "workload",
    "strategy",
    "codec",
    "threads",
    "cache",
    "epoch",
    "ranks",
    "rank",
    "host",
    "samples",
    "bytes",
    "online_s",
    "throughput_sps",
    "mb_s",
    "straggler_spread_pct",
];

/// A rank's figures for one epoch, as sent to rank 0.
const FIGURES: usize = 3;
const HOST_BYTES: usize = 64;

/// Runs `opts` as one rank of an MPI job; rank 0 returns the table it printed.
pub fn run_ranks(opts: &RunOptions, command_line: Vec<String>) -> anyhow::Result<Option<String>> {
    let universe = mpi::initialize().context(
        "MPI did not initialize (was it initialized already?); run `mpirun -np N prepbench run ... --ranks`",
    )?;
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    match ranked(opts, command_line, &world, rank, size) {
        Ok(table) => Ok(table),
        Err(e) => {
            // The other ranks wait at a barrier: stop them all, naming the failing rank.
            eprintln!("error: rank {rank} of {size}: {e:#}");
            world.abort(2)
        }
    }
}

fn ranked(
    opts: &RunOptions,
    command_line: Vec<String>,
    world: &mpi::topology::SimpleCommunicator,
    rank: usize,
    size: usize,
) -> anyhow::Result<Option<String>> {
    let started_utc = results::utc_now();
    let Resolved {
        strategies,
        samples,
        shards,
        epochs,
        storage,
        ..
    } = Resolved::new(opts)?;
    if strategies.iter().any(|s| s.split > 0) && shards < size {
        bail!("{shards} shards cannot give each of {size} ranks a partition: use --shards {size} or more");
    }
    let table = if rank == 0 {
        Some(CsvTable::open(opts.out.join("ranks.csv"), &RANK_COLUMNS)?)
    } else {
        None
    };
    // Rank 0 generates the dataset (when needed), then the others open it.
    let open = || {
        Session::open(
            workloads::load(&opts.workload)?,
            &opts.data_dir,
            samples,
            opts.threads,
            &opts.store_dir,
            opts.evict,
            crate::progress::Progress { quiet: true },
        )
    };
    let mut session = if rank == 0 { Some(open()?) } else { None };
    world.barrier();
    let mut session = match session.take() {
        Some(s) => s,
        None => open()?,
    };
    if let Some(on_error) = opts.on_error {
        session.on_error = on_error;
    }
    let cold = opts.cache == workloads::options::CacheMode::Cold;
    let host = crate::system::machine().hostname;
    let run_prefix = crate::run::fresh_run_prefix();
    let mut printed = String::new();
    let mut run_ids = Vec::new();
    for (i, strategy) in strategies.iter().enumerate() {
        let stored = if strategy.split > 0 {
            let made = if rank == 0 {
                Some(session.store(
                    strategy,
                    opts.codec,
                    shards,
                    opts.threads,
                    opts.rematerialize,
                    cold,
                )?)
            } else {
                None
            };
            world.barrier();
            let m = match made {
                Some(m) => m,
                None => session.store(strategy, opts.codec, shards, opts.threads, false, cold)?,
            };
            Some(partition_store(&m, rank, size))
        } else {
            None
        };
        let full = if stored.is_none() {
            let part = partition_source(&session.source, rank, size);
            Some(std::mem::replace(&mut session.source, part))
        } else {
            None
        };
        let run_id = format!("{run_prefix}-ranks-{i}");
        let gate = || world.barrier();
        let spec = RunSpec {
            run_id: run_id.clone(),
            strategy,
            stored: stored.as_ref(),
            threads: opts.threads,
            cache: opts.cache,
            epochs,
            seed: opts.seed,
            trial: 0,
            verify: false,
            app_cache_bytes: crate::run::app_cache_bytes(opts.app_cache_mb),
            storage: &storage,
            consumer: None,
            start_gate: Some(&gate),
        };
        let measured = session.measure(&spec);
        if let Some(full) = full {
            session.source = full;
        }
        let measured = measured?;
        // Per epoch: samples, bytes, seconds.
        let mine: Vec<f64> = measured
            .rows
            .iter()
            .flat_map(|r| [r.samples as f64, r.storage_bytes as f64, r.online_s])
            .collect();
        let mut name = [0u8; HOST_BYTES];
        let take = host.len().min(HOST_BYTES);
        name[..take].copy_from_slice(&host.as_bytes()[..take]);
        let root = world.process_at_rank(0);
        if rank == 0 {
            let mut all = vec![0f64; mine.len() * size];
            root.gather_into_root(&mine[..], &mut all[..]);
            let mut hosts = vec![0u8; HOST_BYTES * size];
            root.gather_into_root(&name[..], &mut hosts[..]);
            let hosts: Vec<String> = hosts
                .chunks(HOST_BYTES)
                .map(|h| {
                    String::from_utf8_lossy(h)
                        .trim_end_matches('\0')
                        .to_string()
                })
                .collect();
            let rows = rank_rows(
                &run_id,
                &session,
                strategy,
                opts,
                &measured.rows,
                &all,
                &hosts,
                size,
            );
            printed.push_str(&describe(strategy, &rows));
            if let Some(t) = &table {
                t.append(&rows)?;
            }
            run_ids.push(run_id);
        } else {
            root.gather_into(&mine[..]);
            root.gather_into(&name[..]);
        }
    }
    if rank != 0 {
        return Ok(None);
    }
    let invocation = results::Invocation {
        started_utc,
        command_line,
        run_ids,
        data_dir: &opts.data_dir,
        store_dir: &opts.store_dir,
        can_drop_caches: crate::cache::can_drop_caches(),
        evict_policy: format!("{:?}", opts.evict).to_lowercase(),
    };
    results::record_invocation(&opts.out, &session.workload_record(), &invocation)?;
    Ok(Some(printed))
}

/// Every `size`-th shard of a store from `rank` on.
fn partition_store(m: &Materialized, rank: usize, size: usize) -> Materialized {
    let mut manifest = m.manifest.clone();
    manifest.shards = manifest
        .shards
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % size == rank)
        .map(|(_, s)| s)
        .collect();
    Materialized {
        dir: m.dir.clone(),
        manifest,
        reused: true,
        samples: (String::new(), Vec::new()),
        remote: m.remote.clone(),
    }
}

/// Every `size`-th raw file from `rank` on.
fn partition_source(source: &datasets::Source, rank: usize, size: usize) -> datasets::Source {
    let mut part = source.clone();
    part.items = source
        .items
        .iter()
        .enumerate()
        .filter(|(i, _)| i % size == rank)
        .map(|(_, item)| item.clone())
        .collect();
    part
}

/// ranks.csv rows: per epoch, one per rank and the aggregate.
#[allow(clippy::too_many_arguments)]
fn rank_rows(
    run_id: &str,
    session: &Session,
    strategy: &Strategy,
    opts: &RunOptions,
    own: &[crate::results::RunRow],
    all: &[f64],
    hosts: &[String],
    size: usize,
) -> Vec<Vec<String>> {
    let epochs = own.len();
    let mut out = Vec::new();
    for (epoch, row) in own.iter().enumerate() {
        let figures = |r: usize| {
            let at = r * epochs * FIGURES + epoch * FIGURES;
            (all[at], all[at + 1], all[at + 2])
        };
        let seconds: Vec<f64> = (0..size).map(|r| figures(r).2).collect();
        let slowest = seconds.iter().copied().fold(0.0, f64::max);
        let fastest = seconds.iter().copied().fold(f64::INFINITY, f64::min);
        let spread = if fastest > 0.0 {
            (slowest / fastest - 1.0) * 100.0
        } else {
            0.0
        };
        let base = |rank: String, host: String, samples: f64, bytes: f64, secs: f64| {
            vec![
                run_id.to_string(),
                session.workload.name.clone(),
                strategy.name.clone(),
                row.codec.clone(),
                opts.threads.to_string(),
                row.cache.clone(),
                epoch.to_string(),
                size.to_string(),
                rank,
                host,
                format!("{samples:.0}"),
                format!("{bytes:.0}"),
                format!("{secs:.6}"),
                format!("{:.3}", if secs > 0.0 { samples / secs } else { 0.0 }),
                format!("{:.3}", if secs > 0.0 { bytes / secs / 1e6 } else { 0.0 }),
                format!("{spread:.2}"),
            ]
        };
        let (mut samples, mut bytes) = (0.0, 0.0);
        for (r, host) in hosts.iter().enumerate().take(size) {
            let (s, b, t) = figures(r);
            samples += s;
            bytes += b;
            out.push(base(r.to_string(), host.clone(), s, b, t));
        }
        out.push(base("all".into(), "-".into(), samples, bytes, slowest));
    }
    out
}

/// The lines rank 0 prints for one strategy.
fn describe(strategy: &Strategy, rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in rows.iter().filter(|r| r[8] == "all") {
        let epoch = &row[6];
        let per_rank: Vec<f64> = rows
            .iter()
            .filter(|r| r[8] != "all" && &r[6] == epoch)
            .filter_map(|r| r[13].parse().ok())
            .collect();
        let lo = per_rank.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = per_rank.iter().copied().fold(0.0, f64::max);
        out.push_str(&format!(
            "{} epoch {epoch} ({}, {} ranks): {} samples/s in all, {} MB/s; per rank {:.1} to {:.1} samples/s; straggler spread {} %\n",
            strategy.name, row[5], row[7], row[13], row[14], lo, hi, row[15]
        ));
    }
    out
}

/// Where ranks.csv is, for messages.
pub fn table_path(out: &Path) -> std::path::PathBuf {
    out.join("ranks.csv")
}
