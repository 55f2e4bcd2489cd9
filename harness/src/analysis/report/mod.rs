//! `prepbench report DIR`: summary.csv (statistics per cell), report.md (the paper's tables with
//! its figures beside ours, the findings, warnings), report.json and plots/*.svg.

pub mod peers;
pub mod plots;
pub mod roofline;
pub mod tables;
pub mod threats;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::json;

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings;
use crate::analysis::recorded::{is_reference, paper_name, recorded_workload};
use crate::analysis::view::WorkloadView;
use crate::results::Verdict;

/// Cells whose throughput coefficient of variation exceeds this get a warning.
pub const MAX_CV: f64 = 0.10;
/// Cells with fewer trials than this get a warning.
pub const MIN_TRIALS: usize = 3;

/// What a view's runs were measured under, in words: the storage profile's figures and the
/// consumer; `None` for plain runs.
fn condition_line(results: &Results, view: &WorkloadView) -> Option<String> {
    let row = view
        .cells
        .first()
        .and_then(|c| results.cell_rows(c).next())?;
    let mut parts = Vec::new();
    if let Some(storage) = row.emulated_storage() {
        let profile = recorded_workload(results, &view.name)
            .and_then(|w| w.storage_profile(storage).ok())
            .or_else(|| workloads::storage::find_profile(storage, &Default::default()).ok());
        parts.push(match profile {
            Some(p) => format!(
                "Measured under the emulated storage profile `{}`{}: {}. Online reads were delayed to it (docs/measurement.md)",
                p.name,
                if p.description.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", p.description)
                },
                profile_figures(&p)
            ),
            None => format!("Measured under the emulated storage profile `{storage}`"),
        });
    }
    if let Some(consumer) = row.consumer {
        parts.push(format!(
            "With the simulated training consumer `{consumer}` (batch x compute time - sleep or spin - prefetch depth in batches)"
        ));
    }
    (!parts.is_empty()).then(|| parts.join(". ") + ".")
}

/// A storage profile's figures in words.
fn profile_figures(p: &workloads::StorageProfile) -> String {
    let limit = |v: Option<f64>, unit: &str| {
        v.map_or_else(|| "unlimited".to_string(), |v| format!("{v} {unit}"))
    };
    format!(
        "files of {} KiB and more stream at {} per reader and {} in all after {:.3} ms; smaller files take {:.3} ms per {} KiB request, {}",
        p.small_file_kb,
        limit(p.stream_mb_s, "MB/s"),
        limit(p.aggregate_mb_s, "MB/s"),
        p.latency_ms,
        p.latency_ms,
        p.request_kb,
        limit(p.iops, "requests/s in all")
    )
}

/// The storage profiles the runs were measured under, with their run counts.
fn storage_line(results: &Results) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in &results.rows {
        if !seen.insert(&row.run_id) {
            continue;
        }
        match counts.iter_mut().find(|(n, _)| *n == row.storage) {
            Some((_, c)) => *c += 1,
            None => counts.push((row.storage.clone(), 1)),
        }
    }
    let list: Vec<String> = counts
        .iter()
        .map(|(name, n)| {
            let what = if name == workloads::storage::LOCAL {
                "the disk as it is".to_string()
            } else {
                "emulated".to_string()
            };
            format!("`{name}` ({what}, {n} runs)")
        })
        .collect();
    let mut line = format!("Storage profiles: {}.", list.join(", "));
    // Runs whose input came from object storage (raw files or shards): no page cache of ours.
    let mut remote: Vec<(String, String)> = results
        .rows
        .iter()
        .filter(|r| r.read_remote())
        .map(|r| (r.workload.clone(), r.strategy.clone()))
        .collect();
    remote.sort();
    remote.dedup();
    if !remote.is_empty() {
        let names: Vec<String> = remote.iter().map(|(w, s)| format!("{w}/{s}")).collect();
        line.push_str(&format!(
            " Read from object storage (the `local` profile there means not emulated): {}; \
             nothing of it is cached on this machine, so every epoch of theirs is cold, \
             whatever the service caches (docs/cluster.md).",
            names.join(", ")
        ));
    }
    line
}

/// Picks out a problem cell, with a detail to show beside its name.
type CellTest = fn(&Cell) -> Option<String>;

