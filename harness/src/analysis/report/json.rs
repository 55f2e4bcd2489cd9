//! The report as JSON (report.json): the machine, every cell's statistics, the findings,
//! Kendall tau per view, the warnings, the prediction model, and every table of the report as
//! data (its section, id, caption, columns and rows).

use serde_json::json;

use crate::analysis::cells::{Cell, Results};
use crate::analysis::findings::Finding;
use crate::analysis::report::assemble::Assembled;
use crate::analysis::report::summary::verdict_or_dash;

/// report.json's value.
pub fn json(
    results: &Results,
    cells: &[Cell],
    (found, per_loader): (&[Finding], &[(String, Vec<Finding>)]),
    warned: &[String],
    assembled: &Assembled,
) -> serde_json::Value {
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
    let tables: Vec<serde_json::Value> = assembled
        .report
        .tables()
        .into_iter()
        .map(|(section, t)| {
            json!({
                "section": section, "id": t.id, "caption": t.caption, "columns": t.columns,
                "rows": t.rows,
            })
        })
        .collect();
    json!({
        "machine": results.manifest.machine,
        "cells": cells_json,
        "findings": found,
        "findings_by_loader": per_loader
            .iter()
            .map(|(loader, f)| (loader.clone(), json!(f)))
            .collect::<serde_json::Map<_, _>>(),
        "kendall_tau": assembled.kendall,
        "warnings": warned,
        "prediction": assembled.prediction,
        "tables": tables,
    })
}
