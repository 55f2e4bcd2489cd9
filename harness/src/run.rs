//! `prepbench run`: one workload, one or more strategies at one thread count, codec and cache
//! mode, over E epochs. Per strategy: materialize steps `[0, split)` (or reuse a complete
//! store), prepare the page cache, run the online phase, and append a row per epoch.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use datasets::{GenerateRequest, Source};
use workloads::{CacheMode, Codec, Strategy, Workload};

use crate::cache::{self, EvictPolicy};
use crate::execute::{run_online, OnlineInput, OnlineJob};
use crate::materialize::{materialize, MaterializeJob};
use crate::progress::Progress;
use crate::results::{self, Invocation, RunRow, RunsCsv, WorkloadRecord};
use crate::store::{self, StoreKey, StoreManifest};
use crate::verify::verify;
use crate::warnings::Warning;

/// A cold epoch whose files are more resident than this after eviction is invalid.
pub const MAX_COLD_RESIDENCY_PCT: f64 = 5.0;

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub workload: String,
    /// Strategy names; empty means every strategy of the workload.
    pub strategies: Vec<String>,
    pub threads: usize,
    pub samples: Option<usize>,
    pub codec: Codec,
    pub shards: Option<usize>,
    pub cache: CacheMode,
    pub epochs: Option<usize>,
    pub out: PathBuf,
    pub data_dir: PathBuf,
    pub store_dir: PathBuf,
    pub seed: u64,
    pub verify: bool,
    pub evict: EvictPolicy,
    pub rematerialize: bool,
    pub progress: Progress,
}

/// What a run produced.
pub struct RunOutcome {
    pub rows: Vec<RunRow>,
    pub warnings: Vec<Warning>,
    /// Strategies whose output differed from fully-online processing, with the sample ids.
    pub verify_failures: Vec<(String, Vec<u64>)>,
}

/// The dataset directory a workload uses under `data_dir`.
pub fn dataset_root(workload: &Workload, data_dir: &Path) -> PathBuf {
    match &workload.dataset.path {
        Some(path) if path.is_absolute() => path.clone(),
        Some(path) => data_dir.join(path),
        None => data_dir.join(format!(
            "{}-seed{}",
            workload.dataset.kind, workload.dataset.seed
        )),
    }
}

fn resolve_strategies(workload: &Workload, names: &[String]) -> anyhow::Result<Vec<Strategy>> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(workload.strategies());
    }
    names
        .iter()
        .map(|name| {
            workload
                .strategy(name)
                .map_err(|e| anyhow::anyhow!("{}: {e}", workload.origin))
        })
        .collect()
}

/// Opens (generating when needed) the first `samples` samples of the workload's dataset.
pub fn prepare_source(
    workload: &Workload,
    data_dir: &Path,
    samples: usize,
    threads: usize,
    progress: Progress,
) -> anyhow::Result<Source> {
    let root = dataset_root(workload, data_dir);
    let request = GenerateRequest {
        root: root.clone(),
        samples,
        seed: workload.dataset.seed,
        threads,
    };
    let bar = progress.bar(
        samples as u64,
        &format!("generate {}", workload.dataset.kind),
    );
    let source = datasets::prepare(&workload.dataset.kind, &request, &|_| bar.inc(1))
        .with_context(|| {
            format!(
                "preparing dataset `{}` in {}",
                workload.dataset.kind,
                root.display()
            )
        })?;
    bar.finish_and_clear();
    Ok(source)
}

/// The materialized input of a strategy: a reused or freshly written store.
struct Materialized {
    dir: PathBuf,
    manifest: StoreManifest,
    reused: bool,
}

