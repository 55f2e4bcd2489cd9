//! `prepbench compare A B`: two results folders (two machines, or two versions), cell by cell:
//! throughput ratio B/A with a 95 % CI and Welch's t-test, then the largest significant changes.

use std::fmt::Write;
use std::path::Path;

use crate::analysis::cells::{Cell, CellKey, Results};
use crate::analysis::findings::{self, Verdict};
use crate::analysis::stats::{ratio_ci, welch};

/// Significance level of the verdicts.
pub const ALPHA: f64 = 0.05;

#[derive(Clone, Debug)]
pub struct Change {
    pub key: CellKey,
    pub a_sps: f64,
    pub b_sps: f64,
    pub ratio: f64,
    pub ci95: Option<(f64, f64)>,
    pub p: Option<f64>,
    pub verdict: &'static str,
}

pub fn changes(a: &[Cell], b: &[Cell]) -> Vec<Change> {
    let mut out = Vec::new();
    for cb in b {
        let Some(ca) = a.iter().find(|c| c.key == cb.key) else {
            continue;
        };
        let w = welch(&ca.throughput, &cb.throughput);
        let ci = ratio_ci(&ca.throughput, &cb.throughput);
        let ratio = cb.throughput.mean / ca.throughput.mean;
        let verdict = match (w.as_ref().map(|w| w.p), ci) {
            (Some(p), Some((_, lo, hi))) if p < ALPHA && (lo > 1.0 || hi < 1.0) => {
                if ratio > 1.0 {
                    "faster"
                } else {
                    "slower"
                }
            }
            (Some(_), _) => "no significant change",
            (None, _) => "too few trials to tell",
        };
        out.push(Change {
            key: cb.key.clone(),
            a_sps: ca.throughput.mean,
            b_sps: cb.throughput.mean,
            ratio,
            ci95: ci.map(|(_, lo, hi)| (lo, hi)),
            p: w.map(|w| w.p),
            verdict,
        });
    }
    out
}

/// The comparison as Markdown.
pub fn compare(a_dir: &Path, b_dir: &Path) -> anyhow::Result<String> {
    let (a, b) = (Results::load(a_dir)?.cells(), Results::load(b_dir)?.cells());
    let list = changes(&a, &b);
    if list.is_empty() {
        anyhow::bail!("{} and {} have no cell in common (same workload, strategy, codec, threads, cache and epoch)", a_dir.display(), b_dir.display());
    }
    let mut out = String::new();
    let _ = writeln!(out, "# {} (B) vs {} (A)\n\nThroughput ratio B/A with 95 % CI (delta method) and Welch's t-test at alpha = {ALPHA}.\n", b_dir.display(), a_dir.display());
    let row = |c: &Change| {
        let k = &c.key;
        format!(
            "| {} | {} | {} | {} | {} e{} | {:.0} | {:.0} | {:.2} | {} | {} | {} |",
            k.workload,
            k.strategy,
            k.codec,
            k.threads,
            k.cache,
            k.epoch,
            c.a_sps,
            c.b_sps,
            c.ratio,
            c.ci95
                .map(|(lo, hi)| format!("[{lo:.2}, {hi:.2}]"))
                .unwrap_or_else(|| "-".into()),
            c.p.map(|p| format!("{p:.3}")).unwrap_or_else(|| "-".into()),
            c.verdict
        )
    };
    let header = "| workload | strategy | codec | threads | cache | A samples/s | B samples/s | B/A | 95 % CI | p | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|";
    let mut significant: Vec<&Change> = list
        .iter()
        .filter(|c| c.verdict == "faster" || c.verdict == "slower")
        .collect();
    significant.sort_by(|x, y| y.ratio.ln().abs().total_cmp(&x.ratio.ln().abs()));
    let _ = writeln!(out, "## Largest significant changes\n");
    if significant.is_empty() {
        let _ = writeln!(out, "None at alpha = {ALPHA}.\n");
    } else {
        let _ = writeln!(out, "{header}");
        for c in significant.iter().take(10) {
            let _ = writeln!(out, "{}", row(c));
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{}", conclusions(a_dir, b_dir)?);
    let _ = writeln!(out, "## Every common cell\n\n{header}");
    for c in &list {
        let _ = writeln!(out, "{}", row(c));
    }
    Ok(out)
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

/// Whether the two folders conclude the same: the findings' verdicts and each workload's best
/// strategy, side by side, with how many agree.
fn conclusions(a_dir: &Path, b_dir: &Path) -> anyhow::Result<String> {
    let (a, b) = (conclusions_of(a_dir)?, conclusions_of(b_dir)?);
    let mut out = String::new();
    let agree = |x: &str, y: &str| if x == y { "yes" } else { "**no**" };
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
    let _ = writeln!(
        out,
        "## Best strategy (cold, codec none, most threads, epochs of 1 s or more)\n\n| workload | A | B | same |\n|---|---|---|---|"
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
    use crate::analysis::stats::Summary;

    fn cell(strategy: &str, values: &[f64]) -> Cell {
        Cell {
            key: CellKey {
                workload: "w".into(),
                condition: Default::default(),
                split: 1,
                strategy: strategy.into(),
                codec: workloads::Codec::None,
                threads: 2,
                cache: crate::results::CacheState::Cold,
                epoch: 0,
            },
            samples: 10,
            storage_bytes: 1.0,
            throughput: Summary::of(values).unwrap(),
            online: Summary::of(values).unwrap(),
            first_sample: None,
            steady: None,
            foreign_load_pct: None,
            offline: None,
            invalid_runs: 0,
            verified: None,
            rows: Vec::new(),
        }
    }

    #[test]
    fn verdicts_follow_welch_and_the_ratio_ci() {
        let a = vec![
            cell("x", &[100.0, 101.0, 99.0, 100.0]),
            cell("y", &[100.0, 110.0, 90.0]),
            cell("z", &[5.0]),
        ];
        let b = vec![
            cell("x", &[150.0, 151.0, 149.0, 150.0]),
            cell("y", &[101.0, 111.0, 91.0]),
            cell("z", &[6.0]),
            cell("only-b", &[1.0, 2.0]),
        ];
        let list = changes(&a, &b);
        assert_eq!(list.len(), 3, "cells only in one folder are left out");
        let get = |s: &str| list.iter().find(|c| c.key.strategy == s).unwrap();
        assert_eq!(get("x").verdict, "faster");
        assert!((get("x").ratio - 1.5).abs() < 1e-12);
        assert_eq!(get("y").verdict, "no significant change");
        assert_eq!(get("z").verdict, "too few trials to tell");
    }
}