/// Problems found in the cells, one line per kind: how many cells, a few examples, what to do.
fn warnings(cells: &[Cell]) -> Vec<String> {
    let label = |c: &Cell| {
        let k = &c.key;
        let condition = if k.condition.is_plain() {
            String::new()
        } else {
            format!(" [{}]", k.condition)
        };
        format!(
            "{}/{}/{}/{}t/{} e{}{condition}",
            k.workload, k.strategy, k.codec, k.threads, k.cache, k.epoch
        )
    };
    let kinds: [(&str, &str, CellTest); 4] = [
        (
            "output differs from fully-online processing (verify failed)",
            "fix the step that is not deterministic, or mark it `random: true`",
            |c| (c.verified == Some(Verdict::Fail)).then(String::new),
        ),
        (
            "cold runs started with their files still cached (rows valid=false)",
            "put --data-dir and --store-dir on a disk (not tmpfs), or run as root so caches can be dropped",
            |c| (c.invalid_runs > 0).then(|| format!(" ({} runs)", c.invalid_runs)),
        ),
        (
            "throughput varies by more than 10 % (coefficient of variation)",
            "look for background load, add trials (--trials), or fix the CPU frequency",
            |c| c.throughput.cv.filter(|cv| *cv > MAX_CV).map(|cv| format!(" ({:.0} %)", cv * 100.0)),
        ),
        (
            "fewer than 3 trials, too few for a confidence interval",
            "rerun the sweep with --trials 3 or more (completed runs are kept)",
            |c| (c.throughput.n < MIN_TRIALS).then(|| format!(" (n={})", c.throughput.n)),
        ),
    ];
    let mut out = Vec::new();
    for (what, advice, test) in &kinds {
        let hits: Vec<String> = cells
            .iter()
            .filter_map(|c| test(c).map(|detail| format!("{}{detail}", label(c))))
            .collect();
        if hits.is_empty() {
            continue;
        }
        let shown = hits.iter().take(4).cloned().collect::<Vec<_>>().join(", ");
        let more = if hits.len() > 4 {
            format!(" and {} more", hits.len() - 4)
        } else {
            String::new()
        };
        out.push(format!(
            "{} cells: {what}, e.g. {shown}{more}. What to do: {advice}.",
            hits.len()
        ));
    }
    out
}

fn summary_csv(cells: &[Cell]) -> String {
    let columns = [
        "workload",
        "condition",
        "strategy",
        "split",
        "codec",
        "threads",
        "cache",
        "epoch",
        "n",
        "samples",
        "storage_bytes",
        "mb_per_sample",
        "offline_s_mean",
        "throughput_sps_mean",
        "throughput_sps_sd",
        "throughput_sps_median",
        "throughput_sps_min",
        "throughput_sps_max",
        "throughput_sps_ci95_lo",
        "throughput_sps_ci95_hi",
        "throughput_sps_cv",
        "throughput_outliers",
        "online_s_mean",
        "invalid_runs",
        "verified",
        "first_sample_s_median",
        "steady_sps_mean",
        "foreign_load_pct_mean",
        "short_epochs",
    ];
    let mut out = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let _ = out.write_record(columns);
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
    for c in cells {
        let (k, t) = (&c.key, &c.throughput);
        let values = vec![
            k.workload.clone(),
            k.condition.to_string(),
            k.strategy.clone(),
            k.split.to_string(),
            k.codec.to_string(),
            k.threads.to_string(),
            k.cache.to_string(),
            k.epoch.to_string(),
            t.n.to_string(),
            c.samples.to_string(),
            format!("{:.0}", c.storage_bytes),
            format!("{:.6}", c.mb_per_sample()),
            opt(c.offline.as_ref().map(|o| o.mean)),
            format!("{:.3}", t.mean),
            opt(t.sd),
            format!("{:.3}", t.median),
            format!("{:.3}", t.min),
            format!("{:.3}", t.max),
            opt(t.ci95.map(|c| c.0)),
            opt(t.ci95.map(|c| c.1)),
            opt(t.cv),
            t.outliers.len().to_string(),
            format!("{:.6}", c.online.mean),
            c.invalid_runs.to_string(),
            verdict_or_dash(c.verified).to_string(),
            opt(c.first_sample.as_ref().map(|s| s.median)),
            opt(c.steady.as_ref().map(|s| s.mean)),
            opt(c.foreign_load_pct),
            (!c.long_enough()).to_string(),
        ];
        let _ = out.write_record(&values);
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).expect("the values are UTF-8")
}

