//! `prepbench compare A B`: two results folders (two machines, two versions, or two settings of
//! one sweep), cell by cell. Cells are paired on every setting (workload, storage profile,
//! consumer, strategy, codec, threads, cache, epoch, shards, samples) but the one compared
//! across; each pair gets the throughput ratio B/A with a 95 % CI on the log scale, a t-test of
//! that log ratio, a multiple-comparison correction over all pairs tested, and a noise
//! threshold, as criterion judges a change.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use crate::analysis::cells::{Cell, Results, MIN_EPOCH_S};
use crate::analysis::findings::{self, Verdict};
use crate::analysis::stats::LogEstimate;
use crate::analysis::svg::{Forest, ForestRow};

/// Significance level of the verdicts, after the correction for multiple comparisons.
pub const ALPHA: f64 = 0.05;
/// Changes smaller than this (as a fraction) are noise, whatever their p-value: criterion's
/// rule (its default is 1 %; a sweep's epochs on a shared machine vary more, docs/measurement.md).
pub const DEFAULT_NOISE: f64 = 0.02;

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
}

impl Across {
    fn name(self) -> &'static str {
        match self {
            Across::Machine => "machine",
            Across::Threads => "threads",
            Across::Storage => "storage",
            Across::Codec => "codec",
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
    fn text(self) -> &'static str {
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

    fn is_change(self) -> bool {
        matches!(self, ChangeVerdict::Faster | ChangeVerdict::Slower)
    }
}

/// Every setting of a cell that pairing looks at, as text, in the order columns show them. The
/// samples an epoch read are not one: stores sized by time (`--min-epoch-s`) hold different
/// counts from sweep to sweep, and throughput is per sample. They are shown beside the pair.
const SETTINGS: [&str; 9] = [
    "workload", "storage", "consumer", "strategy", "codec", "threads", "cache", "epoch", "shards",
];

/// A cell's settings ([`SETTINGS`]) as text.
fn settings(cell: &Cell, shards: usize) -> [String; 9] {
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
    ]
}

/// A setting's value as a plot label: counts with their unit (`2 threads`, `epoch 1`,
/// `16 shards`), names as they are, the rest with the setting's name (`storage local`).
fn labelled(i: usize, value: &str) -> String {
    match SETTINGS[i] {
        "threads" => format!("{value} thread{}", if value == "1" { "" } else { "s" }),
        "shards" => format!("{value} shard{}", if value == "1" { "" } else { "s" }),
        "epoch" => format!("epoch {value}"),
        "workload" | "strategy" | "cache" => value.to_string(),
        name => format!("{name} {value}"),
    }
}

fn across_index(across: Across) -> Option<usize> {
    match across {
        Across::Machine => None,
        Across::Threads => Some(5),
        Across::Storage => Some(1),
        Across::Codec => Some(4),
    }
}

/// One cell with its settings.
struct Entry<'a> {
    cell: &'a Cell,
    settings: [String; 9],
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
    fn column(&self, i: usize) -> &str {
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
}

/// Judges paired cells: log-ratio CI and test, the correction over the testable pairs, then
/// the noise threshold.
fn judge(pairs: Vec<(&Entry, &Entry)>, opts: &CompareOptions) -> Vec<Change> {
    let mut changes: Vec<Change> = Vec::new();
    let mut tested: Vec<(usize, f64)> = Vec::new();
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
        let verdict = if short {
            ChangeVerdict::EpochsTooShort
        } else if p.is_none() {
            ChangeVerdict::TooFewTrials
        } else {
            tested.push((changes.len(), p.unwrap_or(1.0)));
            ChangeVerdict::NoChange
        };
        let [workload, storage, consumer, strategy, codec, threads, cache, epoch, shards] =
            eb.settings.clone();
        let index = across_index(opts.across);
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
            if let Some(dim) = [Across::Threads, Across::Storage, Across::Codec]
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
        Across::Storage | Across::Machine => value.to_string(),
    })
}

