//! Pairing two folders' cells and judging each pair: the settings compared across, the
//! ratio B/A with its interval and test, the correction over all pairs, and the verdicts.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use crate::analysis::cells::{Cell, Results};
use crate::analysis::stats::LogEstimate;

use super::conclusions::{conclusions_of, Conclusions};

/// Significance level of the verdicts, after the correction for multiple comparisons.
pub const ALPHA: f64 = 0.05;
pub use crate::analysis::stats::DEFAULT_NOISE;

/// The setting two folders are paired across: the cells match on every other one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Across {
    /// Every setting equal; the folders differ in the machine (or the version) that ran them.
    #[default]
    Machine,
    /// Worker threads.
    Threads,
    /// The emulated storage profile (`local` for the disk as it is).
    Storage,
    /// The codec of the stored strategies.
    Codec,
    /// The loader of the online phase (`native`, `torch`).
    Loader,
}

impl Across {
    pub(super) fn name(self) -> &'static str {
        match self {
            Across::Machine => "machine",
            Across::Threads => "threads",
            Across::Storage => "storage",
            Across::Codec => "codec",
            Across::Loader => "loader",
        }
    }
}

/// How the p-values of all pairs tested are corrected for their number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Holm's step-down method: controls the chance of any false "faster" or "slower" (the
    /// family-wise error rate) at alpha.
    #[default]
    Holm,
    /// Benjamini and Hochberg's: controls the expected share of false ones among those called
    /// (the false discovery rate) at alpha; calls more changes when many are real.
    Bh,
}

impl Correction {
    pub(super) fn text(self) -> &'static str {
        match self {
            Correction::Holm => "Holm",
            Correction::Bh => "Benjamini-Hochberg",
        }
    }

    /// Adjusted p-values, in the order given.
    pub fn adjust(self, p: &[f64]) -> Vec<f64> {
        let m = p.len();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
        let mut adjusted = vec![0.0; m];
        match self {
            Correction::Holm => {
                let mut running: f64 = 0.0;
                for (rank, &i) in order.iter().enumerate() {
                    running = running.max(((m - rank) as f64 * p[i]).min(1.0));
                    adjusted[i] = running;
                }
            }
            Correction::Bh => {
                let mut running: f64 = 1.0;
                for (rank, &i) in order.iter().enumerate().rev() {
                    running = running.min((m as f64 / (rank + 1) as f64 * p[i]).min(1.0));
                    adjusted[i] = running;
                }
            }
        }
        adjusted
    }
}

/// What `compare` is asked.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    pub across: Across,
    /// With `across`: the value taken from A and the one taken from B (needed when a folder
    /// holds several, as one sweep over threads does; A and B may then be the same folder).
    pub values: Option<(String, String)>,
    /// [`DEFAULT_NOISE`] unless given.
    pub noise: f64,
    pub correction: Correction,
}

impl Default for CompareOptions {
    fn default() -> CompareOptions {
        CompareOptions {
            across: Across::Machine,
            values: None,
            noise: DEFAULT_NOISE,
            correction: Correction::Holm,
        }
    }
}

/// The verdict on one pair of cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeVerdict {
    /// B is faster: significant after the correction and the whole CI above 1 + noise.
    Faster,
    Slower,
    /// Significant after the correction, but the CI reaches into the noise band.
    WithinNoise,
    /// Not significant after the correction.
    NoChange,
    /// A side has one trial: no spread to judge by.
    TooFewTrials,
    /// A side's epochs last under [`MIN_EPOCH_S`]: start-up as much as throughput.
    EpochsTooShort,
}

impl ChangeVerdict {
    pub fn text(self) -> &'static str {
        match self {
            ChangeVerdict::Faster => "faster",
            ChangeVerdict::Slower => "slower",
            ChangeVerdict::WithinNoise => "within noise",
            ChangeVerdict::NoChange => "no change",
            ChangeVerdict::TooFewTrials => "too few trials",
            ChangeVerdict::EpochsTooShort => "epochs too short",
        }
    }

    pub(super) fn is_change(self) -> bool {
        matches!(self, ChangeVerdict::Faster | ChangeVerdict::Slower)
    }
}

