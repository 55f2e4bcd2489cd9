//! The `prepbench` binary: parse options, run the command, print its results.

use std::process::ExitCode;

use clap::Parser;
use harness::analysis::recommend::RecommendOptions;
use harness::cli::{commands, terminal as summary};
use harness::cli::{
    default_out, CalibrateArgs, Cli, Command, PlaceArgs, RunArgs, SweepArgs, WhatifArgs,
};
use harness::plan::reproduce::{self, ScaleName};
use harness::plan::run::{run, RunOptions};
use harness::plan::sweep::sweep;
use harness::plan::Places;
use harness::progress::Progress;

/// Prints the strategies whose output differed from fully-online processing; failure if any.
fn verify_status(failures: &[(String, Vec<u64>)]) -> ExitCode {
    for line in summary::verify_failures(failures) {
        eprintln!("error: {line}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_command(args: RunArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let options = args.options();
    let places = args
        .places
        .places(default_out(&args.workload, ""), progress);
    if args.ranks {
        return ranks_command(&options, &places);
    }
    let outcome = run(&options, &places, std::env::args().collect())?;
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    let failed = outcome.warnings.iter().any(|w| w.fails_the_command());
    if args.json {
        print!("{}", summary::json_lines(&outcome.rows));
    } else {
        print!("{}", summary::table(&outcome.rows, &outcome.bounds));
        progress.note(&format!(
            "rows appended to {}",
            places.out.join(harness::results::RUNS).display()
        ));
    }
    Ok(failed_if(failed, verify_status(&outcome.verify_failures)))
}

/// `status`, or a failure when a warning says the command must fail.
fn failed_if(failed: bool, status: ExitCode) -> ExitCode {
    if failed {
        ExitCode::FAILURE
    } else {
        status
    }
}

#[cfg(feature = "mpi")]
fn ranks_command(options: &RunOptions, places: &Places) -> anyhow::Result<ExitCode> {
    let ranks = harness::plan::ranks::run_ranks(options, places, std::env::args().collect())?;
    if let Some(text) = ranks {
        print!("{text}");
        places.progress.note(&format!(
            "per-rank and aggregate rows in {}",
            harness::plan::ranks::table_path(&places.out).display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "mpi"))]
fn ranks_command(_options: &RunOptions, _places: &Places) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "--ranks needs a prepbench built with MPI: install an MPI library and libclang (Debian: \
         apt-get install libopenmpi-dev libclang-dev), then `cargo build --release --features \
         mpi` and run it under `mpirun -np N` (docs/cluster.md)"
    )
}

fn sweep_command(args: SweepArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let options = args.options(&|name| std::env::var(name).ok())?;
    let places = args
        .places
        .places(default_out(&args.workload, "-sweep"), progress);
    let outcome = sweep(&options, &places, std::env::args().collect())?;
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    let written = match &options.shard {
        Some(shard) => shard.dir(&places.out),
        None => places.out.clone(),
    };
    progress.note(&format!(
        "{} runs done, {} already recorded; results in {}",
        outcome.ran,
        outcome.skipped,
        written.display()
    ));
    let failed = outcome.warnings.iter().any(|w| w.fails_the_command());
    Ok(failed_if(failed, verify_status(&outcome.verify_failures)))
}

fn calibrate_command(args: CalibrateArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let places = args
        .places
        .places(default_out(&args.workload, "-sweep"), progress);
    let described = sweep(&args.options(), &places, std::env::args().collect())?;
    print!("{}", described.calibration.unwrap_or_default());
    progress.note(&format!(
        "calibration recorded in {}",
        places
            .out
            .join(harness::results::manifest::MANIFEST)
            .display()
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
        harness::analysis::model::whatif_in(
            &args.dir,
            &request,
            harness::markdown::Rows::from_flags(args.csv, args.json),
        )?
    );
    Ok(ExitCode::SUCCESS)
}

fn reproduce_command(
    scale: ScaleName,
    seed: u64,
    places: PlaceArgs,
    progress: Progress,
) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        places.dataset.is_none(),
        "--dataset: reproduce runs the paper's workloads on their own (generated) datasets; \
         give your data to `run`, `sweep` or `show`"
    );
    let places = places.places(reproduce::default_out(scale), progress);
    let done = reproduce::reproduce(scale, &places, seed, std::env::args().collect())?;
    let mut failures = Vec::new();
    let mut failed = false;
    for (workload, outcome) in &done.sweeps {
        failed |= outcome.warnings.iter().any(|w| w.fails_the_command());
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
    Ok(failed_if(failed, verify_status(&failures)))
}

/// Set by prepbench for its Python workers (`workloads::python`): a module a worker imports
/// that starts prepbench again (a script without an `if __name__ == "__main__":` guard) would
/// recurse, run after run.
const WORKER_ENV: &str = "PREPBENCH_WORKER";

fn main() -> ExitCode {
    if std::env::var_os(WORKER_ENV).is_some() {
        eprintln!(
            "error: prepbench was started inside one of its own Python workers ({WORKER_ENV} is \
             set): a module your steps import runs prepbench when it is imported. Put that call \
             under `if __name__ == \"__main__\":`, so that importing the module defines your \
             steps and runs nothing"
        );
        return ExitCode::from(2);
    }
    harness::results::system::keep_freed_memory();
    let cli = Cli::parse();
    if let Some(python) = &cli.python {
        workloads::python::set_interpreter(python.clone());
    }
    let progress = Progress { quiet: cli.quiet };
    dispatch(cli.command, progress).unwrap_or_else(|e| {
        eprintln!("error: {}", error_text(&e));
        ExitCode::FAILURE
    })
}

/// Runs one subcommand.
fn dispatch(command: Command, progress: Progress) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run_command(args, progress),
        Command::Sweep(args) => sweep_command(args, progress),
        Command::Calibrate(args) => calibrate_command(args, progress),
        Command::Whatif(args) => whatif_command(args),
        Command::Merge { dirs, out } => merge_command(&dirs, out.as_deref(), progress),
        Command::Report {
            dir,
            out,
            peers,
            weights,
            epochs,
        } => {
            let plan = harness::analysis::recommend::RecommendOptions {
                weights,
                epochs,
                ..harness::analysis::recommend::DEFAULT_PLAN
            };
            let out = out.as_deref().unwrap_or(&dir);
            let written =
                harness::analysis::report::write_report_with(&dir, out, peers.as_deref(), &plan)?;
            progress.note(&format!(
                "wrote {} files; start with {}",
                written.files.len(),
                written.report_md.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
        Command::Recommend {
            dir,
            weights,
            epochs,
            memory_bytes,
            dataset_samples,
            csv,
            json,
        } => {
            let opts = RecommendOptions {
                weights,
                epochs,
                memory_bytes,
                dataset_samples,
            };
            printed(match harness::markdown::Rows::from_flags(csv, json) {
                Some(rows) => harness::analysis::recommend::recommend_rows(&dir, &opts, rows),
                None => harness::analysis::recommend::recommend(&dir, &opts),
            })
        }
        Command::Compare(args) => printed(commands::compare(&args)),
        Command::Reproduce {
            scale,
            seed,
            places,
        } => reproduce_command(scale, seed, places, progress),
        Command::Validate { files } => Ok(if commands::validate(&files) == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }),
        Command::Workload { what } => printed(commands::workload(&what)),
        Command::Store { what } => printed(commands::store(&what)),
        Command::List { what } => printed(commands::list(&what)),
        Command::Generate(args) => {
            let lines = commands::generate(&args, progress)?;
            lines.iter().for_each(|line| println!("{line}"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Show(args) => printed(harness::cli::show::show(&args.into())),
    }
}

/// A command's text, printed as it is.
fn printed(text: anyhow::Result<String>) -> anyhow::Result<ExitCode> {
    print!("{}", text?);
    Ok(ExitCode::SUCCESS)
}

fn merge_command(
    dirs: &[std::path::PathBuf],
    out: Option<&std::path::Path>,
    progress: Progress,
) -> anyhow::Result<ExitCode> {
    let m = harness::plan::merge::merge(dirs, out)?;
    progress.note(&format!(
        "merged {} shards ({} rows) into {}; `prepbench report {}` writes its report",
        m.shards,
        m.rows,
        m.out.display(),
        m.out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// An error and its causes, outermost first, joined by ": " as `{:#}` would, but each said
/// once: a cause whose text its parent already shows (an OS error a message quotes) is left out.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}
