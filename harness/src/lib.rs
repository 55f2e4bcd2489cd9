//! prepbench's harness: the record store, page-cache control, the offline (materialize) and
//! online (execute) phases, the results folder, the analysis and report, and the CLI.
//!
//! The folders are layers; each uses only those above it in this list (checked on every test
//! run by `tests/architecture.rs`; `docs/architecture.md` walks through them):
//!
//! - [`results`]: the results folder, typed (rows, labels, manifest, calibration data,
//!   machine facts);
//! - [`store`]: materialized samples as record shards, on a local disk or in object storage;
//! - [`analysis`]: statistics, the paper's figures, the prediction model, report, recommend,
//!   compare;
//! - [`measure`]: one run: a session over a dataset, the offline and online phases, cache
//!   control, storage emulation, the simulated consumer, system sampling, calibration;
//! - [`plan`]: what to run and in which order: `run`, sweeps and their partition across hosts,
//!   merge, `--ranks`, `reproduce`;
//! - [`cli`]: the command line: arguments, the small commands, terminal output.
//!
//! [`markdown`], [`progress`], [`scratch`] and [`units`] are leaves any layer may use.

pub mod analysis;
pub mod cli;
pub mod markdown;
pub mod measure;
pub mod plan;
pub mod progress;
pub mod results;
pub mod scratch;
pub mod store;
pub mod units;
