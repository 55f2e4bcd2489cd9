//! What a loader process answers (`ready`, and each epoch's answer), and the errors it
//! reports named as the native engine names them.

use serde::Deserialize;

use super::super::engine::OnlineJob;
use crate::measure::errors::{read_error_rows, RunError};
use crate::measure::steps::step_failed;
use crate::results::Skipped;
use crate::store::StoreError;

#[derive(Deserialize)]
pub(super) struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    pub read_bytes: u64,
    pub read_chars: u64,
}

#[derive(Deserialize)]
pub(super) struct Ready {
    pub ready: Option<Usage>,
    pub error: Option<String>,
    pub detail: Option<String>,
}

/// What a loader that keeps an application cache says of it after the filling epoch.
#[derive(Deserialize)]
pub(super) struct CacheAnswer {
    pub kept: bool,
    /// The kept records' bytes, estimated.
    pub bytes: u64,
}

#[derive(Deserialize)]
pub(super) struct Answer {
    pub arrivals: Vec<(u64, f64)>,
    pub samples: u64,
    pub bytes: u64,
    pub hashes: Vec<(u64, u64)>,
    /// (sample id, step, message, detail).
    pub skipped: Vec<Failure>,
    pub failed: Option<Failure>,
    /// Stored records that could not be read, skipped (`--on-error skip`).
    #[serde(default)]
    pub unread: Vec<Unread>,
    /// The stored record that stopped the epoch (`--on-error fail`).
    #[serde(default)]
    pub failed_read: Option<Unread>,
    pub passes: u64,
    pub usage: Usage,
    pub cache: Option<CacheAnswer>,
}

/// A stored record a loader could not read, named as prepbench's own reader names it (its
/// shard file, its number there, the byte and what is wrong), with the records the epoch reads
/// of its shard and whether reading could go on past it: errors.csv gets from them what the
/// native engine writes (`read_error_rows`).
#[derive(Deserialize)]
pub(super) struct Unread {
    shard: String,
    record: u64,
    offset: u64,
    compressed: bool,
    what: String,
    records: u64,
    can_continue: bool,
    /// The shard's restart the loader's reader went on at, after an error it could not step
    /// past.
    #[serde(default)]
    resumed_at: Option<u64>,
}

impl Unread {
    /// The error as the native engine's reader raises it.
    pub fn error(self) -> RunError {
        RunError::Store(StoreError::Corrupt {
            shard: self.shard,
            record: self.record,
            offset: self.offset,
            compressed: self.compressed,
            what: self.what,
        })
    }

    /// Its rows in errors.csv, as the native engine writes them when it skips.
    pub fn skipped(self) -> Vec<Skipped> {
        let (record, records, going_on) = (self.record, self.records, self.can_continue);
        let resumed_at = self.resumed_at;
        self.error().skipped().map_or_else(Vec::new, |own| {
            read_error_rows(own, record, records, going_on, resumed_at)
        })
    }
}

/// (sample id, step, message, detail) of a sample the loader could not deliver.
pub(super) type Failure = (u64, String, String, String);

/// A sample the loader could not deliver, as the native engine names it: by the workload's step
/// (the read step for raw input), or, for a stored record it could not read, as `deserialize`.
pub(super) fn failure(job: &OnlineJob, (id, step, message, detail): Failure) -> RunError {
    let at = job.workload.steps.iter().position(|d| d.name == step);
    let error = workloads::StepError {
        message,
        detail: (!detail.is_empty()).then_some(detail),
    };
    match step_failed(job.workload, job.source, id, at.unwrap_or(0), error) {
        RunError::Step {
            sample,
            file,
            message,
            detail,
            ..
        } if at.is_none() && step != "read" => RunError::Step {
            sample,
            file,
            step,
            op: "python",
            message,
            detail,
        },
        named => named,
    }
}
