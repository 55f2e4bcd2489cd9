//! The `prepbench` binary: the command line's entry (`harness::cli::entry`).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(harness::cli::entry::main(std::env::args().collect()).0)
}
