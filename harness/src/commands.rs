//! The small subcommands: `validate`, `list`, `generate`. (`run` lives in `run.rs`.)

use std::path::PathBuf;

use anyhow::Context;
use datasets::GenerateRequest;
use workloads::registry::REGISTRY;
use workloads::Workload;

use crate::cli::{default_threads, GenerateArgs, ListWhat};
use crate::progress::Progress;

/// Validates each file; returns how many failed (each failure printed to stderr).
pub fn validate(files: &[PathBuf]) -> usize {
    let mut failed = 0;
    for file in files {
        match Workload::from_path(file) {
            Ok(w) => {
                let names: Vec<String> = w.strategies().into_iter().map(|s| s.name).collect();
                println!(
                    "ok: {} (workload `{}`, {} steps; strategies: {})",
                    file.display(),
                    w.name,
                    w.steps.len(),
                    names.join(", ")
                );
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed += 1;
            }
        }
    }
    failed
}

pub fn list(what: &ListWhat) -> anyhow::Result<String> {
    let mut out = String::new();
    match what {
        ListWhat::Workloads => {
            for (name, _) in workloads::BUILTIN {
                let w = workloads::load(name)?;
                let names: Vec<String> = w.strategies().into_iter().map(|s| s.name).collect();
                out.push_str(&format!(
                    "{name:<12} {}\n{:<12} strategies: {}\n",
                    w.description,
                    "",
                    names.join(", ")
                ));
            }
        }
        ListWhat::Steps => {
            for spec in REGISTRY {
                let mut flags = Vec::new();
                if spec.random {
                    flags.push("random: always online");
                }
                if spec.fan_out {
                    flags.push("fan-out: several samples per input");
                }
                let flags = if flags.is_empty() {
                    String::new()
                } else {
                    format!("  [{}]", flags.join("; "))
                };
                out.push_str(&format!("{}{flags}\n  {}\n", spec.op, spec.summary));
                let rows: Vec<[String; 4]> = spec
                    .params
                    .iter()
                    .map(|p| {
                        [
                            p.name.to_string(),
                            p.kind.to_string(),
                            p.default
                                .map_or("required".to_string(), |d| format!("= {d}")),
                            p.doc.to_string(),
                        ]
                    })
                    .collect();
                let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
                let (w0, w1, w2) = (width(0), width(1), width(2));
                for [name, kind, default, doc] in &rows {
                    out.push_str(&format!(
                        "    {name:<w0$}  {kind:<w1$}  {default:<w2$}  {doc}\n"
                    ));
                }
                out.push('\n');
            }
        }
        ListWhat::Strategies { workload } => {
            let w = workloads::load(workload)?;
            for s in w.strategies() {
                let online: Vec<&str> =
                    w.steps[s.split..].iter().map(|d| d.name.as_str()).collect();
                out.push_str(&format!(
                    "{:<16} split {}  online: {}\n",
                    s.name,
                    s.split,
                    if online.is_empty() {
                        "(read only)".into()
                    } else {
                        online.join(" -> ")
                    }
                ));
            }
        }
        ListWhat::Datasets => {
            for kind in datasets::KINDS {
                let size = match (kind.expected_mb, kind.calibration) {
                    (Some(_), _) => "size set by its options".to_string(),
                    (None, Some(c)) => format!(
                        "{} MB per sample +-{:.0} %",
                        c.mb_per_sample,
                        c.tolerance * 100.0
                    ),
                    (None, None) => "no reference size".to_string(),
                };
                out.push_str(&format!(
                    "{:<12} {}\n{:<12} stands in for {}; {size}\n",
                    kind.name, kind.layout, "", kind.real
                ));
                if !kind.options.is_empty() {
                    out.push_str(&format!(
                        "{:<12} options: {}\n",
                        "",
                        kind.options.join(", ")
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// Generates a dataset, then checks its size per sample against the real dataset's; returns
/// the calibration lines (an error when outside the tolerance).
pub fn generate(args: &GenerateArgs, progress: Progress) -> anyhow::Result<Vec<String>> {
    let kind = datasets::find_kind(&args.kind)?;
    let options = args.option.iter().cloned().collect();
    let request = GenerateRequest {
        root: args.out.clone(),
        samples: args.samples,
        seed: args.seed,
        threads: args.threads.unwrap_or_else(default_threads),
        options,
    };
    let bar = progress.bar(
        request.files(kind) as u64,
        &format!("generate {}", args.kind),
    );
    datasets::generate(&args.kind, &request, &|_| bar.inc(1))
        .with_context(|| format!("generating `{}` into {}", args.kind, args.out.display()))?;
    bar.finish_and_clear();
    // Every kind of the family was written: calibrate each against its real dataset.
    let mut lines = Vec::new();
    let mut outside = Vec::new();
    for sibling in datasets::KINDS.iter().filter(|k| k.family == kind.family) {
        let source = datasets::prepare(sibling.name, &request, &|_| ())?;
        let check = datasets::check_calibration(sibling, &source, &request)?;
        if !check.within {
            outside.push(check.line.clone());
        }
        lines.push(check.line);
    }
    if !outside.is_empty() {
        anyhow::bail!("generated data is not calibrated:\n{}", outside.join("\n"));
    }
    Ok(lines)
}
