//! `prepbench recommend DIR`: PRESTO's weighted score with its flaws fixed (raw storage counted
//! for `unprocessed`, cold and warm throughput scored separately, best first), the
//! Pareto-optimal strategies, and the strategy that minimises total time over E epochs.

use std::fmt::Write;
use std::path::Path;

pub use crate::analysis::candidate::{Candidate, Weights};
use crate::analysis::cells::Results;
use crate::analysis::view::WorkloadView;

#[derive(Clone, Debug)]
pub struct RecommendOptions {
    pub weights: Weights,
    pub epochs: u64,
    /// Memory available for the page cache; default: the machine's memory from the manifest.
    pub memory_bytes: Option<u64>,
    /// Dataset size to plan for (times and storage scale linearly); default: the runs' size.
    pub dataset_samples: Option<u64>,
}

/// Min-max normalisation to [0, 1]; a constant column maps to 1 (nobody is worse).
fn normalise(values: &[f64]) -> Vec<f64> {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    values
        .iter()
        .map(|v| if hi > lo { (v - lo) / (hi - lo) } else { 1.0 })
        .collect()
}

/// PRESTO's score: w_p (1 - p') + w_s (1 - s') + w_t t' over min-max normalised columns.
pub fn scores(
    offline: &[f64],
    storage: &[f64],
    throughput: &[f64],
    Weights(wp, ws, wt): Weights,
) -> Vec<f64> {
    let (p, s, t) = (
        normalise(offline),
        normalise(storage),
        normalise(throughput),
    );
    let constant = |v: &[f64]| v.iter().all(|x| *x == v[0]);
    (0..offline.len())
        .map(|i| {
            let inv = |n: &[f64], raw: &[f64]| if constant(raw) { 1.0 } else { 1.0 - n[i] };
            wp * inv(&p, offline) + ws * inv(&s, storage) + wt * t[i]
        })
        .collect()
}

/// The size a recommendation plans for, and where it comes from: `--dataset-samples`, else
/// the dataset as the runs read it (`unprocessed`'s epochs, or the sizing's record of the
/// source where it holds more: a raw strategy may read the dataset's first items only, its
/// epochs sized by time), else the largest measured.
pub fn planned_size(
    view: &WorkloadView,
    opts: &RecommendOptions,
    machine: &Machine,
) -> Option<(u64, &'static str)> {
    let t = view.max_threads();
    if let Some(n) = opts.dataset_samples {
        return Some((n, "--dataset-samples"));
    }
    let raw = view
        .raw_strategy()
        .and_then(|s| view.codecs.iter().find_map(|c| view.cold(s, *c, t)))
        .map(|cell| cell.samples);
    let sized = (machine.sizing_of(&view.name, &view.condition)).and_then(|s| s.source_samples);
    dataset_read(raw, sized).or_else(|| {
        view.strategies
            .iter()
            .flat_map(|(_, s)| view.codecs.iter().filter_map(move |c| view.cold(s, *c, t)))
            .map(|cell| cell.samples)
            .max()
            .map(|n| (n, "the largest measured"))
    })
}

/// The dataset as the runs read it: `unprocessed`'s cold epochs (`raw`), or the sizing's
/// record of the source (`sized`) where that holds more (a raw part read).
fn dataset_read(raw: Option<u64>, sized: Option<u64>) -> Option<(u64, &'static str)> {
    let raw = raw.filter(|n| sized.is_none_or(|s| *n >= s));
    raw.map(|n| (n, "the dataset as `unprocessed` read it"))
        .or(sized.map(|n| (n, "the dataset as the sweep read it")))
}

/// The samples whose offline steps the offline time behind `cell` ran, so that it scales per
/// sample processed: those its materializations processed, where offline.csv records them
/// (the dataset as asked for, whatever the store the runs read); else (folders of `run`
/// without offline.csv) the cell's samples, or a cycling store's first cycle of them
/// ([`crate::results::SizingEntry::processed_share`]). The sizing entry's store is the one
/// the workload's last sweep sized: under emulated storage, or read in part by a slower
/// loader, it was not the cell's, and the offline time of those views came out 2-6 times too
/// long (`quick-bh`: CV `pixel-centered` under the emulated storage 7.10 s for 1000 samples,
/// where its three materializations of 1000 took 1.57-1.85 s).
fn processed(cell: &crate::analysis::cells::Cell, machine: &Machine, workload: &str) -> f64 {
    if let Some(n) = cell.offline_samples {
        return n;
    }
    let share = (machine.sizing_of(workload, &cell.key.condition)).map_or(1.0, |e| {
        e.processed_share(&cell.key.strategy, cell.key.codec)
    });
    cell.samples as f64 * share
}

