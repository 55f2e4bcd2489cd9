//! The report built as data, section by section: the folder's header, recommendations for the
//! user's own workloads, dataset variants, each workload's tables and plots, storage profiles
//! side by side, the prediction model, the paper comparison, peer measurements, threats to
//! validity and warnings.

use serde_json::json;

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings::{self, Finding};
use crate::analysis::model::Checked;
use crate::analysis::recommend::RecommendOptions;
use crate::analysis::recorded::is_reference;
use crate::analysis::report::lines::{condition_line, machine_line, storage_line};
use crate::analysis::report::model::{Block, Report};
use crate::analysis::report::{plots, roofline, tables, threats};
use crate::analysis::view::WorkloadView;

/// What a report is made from: the loaded folder, its cells and views, every cell's
/// prediction, the findings judged, the cells' warnings and the kept peer measurements.
pub struct Inputs<'a> {
    pub results: &'a Results,
    pub cells: &'a [Cell],
    pub views: &'a [WorkloadView<'a>],
    pub checked: &'a [Checked],
    pub found: &'a [Finding],
    /// The findings judged under each other loader the folder ran (`--loaders`).
    pub per_loader: &'a [(String, Vec<Finding>)],
    pub warned: &'a [String],
    pub peers: Option<&'a str>,
    pub plan: &'a RecommendOptions,
}

/// The report, and the JSON report.json gives beside it: Kendall tau per view and the
/// prediction model's validation.
pub struct Assembled {
    pub report: Report,
    pub kendall: serde_json::Map<String, serde_json::Value>,
    pub prediction: serde_json::Value,
}

/// Builds the report.
pub fn assemble(inputs: &Inputs) -> Assembled {
    let mut report = Report::default();
    header(&mut report, inputs.results, inputs.cells);
    let references: Vec<bool> = inputs
        .views
        .iter()
        .map(|v| is_reference(inputs.results, &v.name))
        .collect();
    recommendations(&mut report, inputs, &references);
    variants(&mut report, inputs.views);
    let mut kendall = serde_json::Map::new();
    for view in inputs.views.iter().filter(|v| v.label().tag.is_none()) {
        let tau = view_section(&mut report, inputs, view);
        kendall.insert(
            view.title(),
            json!(tau.map(|(t, n)| json!({"tau": t, "strategies": n}))),
        );
    }
    across_storage(&mut report, inputs.views);
    let mut prediction = serde_json::Value::Null;
    if let Some(cal) = &inputs.results.manifest.calibration {
        let (text, json) = roofline::section(inputs.results, inputs.checked, cal);
        report.heading(2, "Prediction model");
        report.push(Block::Markdown(text));
        prediction = json;
    }
    // The paper's findings are about the paper's pipelines (its reference workloads, the
    // synthetic ones included): judged only when one was run.
    if references.contains(&true) {
        paper_comparison(&mut report, inputs.found);
        if !inputs.per_loader.is_empty() {
            loaders_comparison(&mut report, inputs.found, inputs.per_loader);
        }
    }
    if let Some(section) = inputs.peers {
        report.push(Block::Markdown(section.to_string()));
    }
    report.heading(2, "Threats to validity");
    report.push(Block::List(threats::items(
        inputs.results,
        inputs.cells,
        inputs.found,
        references.contains(&true),
    )));
    report.push(Block::Gap);
    report.push(Block::Gap);
    report.heading(2, "Warnings");
    if inputs.warned.is_empty() {
        report.push(Block::Line("None.".into()));
    }
    report.push(Block::List(inputs.warned.to_vec()));
    Assembled {
        report,
        kendall,
        prediction,
    }
}

/// The title, the machine, the storage profiles, the counts, and the rows left out.
fn header(report: &mut Report, results: &Results, cells: &[Cell]) {
    report.heading(1, "prepbench report");
    report.paragraph(machine_line(results));
    report.paragraph(storage_line(results));
    let runs = results
        .rows
        .iter()
        .map(|r| &r.run_id)
        .collect::<std::collections::HashSet<_>>()
        .len();
    report.paragraph(format!(
        "{runs} runs ({} rows) in {} cells.",
        results.rows.len(),
        cells.len()
    ));
    if results.left_out.is_empty() {
        return;
    }
    const SHOWN: usize = 10;
    report.paragraph(format!(
        "**{} of runs.csv left out** of every table and verdict, each with its reason (a \
         rate or time that is not a number, a repeated line, another epoch size than its \
         cell's):",
        crate::units::count(results.left_out.len() as u64, "row", "rows")
    ));
    let mut items: Vec<String> = results.left_out.iter().take(SHOWN).cloned().collect();
    if results.left_out.len() > SHOWN {
        items.push(format!("and {} more", results.left_out.len() - SHOWN));
    }
    report.push(Block::List(items));
    report.push(Block::Gap);
}

