//! A results folder loaded and aggregated: runs.csv (and offline.csv) rows grouped into cells
//! (workload, strategy, codec, threads, cache, epoch), each summarised over its trials.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::results::RunRow;
use crate::stats::Summary;
use crate::table::Table;

/// Identifies a cell of a sweep.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CellKey {
    pub workload: String,
    /// [`RunRow::condition`]: storage profile and consumer; empty for plain runs.
    pub condition: String,
    pub split: usize,
    pub strategy: String,
    pub codec: String,
    pub threads: usize,
    pub cache: String,
    pub epoch: u64,
}

/// The trials of one cell, summarised.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub key: CellKey,
    pub samples: u64,
    pub storage_bytes: f64,
    #[serde(skip)]
    pub throughput: Summary,
    #[serde(skip)]
    pub online: Summary,
    /// Offline time of the strategy and codec (all materializations), absent for `unprocessed`.
    #[serde(skip)]
    pub offline: Option<Summary>,
    pub invalid_runs: usize,
    pub verified: String,
    /// Indices of the cell's rows in [`Results::rows`].
    #[serde(skip)]
    pub rows: Vec<usize>,
}

impl Cell {
    pub fn mb_per_sample(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.storage_bytes / self.samples as f64 / 1e6
        }
    }
}