/// Pairs the cells of two folders and judges each pair.
pub fn comparison(a_dir: &Path, b_dir: &Path, opts: &CompareOptions) -> anyhow::Result<Comparison> {
    if opts.values.is_some() && opts.across == Across::Machine {
        anyhow::bail!("--values needs --across threads, storage or codec: the value to take from A and from B");
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
                    "{} holds the same cells at {} {} and {}: say which to compare with `--values A_VALUE,B_VALUE`",
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
    let machine = |r: &Results| {
        r.manifest.machine.as_ref().map(|m| {
            format!(
                "{} ({}, {} logical cores)",
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
    })
}

/// Three significant figures, without exponent for the sizes throughput has.
fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn ratio_text(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

impl Comparison {
    fn count(&self, verdict: ChangeVerdict) -> usize {
        self.changes.iter().filter(|c| c.verdict == verdict).count()
    }

    fn method(&self) -> String {
        format!(
            "Ratio B/A of mean throughput per pair of cells, with its 95 % CI on the log scale \
             (delta method, Welch-Satterthwaite degrees of freedom; never negative). Each ratio \
             is tested against 1 (t-test of the log ratio) and the p-values of the {} pairs \
             tested are corrected by {}'s method; a pair is faster or slower when its corrected \
             p is under {} and its whole CI lies beyond the ±{} % noise threshold, within noise \
             when significant but not beyond it. Pairs with one trial or epochs under {} s on \
             either side are listed but not judged.",
            self.tested,
            self.correction.text(),
            self.alpha,
            self.noise * 100.0,
            MIN_EPOCH_S
        )
    }

    fn summary(&self) -> String {
        let mut parts: Vec<String> = [
            ChangeVerdict::Faster,
            ChangeVerdict::Slower,
            ChangeVerdict::WithinNoise,
            ChangeVerdict::NoChange,
            ChangeVerdict::TooFewTrials,
            ChangeVerdict::EpochsTooShort,
        ]
        .into_iter()
        .filter_map(|v| {
            let n = self.count(v);
            (n > 0).then(|| format!("{n} {}", v.text()))
        })
        .collect();
        parts.push(format!(
            "{} cells only in A, {} only in B",
            self.only_in_a, self.only_in_b
        ));
        format!("{} pairs: {}.", self.changes.len(), parts.join(", "))
    }

    fn header(&self) -> String {
        let mut cells: Vec<String> = SETTINGS
            .iter()
            .map(|name| {
                if across_index(self.across).map(|i| SETTINGS[i]) == Some(*name) {
                    format!("{name} A → B")
                } else {
                    name.to_string()
                }
            })
            .collect();
        cells.extend(
            [
                "samples per epoch A, B",
                "A samples/s (trials)",
                "B samples/s (trials)",
                "B/A",
                "95 % CI",
                "p",
                "p corrected",
                "verdict",
            ]
            .map(String::from),
        );
        format!("| {} |\n|{}", cells.join(" | "), "---|".repeat(cells.len()))
    }

    fn row(&self, c: &Change) -> String {
        let index = across_index(self.across);
        let mut cells: Vec<String> = (0..SETTINGS.len())
            .map(|i| {
                if Some(i) == index {
                    format!("{} → {}", c.a_value, c.b_value)
                } else {
                    c.column(i).to_string()
                }
            })
            .collect();
        let p = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |p| format!("{p:.3}"));
        cells.extend([
            format!("{}, {}", c.a_samples, c.b_samples),
            format!("{} ({})", rate(c.a_samples_per_s), c.a_trials),
            format!("{} ({})", rate(c.b_samples_per_s), c.b_trials),
            ratio_text(c.ratio),
            match (c.ci95_lo, c.ci95_hi) {
                (Some(lo), Some(hi)) => format!("[{}, {}]", ratio_text(lo), ratio_text(hi)),
                _ => "-".into(),
            },
            p(c.p),
            p(c.p_adjusted),
            if c.verdict.is_change() {
                format!("**{}**", c.verdict.text())
            } else {
                c.verdict.text().to_string()
            },
        ]);
        format!("| {} |", cells.join(" | "))
    }

    /// The comparison as Markdown.
    pub fn markdown(&self) -> anyhow::Result<String> {
        let mut out = String::new();
        let _ = writeln!(out, "# {} (B) vs {} (A)\n", self.b, self.a);
        for (side, machine) in [("A", &self.a_machine), ("B", &self.b_machine)] {
            if let Some(m) = machine {
                let _ = writeln!(out, "- {side} ran on {m}");
            }
        }
        let _ = writeln!(
            out,
            "- Paired across: {}{}\n",
            self.across.name(),
            if self.across == Across::Machine {
                " (every setting equal)".to_string()
            } else {
                format!(
                    " (every other setting equal; the {} column shows A → B)",
                    self.across.name()
                )
            }
        );
        let _ = writeln!(out, "{}\n\n{}\n", self.method(), self.summary());
        let mut significant: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| c.verdict.is_change())
            .collect();
        significant.sort_by(|x, y| y.ratio.ln().abs().total_cmp(&x.ratio.ln().abs()));
        let _ = writeln!(out, "## Largest significant changes\n");
        if significant.is_empty() {
            let _ = writeln!(
                out,
                "None: no pair is significant after the correction and beyond the noise threshold.\n"
            );
        } else {
            let _ = writeln!(out, "{}", self.header());
            for c in significant.iter().take(10) {
                let _ = writeln!(out, "{}", self.row(c));
            }
            let _ = writeln!(out);
        }
        if self.across == Across::Machine {
            let _ = writeln!(
                out,
                "{}",
                conclusions(Path::new(&self.a), Path::new(&self.b))?
            );
        }
        let _ = writeln!(out, "## Every pair\n\n{}", self.header());
        for c in &self.changes {
            let _ = writeln!(out, "{}", self.row(c));
        }
        Ok(out)
    }

    /// Every pair as CSV, one row each, every setting a column.
    pub fn csv(&self) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for c in &self.changes {
            w.serialize(c)?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// A forest plot of the ratios with their CIs, the noise band shaded, coloured by verdict.
    /// Rows are labelled by the settings that vary among the pairs; the others are the subtitle.
    pub fn plot(&self) -> String {
        let index = across_index(self.across);
        let varying: Vec<usize> = (0..SETTINGS.len())
            .filter(|&i| Some(i) != index)
            .filter(|&i| {
                self.changes
                    .iter()
                    .map(|c| c.column(i))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect();
        let constant: Vec<String> = (0..SETTINGS.len())
            .filter(|&i| Some(i) != index && !varying.contains(&i))
            .filter_map(|i| {
                let c = self.changes.first()?;
                Some(labelled(i, c.column(i)))
            })
            .collect();
        let rows = self
            .changes
            .iter()
            .map(|c| ForestRow {
                label: varying
                    .iter()
                    .map(|&i| labelled(i, c.column(i)))
                    .collect::<Vec<_>>()
                    .join(", "),
                value: c.ratio,
                interval: c.ci95_lo.zip(c.ci95_hi),
                group: match c.verdict {
                    ChangeVerdict::Faster => 0,
                    ChangeVerdict::Slower => 1,
                    ChangeVerdict::WithinNoise | ChangeVerdict::NoChange => 2,
                    ChangeVerdict::TooFewTrials | ChangeVerdict::EpochsTooShort => 3,
                },
            })
            .collect();
        let title = match self.across {
            Across::Machine => "Throughput B / A per cell".to_string(),
            across => match self.changes.first() {
                Some(c) => format!(
                    "Throughput across {} ({} → {}): B / A per cell",
                    across.name(),
                    c.a_value,
                    c.b_value
                ),
                None => format!("Throughput across {}: B / A per cell", across.name()),
            },
        };
        Forest {
            title,
            subtitle: format!("A: {}; B: {}; all: {}", self.a, self.b, constant.join(", ")),
            x_label: "throughput ratio B / A (log scale), 95 % CI".into(),
            rows,
            groups: vec![
                ("faster".into(), "#2ca02c"),
                ("slower".into(), "#d62728"),
                ("no change or within noise".into(), "#555555"),
                ("not judged".into(), "#aaaaaa"),
            ],
            reference: 1.0,
            band: Some((1.0 / (1.0 + self.noise), 1.0 + self.noise)),
            band_label: format!("±{} % noise", self.noise * 100.0),
        }
        .to_svg()
    }
}

/// What a results folder concludes: every sub-claim's verdict, and per workload and condition
/// the fastest strategy cold (codec none, at the most threads, epochs long enough).
struct Conclusions {
    verdicts: Vec<(String, Verdict)>,
    best: Vec<(String, String)>,
}

fn conclusions_of(dir: &Path) -> anyhow::Result<Conclusions> {
    let results = Results::load(dir)?;
    let cells = results.cells();
    let views = crate::analysis::report::views(&results, &cells);
    let found = findings::measured::judge(&results, &views);
    let verdicts = found
        .iter()
        .flat_map(|f| &f.sub_claims)
        .map(|s| (s.id.to_string(), s.verdict))
        .collect();
    let best = views
        .iter()
        .filter_map(|v| {
            let t = v.max_threads();
            let fastest = v
                .strategies
                .iter()
                .filter_map(|(_, s)| v.cold(s, workloads::Codec::None, t))
                .filter(|c| c.long_enough())
                .max_by(|x, y| x.throughput.mean.total_cmp(&y.throughput.mean))?;
            Some((v.title(), fastest.key.strategy.clone()))
        })
        .collect();
    Ok(Conclusions { verdicts, best })
}

/// Whether the two folders conclude the same: the paper's findings' verdicts (for the paper's
/// workloads only) and each workload's best strategy, side by side, with how many agree.
fn conclusions(a_dir: &Path, b_dir: &Path) -> anyhow::Result<String> {
    let (a, b) = (conclusions_of(a_dir)?, conclusions_of(b_dir)?);
    let mut out = String::new();
    let agree = |x: &str, y: &str| if x == y { "yes" } else { "**no**" };
    if !a.verdicts.is_empty() {
        let _ = writeln!(
            out,
            "## The paper's findings\n\n| claim | A | B | same |\n|---|---|---|---|"
        );
        let mut same = 0;
        for (id, va) in &a.verdicts {
            let vb = b
                .verdicts
                .iter()
                .find(|(i, _)| i == id)
                .map_or("-", |(_, v)| v.text());
            same += usize::from(va.text() == vb);
            let _ = writeln!(
                out,
                "| {id} | {} | {vb} | {} |",
                va.text(),
                agree(va.text(), vb)
            );
        }
        let _ = writeln!(out, "\n{same} of {} verdicts agree.\n", a.verdicts.len());
    }
    let _ = writeln!(
        out,
        "## Best strategy (cold, codec none, most threads, epochs of {MIN_EPOCH_S} s or more)\n\n| workload | A | B | same |\n|---|---|---|---|"
    );
    let (mut common, mut same) = (0, 0);
    for (name, sa) in &a.best {
        let Some((_, sb)) = b.best.iter().find(|(n, _)| n == name) else {
            continue;
        };
        common += 1;
        same += usize::from(sa == sb);
        let _ = writeln!(out, "| {name} | {sa} | {sb} | {} |", agree(sa, sb));
    }
    let _ = writeln!(out, "\n{same} of {common} best strategies agree.\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::cells::CellKey;
    use crate::analysis::stats::Summary;

    fn cell(strategy: &str, threads: usize, values: &[f64]) -> Cell {
        Cell {
            key: CellKey {
                workload: "w".into(),
                condition: Default::default(),
                split: 1,
                strategy: strategy.into(),
                codec: workloads::Codec::None,
                threads,
                cache: crate::results::CacheState::Cold,
                epoch: 0,
            },
            samples: 10,
            storage_bytes: 1.0,
            throughput: Summary::of(values).unwrap(),
            // Epochs of 2 s: long enough to judge.
            online: Summary::of(&vec![2.0; values.len()]).unwrap(),
            first_sample: None,
            steady: None,
            foreign_load_pct: None,
            offline: None,
            invalid_runs: 0,
            verified: None,
            rows: Vec::new(),
        }
    }

    fn entry(cell: &Cell) -> Entry<'_> {
        Entry {
            cell,
            settings: settings(cell, 4),
        }
    }

    fn judged(a: &[Cell], b: &[Cell], opts: &CompareOptions) -> Vec<Change> {
        let (ea, eb): (Vec<Entry>, Vec<Entry>) =
            (a.iter().map(entry).collect(), b.iter().map(entry).collect());
        let pairs = ea.iter().zip(eb.iter()).collect();
        judge(pairs, opts)
    }

    #[test]
    fn verdicts_need_significance_after_correction_and_a_change_beyond_the_noise() {
        let a = vec![
            cell("x", 2, &[100.0, 101.0, 99.0, 100.0]),
            cell("y", 2, &[100.0, 110.0, 90.0]),
            cell("z", 2, &[5.0]),
            cell("n", 2, &[100.0, 100.2, 99.8, 100.1]),
        ];
        let b = vec![
            cell("x", 2, &[150.0, 151.0, 149.0, 150.0]),
            cell("y", 2, &[101.0, 111.0, 91.0]),
            cell("z", 2, &[6.0]),
            // 1 % faster, very tight: significant, but inside the 2 % noise band.
            cell("n", 2, &[101.0, 101.2, 100.8, 101.1]),
        ];
        let list = judged(&a, &b, &CompareOptions::default());
        let get = |s: &str| list.iter().find(|c| c.strategy == s).unwrap();
        assert_eq!(get("x").verdict, ChangeVerdict::Faster);
        assert!((get("x").ratio - 1.5).abs() < 1e-12);
        assert_eq!(get("y").verdict, ChangeVerdict::NoChange);
        assert_eq!(get("z").verdict, ChangeVerdict::TooFewTrials);
        assert_eq!(get("n").verdict, ChangeVerdict::WithinNoise);
        assert!(get("n").p.unwrap() < 0.01);
        let mut slow = a[0].clone();
        slow.throughput = Summary::of(&[60.0, 61.0, 59.0, 60.0]).unwrap();
        let list = judged(&a[..1], &[slow], &CompareOptions::default());
        assert_eq!(list[0].verdict, ChangeVerdict::Slower);
        let mut short = b[0].clone();
        short.online = Summary::of(&[0.2; 4]).unwrap();
        let list = judged(&a[..1], &[short], &CompareOptions::default());
        assert_eq!(list[0].verdict, ChangeVerdict::EpochsTooShort);
        assert!(list[0].p_adjusted.is_none(), "not counted in the family");
    }

    /// A deterministic normal draw (Box-Muller over a 64-bit LCG).
    fn normals(seed: u64, n: usize) -> Vec<f64> {
        let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let mut uniform = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u, v) = (uniform(), uniform());
                (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            })
            .collect()
    }

    #[test]
    fn identical_configurations_give_no_changes_where_uncorrected_tests_would() {
        // 56 pairs of 3 trials each from the same distribution (5 % spread), as two sweeps of
        // one configuration on one machine: uncorrected, about 3 of them fall under p 0.05.
        let draw = |seed: u64| -> Vec<f64> {
            normals(seed, 3)
                .iter()
                .map(|z| 500.0 * (1.0 + 0.05 * z))
                .collect()
        };
        let a: Vec<Cell> = (0..56)
            .map(|i| cell(&format!("s{i}"), 2, &draw(2 * i)))
            .collect();
        let b: Vec<Cell> = (0..56)
            .map(|i| cell(&format!("s{i}"), 2, &draw(2 * i + 1)))
            .collect();
        let uncorrected = judged(&a, &b, &CompareOptions::default())
            .iter()
            .filter(|c| c.p.unwrap() < ALPHA)
            .count();
        assert!(
            uncorrected >= 1,
            "the draw should tempt an uncorrected test"
        );
        for correction in [Correction::Holm, Correction::Bh] {
            let opts = CompareOptions {
                correction,
                ..CompareOptions::default()
            };
            let list = judged(&a, &b, &opts);
            assert_eq!(list.len(), 56);
            let called: Vec<_> = list.iter().filter(|c| c.verdict.is_change()).collect();
            assert!(called.is_empty(), "{correction:?}: {} called", called.len());
            for c in &list {
                let (lo, hi) = (c.ci95_lo.unwrap(), c.ci95_hi.unwrap());
                assert!(lo > 0.0 && lo <= c.ratio && c.ratio <= hi);
            }
        }
    }

    #[test]
    fn holm_and_bh_adjust_as_published() {
        let p = [0.01, 0.04, 0.03, 0.005];
        let holm = Correction::Holm.adjust(&p);
        // Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1, running maximum.
        let want = [0.03, 0.06, 0.06, 0.02];
        for (h, w) in holm.iter().zip(want) {
            assert!((h - w).abs() < 1e-12, "{holm:?}");
        }
        let bh = Correction::Bh.adjust(&p);
        // x4/1, x4/2, x4/3, x4/4, running minimum from the top.
        let want = [0.02, 0.04, 0.04, 0.02];
        for (h, w) in bh.iter().zip(want) {
            assert!((h - w).abs() < 1e-12, "{bh:?}");
        }
        assert!(Correction::Holm.adjust(&[]).is_empty());
    }

    #[test]
    fn what_cannot_pair_names_the_settings_that_differ_and_the_way_to_pair_them() {
        let a = vec![cell("x", 2, &[1.0, 2.0])];
        let mut b = a.clone();
        b[0].key.condition.storage = Some("paper-ceph-hdd".into());
        let (ea, eb): (Vec<Entry>, Vec<Entry>) =
            (a.iter().map(entry).collect(), b.iter().map(entry).collect());
        let text = unpaired_error(Path::new("A"), Path::new("B"), &ea, &eb, Across::Machine);
        assert!(
            text.contains("they differ in storage (A: local; B: paper-ceph-hdd)")
                && text.contains("`--across storage`"),
            "{text}"
        );
        assert!(
            !text.contains("threads"),
            "equal settings are not named: {text}"
        );
        // Two settings apart: both named, no single --across offered.
        b[0].key.threads = 4;
        let eb: Vec<Entry> = b.iter().map(entry).collect();
        let text = unpaired_error(Path::new("A"), Path::new("B"), &ea, &eb, Across::Machine);
        assert!(
            text.contains("storage (A: local; B: paper-ceph-hdd)")
                && text.contains("threads (A: 2; B: 4)")
                && !text.contains("--across"),
            "{text}"
        );
    }
}