/// Every setting of a cell that pairing looks at, as text, in the order columns show them. The
/// samples an epoch read are not one: stores sized by time (`--min-epoch-s`) hold different
/// counts from sweep to sweep, and throughput is per sample. They are shown beside the pair.
pub(super) const SETTINGS: [&str; 11] = [
    "workload", "storage", "consumer", "strategy", "codec", "threads", "cache", "epoch", "shards",
    "loader", "memory",
];

/// A cell's settings ([`SETTINGS`]) as text.
fn settings(cell: &Cell, shards: usize) -> [String; 11] {
    let k = &cell.key;
    [
        k.workload.clone(),
        k.condition
            .storage
            .clone()
            .unwrap_or_else(|| crate::results::labels::LOCAL_STORAGE.to_string()),
        k.condition
            .consumer
            .map_or_else(|| "none".to_string(), |c| c.to_string()),
        k.strategy.clone(),
        k.codec.to_string(),
        k.threads.to_string(),
        k.cache.to_string(),
        k.epoch.to_string(),
        shards.to_string(),
        k.condition
            .loader
            .clone()
            .unwrap_or_else(|| crate::results::rows::NATIVE_LOADER.to_string()),
        k.condition
            .memory_mb
            .map_or_else(|| "machine".to_string(), |mb| format!("{mb} MB")),
    ]
}

/// A setting's value as a plot label: counts with their unit (`2 threads`, `epoch 1`,
/// `16 shards`), names as they are, the rest with the setting's name (`storage local`).
pub(super) fn labelled(i: usize, value: &str) -> String {
    match SETTINGS[i] {
        "threads" => format!("{value} thread{}", if value == "1" { "" } else { "s" }),
        "shards" => format!("{value} shard{}", if value == "1" { "" } else { "s" }),
        "epoch" => format!("epoch {value}"),
        "workload" | "strategy" | "cache" => value.to_string(),
        name => format!("{name} {value}"),
    }
}

pub(super) fn across_index(across: Across) -> Option<usize> {
    match across {
        Across::Machine => None,
        Across::Threads => Some(5),
        Across::Storage => Some(1),
        Across::Codec => Some(4),
        Across::Loader => Some(9),
    }
}

/// One cell with its settings.
struct Entry<'a> {
    cell: &'a Cell,
    settings: [String; 11],
}

fn entries<'a>(results: &Results, cells: &'a [Cell]) -> Vec<Entry<'a>> {
    cells
        .iter()
        .map(|cell| {
            let shards = cell.rows.first().map_or(0, |&i| results.rows[i].shards);
            Entry {
                cell,
                settings: settings(cell, shards),
            }
        })
        .collect()
}

/// One pair of cells and its verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub workload: String,
    pub storage: String,
    pub consumer: String,
    pub strategy: String,
    pub codec: String,
    pub threads: String,
    pub cache: String,
    pub epoch: String,
    pub shards: String,
    pub loader: String,
    /// The memory the runs could use: `machine`, or the limit (`256 MB`).
    pub memory: String,
    /// Samples one epoch read in A and in B.
    pub a_samples: u64,
    pub b_samples: u64,
    /// The setting compared across: its value in A and in B (equal to the column's value when
    /// comparing machines).
    pub a_value: String,
    pub b_value: String,
    pub a_samples_per_s: f64,
    pub a_trials: usize,
    pub b_samples_per_s: f64,
    pub b_trials: usize,
    /// Mean throughput B / mean throughput A.
    pub ratio: f64,
    pub ci95_lo: Option<f64>,
    pub ci95_hi: Option<f64>,
    /// Two-sided p of the log ratio being 0, before the correction.
    pub p: Option<f64>,
    /// After the correction over every pair tested.
    pub p_adjusted: Option<f64>,
    pub verdict: ChangeVerdict,
}

