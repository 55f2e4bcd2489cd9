//! What a loader process answers (`ready`, and each epoch's answer), and the errors it
//! reports named as the native engine names them.

use std::collections::BTreeMap;
use std::sync::Mutex;

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
    /// What the process runs on: the interpreter's version and its framework's packages
    /// (`python`, `tensorflow`, `torch`, ...), by import name.
    #[serde(flatten)]
    pub versions: BTreeMap<String, serde_json::Value>,
}

/// Each loader's stack (the versions its process greeted with) since the last
/// [`take_stacks`].
static STACKS: Mutex<BTreeMap<String, BTreeMap<String, String>>> = Mutex::new(BTreeMap::new());

/// Notes what `loader`'s process said it runs on.
pub(super) fn note_stack(loader: &str, versions: &BTreeMap<String, serde_json::Value>) {
    let stack: BTreeMap<String, String> = versions
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    if !stack.is_empty() {
        let mut stacks = STACKS.lock().unwrap_or_else(|e| e.into_inner());
        stacks.insert(loader.to_string(), stack);
    }
}

/// The stacks of the loaders whose processes greeted since the last call (an invocation's, as
/// its manifest entry records them), taken.
pub fn take_stacks() -> BTreeMap<String, BTreeMap<String, String>> {
    std::mem::take(&mut *STACKS.lock().unwrap_or_else(|e| e.into_inner()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_greeting_carries_its_stack_and_what_is_noted_is_taken_once() {
        let ready: Ready = serde_json::from_str(
            r#"{"ready": {"user_s": 1.0, "sys_s": 0.5, "read_bytes": 0, "read_chars": 0},
                "python": "3.11.7", "tensorflow": "2.16.2", "odd": 3}"#,
        )
        .unwrap();
        assert!(ready.ready.is_some() && ready.error.is_none());
        note_stack("stack-test-loader", &ready.versions);
        let taken = take_stacks();
        // Only strings are versions; the usage and the rest stay out.
        assert_eq!(
            taken["stack-test-loader"].iter().collect::<Vec<_>>(),
            [
                (&"python".to_string(), &"3.11.7".to_string()),
                (&"tensorflow".to_string(), &"2.16.2".to_string())
            ]
        );
        assert!(!take_stacks().contains_key("stack-test-loader"));
    }
}
