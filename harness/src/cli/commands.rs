//! The small subcommands: `validate`, `list`, `generate`. (`run` lives in `run.rs`.)

use std::path::{Path, PathBuf};

use anyhow::Context;
use datasets::GenerateRequest;
use workloads::registry::REGISTRY;
use workloads::Workload;

use crate::cli::{default_threads, GenerateArgs, ListWhat, WorkloadWhat};
use crate::progress::Progress;
use crate::store::housekeeping::{self, StoreEntry};
use crate::store::remote;
use crate::units;

/// Validates each file; returns how many failed (each failure printed to stderr).
pub fn validate(files: &[PathBuf]) -> usize {
    let mut failed = 0;
    for file in files {
        let checked = Workload::from_path(file).and_then(|w| {
            datasets::check_workload(&w.spec)?;
            for def in &w.steps {
                def.step.check().map_err(|e| {
                    w.spec.error_at(
                        &format!("name: {}", def.name),
                        format!("step `{}`: {}", def.name, e.message),
                    )
                })?;
            }
            Ok(w)
        });
        match checked {
            Ok(w) => {
                let names: Vec<String> = w.spec.strategies().into_iter().map(|s| s.name).collect();
                println!(
                    "ok: {} (workload `{}`, {} steps; strategies: {})",
                    file.display(),
                    w.spec.label(),
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

/// `prepbench workload show NAME`: a reference workload's YAML, byte for byte as shipped.
pub fn workload(what: &WorkloadWhat) -> anyhow::Result<String> {
    match what {
        WorkloadWhat::Show { name } => workloads::BUILTIN
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, yaml)| yaml.to_string())
            .ok_or_else(|| {
                let names: Vec<&str> = workloads::BUILTIN.iter().map(|(n, _)| *n).collect();
                anyhow::anyhow!(
                    "no reference workload `{name}`{}; reference workloads: {}",
                    workloads::suggest::did_you_mean(name, names.iter().copied()),
                    names.join(", ")
                )
            }),
    }
}

pub fn list(what: &ListWhat) -> anyhow::Result<String> {
    let mut out = String::new();
    match what {
        ListWhat::Workloads => {
            for (name, _) in workloads::BUILTIN {
                let w = workloads::load(name)?;
                let names: Vec<String> = w.spec.strategies().into_iter().map(|s| s.name).collect();
                out.push_str(&format!(
                    "{name:<12} {}\n{:<12} strategies: {}\n",
                    w.spec.description,
                    "",
                    names.join(", ")
                ));
            }
        }
        ListWhat::Steps => {
            for spec in REGISTRY {
                let mut flags = Vec::new();
                if spec.facts.random {
                    flags.push("random: always online");
                }
                if spec.facts.fan_out {
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
            for s in w.spec.strategies() {
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
                // A kind without a generator stands in for nothing: it reads the user's files.
                let what = if kind.generate_one.is_none() {
                    "reads your own folder (dataset.path or --dataset); no generator".to_string()
                } else {
                    format!("stands in for {}; {size}", kind.real)
                };
                out.push_str(&format!(
                    "{:<12} {}\n{:<12} {what}\n",
                    kind.name, kind.layout, ""
                ));
                if !kind.options.is_empty() {
                    out.push_str(&format!(
                        "{:<12} options: {}\n",
                        "",
                        kind.options.join(", ")
                    ));
                }
                if !kind.reader_options.is_empty() {
                    out.push_str(&format!(
                        "{:<12} reading your files (with dataset.path): {}\n",
                        "",
                        kind.reader_options.join(", ")
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// Generates a dataset, then checks its size per sample against the real dataset's; returns
/// the calibration lines (an error when outside the tolerance). An `s3://` destination is
/// generated in a local staging folder and uploaded.
pub fn generate(args: &GenerateArgs, progress: Progress) -> anyhow::Result<Vec<String>> {
    let kind = datasets::find_kind(&args.kind)?;
    let request = GenerateRequest {
        root: args.out.clone(),
        samples: args.samples,
        seed: args.seed,
        threads: args.threads.unwrap_or_else(default_threads),
        options: args.option.iter().cloned().collect(),
    };
    kind.check_options(&request.options)?;
    let (files, root): (std::sync::Arc<dyn datasets::Files>, PathBuf) =
        if datasets::files::is_remote(&args.out) {
            let files = upload_generated(kind, request.clone(), progress)?;
            let root = PathBuf::from(files.root());
            (std::sync::Arc::new(files), root)
        } else {
            generate_into(kind, &request, progress)?;
            (datasets::files::local(), args.out.clone())
        };
    // Every kind of the family was written: calibrate each against its real dataset, as
    // listed where it now is.
    let request = GenerateRequest { root, ..request };
    let mut lines = Vec::new();
    let mut outside = Vec::new();
    for sibling in datasets::KINDS.iter().filter(|k| k.family == kind.family) {
        let source = datasets::prepare_in(&files, sibling.name, &request, &|_| ())?;
        let check = datasets::check_calibration(sibling, &source, &request)?;
        if !check.within {
            outside.push(check.line.clone());
        }
        lines.push(check.line);
    }
    if !outside.is_empty() {
        anyhow::bail!("generated data is not calibrated:\n{}", outside.join("\n"));
    }
    if let Some(cost) = (!datasets::files::is_remote(&args.out))
        .then(|| datasets::recorded_decode(&args.out))
        .flatten()
    {
        let gzip = cost
            .decoded_gzip_saving_pct
            .map(|p| format!("; GZIP saves {p:.1} % of the decoded pixels"))
            .unwrap_or_default();
        lines.push(format!(
            "{}: JPEG decode {:.2} ms per megapixel at {:.2} bits per pixel{gzip} ({} files, one \
             thread; real photographs: docs/decisions.md, Datasets)",
            kind.name, cost.ms_per_mp, cost.bits_per_pixel, cost.files
        ));
    }
    Ok(lines)
}

fn generate_into(
    kind: &datasets::DatasetKind,
    request: &GenerateRequest,
    progress: Progress,
) -> anyhow::Result<()> {
    crate::measure::places::check_a_folder("the dataset folder", &request.root)?;
    let bar = progress.bar(
        datasets::generate::files_to_generate(kind.name, request)? as u64,
        &format!("generate {}", kind.name),
    );
    datasets::generate(kind.name, request, &|_| bar.inc(1))
        .with_context(|| format!("generating `{}` into {}", kind.name, request.root.display()))?;
    bar.finish_and_clear();
    Ok(())
}

/// Every file under `dir`, as `/`-separated paths relative to it.
fn relative_files(dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let child = rel.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                pending.push(child);
            } else {
                out.push(child.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Generates `request` into a local staging folder and uploads it to the object store its root
/// names, on the request's threads, the generation marker last (so that its presence still
/// means complete). A prefix already holding this generation with enough files is left as it
/// is; one holding anything else is refused.
fn upload_generated(
    kind: &datasets::DatasetKind,
    request: GenerateRequest,
    progress: Progress,
) -> anyhow::Result<remote::RemoteFiles> {
    let store = remote::open(&request.root)?;
    let files = remote::RemoteFiles::new(store.clone());
    let url = PathBuf::from(files.root());
    let marker = datasets::MARKER;
    let have = match store
        .fetch(marker)
        .with_context(|| format!("reading {}", url.display()))?
    {
        Some(text) => datasets::marker_files(
            &text,
            &url.join(marker),
            kind,
            &GenerateRequest {
                root: url.clone(),
                ..request.clone()
            },
        )?,
        None if !store.list("")?.is_empty() => anyhow::bail!(
            "{} holds objects and was not generated by prepbench: refusing to write into it",
            url.display()
        ),
        None => 0,
    };
    if have >= request.files(kind) {
        return Ok(files);
    }
    let staging = crate::scratch::ScratchDir::new(
        std::env::temp_dir().join(format!("prepbench-upload-{}", std::process::id())),
    );
    let staged = staging.path();
    let local = GenerateRequest {
        root: staged.to_path_buf(),
        ..request.clone()
    };
    generate_into(kind, &local, progress)?;
    let names: Vec<String> = relative_files(staged)
        .with_context(|| format!("listing {}", staged.display()))?
        .into_iter()
        .filter(|n| n != marker)
        .collect();
    let bar = progress.bar(names.len() as u64, &format!("upload {}", kind.name));
    let upload = |name: &str| {
        store
            .put_file(&staged.join(name), name)
            .with_context(|| format!("uploading {name} to {}", url.display()))
    };
    datasets::for_each_index(
        request.threads,
        0..names.len(),
        || anyhow::anyhow!("an upload thread panicked"),
        |i| {
            upload(&names[i])?;
            bar.inc(1);
            Ok(())
        },
    )?;
    upload(marker)?;
    bar.finish_and_clear();
    Ok(files)
}

/// `prepbench compare`: the comparison in the format asked for; the plot, when asked for, is
/// written to its file.
pub fn compare(args: &crate::cli::CompareArgs) -> anyhow::Result<String> {
    use crate::analysis::compare::{comparison, CompareOptions};
    let result = comparison(
        &args.a,
        &args.b,
        &CompareOptions {
            across: args.across,
            values: args.values.clone(),
            noise: args.noise,
            correction: args.correction,
        },
    )?;
    if let Some(path) = &args.plot {
        std::fs::write(path, result.plot())
            .with_context(|| format!("cannot write the plot to {}", path.display()))?;
    }
    if args.json {
        result.json()
    } else if args.csv {
        result.csv()
    } else {
        result.markdown()
    }
}

/// `prepbench store list` and `prepbench store remove`.
pub fn store(what: &crate::cli::StoreWhat) -> anyhow::Result<String> {
    use crate::cli::StoreWhat;
    match what {
        StoreWhat::List {
            store_dir,
            workload,
            json,
        } => store_list(store_dir, workload.as_deref(), *json),
        StoreWhat::Remove {
            store_dir,
            workload,
            strategy,
            older_than,
            incomplete,
            stale,
            all,
            dry_run,
        } => {
            let selection = crate::store::housekeeping::Selection {
                workload: workload.clone(),
                strategy: strategy.clone(),
                older_than: *older_than,
                incomplete: *incomplete,
                stale: *stale,
                all: *all,
            };
            store_remove(store_dir, &selection, *dry_run)
        }
    }
}

/// The stores `entries` as a table: what each holds, its size, state, age and place.
fn store_table(entries: &[&StoreEntry]) -> String {
    let now = std::time::SystemTime::now();
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let age = now
                .duration_since(e.modified)
                .map_or_else(|_| "-".to_string(), |d| units::duration(d.as_secs_f64()));
            vec![
                e.workload.clone(),
                e.strategy.clone(),
                e.codec.map_or_else(|| "-".to_string(), |c| c.to_string()),
                e.shards.to_string(),
                e.samples.to_string(),
                units::bytes(e.bytes as f64),
                e.state.text().to_string(),
                age,
                e.path.display().to_string(),
            ]
        })
        .collect();
    crate::markdown::table(
        &[
            "workload", "strategy", "codec", "shards", "samples", "size", "state", "age", "path",
        ],
        &rows,
    )
}

/// The size of `entries` together.
fn store_total(entries: &[&StoreEntry]) -> String {
    units::bytes(entries.iter().map(|e| e.bytes as f64).sum::<f64>())
}

/// `prepbench store list`: every store (of `workload`), as a table or JSON.
fn store_list(store_dir: &Path, workload: Option<&str>, json: bool) -> anyhow::Result<String> {
    let all = housekeeping::list(store_dir)?;
    let shown: Vec<&StoreEntry> = all
        .iter()
        .filter(|e| workload.is_none_or(|w| w == e.workload))
        .collect();
    if json {
        return Ok(serde_json::to_string_pretty(&shown)? + "\n");
    }
    if shown.is_empty() {
        return Ok(format!("{} holds no stores\n", store_dir.display()));
    }
    Ok(format!(
        "{}\n{} in {} stores.\n",
        store_table(&shown),
        store_total(&shown),
        shown.len()
    ))
}

/// `prepbench store remove`: the stores `selection` selects, removed (or listed, with
/// `dry_run`); a store that cannot be removed is named in the error.
fn store_remove(
    store_dir: &Path,
    selection: &housekeeping::Selection,
    dry_run: bool,
) -> anyhow::Result<String> {
    if selection.is_empty() {
        anyhow::bail!(
            "say which stores to remove: --workload, --strategy, --older-than, --incomplete, --stale, or --all for every store in {}",
            store_dir.display()
        );
    }
    let now = std::time::SystemTime::now();
    let every = housekeeping::list(store_dir)?;
    let chosen: Vec<&StoreEntry> = every.iter().filter(|e| selection.selects(e, now)).collect();
    if chosen.is_empty() {
        return Ok(format!(
            "no store in {} matches; nothing removed\n",
            store_dir.display()
        ));
    }
    if dry_run {
        // The same checks as the removal, so the preview promises only what it would do.
        let (refused, removable): (Vec<&StoreEntry>, Vec<&StoreEntry>) = chosen
            .iter()
            .partition(|e| housekeeping::refusal(e).is_some());
        let mut text = format!(
            "{}\nWould remove these {} stores ({}); nothing removed (--dry-run).\n",
            store_table(&removable),
            removable.len(),
            store_total(&removable)
        );
        if !refused.is_empty() {
            let reasons: Vec<String> = refused
                .iter()
                .filter_map(|e| housekeeping::refusal(e))
                .map(|why| format!("- {why}"))
                .collect();
            text.push_str(&format!(
                "Would refuse {} stores:\n{}\n",
                refused.len(),
                reasons.join("\n")
            ));
        }
        return Ok(text);
    }
    let mut removed = Vec::new();
    let mut refused = Vec::new();
    for e in &chosen {
        match housekeeping::remove(e, store_dir) {
            Ok(()) => removed.push(*e),
            Err(err) => refused.push(format!("- {}: {err:#}", e.path.display())),
        }
    }
    let mut text = format!(
        "{}\nRemoved {} stores ({}).\n",
        store_table(&removed),
        removed.len(),
        store_total(&removed)
    );
    if !refused.is_empty() {
        anyhow::bail!(
            "{text}{} stores were not removed:\n{}",
            refused.len(),
            refused.join("\n")
        );
    }
    text.push('\n');
    Ok(text)
}