impl Change {
    pub(super) fn column(&self, i: usize) -> &str {
        [
            &self.workload,
            &self.storage,
            &self.consumer,
            &self.strategy,
            &self.codec,
            &self.threads,
            &self.cache,
            &self.epoch,
            &self.shards,
            &self.loader,
            &self.memory,
        ][i]
    }
}

/// The comparison: pairs, judged, and what was left unpaired.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub a_machine: Option<String>,
    pub b_machine: Option<String>,
    pub across: Across,
    pub alpha: f64,
    pub noise: f64,
    pub correction: Correction,
    /// Pairs the correction counted (both sides with two or more trials of long enough epochs).
    pub tested: usize,
    pub only_in_a: usize,
    pub only_in_b: usize,
    pub changes: Vec<Change>,
    /// Comparing machines: what each folder concludes (findings, best strategies), for the
    /// Markdown; computed from the folders as loaded here.
    #[serde(skip)]
    pub conclusions: Option<(Conclusions, Conclusions)>,
}

/// Judges paired cells: log-ratio CI and test, the correction over the testable pairs, then
/// the noise threshold.
fn judge(pairs: Vec<(&Entry, &Entry)>, opts: &CompareOptions) -> Vec<Change> {
    let mut changes: Vec<Change> = Vec::new();
    let mut tested: Vec<(usize, f64)> = Vec::new();
    let index = across_index(opts.across);
    for (ea, eb) in pairs {
        let (ca, cb) = (ea.cell, eb.cell);
        let estimate = LogEstimate::of_mean(&cb.throughput)
            .zip(LogEstimate::of_mean(&ca.throughput))
            .map(|(b, a)| b.over(&a));
        let short = !(ca.long_enough() && cb.long_enough());
        let (ci, p) = match estimate {
            Some(e) => (Some(e.ci95()), Some(e.p_value_of_one())),
            None => (None, None),
        };
        // Judged pairs start as "no change"; the correction below decides them.
        let verdict = match p {
            _ if short => ChangeVerdict::EpochsTooShort,
            None => ChangeVerdict::TooFewTrials,
            Some(p) => {
                tested.push((changes.len(), p));
                ChangeVerdict::NoChange
            }
        };
        let [workload, storage, consumer, strategy, codec, threads, cache, epoch, shards, loader, memory] =
            eb.settings.clone();
        changes.push(Change {
            workload,
            storage,
            consumer,
            strategy,
            codec,
            threads,
            cache,
            epoch,
            shards,
            loader,
            memory,
            a_samples: ca.samples,
            b_samples: cb.samples,
            a_value: index.map_or_else(String::new, |i| ea.settings[i].clone()),
            b_value: index.map_or_else(String::new, |i| eb.settings[i].clone()),
            a_samples_per_s: ca.throughput.mean,
            a_trials: ca.throughput.n,
            b_samples_per_s: cb.throughput.mean,
            b_trials: cb.throughput.n,
            ratio: cb.throughput.mean / ca.throughput.mean,
            ci95_lo: ci.map(|c| c.0),
            ci95_hi: ci.map(|c| c.1),
            p,
            p_adjusted: None,
            verdict,
        });
    }
    let adjusted = opts
        .correction
        .adjust(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
    let (up, down) = (1.0 + opts.noise, 1.0 / (1.0 + opts.noise));
    for ((i, _), q) in tested.into_iter().zip(adjusted) {
        let c = &mut changes[i];
        c.p_adjusted = Some(q);
        let (lo, hi) = (c.ci95_lo.unwrap_or(0.0), c.ci95_hi.unwrap_or(f64::INFINITY));
        c.verdict = if q >= ALPHA {
            ChangeVerdict::NoChange
        } else if lo > up {
            ChangeVerdict::Faster
        } else if hi < down {
            ChangeVerdict::Slower
        } else {
            ChangeVerdict::WithinNoise
        };
    }
    changes
}

/// The values of each setting in a folder's entries.
fn values_of(entries: &[Entry]) -> Vec<BTreeSet<String>> {
    (0..SETTINGS.len())
        .map(|i| entries.iter().map(|e| e.settings[i].clone()).collect())
        .collect()
}

fn list(values: &BTreeSet<String>) -> String {
    values.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// Why nothing paired: the settings whose values the folders do not share, and what to do.
fn unpaired_error(a_dir: &Path, b_dir: &Path, a: &[Entry], b: &[Entry], across: Across) -> String {
    // A folder without a valid run has nothing to differ in.
    for (dir, entries) in [(a_dir, a), (b_dir, b)] {
        if entries.is_empty() {
            return format!(
                "{} holds no valid run (its runs.csv has no measured rows): nothing to compare",
                dir.display()
            );
        }
    }
    let (va, vb) = (values_of(a), values_of(b));
    let skip = across_index(across);
    let mut disjoint = Vec::new();
    let mut differing = Vec::new();
    for (i, name) in SETTINGS.iter().enumerate() {
        if Some(i) == skip || va[i] == vb[i] {
            continue;
        }
        let text = format!("{name} (A: {}; B: {})", list(&va[i]), list(&vb[i]));
        if va[i].is_disjoint(&vb[i]) {
            disjoint.push((*name, text));
        } else {
            differing.push(text);
        }
    }
    let mut message = format!(
        "{} and {} have no cell in common",
        a_dir.display(),
        b_dir.display()
    );
    if across != Across::Machine {
        let _ = write!(message, " apart from {}", across.name());
    }
    if !disjoint.is_empty() {
        let texts: Vec<&str> = disjoint.iter().map(|d| d.1.as_str()).collect();
        let _ = write!(message, ": they differ in {}", texts.join("; "));
        if let [(name, _)] = disjoint.as_slice() {
            if let Some(dim) = [
                Across::Threads,
                Across::Storage,
                Across::Codec,
                Across::Loader,
            ]
            .into_iter()
            .find(|d| d.name() == *name)
            {
                let _ = write!(
                    message,
                    "; to compare across it, add `--across {}`",
                    dim.name()
                );
            }
        }
    } else if !differing.is_empty() {
        let _ = write!(
            message,
            ": no cell has the same settings in both; the settings whose values differ: {}",
            differing.join("; ")
        );
    } else {
        message.push_str(": they hold no cells with the same settings");
    }
    message
}

/// The entries of a folder holding the `wanted` value of the setting compared across (all of
/// them when no value is asked for).
fn pick<'a>(
    entries: Vec<Entry<'a>>,
    index: Option<usize>,
    wanted: Option<&str>,
    across: Across,
    dir: &Path,
) -> anyhow::Result<Vec<Entry<'a>>> {
    let (Some(i), Some(wanted)) = (index, wanted) else {
        return Ok(entries);
    };
    let normal = normalize(across, wanted)?;
    let values: BTreeSet<String> = entries.iter().map(|e| e.settings[i].clone()).collect();
    if !values.contains(&normal) {
        anyhow::bail!(
            "{} has no cells with {} {normal}; it has {}",
            dir.display(),
            across.name(),
            list(&values)
        );
    }
    Ok(entries
        .into_iter()
        .filter(|e| e.settings[i] == normal)
        .collect())
}

