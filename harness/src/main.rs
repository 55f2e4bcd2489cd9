//! The `prepbench` binary: parse options, run the command, print its results.

use std::process::ExitCode;

use clap::Parser;
use harness::cli::{default_threads, Cli, Command, RunArgs};
use harness::progress::Progress;
use harness::run::{run, RunOptions};
use harness::{commands, summary};

fn run_command(args: RunArgs, progress: Progress) -> anyhow::Result<ExitCode> {
    let out = args.out.clone().unwrap_or_else(|| {
        let name = workloads::load(&args.workload)
            .map(|w| w.name)
            .unwrap_or_else(|_| "workload".into());
        std::path::Path::new("results/local").join(name)
    });
    let options = RunOptions {
        workload: args.workload,
        strategies: args.strategy,
        threads: args.threads.unwrap_or_else(default_threads),
        samples: args.samples,
        codec: args.codec,
        shards: args.shards,
        cache: args.cache,
        epochs: args.epochs,
        out: out.clone(),
        data_dir: args.data_dir,
        store_dir: args.store_dir,
        seed: args.seed,
        verify: args.verify,
        evict: args.evict,
        rematerialize: args.rematerialize,
        progress,
    };
    let outcome = run(&options, std::env::args().collect())?;
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    if args.json {
        print!("{}", summary::json_lines(&outcome.rows));
    } else {
        print!("{}", summary::table(&outcome.rows));
        progress.note(&format!(
            "rows appended to {}",
            out.join("runs.csv").display()
        ));
    }
    for (strategy, ids) in &outcome.verify_failures {
        let shown: Vec<String> = ids.iter().take(20).map(u64::to_string).collect();
        eprintln!("error: strategy `{strategy}` differs from fully-online processing for {} samples (ids {}{})", ids.len(), shown.join(", "), if ids.len() > 20 { ", ..." } else { "" });
    }
    Ok(if outcome.verify_failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let progress = Progress { quiet: cli.quiet };
    let result = match cli.command {
        Command::Run(args) => run_command(args, progress),
        Command::Validate { files } => Ok(if commands::validate(&files) == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }),
        Command::List { what } => commands::list(&what).map(|text| {
            print!("{text}");
            ExitCode::SUCCESS
        }),
        Command::Generate(args) => commands::generate(&args, progress).map(|n| {
            progress.note(&format!(
                "generated {n} samples of `{}` in {}",
                args.kind,
                args.out.display()
            ));
            ExitCode::SUCCESS
        }),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::FAILURE
    })
}
