//! The `prepbench` binary: parse options, run the command, print its results.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use harness::analysis::recommend::RecommendOptions;
use harness::cli::{commands, terminal as summary};
use harness::cli::{
    default_threads, CalibrateArgs, Cli, Command, PlaceArgs, RunArgs, SweepArgs, WhatifArgs,
};
use harness::plan::reproduce::{self, ScaleName};
use harness::plan::run::{run, RunOptions};
use harness::plan::sweep::{sweep, SweepOptions};
use harness::progress::Progress;

/// `results/local/<workload><suffix>`.
fn default_out(workload: &str, suffix: &str) -> PathBuf {
    let name = workloads::load(workload)
        .map(|w| w.name)
        .unwrap_or_else(|_| "workload".into());
    Path::new("results/local").join(format!("{name}{suffix}"))
}

fn report_verify_failures(failures: &[(String, Vec<u64>)]) -> ExitCode {
    for (strategy, ids) in failures {
        let shown: Vec<String> = ids.iter().take(20).map(u64::to_string).collect();
        let more = if ids.len() > 20 { ", ..." } else { "" };
        eprintln!("error: strategy `{strategy}` differs from fully-online processing for {} samples (ids {}{more})", ids.len(), shown.join(", "));
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_command(args: RunArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.workload, ""));
    let options = RunOptions {
        workload: args.workload,
        strategies: args.strategy,
        threads: args.threads.unwrap_or_else(default_threads),
        samples: args.samples,
        codec: args.codec,
        shards: args.shards,
        cache: args.cache,
        app_cache_mb: args.app_cache_mb,
        epochs: args.epochs,
        out: out.clone(),
        data_dir: args.places.data_dir,
        store_dir: args.places.store_dir,
        seed: args.seed,
        verify: args.verify,
        evict: args.places.evict,
        rematerialize: args.rematerialize,
        progress,
        storage: args.storage,
        consumer: args.consumer,
        on_error: args.on_error,
    };
    if args.ranks {
        return ranks_command(&options);
    }
    let outcome = run(&options, std::env::args().collect())?;
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    if args.json {
        print!("{}", summary::json_lines(&outcome.rows));
    } else {
        print!("{}", summary::table(&outcome.rows, &outcome.bounds));
        progress.note(&format!(
            "rows appended to {}",
            out.join("runs.csv").display()
        ));
    }
    Ok(report_verify_failures(&outcome.verify_failures))
}

#[cfg(feature = "mpi")]
fn ranks_command(options: &RunOptions) -> anyhow::Result<ExitCode> {
    if let Some(text) = harness::plan::ranks::run_ranks(options, std::env::args().collect())? {
        print!("{text}");
        options.progress.note(&format!(
            "per-rank and aggregate rows in {}",
            harness::plan::ranks::table_path(&options.out).display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "mpi"))]
fn ranks_command(_options: &RunOptions) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "--ranks needs a prepbench built with MPI: install an MPI library and libclang (Debian: \
         apt-get install libopenmpi-dev libclang-dev), then `cargo build --release --features \
         mpi` and run it under `mpirun -np N` (docs/cluster.md)"
    )
}

fn sweep_command(args: SweepArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.workload, "-sweep"));
    let options = SweepOptions {
        workload: args.workload,
        strategies: args.strategies,
        codecs: args.codecs,
        threads: args.threads,
        cache: args.cache,
        app_cache_mb: args.app_cache_mb,
        trials: args.trials,
        epochs: args.epochs,
        samples: args.samples,
        shards: args.shards,
        offline_trials: args.offline_trials,
        seed: args.seed,
        verify: args.verify,
        rematerialize: args.rematerialize,
        dataset_mb: args.dataset_mb,
        storage: args.storage,
        consumer: args.consumer,
        on_error: args.on_error,
        calibrate: !args.no_calibrate,
        recalibrate: args.recalibrate,
        calibrate_only: false,
        shard: match args.shard {
            Some(shard) => Some(shard),
            None => harness::plan::partition::from_launcher(&|name| std::env::var(name).ok())
                .map_err(|e| anyhow::anyhow!("sharding the sweep: {e}"))?,
        },
    };
    let places = args.places.into_places(out.clone(), progress);
    let outcome = sweep(&options, &places, std::env::args().collect())?;
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    progress.note(&format!(
        "{} runs done, {} already recorded; results in {}",
        outcome.ran,
        outcome.skipped,
        options
            .shard
            .as_ref()
            .map_or(out.clone(), |s| s.dir(&out))
            .display()
    ));
    Ok(report_verify_failures(&outcome.verify_failures))
}