fn offline_phase(
    opts: &RunOptions,
    workload: &Workload,
    source: &Source,
    strategy: &Strategy,
    shards: usize,
) -> anyhow::Result<Materialized> {
    let key = StoreKey {
        workload: workload.name.clone(),
        strategy: strategy.name.clone(),
        split: strategy.split,
        codec: opts.codec,
        shards,
        samples: source.len() as u64,
        source_fingerprint: source.fingerprint(),
        prefix_fingerprint: workload.prefix_fingerprint(strategy.split),
    };
    let dir = key.dir(&opts.store_dir);
    if !opts.rematerialize {
        if let Some(manifest) = store::find_complete(&dir, &key)? {
            return Ok(Materialized {
                dir,
                manifest,
                reused: true,
            });
        }
    }
    if opts.cache == CacheMode::Cold {
        // The offline phase reads the raw files from storage too: time it from a cold cache.
        cache::evict(&source.paths(), opts.evict)?;
    }
    let bar = opts.progress.bar(
        source.len() as u64,
        &format!("materialize {}", strategy.name),
    );
    let job = MaterializeJob {
        workload,
        source,
        key: &key,
        dir: &dir,
        threads: opts.threads,
    };
    let manifest = materialize(&job, &bar)
        .with_context(|| format!("materializing `{}` into {}", strategy.name, dir.display()))?;
    bar.finish_and_clear();
    Ok(Materialized {
        dir,
        manifest,
        reused: false,
    })
}

/// The page-cache state at the start of one epoch.
struct CachePrep {
    label: CacheMode,
    method: String,
    before_pct: f64,
    after_pct: f64,
}

fn prepare_cache(files: &[PathBuf], epoch: u64, opts: &RunOptions) -> anyhow::Result<CachePrep> {
    if epoch > 0 {
        // Later epochs start from the cache the previous epoch left.
        let r = cache::residency(files)?.pct();
        return Ok(CachePrep {
            label: CacheMode::Warm,
            method: "none".into(),
            before_pct: r,
            after_pct: r,
        });
    }
    match opts.cache {
        CacheMode::Cold => {
            let ev = cache::evict(files, opts.evict)?;
            Ok(CachePrep {
                label: CacheMode::Cold,
                method: ev.method,
                before_pct: ev.before.pct(),
                after_pct: ev.after.pct(),
            })
        }
        CacheMode::Warm => {
            let before = cache::residency(files)?.pct();
            cache::prefetch(files)?;
            let after = cache::residency(files)?.pct();
            Ok(CachePrep {
                label: CacheMode::Warm,
                method: "prefetch".into(),
                before_pct: before,
                after_pct: after,
            })
        }
    }
}

