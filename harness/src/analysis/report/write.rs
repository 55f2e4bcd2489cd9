//! Writing a report: the folder it goes to (never one holding a file of the user's), then
//! summary.csv, report.md, report.json, every table as CSV under `tables/` and every plot under
//! `plots/`, all from one [`Report`].

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings;
use crate::analysis::recorded::paper_name;
use crate::analysis::report::assemble::{assemble, Inputs};
use crate::analysis::report::model::{Report, Table};
use crate::analysis::report::{json, markdown, peers, roofline, summary, warnings};
use crate::analysis::view::WorkloadView;

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
const REPORT_FILES: [&str; 5] = ["summary.csv", "report.md", "report.json", "plots", "tables"];

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
    // Every cell's prediction, made once for the roofline tables, plots and validation.
    let checked = results
        .manifest
        .calibration
        .as_ref()
        .map(|cal| roofline::check_all(&results, cal, &cells))
        .unwrap_or_default();
    let found = findings::measured::judge(&results, &views);
    let per_loader = findings::measured::judge_loaders(&results, &views);
    let warned = warnings::warnings(&cells);
    let assembled = assemble(&Inputs {
        results: &results,
        cells: &cells,
        views: &views,
        checked: &checked,
        found: &found,
        per_loader: &per_loader,
        warned: &warned,
        peers: peers_section.as_deref(),
        plan,
    });
    let mut files = Files::default();
    files.write(out.join("summary.csv"), &summary::summary_csv(&cells))?;
    write_figures(out, &assembled.report, &mut files)?;
    write_tables(out, &assembled.report, &mut files)?;
    files.write(
        out.join("report.md"),
        &markdown::markdown(&assembled.report),
    )?;
    let report = json::json(&results, &cells, (&found, &per_loader), &warned, &assembled);
    files.write(
        out.join("report.json"),
        &serde_json::to_string_pretty(&report)?,
    )?;
    Ok(ReportFiles {
        report_md: out.join("report.md"),
        files: files.0,
    })
}

/// The files written so far.
#[derive(Default)]
struct Files(Vec<PathBuf>);

impl Files {
    fn write(&mut self, path: PathBuf, text: &str) -> anyhow::Result<()> {
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        self.0.push(path);
        Ok(())
    }
}

/// Every figure of the report, as SVG under `out/plots`.
fn write_figures(out: &Path, report: &Report, files: &mut Files) -> anyhow::Result<()> {
    let plots_dir = out.join("plots");
    std::fs::create_dir_all(&plots_dir)
        .with_context(|| format!("creating {}", plots_dir.display()))?;
    for figure in report.figures() {
        files.write(plots_dir.join(&figure.file), &figure.chart.to_svg())?;
    }
    Ok(())
}

/// Every table of the report as CSV under `out/tables`, named after its section and id.
fn write_tables(out: &Path, report: &Report, files: &mut Files) -> anyhow::Result<()> {
    let dir = out.join("tables");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (section, table) in report.tables() {
        let name = format!(
            "{}-{}.csv",
            crate::analysis::view::file_stem_of(section),
            table.id
        );
        files.write(dir.join(name), &table_csv(table)?)?;
    }
    Ok(())
}

/// A table as CSV: its columns, then its rows as the report prints them.
fn table_csv(table: &Table) -> anyhow::Result<String> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(&table.columns)?;
    for row in &table.rows {
        w.write_record(row)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