/// A value of the setting compared across, as the settings write it (`zstd` is `zstd:3`).
fn normalize(across: Across, value: &str) -> anyhow::Result<String> {
    Ok(match across {
        Across::Codec => value
            .parse::<workloads::Codec>()
            .map_err(|e| anyhow::anyhow!("--values: {e}"))?
            .to_string(),
        Across::Threads => value
            .parse::<usize>()
            .map_err(|_| anyhow::anyhow!("--values: `{value}` is not a thread count"))?
            .to_string(),
        Across::Storage | Across::Loader | Across::Machine => value.to_string(),
    })
}

/// Pairs the cells of two folders and judges each pair.
pub fn comparison(a_dir: &Path, b_dir: &Path, opts: &CompareOptions) -> anyhow::Result<Comparison> {
    if opts.values.is_some() && opts.across == Across::Machine {
        anyhow::bail!(
            "--values needs --across threads, storage or codec: \
             the value to take from A and from B"
        );
    }
    if !(opts.noise >= 0.0 && opts.noise < 1.0) {
        anyhow::bail!(
            "--noise {} is not a fraction between 0 and 1 (0.02 is 2 %)",
            opts.noise
        );
    }
    let (ra, rb) = (Results::load(a_dir)?, Results::load(b_dir)?);
    let (cells_a, cells_b) = (ra.cells(), rb.cells());
    let index = across_index(opts.across);
    let (wa, wb) = match &opts.values {
        Some((x, y)) => (Some(x.as_str()), Some(y.as_str())),
        None => (None, None),
    };
    let a = pick(entries(&ra, &cells_a), index, wa, opts.across, a_dir)?;
    let b = pick(entries(&rb, &cells_b), index, wb, opts.across, b_dir)?;
    let reduced = |e: &Entry| -> Vec<String> {
        e.settings
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != index)
            .map(|(_, s)| s.clone())
            .collect()
    };
    let group = |entries: &[Entry], dir: &Path| -> anyhow::Result<BTreeMap<Vec<String>, usize>> {
        let mut map: BTreeMap<Vec<String>, usize> = BTreeMap::new();
        for (i, e) in entries.iter().enumerate() {
            if let Some(&j) = map.get(&reduced(e)) {
                let i = index.unwrap_or(0);
                anyhow::bail!(
                    "{} holds the same cells at {} {} and {}: \
                     say which to compare with `--values A_VALUE,B_VALUE`",
                    dir.display(),
                    opts.across.name(),
                    entries[j].settings[i],
                    e.settings[i]
                );
            }
            map.insert(reduced(e), i);
        }
        Ok(map)
    };
    let (ga, gb) = (group(&a, a_dir)?, group(&b, b_dir)?);
    let pairs: Vec<(&Entry, &Entry)> = gb
        .iter()
        .filter_map(|(key, &j)| ga.get(key).map(|&i| (&a[i], &b[j])))
        .collect();
    if pairs.is_empty() {
        anyhow::bail!("{}", unpaired_error(a_dir, b_dir, &a, &b, opts.across));
    }
    let paired = pairs.len();
    let changes = judge(pairs, opts);
    // The machine, and the stack of each loader in Python: a change of TensorFlow reads as a
    // change of machine does.
    let machine = |r: &Results| {
        r.manifest.machine.as_ref().map(|m| {
            let stacks = crate::analysis::report::lines::loader_stacks(r)
                .map_or_else(String::new, |s| format!("; loaders: {s}"));
            format!(
                "{} ({}, {} logical cores){stacks}",
                m.hostname, m.cpu_model, m.logical_cores
            )
        })
    };
    Ok(Comparison {
        a: a_dir.display().to_string(),
        b: b_dir.display().to_string(),
        a_machine: machine(&ra),
        b_machine: machine(&rb),
        across: opts.across,
        alpha: ALPHA,
        noise: opts.noise,
        correction: opts.correction,
        tested: changes.iter().filter(|c| c.p_adjusted.is_some()).count(),
        only_in_a: ga.len() - paired,
        only_in_b: gb.len() - paired,
        changes,
        conclusions: (opts.across == Across::Machine)
            .then(|| (conclusions_of(&ra, &cells_a), conclusions_of(&rb, &cells_b))),
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