fn parse_rows(table: &Table) -> anyhow::Result<Vec<RunRow>> {
    // Columns added later may be missing from an older folder: they read as absent.
    let cols: Vec<Option<usize>> = RunRow::columns()
        .iter()
        .map(|c| match table.column(c) {
            Ok(i) => Ok(Some(i)),
            Err(_) if crate::results::later_columns().contains(&c.as_str()) => Ok(None),
            Err(e) => Err(e),
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::with_capacity(table.rows.len());
    for r in 0..table.rows.len() {
        let s = |i: usize| cols[i].map_or_else(String::new, |c| table.text(r, c).to_string());
        let maybe = |i: usize| -> anyhow::Result<Option<f64>> {
            Ok(match cols[i] {
                Some(c) => table.number(r, c)?,
                None => None,
            })
        };
        let n = |i: usize| -> anyhow::Result<f64> { Ok(maybe(i)?.unwrap_or(0.0)) };
        let or = |i: usize, default: &str| {
            let v = s(i);
            if v.is_empty() {
                default.to_string()
            } else {
                v
            }
        };
        rows.push(RunRow {
            run_id: s(0),
            started_utc: s(1),
            workload: s(2),
            strategy: s(3),
            split: n(4)? as usize,
            codec: s(5),
            shards: n(6)? as usize,
            threads: n(7)? as usize,
            samples: n(8)? as u64,
            trial: n(9)? as usize,
            epoch: n(10)? as u64,
            cache: s(11),
            seed: n(12)? as u64,
            offline_s: n(13)?,
            offline_reused: s(14) == "true",
            storage_bytes: n(15)? as u64,
            online_s: n(16)?,
            throughput_sps: n(17)?,
            read_bytes: n(18)? as u64,
            read_chars: n(19)? as u64,
            output_bytes: n(20)? as u64,
            cpu_user_s: n(21)?,
            cpu_sys_s: n(22)?,
            evict_method: s(23),
            residency_before_pct: n(24)?,
            residency_after_pct: n(25)?,
            valid: s(26) == "true",
            verified: s(27),
            storage: or(28, workloads::storage::LOCAL),
            consumer: or(29, "-"),
            au_pct: maybe(30)?,
            stall_pct: maybe(31)?,
            first_batch_s: maybe(32)?,
            batch_wait_p50_ms: maybe(33)?,
            batch_wait_p99_ms: maybe(34)?,
            device_read_mb_s: maybe(35)?,
            cpu_busy_pct: maybe(36)?,
            skipped_samples: n(37)? as u64,
        });
    }
    Ok(rows)
}

/// A results folder: its rows, offline materializations and manifest.
pub struct Results {
    pub rows: Vec<RunRow>,
    /// (workload, strategy, codec) -> offline seconds of each materialization.
    pub offline: OfflineTimes,
    pub manifest: serde_json::Value,
    /// (run id, epoch) -> that epoch's stages, from `stages.csv` (the last lines of a run id win).
    pub stages: StagesByRun,
    /// (run id, epoch) of online phases -> (MB read by the device, seconds sampled, CPU busy
    /// percent x seconds), from `samples.csv`.
    pub system: SystemTotals,
}

/// Offline seconds of each materialization per (workload, strategy, codec).
pub type OfflineTimes = BTreeMap<(String, String, String), Vec<f64>>;
/// Stages of each (run id, epoch).
pub type StagesByRun = BTreeMap<(String, u64), Vec<crate::attribution::Stage>>;
/// Online phases' (MB read by the device, seconds sampled, CPU busy % x seconds) per (run id,
/// epoch).
pub type SystemTotals = BTreeMap<(String, u64), (f64, f64, f64)>;

/// `dir/name` parsed, or `None` when the folder has no such file.
fn optional_table(dir: &Path, name: &str) -> anyhow::Result<Option<Table>> {
    let path = dir.join(name);
    Ok(if path.exists() {
        Some(Table::read(&path)?)
    } else {
        None
    })
}

/// Offline seconds of each materialization per (workload, strategy, codec): from offline.csv,
/// or without it (runs of `prepbench run`) from the runs that made their store.
fn load_offline(table: Option<Table>, rows: &[RunRow]) -> anyhow::Result<OfflineTimes> {
    let mut offline = OfflineTimes::new();
    let Some(t) = table else {
        let mut seen = std::collections::HashSet::new();
        for row in rows.iter().filter(|r| r.split > 0 && !r.offline_reused) {
            if seen.insert(row.run_id.clone()) {
                offline
                    .entry((
                        row.workload.clone(),
                        row.strategy.clone(),
                        row.codec.clone(),
                    ))
                    .or_default()
                    .push(row.offline_s);
            }
        }
        return Ok(offline);
    };
    let (w, s, c, o) = (
        t.column("workload")?,
        t.column("strategy")?,
        t.column("codec")?,
        t.column("offline_s")?,
    );
    for r in 0..t.rows.len() {
        let key = (
            t.text(r, w).to_string(),
            t.text(r, s).to_string(),
            t.text(r, c).to_string(),
        );
        offline
            .entry(key)
            .or_default()
            .push(t.number(r, o)?.unwrap_or(0.0));
    }
    Ok(offline)
}

/// stages.csv by (run id, epoch); a rerun of an interrupted run wrote its stages again, and
/// its last lines win.
fn load_stages(table: Option<Table>) -> anyhow::Result<StagesByRun> {
    let mut stages = StagesByRun::new();
    let Some(t) = table else {
        return Ok(stages);
    };
    let (id, ep, st, kind, secs) = (
        t.column("run_id")?,
        t.column("epoch")?,
        t.column("stage")?,
        t.column("kind")?,
        t.column("seconds")?,
    );
    for r in 0..t.rows.len() {
        let key = (
            t.text(r, id).to_string(),
            t.number(r, ep)?.unwrap_or(0.0) as u64,
        );
        let kind = match t.text(r, kind) {
            "io" => "io",
            "cpu" => "cpu",
            "wait" => "wait",
            _ => "consumer",
        };
        let stage = crate::attribution::Stage {
            name: t.text(r, st).to_string(),
            kind,
            seconds: t.number(r, secs)?.unwrap_or(0.0),
        };
        let list = stages.entry(key).or_default();
        match list.iter_mut().find(|s| s.name == stage.name) {
            Some(old) => *old = stage,
            None => list.push(stage),
        }
    }
    Ok(stages)
}

/// samples.csv's online rows by (run id, epoch): MB read, seconds, CPU busy % x seconds.
fn load_system(table: Option<Table>) -> anyhow::Result<SystemTotals> {
    let mut system = SystemTotals::new();
    let Some(t) = table else {
        return Ok(system);
    };
    let (id, ep, phase, secs, read, busy) = (
        t.column("run_id")?,
        t.column("epoch")?,
        t.column("phase")?,
        t.column("interval_s")?,
        t.column("read_mb_s")?,
        t.column("cpu_busy_pct")?,
    );
    for r in 0..t.rows.len() {
        if t.text(r, phase) != "online" {
            continue;
        }
        let Some(epoch) = t.number(r, ep)? else {
            continue;
        };
        let s = t.number(r, secs)?.unwrap_or(0.0);
        let e = system
            .entry((t.text(r, id).to_string(), epoch as u64))
            .or_default();
        e.0 += t.number(r, read)?.unwrap_or(0.0) * s;
        e.1 += s;
        e.2 += t.number(r, busy)?.unwrap_or(0.0) * s;
    }
    Ok(system)
}

impl Results {
    pub fn load(dir: &Path) -> anyhow::Result<Results> {
        let runs = dir.join("runs.csv");
        let table = Table::read(&runs)
            .with_context(|| format!("{} holds no prepbench results", dir.display()))?;
        let rows = parse_rows(&table)?;
        let offline = load_offline(optional_table(dir, "offline.csv")?, &rows)?;
        let manifest = std::fs::read_to_string(dir.join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::Value::Null);
        Ok(Results {
            rows,
            offline,
            manifest,
            stages: load_stages(optional_table(dir, "stages.csv")?)?,
            system: load_system(optional_table(dir, "samples.csv")?)?,
        })
    }

    /// The rows of one cell.
    pub fn cell_rows<'r>(&'r self, cell: &'r Cell) -> impl Iterator<Item = &'r RunRow> + 'r {
        cell.rows.iter().filter_map(|&i| self.rows.get(i))
    }

    /// Mean device read rate (MB/s) and CPU busy share (%) over a cell's sampled online epochs.
    pub fn cell_system(&self, cell: &Cell) -> Option<(f64, f64)> {
        let (mut mb, mut seconds, mut busy) = (0.0, 0.0, 0.0);
        for row in self.cell_rows(cell) {
            if let Some((m, s, b)) = self.system.get(&(row.run_id.clone(), row.epoch)) {
                mb += m;
                seconds += s;
                busy += b;
            }
        }
        (seconds > 0.0).then(|| (mb / seconds, busy / seconds))
    }

    /// The stages of every run of a cell summed over its trials, with the cell's wall time.
    pub fn cell_stages(&self, cell: &Cell) -> Option<(Vec<crate::attribution::Stage>, f64)> {
        let mut total: Vec<crate::attribution::Stage> = Vec::new();
        let mut wall = 0.0;
        for row in self.cell_rows(cell) {
            let Some(stages) = self.stages.get(&(row.run_id.clone(), row.epoch)) else {
                continue;
            };
            wall += row.online_s;
            for s in stages {
                match total.iter_mut().find(|t| t.name == s.name) {
                    Some(t) => t.seconds += s.seconds,
                    None => total.push(s.clone()),
                }
            }
        }
        (!total.is_empty()).then_some((total, wall))
    }

    /// Every (workload, condition) measured, in the order first seen.
    pub fn conditions(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for row in &self.rows {
            let pair = (row.workload.clone(), row.condition());
            if !out.contains(&pair) {
                out.push(pair);
            }
        }
        out
    }

    /// Every cell, ordered by workload, split, codec, threads, cache, epoch.
    pub fn cells(&self) -> Vec<Cell> {
        let mut groups: BTreeMap<CellKey, Vec<usize>> = BTreeMap::new();
        for (index, row) in self.rows.iter().enumerate() {
            let key = CellKey {
                workload: row.workload.clone(),
                condition: row.condition(),
                split: row.split,
                strategy: row.strategy.clone(),
                codec: row.codec.clone(),
                threads: row.threads,
                cache: row.cache.clone(),
                epoch: row.epoch,
            };
            groups.entry(key).or_default().push(index);
        }
        groups
            .into_iter()
            .filter_map(|(key, indices)| {
                let rows: Vec<&RunRow> = indices.iter().map(|&i| &self.rows[i]).collect();
                let throughput =
                    Summary::of(&rows.iter().map(|r| r.throughput_sps).collect::<Vec<_>>()).ok()?;
                let online =
                    Summary::of(&rows.iter().map(|r| r.online_s).collect::<Vec<_>>()).ok()?;
                let offline = self
                    .offline
                    .get(&(
                        key.workload.clone(),
                        key.strategy.clone(),
                        key.codec.clone(),
                    ))
                    .and_then(|v| Summary::of(v).ok());
                let verified = rows
                    .iter()
                    .map(|r| r.verified.as_str())
                    .find(|v| *v == "fail")
                    .or_else(|| {
                        rows.iter()
                            .map(|r| r.verified.as_str())
                            .find(|v| *v == "pass")
                    })
                    .unwrap_or("-")
                    .to_string();
                Some(Cell {
                    samples: rows[0].samples,
                    storage_bytes: rows.iter().map(|r| r.storage_bytes as f64).sum::<f64>()
                        / rows.len() as f64,
                    throughput,
                    online,
                    offline,
                    invalid_runs: rows.iter().filter(|r| !r.valid).count(),
                    verified,
                    key,
                    rows: indices,
                })
            })
            .collect()
    }
}
