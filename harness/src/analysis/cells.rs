//! A results folder loaded and aggregated: runs.csv (and offline.csv) rows grouped into cells
//! (workload, strategy, codec, threads, cache, epoch), each summarised over its trials.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use workloads::Codec;

use crate::analysis::stats::Summary;
use crate::results::stages::Stage;
use crate::results::{
    CacheState, Condition, Manifest, OfflineRow, Phase, Recorded, RunRow, SampleRow, StageRow,
    Verdict,
};

/// Epochs shorter than this are start-up (threads, shard opens, first reads) as much as
/// throughput: they are reported, marked, and kept out of verdicts and of the model's
/// validation.
pub const MIN_EPOCH_S: f64 = 1.0;

/// Identifies a cell of a sweep.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CellKey {
    pub workload: String,
    /// [`RunRow::condition`]: storage profile and consumer; empty for plain runs.
    #[serde(serialize_with = "as_text")]
    pub condition: Condition,
    pub split: usize,
    pub strategy: String,
    pub codec: Codec,
    pub threads: usize,
    pub cache: CacheState,
    pub epoch: u64,
}

fn as_text<S: serde::Serializer>(condition: &Condition, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(condition)
}

/// The trials of one cell, summarised.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub key: CellKey,
    /// Samples one pass over the input reads (an epoch may repeat passes: `passes`).
    pub samples: u64,
    pub storage_bytes: f64,
    #[serde(skip)]
    pub throughput: Summary,
    #[serde(skip)]
    pub online: Summary,
    /// Seconds to the first sample, where recorded.
    #[serde(skip)]
    pub first_sample: Option<Summary>,
    /// Steady-state samples/s (10th to 90th percentile of arrivals), where recorded.
    #[serde(skip)]
    pub steady: Option<Summary>,
    /// Mean foreign CPU load during its epochs, % of the machine, where recorded.
    pub foreign_load_pct: Option<f64>,
    /// Mean CPU the hypervisor stole during its epochs, % of the machine, where recorded.
    pub steal_pct: Option<f64>,
    /// Offline time of the strategy and codec (all materializations), absent for `unprocessed`.
    #[serde(skip)]
    pub offline: Option<Summary>,
    /// The samples each of those materializations processed (their mean), where offline.csv
    /// records them: the dataset as asked for, whatever size the store its online runs read
    /// (a store cycles over it, a slower loader reads a part of it).
    #[serde(skip)]
    pub offline_samples: Option<f64>,
    pub invalid_runs: usize,
    /// `fail` when any trial failed verification, else `pass` when any passed.
    pub verified: Option<Verdict>,
    /// Indices of the cell's rows in [`Results::rows`].
    #[serde(skip)]
    pub rows: Vec<usize>,
}

impl Cell {
    /// What other processes used and the hypervisor stole during its epochs (means, % of the
    /// machine; the cell's [`RunRow::disturbed_pct`] in its two parts); `None` where neither
    /// was recorded.
    pub fn load(&self) -> Option<(f64, f64)> {
        let (foreign, steal) = (self.foreign_load_pct, self.steal_pct);
        (foreign.is_some() || steal.is_some())
            .then(|| (foreign.unwrap_or(0.0), steal.unwrap_or(0.0)))
    }

    /// Whether its epochs last long enough to judge by ([`MIN_EPOCH_S`]).
    pub fn long_enough(&self) -> bool {
        self.online.median >= MIN_EPOCH_S
    }

    pub fn mb_per_sample(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.storage_bytes / self.samples as f64 / 1e6
        }
    }
}

/// A results folder: its rows, offline materializations and manifest.
pub struct Results {
    pub rows: Vec<RunRow>,
    /// (workload, strategy, codec) -> offline seconds of each materialization, with the samples
    /// it processed where offline.csv records them.
    pub offline: OfflineTimes,
    pub manifest: Manifest,
    /// (run id, epoch) -> that epoch's stages, from `stages.csv` (the last lines of a run id win).
    pub stages: StagesByRun,
    /// (run id, epoch) of online phases -> (MB read by the device, seconds sampled, CPU busy
    /// percent x seconds), from `samples.csv`.
    pub system: SystemTotals,
    /// Rows of runs.csv left out of every cell, each in words with why: a time or rate that
    /// is not a finite, non-negative number within what a machine can measure (an edited or
    /// damaged file). Reports list them.
    pub left_out: Vec<String>,
}

/// The largest rate and epoch time a row may hold: a trillion samples a second, and 30 years.
/// Beyond them a figure was not measured (an edited file), and near f64's maximum it makes
/// sums overflow into intervals of [-inf, inf].
const MAX_ROW_SPS: f64 = 1e12;
const MAX_ROW_S: f64 = 1e9;

