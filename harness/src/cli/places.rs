//! The options every command that reads or writes shares: where results, datasets and stores
//! live, and how caches are evicted.

use std::path::PathBuf;

use clap::Args;

use crate::measure::cache::EvictPolicy;
use crate::measure::page_reporting::{self, Hold, ReportingPolicy};
use crate::plan::Places;
use crate::progress::Progress;

/// Where results, datasets and stores live, and how caches are evicted.
#[derive(Debug, Args, Clone)]
pub struct PlaceArgs {
    /// Results folder (runs.csv, manifest.json); default: under results/local/, named after
    /// the workload (`-sweep` for a sweep) or the scale.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where datasets live: a folder (datasets generated there when missing), or with
    /// `--features s3` an `s3://bucket/prefix` (read there, never generated there).
    #[arg(long, default_value = "data")]
    pub data_dir: PathBuf,
    /// Your dataset, read in place of the workload's (its `dataset.path`): a folder in the
    /// workload's dataset kind's layout. Never generated: a missing or empty folder is an error.
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// Where materialized strategies are stored.
    #[arg(long, default_value = "store")]
    pub store_dir: PathBuf,
    /// How to evict the page cache before cold epochs.
    #[arg(long, value_enum, default_value = "auto")]
    pub evict: EvictPolicy,
    /// On a VM that hands free memory back to its hypervisor (free page reporting): hold the
    /// reporter off while the command measures and set it back after (`hold`, needs root), or
    /// leave it (`keep`; cold epochs may then wait on memory the hypervisor took back).
    #[arg(long, value_enum, default_value = "hold")]
    pub page_reporting: ReportingPolicy,
}

impl PlaceArgs {
    /// Where to read and write: results in `--out`, else in `default_out`.
    pub fn places(&self, default_out: PathBuf, progress: Progress) -> Places {
        Places {
            out: self.out.clone().unwrap_or(default_out),
            data_dir: self.data_dir.clone(),
            dataset: self.dataset.clone(),
            store_dir: self.store_dir.clone(),
            evict: self.evict,
            progress,
        }
    }

    /// For a command that measures: the machine's free page reporter held off as
    /// `--page-reporting` says, until the hold is dropped.
    pub fn hold_reporting(&self, progress: Progress) -> Hold {
        page_reporting::hold(self.page_reporting, &|line| progress.note(line))
    }
}