pub fn candidates(
    view: &WorkloadView,
    opts: &RecommendOptions,
    machine: &Machine,
) -> Vec<Candidate> {
    let t = view.max_threads();
    let memory_bytes = machine.memory_bytes;
    // One planned size for every candidate: stores sized by time (`--min-epoch-s`) hold
    // different sample counts, and times and storage are compared at the same size.
    let planned = planned_size(view, opts, machine).map(|(n, _)| n);
    let mut out: Vec<Candidate> = Vec::new();
    for (_, strategy) in &view.strategies {
        for codec in &view.codecs {
            let Some(cold) = view.cold(strategy, *codec, t) else {
                continue;
            };
            if out
                .iter()
                .any(|c| &c.strategy == strategy && cold.key.codec == c.codec)
            {
                continue; // `unprocessed` is codec-less: one candidate
            }
            let scale = planned.map_or(1.0, |n| n as f64 / cold.samples.max(1) as f64);
            let samples = cold.samples as f64 * scale;
            let storage_bytes = cold.storage_bytes * scale;
            let offline_s = cold.offline.as_ref().map_or(0.0, |o| o.mean)
                * planned.map_or(1.0, |n| {
                    n as f64 / processed(cold, machine, &view.name).max(1.0)
                });
            let warm_sps = view.warm(strategy, *codec, t).map(|c| c.throughput.mean);
            let fits = storage_bytes <= memory_bytes as f64;
            let later = if fits {
                warm_sps.unwrap_or(cold.throughput.mean)
            } else {
                cold.throughput.mean
            };
            let epochs = opts.epochs.max(1) as f64;
            let total_s =
                offline_s + samples / cold.throughput.mean + (epochs - 1.0) * samples / later;
            out.push(Candidate {
                strategy: strategy.clone(),
                codec: cold.key.codec,
                samples,
                offline_s,
                storage_bytes,
                cold_sps: cold.throughput.mean,
                cold_ci95: cold.throughput.ci95,
                cold_estimate: crate::analysis::stats::LogEstimate::of_mean(&cold.throughput),
                long_enough: cold.long_enough(),
                trials: cold.throughput.n,
                epoch_s: cold.online.median,
                measured_samples: cold.samples,
                warm_sps,
                score_cold: 0.0,
                score_warm: None,
                pareto: false,
                total_s,
                later_sps: later,
                offline_n: cold.offline.as_ref().map_or(0, |o| o.n),
                fits_in_memory: fits,
            });
        }
    }
    plan_later_epochs_alike(&mut out, opts.epochs);
    let column = |f: &dyn Fn(&Candidate) -> f64| out.iter().map(f).collect::<Vec<f64>>();
    let (p, s) = (column(&|c| c.offline_s), column(&|c| c.storage_bytes));
    let cold_scores = scores(&p, &s, &column(&|c| c.cold_sps), opts.weights);
    let warm_scores = out.iter().all(|c| c.warm_sps.is_some()).then(|| {
        scores(
            &p,
            &s,
            &column(&|c| c.warm_sps.unwrap_or(0.0)),
            opts.weights,
        )
    });
    let dominated = |i: usize| {
        let a = &out[i];
        out.iter().any(|b| {
            b.offline_s <= a.offline_s
                && b.storage_bytes <= a.storage_bytes
                && b.cold_sps >= a.cold_sps
                && (b.offline_s < a.offline_s
                    || b.storage_bytes < a.storage_bytes
                    || b.cold_sps > a.cold_sps)
        })
    };
    let pareto: Vec<bool> = (0..out.len()).map(|i| !dominated(i)).collect();
    for (i, c) in out.iter_mut().enumerate() {
        c.score_cold = cold_scores[i];
        c.score_warm = warm_scores.as_ref().map(|w| w[i]);
        c.pareto = pareto[i];
    }
    out.sort_by(|a, b| b.score_cold.total_cmp(&a.score_cold));
    out
}