/// Why a row cannot be aggregated, if it cannot: its time or rate is not a finite,
/// non-negative number within what a machine can measure.
fn unusable(row: &RunRow) -> Option<String> {
    let bad = |v: f64, max: f64| !(v.is_finite() && (0.0..=max).contains(&v));
    let fields: Vec<String> = [
        ("throughput_sps", row.throughput_sps, MAX_ROW_SPS),
        ("online_s", row.online_s, MAX_ROW_S),
    ]
    .into_iter()
    .filter(|(_, v, max)| bad(*v, *max))
    .map(|(name, v, _)| format!("{name} {}", crate::units::number(v)))
    .collect();
    (!fields.is_empty()).then(|| {
        format!(
            "run {} epoch {} ({} {}): {}",
            row.run_id,
            row.epoch,
            row.workload,
            row.strategy,
            fields.join(", ")
        )
    })
}

/// The samples one pass of a row's epoch went through (delivered and skipped): the size
/// of its input, the same for every trial of a cell however many passes a cached epoch made.
fn pass_size(row: &RunRow) -> u64 {
    (row.samples + row.skipped_samples) / row.passes.max(1)
}

/// Keeps, in each cell, the rows of the size its latest row read; the rows of another size
/// (a run of `--samples 100` into a folder holding runs of 200) are left out and named, so
/// that no mean or interval mixes epochs of two sizes.
fn one_size_per_cell(rows: Vec<RunRow>, left_out: &mut Vec<String>) -> Vec<RunRow> {
    let mut latest: BTreeMap<CellKey, (&str, u64)> = BTreeMap::new();
    for row in &rows {
        let entry = latest
            .entry(key_of(row))
            .or_insert((row.started_utc.as_str(), pass_size(row)));
        if row.started_utc.as_str() >= entry.0 {
            *entry = (row.started_utc.as_str(), pass_size(row));
        }
    }
    let keep: BTreeMap<CellKey, u64> = latest.into_iter().map(|(k, (_, n))| (k, n)).collect();
    rows.into_iter()
        .filter(|row| {
            let size = keep[&key_of(row)];
            let same = pass_size(row) == size;
            if !same {
                left_out.push(format!(
                    "run {} epoch {} ({} {}, {} threads): {} samples per epoch where the cell's latest runs read {size}; one size per cell (sweep the other size into another --out)",
                    row.run_id,
                    row.epoch,
                    row.workload,
                    row.strategy,
                    row.threads,
                    pass_size(row)
                ));
            }
            same
        })
        .collect()
}

/// A row's cell.
pub(crate) fn key_of(row: &RunRow) -> CellKey {
    CellKey {
        workload: row.workload.clone(),
        condition: row.condition(),
        split: row.split,
        strategy: row.strategy.clone(),
        codec: row.codec,
        threads: row.threads,
        cache: row.cache,
        epoch: row.epoch,
    }
}

/// Offline seconds of each materialization per (workload, strategy, codec).
pub type OfflineTimes = BTreeMap<(String, String, Codec), Vec<(f64, Option<u64>)>>;
/// Stages of each (run id, epoch).
pub type StagesByRun = BTreeMap<(String, u64), Vec<Stage>>;
/// Online phases' (MB read by the device, seconds sampled, CPU busy % x seconds) per (run id,
/// epoch).
pub type SystemTotals = BTreeMap<(String, u64), (f64, f64, f64)>;

/// Offline seconds of each materialization per (workload, strategy, codec): from offline.csv,
/// or without it (runs of `prepbench run`) from the runs that made their store.
fn load_offline(offline: &[OfflineRow], rows: &[RunRow]) -> OfflineTimes {
    let mut times = OfflineTimes::new();
    if offline.is_empty() {
        let mut seen = std::collections::HashSet::new();
        for row in rows.iter().filter(|r| r.split > 0 && !r.offline_reused) {
            if seen.insert(row.run_id.clone()) {
                times
                    .entry((row.workload.clone(), row.strategy.clone(), row.codec))
                    .or_default()
                    .push((row.offline_s, None));
            }
        }
        return times;
    }
    for row in offline {
        times
            .entry((row.workload.clone(), row.strategy.clone(), row.codec))
            .or_default()
            .push((row.offline_s, Some(row.samples)));
    }
    times
}

/// stages.csv by (run id, epoch); a rerun of an interrupted run wrote its stages again, and
/// its last lines win.
fn load_stages(rows: &[StageRow]) -> StagesByRun {
    let mut stages = StagesByRun::new();
    for row in rows {
        let stage = Stage::of_row(row);
        let list = stages.entry((row.run_id.clone(), row.epoch)).or_default();
        match list.iter_mut().find(|s| s.name == stage.name) {
            Some(old) => *old = stage,
            None => list.push(stage),
        }
    }
    stages
}

