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

use crate::measure::epochs::RunSpec;
use crate::measure::session::{Materialized, Session};
use crate::plan::run::{Resolved, RunOptions};
use crate::plan::settings::Places;
use crate::results::{self, RankRow, Table};

/// A rank's figures for one epoch, as sent to rank 0.
const FIGURES: usize = 3;
const HOST_BYTES: usize = 64;

/// Runs `opts` as one rank of an MPI job; rank 0 returns the table it printed.
pub fn run_ranks(
    opts: &RunOptions,
    places: &Places,
    command_line: Vec<String>,
) -> anyhow::Result<Option<String>> {
    let universe = mpi::initialize().context(
        "MPI did not initialize (was it initialized already?); run `mpirun -np N prepbench run ... --ranks`",
    )?;
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    match ranked(opts, places, command_line, &world, rank, size) {
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
    places: &Places,
    command_line: Vec<String>,
    world: &mpi::topology::SimpleCommunicator,
    rank: usize,
    size: usize,
) -> anyhow::Result<Option<String>> {
    let started_utc = results::utc_now();
    let Resolved { plan, .. } = Resolved::new(opts, places)?;
    // Every rank has checked the places before rank 0 writes into the results folder.
    world.barrier();
    let shards = plan.shards;
    if plan.cells.iter().any(|c| c.strategy.split > 0) && shards < size {
        bail!("{shards} shards cannot give each of {size} ranks a partition: use --shards {size} or more");
    }
    let table = if rank == 0 {
        Some(Table::<RankRow>::open(table_path(&places.out))?)
    } else {
        None
    };
    let mut session = open_session(opts, places, plan.samples, world, rank)?;
    let host = crate::results::system::machine().hostname;
    let run_prefix = crate::plan::run::fresh_run_prefix();
    let mut printed = String::new();
    let mut run_ids = Vec::new();
    for (i, cell) in plan.cells.iter().enumerate() {
        let strategy = &cell.strategy;
        let stored = rank_store(&session, cell, opts, shards, world, (rank, size))?;
        let run_id = format!("{run_prefix}-ranks-{i}");
        let gate = || world.barrier();
        let spec = RunSpec {
            // Ranks measure reading alone: no simulated consumer.
            consumer: None,
            loader: crate::measure::online::default_engine(),
            max_epoch_s: None,
            start_gate: Some(&gate),
            // One pass per epoch on every rank, so the ranks' epochs line up.
            min_epoch_s: None,
            ..plan.spec(cell, run_id.clone(), stored.as_ref(), &opts.settings)
        };
        // Raw files: this rank reads its part of the dataset.
        let full = stored.is_none().then(|| {
            let part = partition_source(&session.source, rank, size);
            std::mem::replace(&mut session.source, part)
        });
        let measured = session.measure(&spec);
        if let Some(full) = full {
            session.source = full;
        }
        let measured = measured?;
        let Some((all, hosts)) = gather(world, (rank, size), &measured.rows, &host) else {
            continue;
        };
        let epochs = epoch_figures(&measured.rows, &all, &hosts);
        let label = session.workload.spec.label();
        let rows = rank_rows(&run_id, &label, strategy, opts, &epochs);
        printed.push_str(&describe(strategy, &epochs));
        if let Some(t) = &table {
            t.append(&rows)?;
        }
        run_ids.push(run_id);
    }
    if rank != 0 {
        return Ok(None);
    }
    session.record_invocation(
        &places.out,
        started_utc,
        command_line,
        (&places.data_dir, &places.store_dir),
        run_ids,
    )?;
    Ok(Some(printed))
}

/// The session of this rank: rank 0 opens it first (generating the dataset when needed), then
/// the others open the same dataset.
fn open_session(
    opts: &RunOptions,
    places: &Places,
    samples: usize,
    world: &mpi::topology::SimpleCommunicator,
    rank: usize,
) -> anyhow::Result<Session> {
    let open = || {
        Session::open(
            places.load_workload(&opts.workload, opts.settings.samples)?,
            &places.data_dir,
            samples,
            opts.threads,
            &places.store_dir,
            places.evict,
            crate::progress::Progress { quiet: true },
        )
    };
    let mut session = if rank == 0 { Some(open()?) } else { None };
    world.barrier();
    let mut session = match session.take() {
        Some(s) => s,
        None => open()?,
    };
    if let Some(on_error) = opts.settings.on_error {
        session.on_error = on_error;
    }
    Ok(session)
}

/// This rank's part of the store `cell` reads (rank 0 makes or finds it, then the others find
/// it); `None` for raw files.
fn rank_store(
    session: &Session,
    cell: &crate::plan::matrix::Cell,
    opts: &RunOptions,
    shards: usize,
    world: &mpi::topology::SimpleCommunicator,
    (rank, size): (usize, usize),
) -> anyhow::Result<Option<Materialized>> {
    let strategy = &cell.strategy;
    if strategy.split == 0 {
        return Ok(None);
    }
    let cold = opts.cache == workloads::options::CacheMode::Cold;
    let (codec, threads) = (opts.codec, opts.threads);
    let made = if rank == 0 {
        let fresh = opts.settings.rematerialize;
        Some(session.store(strategy, codec, shards, threads, fresh, cold)?)
    } else {
        None
    };
    world.barrier();
    let m = match made {
        Some(m) => m,
        None => session.store(strategy, codec, shards, threads, false, cold)?,
    };
    Ok(Some(partition_store(&m, rank, size)))
}

/// Gathers every rank's samples, bytes and seconds per epoch, and its host name, at rank 0:
/// `Some((figures, hosts))` there, `None` on the other ranks.
fn gather(
    world: &mpi::topology::SimpleCommunicator,
    (rank, size): (usize, usize),
    rows: &[crate::results::RunRow],
    host: &str,
) -> Option<(Vec<f64>, Vec<String>)> {
    let mine: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.samples as f64, r.storage_bytes as f64, r.online_s])
        .collect();
    let mut name = [0u8; HOST_BYTES];
    let take = host.len().min(HOST_BYTES);
    name[..take].copy_from_slice(&host.as_bytes()[..take]);
    let root = world.process_at_rank(0);
    if rank != 0 {
        root.gather_into(&mine[..]);
        root.gather_into(&name[..]);
        return None;
    }
    let mut all = vec![0f64; mine.len() * size];
    root.gather_into_root(&mine[..], &mut all[..]);
    let mut hosts = vec![0u8; HOST_BYTES * size];
    root.gather_into_root(&name[..], &mut hosts[..]);
    let hosts = hosts
        .chunks(HOST_BYTES)
        .map(|h| {
            String::from_utf8_lossy(h)
                .trim_end_matches('\0')
                .to_string()
        })
        .collect();
    Some((all, hosts))
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
        backend: m.backend.clone(),
        manifest,
        reused: true,
        samples: (String::new(), Vec::new()),
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