/// Your own workloads start with the answer: what to store, and the evidence for it.
fn recommendations(report: &mut Report, inputs: &Inputs, references: &[bool]) {
    let machine = crate::analysis::recommend::machine_of(inputs.results, inputs.plan);
    for (view, _) in inputs.views.iter().zip(references).filter(|(_, r)| !**r) {
        if let Some(text) = crate::analysis::recommend::section(view, inputs.plan, &machine) {
            report.heading(2, format!("Recommendation: {}", view.title()));
            report.push(Block::Markdown(text));
        }
    }
}

/// Dataset variants (`name@k=v`): one table per workload instead of a section each.
fn variants(report: &mut Report, views: &[WorkloadView]) {
    let mut groups: Vec<(String, Vec<&WorkloadView>)> = Vec::new();
    for view in views {
        let label = view.label();
        if label.tag.is_none() {
            continue;
        }
        let base = if view.condition.is_plain() {
            label.base
        } else {
            format!("{} [{}]", label.base, view.condition)
        };
        match groups.iter_mut().find(|(b, _)| *b == base) {
            Some((_, group)) => group.push(view),
            None => groups.push((base, vec![view])),
        }
    }
    for (base, group) in &mut groups {
        group.sort_by(|a, b| {
            tables::variant_mb(a)
                .partial_cmp(&tables::variant_mb(b))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
        report.heading(2, base.clone());
        report.push(Block::Table(tables::variants(base, group)));
    }
}

/// One workload's section: what it reproduces and was measured under, its tables, Kendall tau
/// against the paper's ranking (returned), and its plots.
fn view_section(report: &mut Report, inputs: &Inputs, view: &WorkloadView) -> Option<(f64, usize)> {
    let results = inputs.results;
    report.heading(2, view.title());
    if let Some(p) = &view.paper_name {
        report.paragraph(format!("Reproduces the paper's `{p}` pipeline."));
    }
    if let Some(line) = condition_line(results, view) {
        report.paragraph(line);
    }
    report.titled_table("Strategies", Some(tables::strategies(view)));
    report.titled_table("Compression", tables::compression(view));
    report.titled_table("Caching", Some(tables::caching(view)));
    report.titled_table("Thread scaling", tables::threads(view));
    report.titled_table("Where the time goes", tables::bottlenecks(view, results));
    report.titled_table("Simulated training", tables::training(view, results));
    report.titled_table("Roofline", roofline::table(view, inputs.checked));
    let tau = findings::kendall(view);
    match tau {
        Some((tau, n)) => report.paragraph(format!(
            "Kendall tau between our ranking by cold throughput and the paper's: **{tau:.2}** over {n} strategies."
        )),
        None if view.paper_name.is_some() => report.paragraph(
            "Kendall tau: not computed (fewer than two strategies in common with the paper's figures).",
        ),
        None => {}
    }
    // Your own workloads' trade-off plot marks the strategy the recommendation names.
    let recommended = (!is_reference(results, &view.name))
        .then(|| {
            let machine = crate::analysis::recommend::machine_of(results, inputs.plan);
            crate::analysis::recommend::candidates(view, inputs.plan, &machine)
                .into_iter()
                .next()
        })
        .flatten()
        .map(|c| (c.strategy, c.codec));
    let mut figures = plots::plots(view, recommended.as_ref());
    figures.extend(roofline::plot(view, inputs.checked));
    report.push(Block::Figures(figures));
    tau
}

/// A workload read under several storage profiles (one consumer): the profiles side by side.
fn across_storage(report: &mut Report, views: &[WorkloadView]) {
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
        if let Some(figure) = plots::across_storage(group) {
            report.heading(2, format!("{name} across storage profiles"));
            report.push(Block::Figures(vec![figure]));
        }
    }
}

/// The paper's findings, each claim judged, with how they are judged.
fn paper_comparison(report: &mut Report, found: &[Finding]) {
    report.heading(2, "Paper comparison");
    report.paragraph(format!(
        "Each finding is split into the claims the paper makes; each claim is judged on the 95 % interval of the ratio it is about: reproduced (the interval lies on the claim's side), contradicted (on the opposite side), not reproduced (the interval lies clear of the claim's side, not wholly on the opposite one), unsettled (the interval reaches onto the claim's side and off it, so more trials would decide; or other processes used more than {heavy:.0} % of the machine while its cells ran, or, for thread scaling, left fewer cores free than it ran threads), or not testable here (the reason is given). A ratio of two epochs of one run (the page cache, the application cache), or of a codec over none for one strategy whose trials ran side by side (at least {pairs} pairs started within {window:.0} s of each other), is the geometric mean of the pairs' own ratios; other ratios (thread counts among them) take the two cells' trials as independent. Epochs under {} s and cells of one trial are not judged. Where the paper published a figure for the same subject, a line under the check says whether ours has the paper's size (within a factor of {size}), apart from the verdict: a claim can hold at a size the paper did not see. Where a check did not reproduce, the measured mechanism follows it.",
        crate::analysis::cells::MIN_EPOCH_S,
        heavy = crate::results::rows::heavy_load_pct(),
        size = crate::analysis::findings::SIZE_FACTOR,
        pairs = crate::analysis::findings::measured::pairs::MIN_PAIRS,
        window = crate::analysis::findings::measured::pairs::PAIR_WINDOW_S,
    ));
    for f in found {
        report.push(Block::Markdown(f.markdown()));
    }
}

/// Every claim's verdict under prepbench's own engine and under each other loader side by
/// side, then each loader's findings in full (its checks, intervals and mechanisms): the
/// paper judged on its own stack beside prepbench's.
fn loaders_comparison(
    report: &mut Report,
    native: &[Finding],
    per_loader: &[(String, Vec<Finding>)],
) {
    report.heading(2, "The paper under each loader");
    report.paragraph(
        "The same claims judged apart on the runs under each loader (never pooled): every \
         loader read the same stores under the same protocol. A claim not testable under a \
         loader says why (a step it has no form of, a pipeline or a storage its sweeps left out)."
            .to_string(),
    );
    let mut md = String::from("| claim | native |");
    for (loader, _) in per_loader {
        md.push_str(&format!(" {loader} |"));
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(per_loader.len()));
    md.push('\n');
    for sub in native.iter().flat_map(|f| &f.sub_claims) {
        md.push_str(&format!("| {} | {} |", sub.id, sub.verdict.text()));
        for (_, found) in per_loader {
            let text = claim_in(found, sub.id).map_or("?", |o| o.verdict.text());
            md.push_str(&format!(" {text} |"));
        }
        md.push('\n');
    }
    report.push(Block::Markdown(md));
    let behind = differences(native, per_loader);
    if !behind.is_empty() {
        report.paragraph("Where the verdicts differ, what was measured behind each:".to_string());
        report.push(Block::Markdown(behind));
    }
    for (loader, found) in per_loader {
        report.heading(3, format!("Under the {loader} loader"));
        for f in found {
            // Its findings one heading level down.
            report.push(Block::Markdown(f.markdown().replacen("### ", "#### ", 1)));
        }
    }
}

/// Claim `id` among the sub-claims of `found`.
fn claim_in<'f>(found: &'f [Finding], id: &str) -> Option<&'f findings::SubClaim> {
    found
        .iter()
        .flat_map(|f| &f.sub_claims)
        .find(|s| s.id == id)
}