/// samples.csv's online rows by (run id, epoch): MB read, seconds, CPU busy % x seconds.
fn load_system(rows: &[SampleRow]) -> SystemTotals {
    let mut system = SystemTotals::new();
    for row in rows.iter().filter(|r| r.phase == Phase::Online) {
        let Some(epoch) = row.epoch else {
            continue;
        };
        let e = system.entry((row.run_id.clone(), epoch)).or_default();
        e.0 += row.read_mb_s * row.interval_s;
        e.1 += row.interval_s;
        e.2 += row.cpu_busy_pct * row.interval_s;
    }
    system
}

impl Results {
    pub fn load(dir: &Path) -> anyhow::Result<Results> {
        Ok(Results::of(Recorded::load(dir)?))
    }

    /// The cells' view of a loaded folder: rows that cannot be aggregated, repeated (run,
    /// epoch) rows and rows of another epoch size than their cell's latest are left out, each
    /// named in `left_out`, never pooled.
    pub fn of(recorded: Recorded) -> Results {
        let mut left_out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut rows = Vec::new();
        for row in recorded.runs {
            if let Some(why) = unusable(&row) {
                left_out.push(why);
            } else if !seen.insert((row.run_id.clone(), row.epoch)) {
                left_out.push(format!(
                    "run {} epoch {} ({} {}): a second row of the same run and epoch (a copied or twice-merged line); the first is kept",
                    row.run_id, row.epoch, row.workload, row.strategy
                ));
            } else {
                rows.push(row);
            }
        }
        let rows = one_size_per_cell(rows, &mut left_out);
        Results {
            offline: load_offline(&recorded.offline, &rows),
            stages: load_stages(&recorded.stages),
            system: load_system(&recorded.samples),
            rows,
            manifest: recorded.manifest,
            left_out,
        }
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
    pub fn cell_stages(&self, cell: &Cell) -> Option<(Vec<Stage>, f64)> {
        let mut total: Vec<Stage> = Vec::new();
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
    pub fn conditions(&self) -> Vec<(String, Condition)> {
        crate::analysis::first_seen(
            self.rows
                .iter()
                .map(|row| (row.workload.clone(), row.condition())),
        )
    }

    /// Every cell, ordered by workload, split, codec, threads, cache, epoch.
    pub fn cells(&self) -> Vec<Cell> {
        let mut groups: BTreeMap<CellKey, Vec<usize>> = BTreeMap::new();
        for (index, row) in self.rows.iter().enumerate() {
            groups.entry(key_of(row)).or_default().push(index);
        }
        groups
            .into_iter()
            .filter_map(|(key, indices)| {
                let rows: Vec<&RunRow> = indices.iter().map(|&i| &self.rows[i]).collect();
                // Times and rates: intervals on the log scale, never below zero.
                let throughput = Summary::of_positive(
                    &rows.iter().map(|r| r.throughput_sps).collect::<Vec<_>>(),
                )
                .ok()?;
                let online =
                    Summary::of_positive(&rows.iter().map(|r| r.online_s).collect::<Vec<_>>())
                        .ok()?;
                let optional = |f: fn(&RunRow) -> Option<f64>| {
                    let values: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
                    Summary::of_positive(&values).ok()
                };
                let first_sample = optional(|r| r.first_sample_s);
                let steady = optional(|r| r.steady_sps);
                let foreign_load_pct = optional(|r| r.foreign_load_pct).map(|s| s.mean);
                let steal_pct = optional(|r| r.steal_pct).map(|s| s.mean);
                let made =
                    (self.offline).get(&(key.workload.clone(), key.strategy.clone(), key.codec));
                let offline = made.and_then(|v| {
                    Summary::of_positive(&v.iter().map(|(s, _)| *s).collect::<Vec<_>>()).ok()
                });
                let offline_samples = made.and_then(|v| {
                    let n = v.iter().map(|(_, n)| *n).collect::<Option<Vec<u64>>>()?;
                    (!n.is_empty()).then(|| n.iter().sum::<u64>() as f64 / n.len() as f64)
                });
                let verdicts = || rows.iter().filter_map(|r| r.verified);
                let verified = verdicts()
                    .find(|v| *v == Verdict::Fail)
                    .or_else(|| verdicts().find(|v| *v == Verdict::Pass));
                Some(Cell {
                    // Per pass: an epoch served from a cache may repeat its passes.
                    samples: rows[0].samples / rows[0].passes.max(1),
                    storage_bytes: rows.iter().map(|r| r.storage_bytes as f64).sum::<f64>()
                        / rows.len() as f64,
                    throughput,
                    online,
                    first_sample,
                    steady,
                    foreign_load_pct,
                    steal_pct,
                    offline,
                    offline_samples,
                    invalid_runs: rows.iter().filter(|r| !r.valid).count(),
                    verified,
                    key,
                    rows: indices,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached epoch that repeated its passes counts every pass in `samples`; a cell's
    /// samples (and so its MB per sample) are per pass, the same as its cold epoch's.
    #[test]
    fn cells_count_samples_per_pass() {
        let row = |epoch: u64, cache: CacheState, passes: u64| RunRow {
            workload: "w".into(),
            strategy: "s".into(),
            split: 1,
            epoch,
            cache,
            samples: 100 * passes,
            passes,
            storage_bytes: 1_000_000,
            online_s: 1.0,
            throughput_sps: 100.0 * passes as f64,
            ..RunRow::default()
        };
        let results = Results {
            rows: vec![row(0, CacheState::Cold, 1), row(1, CacheState::Warm, 3)],
            offline: Default::default(),
            manifest: Default::default(),
            stages: Default::default(),
            system: Default::default(),
            left_out: Vec::new(),
        };
        let cells = results.cells();
        assert_eq!(cells.len(), 2);
        for cell in &cells {
            assert_eq!(cell.samples, 100, "{:?}", cell.key);
            assert!((cell.mb_per_sample() - 0.01).abs() < 1e-12);
        }
    }

    /// A row whose rate or time is not a number is left out and named; the rest of its cell
    /// stays (it used to make the whole cell vanish).
    #[test]
    fn rows_with_non_finite_figures_are_left_out_and_named_not_their_cells() {
        let row = |run: &str, sps: f64| RunRow {
            run_id: run.into(),
            workload: "w".into(),
            strategy: "s".into(),
            samples: 100,
            online_s: 1.0,
            throughput_sps: sps,
            ..RunRow::default()
        };
        let results = Results::of(Recorded {
            runs: vec![
                row("a", 100.0),
                row("b", f64::NAN),
                row("c", 110.0),
                row("d", f64::INFINITY),
                row("e", f64::MAX),
                row("f", -1.0),
            ],
            ..Recorded::default()
        });
        let cells = results.cells();
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].throughput.n, 2);
        let (lo, hi) = cells[0].throughput.ci95.expect("two trials");
        assert!(lo > 0.0 && hi < 1e6, "[{lo}, {hi}]");
        assert_eq!(results.left_out.len(), 4, "{:?}", results.left_out);
        assert!(results.left_out[0].contains("run b") && results.left_out[0].contains("NaN"));
        assert!(results.left_out[1].contains("run d") && results.left_out[1].contains("inf"));
        // f64's maximum is named short, not as a 309-digit number.
        assert!(results.left_out[2].contains("run e") && results.left_out[2].contains("1.798e308"));
        assert!(results.left_out[2].len() < 80, "{}", results.left_out[2]);
        assert!(results.left_out[3].contains("run f"));
    }

    /// A row copied twice, and runs of two epoch sizes in one cell, are never pooled: the copy
    /// and the older size are left out and named; cached epochs that made more passes are one
    /// size.
    #[test]
    fn repeated_rows_and_a_second_size_are_left_out_not_pooled() {
        let row = |run: &str, at: &str, samples: u64, passes: u64| RunRow {
            run_id: run.into(),
            started_utc: at.into(),
            workload: "w".into(),
            strategy: "resized".into(),
            samples,
            passes,
            online_s: 1.0,
            throughput_sps: samples as f64,
            ..RunRow::default()
        };
        let results = Results::of(Recorded {
            runs: vec![
                row("a", "2026-01-01T00:00:00Z", 200, 1),
                row("b", "2026-01-01T00:01:00Z", 200, 1),
                row("b", "2026-01-01T00:01:00Z", 200, 1),
                row("c", "2026-01-02T00:00:00Z", 100, 1),
                row("d", "2026-01-02T00:01:00Z", 100, 1),
            ],
            ..Recorded::default()
        });
        let cells = results.cells();
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].throughput.n, 2, "{:?}", results.left_out);
        assert_eq!(cells[0].samples, 100);
        assert_eq!(results.left_out.len(), 3, "{:?}", results.left_out);
        assert!(
            results.left_out[0].contains("run b epoch 0")
                && results.left_out[0].contains("second row")
        );
        assert!(
            results.left_out[1].contains("run a")
                && results.left_out[1]
                    .contains("200 samples per epoch where the cell's latest runs read 100")
        );
        // Warm epochs of 3 and 4 passes over 100 samples: one size, nothing left out.
        let results = Results::of(Recorded {
            runs: vec![
                row("e", "2026-01-01T00:00:00Z", 300, 3),
                row("f", "2026-01-01T00:01:00Z", 400, 4),
            ],
            ..Recorded::default()
        });
        assert!(results.left_out.is_empty(), "{:?}", results.left_out);
        assert_eq!(results.cells()[0].throughput.n, 2);
    }
}