fn calibrate_command(args: CalibrateArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.workload, "-sweep"));
    let options = SweepOptions {
        workload: args.workload,
        strategies: args.strategies,
        codecs: args.codecs,
        samples: args.samples,
        shards: args.shards,
        offline_trials: 1,
        calibrate: true,
        recalibrate: args.recalibrate,
        calibrate_only: true,
        ..Default::default()
    };
    let places = args.places.into_places(out.clone(), progress);
    let described = sweep(&options, &places, std::env::args().collect())?;
    print!("{}", described.calibration.unwrap_or_default());
    progress.note(&format!(
        "calibration recorded in {}",
        out.join("manifest.json").display()
    ));
    Ok(ExitCode::SUCCESS)
}

fn whatif_command(args: WhatifArgs) -> anyhow::Result<ExitCode> {
    let request = harness::analysis::model::WhatifRequest {
        profile: args.profile,
        cores: args.cores,
        cpu_speed: args.cpu_speed,
        read_mbps: args.read_mbps,
        latency_ms: args.latency_ms,
        codec: args.codec,
    };
    print!(
        "{}",
        harness::analysis::model::whatif_in(&args.dir, &request)?
    );
    Ok(ExitCode::SUCCESS)
}

fn reproduce_command(
    scale: ScaleName,
    out: Option<PathBuf>,
    seed: u64,
    places: PlaceArgs,
    progress: Progress,
) -> anyhow::Result<ExitCode> {
    let out = out.unwrap_or_else(|| reproduce::default_out(scale));
    let places = places.into_places(out.clone(), progress);
    let done = reproduce::reproduce(scale, &places, seed, std::env::args().collect())?;
    let mut failures = Vec::new();
    for (workload, outcome) in &done.sweeps {
        for warning in &outcome.warnings {
            eprintln!("warning: {workload}: {warning}");
        }
        failures.extend(outcome.verify_failures.iter().cloned());
    }
    println!("{}", done.report.report_md.display());
    progress.note(&format!(
        "report written: {} (and summary.csv, report.json, plots/)",
        done.report.report_md.display()
    ));
    Ok(report_verify_failures(&failures))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let progress = Progress { quiet: cli.quiet };
    let result = match cli.command {
        Command::Run(args) => run_command(args, progress),
        Command::Sweep(args) => sweep_command(args, progress),
        Command::Calibrate(args) => calibrate_command(args, progress),
        Command::Whatif(args) => whatif_command(args),
        Command::Merge { dirs, out } => {
            harness::plan::partition::merge(&dirs, out.as_deref()).map(|m| {
                progress.note(&format!(
                    "merged {} shards ({} rows) into {}; `prepbench report {}` writes its report",
                    m.shards,
                    m.rows,
                    m.out.display(),
                    m.out.display()
                ));
                ExitCode::SUCCESS
            })
        }
        Command::Report { dir } => harness::analysis::report::write_report(&dir).map(|written| {
            progress.note(&format!(
                "wrote {} files; start with {}",
                written.files.len(),
                written.report_md.display()
            ));
            ExitCode::SUCCESS
        }),
        Command::Recommend {
            dir,
            weights,
            epochs,
            memory_bytes,
            dataset_samples,
        } => {
            let opts = RecommendOptions {
                weights,
                epochs,
                memory_bytes,
                dataset_samples,
            };
            harness::analysis::recommend::recommend(&dir, &opts).map(|text| {
                print!("{text}");
                ExitCode::SUCCESS
            })
        }
        Command::Compare { a, b } => harness::analysis::compare::compare(&a, &b).map(|text| {
            print!("{text}");
            ExitCode::SUCCESS
        }),
        Command::Reproduce {
            scale,
            out,
            seed,
            places,
        } => reproduce_command(scale, out, seed, places, progress),
        Command::Validate { files } => Ok(if commands::validate(&files) == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }),
        Command::List { what } => commands::list(&what).map(|text| {
            print!("{text}");
            ExitCode::SUCCESS
        }),
        Command::Generate(args) => commands::generate(&args, progress).map(|lines| {
            lines.iter().for_each(|line| println!("{line}"));
            ExitCode::SUCCESS
        }),
        Command::Show(args) => harness::cli::show::show(&harness::cli::show::ShowOptions {
            workload: args.workload,
            sample: args.sample,
            part: args.part,
            after: args.after,
            strategy: args.strategy,
            field: args.field,
            out: args.out,
            list: args.list,
            seed: args.seed,
            epoch: args.epoch,
            data_dir: args.data_dir,
        })
        .map(|text| {
            print!("{text}");
            ExitCode::SUCCESS
        }),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::FAILURE
    })
}
