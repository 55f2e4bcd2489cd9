//! `prepbench report DIR`: summary.csv (statistics per cell), report.md (the paper's tables with
//! its figures beside ours, the findings, warnings), report.json, tables/*.csv and plots/*.svg,
//! all written from one report model (`model.rs`, built by `assemble.rs`).

mod assemble;
mod json;
pub(crate) mod lines;
mod markdown;
pub mod model;
pub mod peers;
pub mod plots;
pub mod roofline;
mod summary;
pub mod tables;
pub mod threats;
mod warnings;
mod write;

pub use warnings::{MAX_CV, MIN_TRIALS};
pub use write::{views, write_report, write_report_with, ReportFiles};

#[cfg(test)]
mod tests;