/// A cell's verdict as summary.csv and report.json give it: `pass`, `fail`, or `-` when not
/// verified.
fn verdict_or_dash(v: Option<Verdict>) -> &'static str {
    v.map_or("-", Verdict::label)
}

fn machine_line(results: &Results) -> String {
    let (m, b) = (&results.manifest.machine, &results.manifest.build);
    let build = |f: fn(&crate::results::system::Build) -> &str| b.as_ref().map_or("?", f);
    format!(
        "Machine: {} ({} cores, {:.1} GB memory, {}); prepbench {} ({}), {}.",
        m.as_ref().map_or("unknown CPU", |m| &m.cpu_model),
        m.as_ref().map_or(0, |m| m.logical_cores),
        m.as_ref().map_or(0.0, |m| m.memory_bytes as f64) / 1e9,
        m.as_ref().map_or("unknown kernel", |m| &m.kernel),
        build(|b| &b.prepbench_version),
        build(|b| &b.git_commit),
        build(|b| &b.rustc),
    )
}

/// What `report` wrote.
pub struct ReportFiles {
    pub report_md: PathBuf,
    pub files: Vec<PathBuf>,
}

/// Every (workload, condition) of `results` viewed over `cells`, with its paper pipeline.
pub fn views<'c>(results: &Results, cells: &'c [Cell]) -> Vec<WorkloadView<'c>> {
    results
        .conditions()
        .iter()
        .map(|(n, condition)| WorkloadView::new(n, condition, cells, paper_name(results, n)))
        .collect()
}

/// The files a report writes, which `--out` must not find there unless a report wrote them.
const REPORT_FILES: [&str; 4] = ["summary.csv", "report.md", "report.json", "plots"];

/// Makes `out` a folder a report may write into: it is created when missing; an existing one
/// is refused when it holds a file a report writes but no `report.json` (so no earlier report
/// wrote it): nothing of the user's is overwritten.
fn claim_report_folder(out: &Path) -> anyhow::Result<()> {
    if out.exists() && !out.is_dir() {
        anyhow::bail!("--out {}: not a folder", out.display());
    }
    if !out.join("report.json").is_file() {
        if let Some(clash) = REPORT_FILES.iter().find(|f| out.join(f).exists()) {
            anyhow::bail!(
                "--out {}: it holds `{clash}` but no report.json, so a report did not write it; \
                 refusing to overwrite it (choose an empty or new folder)",
                out.display()
            );
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))
}

/// Reads `dir` and writes the report files into it.
pub fn write_report(dir: &Path) -> anyhow::Result<ReportFiles> {
    write_report_with(dir, dir, None, &crate::analysis::recommend::DEFAULT_PLAN)
}

