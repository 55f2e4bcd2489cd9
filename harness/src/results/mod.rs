//! The results folder, typed: one row type per table (runs.csv, offline.csv, stages.csv,
//! samples.csv, errors.csv), written and read through the `csv` crate; the label enums those
//! rows hold; `manifest.json` as a struct; and [`Recorded`], everything a folder holds, which
//! every reader (report, recommend, compare, merge, whatif, the tests) loads the same way.
//!
//! Adding a column is adding a field to its row type (with `#[serde(default)]`, so older folders
//! still load).

pub mod calibration;
pub mod error;
pub mod folder;
pub mod labels;
pub mod lock;
pub mod manifest;
pub mod part;
pub mod rows;
pub mod stages;
pub mod system;
pub mod table;

pub use calibration::{Calibration, MachineCalibration, StrategyCalibration};
pub use error::ResultsError;
pub use folder::{Recorded, Tables, ERRORS, OFFLINE, RANKS, RUNS, SAMPLES, STAGES, TABLES};
pub use labels::{Bound, CacheState, Condition, Phase, StageKind, StageName, Verdict};
pub use manifest::{
    utc_now, InvocationEntry, Manifest, MergedFrom, Place, PlanEntry, SettlingCap, Shard,
    SizingEntry, WorkloadEntry,
};
pub use part::LoaderPart;
pub use rows::{ErrorRow, OfflineRow, RankRow, RunRow, SampleRow, Skipped, StageRow};
pub use stages::{classify, share_pct, Stage};
pub use table::Table;