/// One rank's figures for one epoch.
struct RankFigures {
    host: String,
    samples: f64,
    bytes: f64,
    seconds: f64,
}

impl RankFigures {
    fn sps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.samples / self.seconds
        } else {
            0.0
        }
    }

    fn mb_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes / self.seconds / 1e6
        } else {
            0.0
        }
    }
}

/// Every rank's figures for one epoch (rank 0's row gives the epoch's labels).
struct EpochFigures<'r> {
    row: &'r crate::results::RunRow,
    ranks: Vec<RankFigures>,
}

impl EpochFigures<'_> {
    /// All ranks together: every sample over the slowest rank's time.
    fn all(&self) -> RankFigures {
        RankFigures {
            host: "-".into(),
            samples: self.ranks.iter().map(|r| r.samples).sum(),
            bytes: self.ranks.iter().map(|r| r.bytes).sum(),
            seconds: self.ranks.iter().map(|r| r.seconds).fold(0.0, f64::max),
        }
    }

    /// The slowest rank's time over the fastest's, less one, in percent.
    fn spread_pct(&self) -> f64 {
        let slowest = self.ranks.iter().map(|r| r.seconds).fold(0.0, f64::max);
        let fastest = self
            .ranks
            .iter()
            .map(|r| r.seconds)
            .fold(f64::INFINITY, f64::min);
        if fastest > 0.0 && fastest.is_finite() {
            (slowest / fastest - 1.0) * 100.0
        } else {
            0.0
        }
    }
}

/// The gathered figures (per rank, per epoch: samples, bytes, seconds) by epoch.
fn epoch_figures<'r>(
    own: &'r [crate::results::RunRow],
    all: &[f64],
    hosts: &[String],
) -> Vec<EpochFigures<'r>> {
    let epochs = own.len();
    own.iter()
        .enumerate()
        .map(|(epoch, row)| EpochFigures {
            row,
            ranks: hosts
                .iter()
                .enumerate()
                .map(|(r, host)| {
                    let at = (r * epochs + epoch) * FIGURES;
                    RankFigures {
                        host: host.clone(),
                        samples: all[at],
                        bytes: all[at + 1],
                        seconds: all[at + 2],
                    }
                })
                .collect(),
        })
        .collect()
}

/// ranks.csv rows: per epoch, one per rank and the aggregate.
fn rank_rows(
    run_id: &str,
    workload: &str,
    strategy: &Strategy,
    opts: &RunOptions,
    epochs: &[EpochFigures],
) -> Vec<RankRow> {
    let mut out = Vec::new();
    for (epoch, e) in epochs.iter().enumerate() {
        let spread = e.spread_pct();
        let line = |rank: String, f: &RankFigures| RankRow {
            run_id: run_id.to_string(),
            workload: workload.to_string(),
            strategy: strategy.name.clone(),
            codec: e.row.codec,
            threads: opts.threads,
            cache: e.row.cache,
            epoch: epoch as u64,
            ranks: e.ranks.len(),
            rank,
            host: f.host.clone(),
            samples: f.samples.round() as u64,
            bytes: f.bytes.round() as u64,
            online_s: f.seconds,
            throughput_sps: f.sps(),
            mb_s: f.mb_s(),
            straggler_spread_pct: spread,
        };
        for (r, f) in e.ranks.iter().enumerate() {
            out.push(line(r.to_string(), f));
        }
        out.push(line("all".into(), &e.all()));
    }
    out
}

/// The lines rank 0 prints for one strategy.
fn describe(strategy: &Strategy, epochs: &[EpochFigures]) -> String {
    let mut out = String::new();
    for (epoch, e) in epochs.iter().enumerate() {
        let all = e.all();
        let sps: Vec<f64> = e.ranks.iter().map(RankFigures::sps).collect();
        out.push_str(&format!(
            "{} epoch {epoch} ({}, {} ranks): {:.3} samples/s in all, {:.3} MB/s; per rank {:.1} to {:.1} samples/s; straggler spread {:.2} %\n",
            strategy.name,
            e.row.cache,
            e.ranks.len(),
            all.sps(),
            all.mb_s(),
            sps.iter().copied().fold(f64::INFINITY, f64::min),
            sps.iter().copied().fold(0.0, f64::max),
            e.spread_pct()
        ));
    }
    out
}

/// Where ranks.csv is, for messages.
pub fn table_path(out: &Path) -> std::path::PathBuf {
    out.join(results::RANKS)
}
