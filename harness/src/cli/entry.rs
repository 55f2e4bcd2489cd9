//! The command line's entry: parse options, run the command, print its results. The
//! `prepbench` binary calls it, and so does the Python package's `prepbench` command (in the
//! interpreter's process, through `prepbench._native`).

use crate::analysis::recommend::RecommendOptions;
use crate::cli::{commands, terminal as summary};
use crate::cli::{
    default_out, CalibrateArgs, Cli, Command, PlaceArgs, RunArgs, SweepArgs, WhatifArgs,
};
use crate::plan::reproduce::{self, ScaleName};
use crate::plan::run::{run, RunOptions};
use crate::plan::sweep::sweep;
use crate::plan::Places;
use crate::progress::Progress;
use clap::Parser;

/// Prints the strategies whose output differed from fully-online processing; failure if any.
fn verify_status(failures: &[(String, Vec<u64>)]) -> Status {
    for line in summary::verify_failures(failures) {
        eprintln!("error: {line}");
    }
    if !failures.is_empty() {
        eprintln!(
            "hint: the likeliest cause is a step that draws random numbers (NumPy's or Python's \
             random, torch) without `random: true` in the workload: prepbench seeds only the \
             steps marked random, per sample and epoch, so that stored and online outputs agree \
             (docs/your-own-pipeline.md); `prepbench show WORKLOAD --after STEP` writes a sample to look at"
        );
    }
    if failures.is_empty() {
        Status::SUCCESS
    } else {
        Status::FAILURE
    }
}

fn run_command(args: RunArgs, progress: Progress, line: &[String]) -> anyhow::Result<Status> {
    let options = args.options();
    let places = args
        .places
        .places(default_out(&args.workload, ""), progress);
    let _reporting = args.places.hold_reporting(progress);
    if args.ranks {
        return ranks_command(&options, &places, line);
    }
    let outcome = run(&options, &places, line.to_vec())?;
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
            places.out.join(crate::results::RUNS).display()
        ));
    }
    Ok(failed_if(failed, verify_status(&outcome.verify_failures)))
}

/// `status`, or a failure when a warning says the command must fail.
fn failed_if(failed: bool, status: Status) -> Status {
    if failed {
        Status::FAILURE
    } else {
        status
    }
}

#[cfg(feature = "mpi")]
fn ranks_command(options: &RunOptions, places: &Places, line: &[String]) -> anyhow::Result<Status> {
    let ranks = crate::plan::ranks::run_ranks(options, places, line.to_vec())?;
    if let Some(text) = ranks {
        print!("{text}");
        places.progress.note(&format!(
            "per-rank and aggregate rows in {}",
            crate::plan::ranks::table_path(&places.out).display()
        ));
    }
    Ok(Status::SUCCESS)
}

#[cfg(not(feature = "mpi"))]
fn ranks_command(
    _options: &RunOptions,
    _places: &Places,
    _line: &[String],
) -> anyhow::Result<Status> {
    anyhow::bail!(
        "--ranks needs a prepbench built with MPI: install an MPI library and libclang (Debian: \
         apt-get install libopenmpi-dev libclang-dev), then `cargo build --release --features \
         mpi` and run it under `mpirun -np N` (docs/cluster.md)"
    )
}

fn sweep_command(args: SweepArgs, progress: Progress, line: &[String]) -> anyhow::Result<Status> {
    let options = args.options(&|name| std::env::var(name).ok())?;
    let places = args
        .places
        .places(default_out(&args.workload, "-sweep"), progress);
    let _reporting = args.places.hold_reporting(progress);
    let outcome = sweep(&options, &places, line.to_vec())?;
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    let written = match &options.shard {
        Some(shard) => shard.dir(&places.out),
        None => places.out.clone(),
    };
    // The command's answer, on stdout as `run`'s table is: what was done, and what reads it.
    let written = written.display();
    println!(
        "{} runs done, {} already recorded; results in {written}\nnext: prepbench report \
         {written} ; prepbench recommend {written}",
        outcome.ran, outcome.skipped
    );
    let failed = outcome.warnings.iter().any(|w| w.fails_the_command());
    Ok(failed_if(failed, verify_status(&outcome.verify_failures)))
}

fn calibrate_command(
    args: CalibrateArgs,
    progress: Progress,
    line: &[String],
) -> anyhow::Result<Status> {
    let places = args
        .places
        .places(default_out(&args.workload, "-sweep"), progress);
    let _reporting = args.places.hold_reporting(progress);
    let described = sweep(&args.options(), &places, line.to_vec())?;
    print!("{}", described.calibration.unwrap_or_default());
    progress.note(&format!(
        "calibration recorded in {}",
        places
            .out
            .join(crate::results::manifest::MANIFEST)
            .display()
    ));
    Ok(Status::SUCCESS)
}

fn whatif_command(args: WhatifArgs) -> anyhow::Result<Status> {
    let request = crate::analysis::model::WhatifRequest {
        profile: args.profile,
        cores: args.cores,
        cpu_speed: args.cpu_speed,
        read_mbps: args.read_mbps,
        latency_ms: args.latency_ms,
        codec: args.codec,
    };
    print!(
        "{}",
        crate::analysis::model::whatif_in(
            &args.dir,
            &request,
            crate::markdown::Rows::from_flags(args.csv, args.json),
        )?
    );
    Ok(Status::SUCCESS)
}