/// For each claim tested under several loaders whose verdict differs between them, every
/// such loader's checks with their figure and measured mechanism (a cost per record, a bound),
/// as Markdown lines.
fn differences(native: &[Finding], per_loader: &[(String, Vec<Finding>)]) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    // Only claims tested under more than one loader can differ in what was measured.
    let testable = |v: findings::Verdict| v != findings::Verdict::NotTestable;
    for sub in native.iter().flat_map(|f| &f.sub_claims) {
        let others: Vec<(&str, &findings::SubClaim)> = per_loader
            .iter()
            .filter_map(|(loader, found)| Some((loader.as_str(), claim_in(found, sub.id)?)))
            .filter(|(_, o)| testable(o.verdict))
            .collect();
        if !testable(sub.verdict) || others.iter().all(|(_, o)| o.verdict == sub.verdict) {
            continue;
        }
        for (loader, claim) in std::iter::once(("native", sub)).chain(others) {
            for c in &claim.checks {
                let _ = write!(
                    md,
                    "- {} under {loader}: {}: {} ({})",
                    sub.id,
                    c.subject,
                    c.measured,
                    c.verdict.text()
                );
                match &c.mechanism {
                    Some(m) => {
                        let _ = writeln!(md, "; {m}");
                    }
                    None => md.push('\n'),
                }
            }
        }
    }
    md
}