/// [`write_report`], after keeping the peer measurements in `peers` (`run_peers.py --records
/// --out PEERS`) in the results folder; the report folds in whatever peer measurements the
/// folder keeps. A workload that is not one of the paper's starts with its recommendation
/// under `plan` (weights and epochs).
pub fn write_report_with(
    dir: &Path,
    out: &Path,
    peers: Option<&Path>,
    plan: &crate::analysis::recommend::RecommendOptions,
) -> anyhow::Result<ReportFiles> {
    let results = Results::load(dir)?;
    if out != dir {
        claim_report_folder(out)?;
    }
    // Kept only once the folder has loaded as a results folder.
    if let Some(peers) = peers {
        peers::adopt(dir, peers)?;
    }
    let peers_section = peers::section(dir)?;
    let cells = results.cells();
    let views = views(&results, &cells);
    let plots_dir = out.join("plots");
    std::fs::create_dir_all(&plots_dir)
        .with_context(|| format!("creating {}", plots_dir.display()))?;
    let mut files = Vec::new();
    let write = |path: PathBuf, text: &str, files: &mut Vec<PathBuf>| -> anyhow::Result<()> {
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        files.push(path);
        Ok(())
    };
    write(out.join("summary.csv"), &summary_csv(&cells), &mut files)?;

    let calibration = results.manifest.calibration.as_ref();
    // Every cell's prediction, made once for the roofline tables, plots and validation.
    let checked = calibration
        .as_ref()
        .map(|cal| roofline::check_all(&results, cal, &cells))
        .unwrap_or_default();
    let found = findings::measured::judge(&results, &views);
    let warned = warnings(&cells);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# prepbench report\n\n{}\n\n{}\n\n{} runs ({} rows) in {} cells.\n",
        machine_line(&results),
        storage_line(&results),
        results
            .rows
            .iter()
            .map(|r| &r.run_id)
            .collect::<std::collections::HashSet<_>>()
            .len(),
        results.rows.len(),
        cells.len()
    );
    if !results.left_out.is_empty() {
        const SHOWN: usize = 10;
        let _ = writeln!(
            md,
            "**{} rows of runs.csv left out** of every table and verdict: a rate or time that is \
             not a finite, non-negative number (the file was edited or damaged):\n",
            results.left_out.len()
        );
        for line in results.left_out.iter().take(SHOWN) {
            let _ = writeln!(md, "- {line}");
        }
        if results.left_out.len() > SHOWN {
            let _ = writeln!(md, "- and {} more", results.left_out.len() - SHOWN);
        }
        let _ = writeln!(md);
    }
    // Your own workloads start with the answer: what to store, and the evidence for it.
    let memory = crate::analysis::recommend::memory_of(&results, plan);
    let references: Vec<bool> = views
        .iter()
        .map(|v| is_reference(&results, &v.name))
        .collect();
    for (view, _) in views.iter().zip(&references).filter(|(_, r)| !**r) {
        if let Some(text) = crate::analysis::recommend::section(view, plan, memory) {
            let _ = writeln!(md, "## Recommendation: {}\n\n{text}", view.title());
        }
    }
    let mut kendall = serde_json::Map::new();
    // Dataset variants (`name@k=v`) get one table per workload instead of a section each.
    let mut variant_groups: Vec<(String, Vec<&WorkloadView>)> = Vec::new();
    for view in &views {
        let label = view.label();
        if label.tag.is_some() {
            let base = if view.condition.is_plain() {
                label.base
            } else {
                format!("{} [{}]", label.base, view.condition)
            };
            match variant_groups.iter_mut().find(|(b, _)| *b == base) {
                Some((_, group)) => group.push(view),
                None => variant_groups.push((base, vec![view])),
            }
        }
    }
    for (base, group) in &mut variant_groups {
        group.sort_by(|a, b| {
            tables::variant_mb(a)
                .partial_cmp(&tables::variant_mb(b))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
        let _ = writeln!(md, "## {base}\n\n{}", tables::variants(base, group));
    }
    for view in views.iter().filter(|v| v.label().tag.is_none()) {
        let _ = writeln!(md, "## {}\n", view.title());
        if let Some(p) = &view.paper_name {
            let _ = writeln!(md, "Reproduces the paper's `{p}` pipeline.\n");
        }
        if let Some(line) = condition_line(&results, view) {
            let _ = writeln!(md, "{line}\n");
        }
        let _ = writeln!(md, "### Strategies\n\n{}", tables::strategies(view));
        if let Some(t) = tables::compression(view) {
            let _ = writeln!(md, "### Compression\n\n{t}");
        }
        let _ = writeln!(md, "### Caching\n\n{}", tables::caching(view));
        if let Some(t) = tables::threads(view) {
            let _ = writeln!(md, "### Thread scaling\n\n{t}");
        }
        if let Some(t) = tables::bottlenecks(view, &results) {
            let _ = writeln!(md, "### Where the time goes\n\n{t}");
        }
        if let Some(t) = tables::training(view, &results) {
            let _ = writeln!(md, "### Simulated training\n\n{t}");
        }
        if let Some(t) = roofline::table(view, &checked) {
            let _ = writeln!(md, "### Roofline\n\n{t}");
        }
        let roofline_plot = roofline::plot(view, &checked);
        let tau = findings::kendall(view);
        match tau {
            Some((tau, n)) => {
                let _ = writeln!(md, "Kendall tau between our ranking by cold throughput and the paper's: **{tau:.2}** over {n} strategies.\n");
            }
            None if view.paper_name.is_some() => {
                let _ = writeln!(md, "Kendall tau: not computed (fewer than two strategies in common with the paper's figures).\n");
            }
            None => {}
        }
        kendall.insert(
            view.title(),
            json!(tau.map(|(t, n)| json!({"tau": t, "strategies": n}))),
        );
        let mut plot_links = Vec::new();
        for (file, chart) in plots::plots(view).into_iter().chain(roofline_plot) {
            write(plots_dir.join(&file), &chart.to_svg(), &mut files)?;
            plot_links.push(format!("![{file}](plots/{file})"));
        }
        let _ = writeln!(md, "{}\n", plot_links.join("\n"));
    }
    // A workload read under several storage profiles (one consumer): the profiles side by side.
    let mut by_storage: Vec<(&str, Option<String>, Vec<&WorkloadView>)> = Vec::new();
    for view in views.iter().filter(|v| v.label().tag.is_none()) {
        let consumer = view.condition.consumer.map(|c| c.to_string());
        match by_storage
            .iter_mut()
            .find(|(n, c, _)| *n == view.name && *c == consumer)
        {
            Some((_, _, group)) => group.push(view),
            None => by_storage.push((&view.name, consumer, vec![view])),
        }
    }
    for (name, _, group) in &by_storage {
        if let Some((file, chart)) = plots::across_storage(group) {
            write(plots_dir.join(&file), &chart.to_svg(), &mut files)?;
            let _ = writeln!(
                md,
                "## {name} across storage profiles\n\n![{file}](plots/{file})\n"
            );
        }
    }
    let mut prediction = serde_json::Value::Null;
    if let Some(cal) = &calibration {
        let (text, json) = roofline::section(&results, &checked, cal);
        let _ = writeln!(md, "## Prediction model\n\n{text}");
        prediction = json;
    }
    // The paper's findings are about the paper's pipelines (its reference workloads, the
    // synthetic ones included): judged only when one was run.
    if references.contains(&true) {
        let _ = writeln!(md, "## Paper comparison\n");
        let _ = writeln!(
            md,
            "Each finding is split into the claims the paper makes; each claim is judged on the 95 % interval of the ratio it is about: reproduced (the interval lies on the claim's side), contradicted (on the opposite side), not reproduced (it straddles), or not testable here (the reason is given). Epochs under {} s and cells of one trial are not judged. Where a check did not reproduce, the measured mechanism follows it.\n",
            crate::analysis::cells::MIN_EPOCH_S
        );
        for f in &found {
            let _ = writeln!(md, "{}", f.markdown());
        }
    }
    if let Some(section) = &peers_section {
        let _ = writeln!(md, "{section}");
    }
    let _ = writeln!(
        md,
        "## Threats to validity\n\n{}",
        threats::section(&results, &cells, &found)
    );
    let _ = writeln!(md, "\n## Warnings\n");
    if warned.is_empty() {
        let _ = writeln!(md, "None.");
    }
    for w in &warned {
        let _ = writeln!(md, "- {w}");
    }
    write(out.join("report.md"), &md, &mut files)?;
    let cells_json: Vec<serde_json::Value> = cells
        .iter()
        .map(|c| {
            let t = &c.throughput;
            json!({
                "key": c.key, "samples": c.samples, "storage_bytes": c.storage_bytes, "mb_per_sample": c.mb_per_sample(),
                "offline_s_mean": c.offline.as_ref().map(|o| o.mean),
                "throughput_sps": {"n": t.n, "mean": t.mean, "sd": t.sd, "median": t.median, "min": t.min, "max": t.max, "ci95": t.ci95, "cv": t.cv, "outliers": t.outliers},
                "invalid_runs": c.invalid_runs, "verified": verdict_or_dash(c.verified),
            })
        })
        .collect();
    let report = json!({ "machine": results.manifest.machine, "cells": cells_json, "findings": found, "kendall_tau": kendall, "warnings": warned, "prediction": prediction });
    write(
        out.join("report.json"),
        &serde_json::to_string_pretty(&report)?,
        &mut files,
    )?;
    Ok(ReportFiles {
        report_md: out.join("report.md"),
        files,
    })
}

#[cfg(test)]
mod tests;