/// Where a candidate that fits in memory has no page-cache rate (a sweep that ran the
/// page-cache epochs of some strategies only, `--page-cache-strategies`), every candidate's
/// later epochs are planned at its cold rate: planned from the page cache for some and cold
/// for the others, the total over E epochs would favour those that happened to run it.
fn plan_later_epochs_alike(out: &mut [Candidate], epochs: u64) {
    if out
        .iter()
        .all(|c| !c.fits_in_memory || c.warm_sps.is_some())
    {
        return;
    }
    for c in out.iter_mut() {
        c.later_sps = c.cold_sps;
        c.total_s = c.offline_s + epochs.max(1) as f64 * c.samples / c.cold_sps;
    }
}

use crate::units::{bytes as size, duration, rate};

/// Extrapolating the measured samples more than this many times over gets a caution.
pub const EXTRAPOLATION_WARNING: f64 = 10.0;

/// The weights and epochs the report recommends under when none are given: throughput alone
/// (PRESTO's default) over 10 epochs.
pub const DEFAULT_PLAN: RecommendOptions = RecommendOptions {
    weights: Weights(0.0, 0.0, 1.0),
    epochs: 10,
    memory_bytes: None,
    dataset_samples: None,
};

/// The cold throughput of `c` with its 95 % interval, as the report writes it.
fn with_interval(c: &Candidate) -> String {
    match c.cold_ci95 {
        Some((lo, hi)) => format!("{} [{}, {}]", rate(c.cold_sps), rate(lo), rate(hi)),
        None => format!("{} (one trial: no interval)", rate(c.cold_sps)),
    }
}

/// What stands behind a candidate's throughput: `3 trials × 1.4 s epochs of 400 samples`.
fn evidence(c: &Candidate) -> String {
    format!(
        "{} × {} epochs of {} samples",
        crate::units::count(c.trials as u64, "trial", "trials"),
        duration(c.epoch_s),
        c.measured_samples
    )
}

/// The recommendation for one workload as Markdown (a table of every candidate and the
/// answer, with its evidence); `None` without a cold run to recommend from.
pub fn section(view: &WorkloadView, opts: &RecommendOptions, machine: &Machine) -> Option<String> {
    let memory = machine.memory_bytes;
    let weights = opts.weights;
    let list = candidates(view, opts, machine);
    let best = list.first()?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Weights {weights}; {}; {} of {:.0} samples ({}; offline time, storage and total time scaled to that size); memory {}.\n",
        crate::units::count(view.max_threads() as u64, "thread", "threads"),
        crate::units::count(opts.epochs, "epoch", "epochs"),
        best.samples,
        planned_size(view, opts, machine).map_or("as measured", |(_, from)| from),
        size(memory as f64)
    );
    let _ = writeln!(out, "| rank | strategy | codec | offline time | storage | cold samples/s [95 % CI] | measured on | warm samples/s | score cold | score warm | Pareto | total time for {} |", crate::units::count(opts.epochs, "epoch", "epochs"));
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (rank, c) in list.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |",
            rank + 1,
            c.strategy,
            c.codec,
            duration(c.offline_s),
            size(c.storage_bytes),
            with_interval(c),
            evidence(c),
            c.warm_sps.map(rate).unwrap_or_else(|| "-".into()),
            c.score_cold,
            c.score_warm
                .map(|w| format!("{w:.3}"))
                .unwrap_or_else(|| "-".into()),
            if c.pareto { "yes" } else { "" },
            duration(c.total_s)
        );
    }
    let pareto: Vec<String> = list
        .iter()
        .filter(|c| c.pareto)
        .map(|c| format!("{} ({})", c.strategy, c.codec))
        .collect();
    let unmeasured = list
        .iter()
        .any(|c| c.fits_in_memory && c.warm_sps.is_none());
    let memory_note = if best.fits_in_memory && unmeasured {
        "fits in memory, but the page cache was not measured for every strategy, so every \
         strategy's later epochs are planned at its cold speed"
    } else if best.fits_in_memory {
        "fits in memory, so epochs after the first can be served from the page cache"
    } else {
        "does not fit in memory, so every epoch reads from storage at cold speed"
    };
    let criterion = crate::analysis::advice::criterion(best, &list, opts.weights);
    let total_note = crate::analysis::advice::run_length(best, &list, opts.epochs);
    let tie_note = crate::analysis::advice::ties(best, &list, opts.weights);
    // Epochs too short to judge by make the ranking a hint, and it says so. Sized by time, the
    // raw files' epochs can still be short: they do not cycle, and a user's folder does not
    // grow (`sizing::dataset_growth`); that is said as what it is.
    let raw = view.raw_strategy();
    let sized = machine.sizing_of(&view.name, &view.condition).is_some();
    let as_is = |c: &Candidate| sized && Some(c.strategy.as_str()) == raw;
    let short = list.iter().filter(|c| !c.long_enough && !as_is(c)).count();
    let mut short_note = if short > 0 {
        format!(
            " **Caution:** {short} of these {} candidates {} measured on epochs under {} s, too short to judge by: sweep more samples (or `--min-epoch-s`) before acting on this.",
            list.len(),
            if short == 1 { "was" } else { "were" },
            crate::analysis::cells::MIN_EPOCH_S
        )
    } else {
        String::new()
    };
    if let Some(c) = list.iter().find(|c| !c.long_enough && as_is(c)) {
        let _ = write!(
            short_note,
            " **Caution:** `{}` reads the dataset's {} samples as they are (raw files do not cycle, and a dataset grows for them only where prepbench generates it, never your own folder), so its epochs last {} whatever `--min-epoch-s` asks: its figure is a hint; more files would make it a measurement.",
            c.strategy,
            c.measured_samples,
            duration(c.epoch_s)
        );
    }
    let single = list.iter().filter(|c| c.trials < 2).count();
    if single > 0 {
        let _ = write!(
            short_note,
            " **Caution:** {single} of these {} candidates {} on one trial each, which has no interval: sweep with `--trials 3` or more before acting on this.",
            list.len(),
            if single == 1 { "rests" } else { "rest" }
        );
    }
    let fold = best.samples / best.measured_samples.max(1) as f64;
    if fold > EXTRAPOLATION_WARNING {
        let _ = write!(
            short_note,
            " **Caution:** the times and storage are extrapolated {fold:.0}-fold from {} samples measured, assuming every sample costs what the measured ones did: effects that appear only at full size (the data outgrowing the page cache, file-system metadata, a different mix of samples) are not in these figures.",
            best.measured_samples
        );
    }
    let _ = writeln!(
        out,
        "\n**Recommendation: `{}` ({})**. {criterion}: {} samples/s ({}), from {} of stored data after {} of offline preprocessing; its data {memory_note}. {total_note}{tie_note} Pareto-optimal in (offline time, storage, throughput): {}.{short_note}\n",
        best.strategy, best.codec, with_interval(best), evidence(best), size(best.storage_bytes), duration(best.offline_s), pareto.join(", ")
    );
    if let Some(note) =
        crate::analysis::workers::workers_note(view, &best.strategy, best.codec, machine.cores)
    {
        let _ = writeln!(
            out,
            "{note}
"
        );
    }
    Some(out)
}