/// Runs every requested strategy and records the rows in `opts.out`.
pub fn run(opts: &RunOptions, command_line: Vec<String>) -> anyhow::Result<RunOutcome> {
    let started_utc = results::utc_now();
    let workload = workloads::load(&opts.workload)?;
    let strategies = resolve_strategies(&workload, &opts.strategies)?;
    let samples = opts.samples.unwrap_or(workload.dataset.samples);
    if samples == 0 || opts.threads == 0 {
        bail!("--samples and --threads must be at least 1");
    }
    let shards = opts.shards.unwrap_or(workload.sweep.shards).max(1);
    let epochs = opts.epochs.unwrap_or(workload.sweep.epochs).max(1) as u64;
    // Open the results first: a conflicting folder fails before any work is done.
    let csv = RunsCsv::open(&opts.out)?;
    let source = prepare_source(
        &workload,
        &opts.data_dir,
        samples,
        opts.threads,
        opts.progress,
    )?;

    let mut outcome = RunOutcome {
        rows: Vec::new(),
        warnings: Vec::new(),
        verify_failures: Vec::new(),
    };
    if opts.cache == CacheMode::Cold && opts.evict == EvictPolicy::Auto && !cache::can_drop_caches()
    {
        outcome.warnings.push(Warning::NoDropCaches);
    }
    if shards < opts.threads && strategies.iter().any(|s| s.split > 0) {
        outcome.warnings.push(Warning::FewShards {
            shards,
            threads: opts.threads,
        });
    }
    let run_prefix = format!(
        "r{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        std::process::id()
    );
    for (index, strategy) in strategies.iter().enumerate() {
        let materialized = if strategy.split > 0 {
            Some(offline_phase(opts, &workload, &source, strategy, shards)?)
        } else {
            None
        };
        let (files, storage_bytes, input) = match &materialized {
            None => (source.paths(), source.total_bytes(), OnlineInput::Raw),
            Some(m) => (
                m.manifest
                    .shards
                    .iter()
                    .map(|s| m.dir.join(&s.file))
                    .collect::<Vec<_>>(),
                m.manifest.storage_bytes(),
                OnlineInput::Store {
                    dir: &m.dir,
                    manifest: &m.manifest,
                },
            ),
        };
        let job = OnlineJob {
            workload: &workload,
            split: strategy.split,
            source: &source,
            input,
            threads: opts.threads,
            seed: opts.seed,
            epoch: 0,
            hash: false,
        };
        let mut rows = Vec::new();
        for epoch in 0..epochs {
            let prep = prepare_cache(&files, epoch, opts)?;
            let valid = !(prep.label == CacheMode::Cold && prep.after_pct > MAX_COLD_RESIDENCY_PCT);
            if !valid {
                let fs_type = crate::system::filesystem_of(&files[0])
                    .map(|f| f.fs_type)
                    .unwrap_or_else(|| "unknown".into());
                outcome.warnings.push(Warning::StillResident {
                    strategy: strategy.name.clone(),
                    pct: prep.after_pct,
                    fs_type,
                });
            }
            let bar = opts.progress.bar(
                source.len() as u64,
                &format!("{} epoch {epoch}", strategy.name),
            );
            let result = run_online(&OnlineJob { epoch, ..job }, &bar)
                .with_context(|| format!("online phase of `{}`, epoch {epoch}", strategy.name))?;
            bar.finish_and_clear();
            let online_s = result.delta.wall_s;
            rows.push(RunRow {
                run_id: format!("{run_prefix}-{index}-e{epoch}"),
                started_utc: results::utc_now(),
                workload: workload.name.clone(),
                strategy: strategy.name.clone(),
                split: strategy.split,
                codec: if strategy.split == 0 {
                    "none".into()
                } else {
                    opts.codec.to_string()
                },
                shards: if strategy.split == 0 { 0 } else { shards },
                threads: opts.threads,
                samples: result.samples,
                epoch,
                cache: prep.label.to_string(),
                seed: opts.seed,
                offline_s: materialized.as_ref().map_or(0.0, |m| m.manifest.offline_s),
                offline_reused: materialized.as_ref().is_some_and(|m| m.reused),
                storage_bytes,
                online_s,
                throughput_sps: if online_s > 0.0 {
                    result.samples as f64 / online_s
                } else {
                    0.0
                },
                read_bytes: result.delta.read_bytes,
                read_chars: result.delta.read_chars,
                output_bytes: result.output_bytes,
                cpu_user_s: result.delta.cpu_user_s,
                cpu_sys_s: result.delta.cpu_sys_s,
                evict_method: prep.method,
                residency_before_pct: prep.before_pct,
                residency_after_pct: prep.after_pct,
                valid,
                verified: "-".into(),
            });
        }
        if opts.verify {
            let outcome_of =
                verify(&job).with_context(|| format!("verifying `{}`", strategy.name))?;
            let verdict = if outcome_of.passed() { "pass" } else { "fail" };
            rows.iter_mut()
                .for_each(|r| r.verified = verdict.to_string());
            if !outcome_of.passed() {
                outcome
                    .verify_failures
                    .push((strategy.name.clone(), outcome_of.mismatched));
            }
        }
        for row in &rows {
            csv.append(row)?;
        }
        outcome.rows.extend(rows);
    }
    let invocation = Invocation {
        started_utc,
        command_line,
        run_ids: outcome.rows.iter().map(|r| r.run_id.clone()).collect(),
        data_dir: &opts.data_dir,
        store_dir: &opts.store_dir,
        can_drop_caches: cache::can_drop_caches(),
        evict_policy: format!("{:?}", opts.evict).to_lowercase(),
    };
    let record = WorkloadRecord {
        name: &workload.name,
        origin: &workload.origin,
        yaml: &workload.yaml,
        yaml_hash: workload.yaml_hash(),
    };
    results::record_invocation(&opts.out, &record, &invocation)?;
    Ok(outcome)
}