fn reproduce_command(
    scale: ScaleName,
    seed: u64,
    loaders: &[String],
    places: PlaceArgs,
    progress: Progress,
    line: &[String],
) -> anyhow::Result<Status> {
    anyhow::ensure!(
        places.dataset.is_none(),
        "--dataset: reproduce runs the paper's workloads on their own (generated) datasets; \
         give your data to `run`, `sweep` or `show`"
    );
    let _reporting = places.hold_reporting(progress);
    let places = places.places(reproduce::default_out(scale), progress);
    let done = reproduce::reproduce(scale, &places, seed, loaders, line.to_vec())?;
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
use workloads::python::WORKER_ENV;

/// A command's exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u8);

impl Status {
    pub const SUCCESS: Status = Status(0);
    pub const FAILURE: Status = Status(1);
}

/// Runs the command line `line` (the program's name first), as the `prepbench` binary does.
/// Options clap refuses (and `--help`, `--version`) print and exit the process, as a command
/// line's parser does.
pub fn main(line: Vec<String>) -> Status {
    if std::env::var_os(WORKER_ENV).is_some() {
        eprintln!(
            "error: prepbench was started inside one of its own Python workers ({WORKER_ENV} is \
             set): a module your steps import runs prepbench when it is imported. Put that call \
             under `if __name__ == \"__main__\":`, so that importing the module defines your \
             steps and runs nothing"
        );
        return Status(2);
    }
    crate::results::system::keep_freed_memory();
    let cli = Cli::parse_from(&line);
    if let Some(python) = &cli.python {
        workloads::python::set_interpreter(python.clone());
    }
    let progress = Progress { quiet: cli.quiet };
    let status = dispatch(cli.command, progress, &line).unwrap_or_else(|e| {
        eprintln!("error: {}", error_text(&e));
        Status::FAILURE
    });
    // A loader process kept idle between runs ends with the command.
    crate::measure::online::retire_idle();
    // And the views of folders loaders read under emulated storage (after their processes).
    crate::measure::view::retire();
    // Run inside Python (no Rust runtime to flush at exit), a last line without a newline
    // would stay in the buffer.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    status
}

/// Runs one subcommand.
fn dispatch(command: Command, progress: Progress, line: &[String]) -> anyhow::Result<Status> {
    match command {
        Command::Run(args) => run_command(args, progress, line),
        Command::Sweep(args) => sweep_command(*args, progress, line),
        Command::Calibrate(args) => calibrate_command(args, progress, line),
        Command::Whatif(args) => whatif_command(args),
        Command::Merge { dirs, out } => merge_command(&dirs, out.as_deref(), progress),
        Command::Report {
            dir,
            out,
            peers,
            weights,
            epochs,
        } => {
            let plan = crate::analysis::recommend::RecommendOptions {
                weights,
                epochs,
                ..crate::analysis::recommend::DEFAULT_PLAN
            };
            let out = out.as_deref().unwrap_or(&dir);
            if out != dir {
                // Never into a dataset the runs read, nor into any dataset prepbench generated.
                let manifest = crate::results::Manifest::read(&dir)?.unwrap_or_default();
                let read: Vec<&std::path::Path> = manifest
                    .invocations
                    .iter()
                    .filter_map(|i| i.dataset.as_ref())
                    .map(|place| std::path::Path::new(&place.path))
                    .collect();
                let what = "the report folder (--out)";
                crate::measure::places::check_places(&read, &[(what, out)])?;
                crate::measure::places::check_own_folder(what, out, |name| {
                    let written = ["report.md", "report.json", "summary.csv", "plots", "tables"];
                    written.contains(&name) || name.starts_with('.')
                })?;
            }
            let written =
                crate::analysis::report::write_report_with(&dir, out, peers.as_deref(), &plan)?;
            progress.note(&format!(
                "wrote {} files; start with {}",
                written.files.len(),
                written.report_md.display()
            ));
            Ok(Status::SUCCESS)
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
            printed(match crate::markdown::Rows::from_flags(csv, json) {
                Some(rows) => crate::analysis::recommend::recommend_rows(&dir, &opts, rows),
                None => crate::analysis::recommend::recommend(&dir, &opts),
            })
        }
        Command::Compare(args) => printed(commands::compare(&args)),
        Command::Reproduce {
            scale,
            seed,
            loaders,
            places,
        } => reproduce_command(
            scale,
            seed,
            &loaders.unwrap_or_default(),
            places,
            progress,
            line,
        ),
        Command::Validate { files } => Ok(if commands::validate(&files) == 0 {
            Status::SUCCESS
        } else {
            Status::FAILURE
        }),
        Command::Workload { what } => printed(commands::workload(&what)),
        Command::Store { what } => printed(commands::store(&what)),
        Command::List { what } => printed(commands::list(&what)),
        Command::Generate(args) => {
            let lines = commands::generate(&args, progress)?;
            lines.iter().for_each(|line| println!("{line}"));
            Ok(Status::SUCCESS)
        }
        Command::Show(args) => printed(crate::cli::show::show(&args.into())),
    }
}

/// A command's text, printed as it is.
fn printed(text: anyhow::Result<String>) -> anyhow::Result<Status> {
    print!("{}", text?);
    Ok(Status::SUCCESS)
}

fn merge_command(
    dirs: &[std::path::PathBuf],
    out: Option<&std::path::Path>,
    progress: Progress,
) -> anyhow::Result<Status> {
    let m = crate::plan::merge::merge(dirs, out)?;
    progress.note(&format!(
        "merged {} shards ({} rows) into {}; `prepbench report {}` writes its report",
        m.shards,
        m.rows,
        m.out.display(),
        m.out.display()
    ));
    Ok(Status::SUCCESS)
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