/// The machine a recommendation plans for, and how the runs' epochs were sized.
pub struct Machine {
    pub memory_bytes: u64,
    /// Its logical cores, where recorded.
    pub cores: Option<usize>,
    /// The manifest's sizing of each workload's epochs (`--min-epoch-s`).
    pub sizing: std::collections::BTreeMap<String, crate::results::SizingEntry>,
}

impl Machine {
    /// How the sweeps behind `workload`'s runs under `condition` sized their epochs
    /// ([`crate::results::SizingEntry::key`]); in a folder from before the sizing was kept per
    /// condition, the workload's one entry.
    pub fn sizing_of(
        &self,
        workload: &str,
        condition: &crate::results::Condition,
    ) -> Option<&crate::results::SizingEntry> {
        let key = crate::results::SizingEntry::key(workload, condition);
        let per_condition = |k: &String| {
            k.strip_prefix(workload)
                .is_some_and(|r| r.starts_with(" ["))
        };
        (self.sizing.get(&key)).or_else(|| {
            let old = !self.sizing.keys().any(per_condition);
            old.then(|| self.sizing.get(workload)).flatten()
        })
    }
}

/// The memory to plan for: the option, else the measured machine's.
pub fn machine_of(results: &Results, opts: &RecommendOptions) -> Machine {
    let recorded = results.manifest.machine.as_ref();
    Machine {
        memory_bytes: opts
            .memory_bytes
            .or_else(|| recorded.map(|m| m.memory_bytes))
            .unwrap_or(u64::MAX),
        cores: recorded.map(|m| m.logical_cores),
        sizing: results.manifest.sizing.clone(),
    }
}

/// Calls `each` with the view of every (workload, condition) in `dir`, in order, and the
/// memory to plan for.
fn for_each_view(
    dir: &Path,
    opts: &RecommendOptions,
    mut each: impl FnMut(&WorkloadView, &Machine) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<String>> {
    let results = Results::load(dir)?;
    let cells = results.cells();
    let machine = machine_of(&results, opts);
    let mut names = results.conditions();
    names.sort();
    for (workload, condition) in &names {
        each(
            &WorkloadView::new(workload, condition, &cells, None),
            &machine,
        )?;
    }
    Ok(results.left_out)
}

/// The rows of runs.csv no figure above counts, said where the recommendation is read.
fn left_out_note(dir: &Path, left_out: &[String]) -> Option<String> {
    const SHOWN: usize = 5;
    let (first, more) = left_out.split_at(left_out.len().min(SHOWN));
    (!first.is_empty()).then(|| {
        let more = if more.is_empty() {
            String::new()
        } else {
            format!("; and {} more (`prepbench report` lists them)", more.len())
        };
        format!(
            "**{} of {}/runs.csv left out** of these figures: {}{more}.",
            crate::units::count(left_out.len() as u64, "row", "rows"),
            dir.display(),
            first.join("; ")
        )
    })
}

/// One ranked candidate as named fields: the columns of `--csv` and the keys of `--json`.
fn fields(
    view: &WorkloadView,
    rank: usize,
    c: &Candidate,
    opts: &RecommendOptions,
) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        ("workload", json!(view.name)),
        ("condition", json!(view.condition.to_string())),
        ("rank", json!(rank)),
        ("strategy", json!(c.strategy)),
        ("codec", json!(c.codec.to_string())),
        ("planned_samples", json!(c.samples)),
        ("offline_s", json!(c.offline_s)),
        ("storage_bytes", json!(c.storage_bytes)),
        ("cold_sps", json!(c.cold_sps)),
        ("cold_sps_ci95_lo", json!(c.cold_ci95.map(|i| i.0))),
        ("cold_sps_ci95_hi", json!(c.cold_ci95.map(|i| i.1))),
        ("long_enough", json!(c.long_enough)),
        ("trials", json!(c.trials)),
        ("epoch_s", json!(c.epoch_s)),
        ("measured_samples", json!(c.measured_samples)),
        ("warm_sps", json!(c.warm_sps)),
        ("score_cold", json!(c.score_cold)),
        ("score_warm", json!(c.score_warm)),
        ("pareto", json!(c.pareto)),
        ("total_s", json!(c.total_s)),
        ("epochs", json!(opts.epochs)),
        ("fits_in_memory", json!(c.fits_in_memory)),
    ]
}

/// Every workload's ranked candidates as named fields (rank 1 is the recommendation).
fn ranked(
    dir: &Path,
    opts: &RecommendOptions,
) -> anyhow::Result<Vec<Vec<(&'static str, serde_json::Value)>>> {
    let mut rows = Vec::new();
    let left_out = for_each_view(dir, opts, |view, machine| {
        for (rank, c) in candidates(view, opts, machine).iter().enumerate() {
            rows.push(fields(view, rank + 1, c, opts));
        }
        Ok(())
    })?;
    if rows.is_empty() {
        anyhow::bail!("{}: no runs to recommend from", dir.display());
    }
    if let Some(note) = left_out_note(dir, &left_out) {
        eprintln!("prepbench: {note}");
    }
    Ok(rows)
}

/// The candidates of every workload in `dir`, ranked (rank 1 is the recommendation), as CSV
/// or JSON rows that load into pandas as they are (seconds and bytes as plain numbers).
pub fn recommend_rows(
    dir: &Path,
    opts: &RecommendOptions,
    format: crate::markdown::Rows,
) -> anyhow::Result<String> {
    crate::markdown::rows_as(format, &ranked(dir, opts)?)
}

/// The recommendation for every workload in `dir`, as Markdown.
pub fn recommend(dir: &Path, opts: &RecommendOptions) -> anyhow::Result<String> {
    let mut out = String::new();
    let left_out = for_each_view(dir, opts, |view, machine| {
        if let Some(text) = section(view, opts, machine) {
            let _ = writeln!(out, "## {}\n\n{text}", view.title());
        }
        Ok(())
    })?;
    if out.is_empty() {
        anyhow::bail!("{}: no runs to recommend from", dir.display());
    }
    if let Some(note) = left_out_note(dir, &left_out) {
        let _ = writeln!(out, "{note}\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
