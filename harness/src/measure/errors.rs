//! Why a run stops: an error that names the sample, its file and the step, or the shard and
//! record; and the threads a run starts, whose refusal or panic becomes such an error.

use thiserror::Error;
use workloads::encoding::EncodingError;

use crate::results::{Skipped, StageName};
use crate::store::StoreError;

/// Why a run stopped.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("sample {sample} ({file}), step `{step}` (op {op}): {message}")]
    Step {
        /// The sample id, or for an output of a fan-out step "ITEM, part J".
        sample: String,
        file: String,
        step: String,
        op: &'static str,
        message: String,
        /// A Python step's traceback, for errors.csv (boxed: the error stays small).
        detail: Option<Box<String>>,
    },
    #[error("{shard}: record {record}: {source}")]
    Decode {
        shard: String,
        record: u64,
        source: EncodingError,
    },
    #[error(
        "{shard}: record {record} holds sample id {id}, beyond the {samples} samples of this run"
    )]
    UnknownSample {
        shard: String,
        record: u64,
        id: u64,
        samples: usize,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    #[error("the {loader} loader {message}")]
    Loader {
        loader: &'static str,
        message: String,
    },
    #[error("a worker thread panicked: {0}")]
    Panic(String),
    #[error("starting step `{step}`: {message}")]
    Start { step: String, message: String },
    #[error("could not start {what} thread {index} of {count}: {source} (lower --threads, or raise the process's thread limit)")]
    Spawn {
        what: &'static str,
        index: usize,
        count: usize,
        source: std::io::Error,
    },
}

/// Starts worker `index` of `count` in `scope`: a start the system refuses (its thread or
/// memory limit) is an error naming it, where `scope.spawn` would panic.
pub fn spawn_worker<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    builder: std::thread::Builder,
    (what, index, count): (&'static str, usize, usize),
    work: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, RunError> {
    builder
        .name(format!("{what}-{index}"))
        .spawn_scoped(scope, work)
        .map_err(|source| RunError::Spawn {
            what,
            index,
            count,
            source,
        })
}

impl RunError {
    /// The error as a skipped sample, when it concerns one sample or record (bad input); `None`
    /// for errors of the machine or the program (I/O, a panic), which always stop the run.
    pub fn skipped(&self) -> Option<Skipped> {
        Some(match self {
            RunError::Step {
                sample,
                file,
                step,
                message,
                detail,
                ..
            } => Skipped {
                sample: sample.clone(),
                file: file.clone(),
                stage: StageName::Step(step.clone()),
                count: 1,
                message: message.clone(),
                detail: detail.as_deref().cloned().unwrap_or_default(),
            },
            RunError::Decode {
                shard,
                record,
                source,
            } => Skipped {
                sample: format!("record {record}"),
                file: shard.clone(),
                stage: StageName::Deserialize,
                count: 1,
                message: source.to_string(),
                detail: String::new(),
            },
            RunError::UnknownSample {
                shard, record, id, ..
            } => Skipped {
                sample: format!("record {record}"),
                file: shard.clone(),
                stage: StageName::Deserialize,
                count: 1,
                message: format!("holds sample id {id}, beyond this run's samples"),
                detail: String::new(),
            },
            RunError::Store(StoreError::Corrupt {
                shard,
                record,
                offset,
                what,
                ..
            }) => Skipped {
                sample: format!("record {record}"),
                file: shard.clone(),
                stage: StageName::Read,
                count: 1,
                message: format!("{what} at byte {offset}"),
                detail: String::new(),
            },
            _ => return None,
        })
    }
}

/// The rows errors.csv gets for a read error at `record` of a shard read to `records`, its
/// own row given (`error`): one after the shard's last record (a compressed stream's checksum
/// at its end) counts no sample, every record having been read and passed its own checksum;
/// one that reading cannot step past (`going_on` false: its framing broken) leaves the
/// shard's later records unread, counted in one more row: all of them, or those before the
/// shard's restart reading went on at (`resumed_at`, [`ShardReader::resume`]).
///
/// [`ShardReader::resume`]: crate::store::ShardReader::resume
pub fn read_error_rows(
    mut error: Skipped,
    record: u64,
    records: u64,
    going_on: bool,
    resumed_at: Option<u64>,
) -> Vec<Skipped> {
    if record >= records {
        error.count = 0;
        return vec![error];
    }
    let end = resumed_at.map_or(records, |at| at.min(records));
    let rest = end.saturating_sub(record + 1);
    let message = match resumed_at {
        Some(at) if at < records => format!(
            "unreadable after the error at record {record}, up to the shard's restart at \
             record {at}"
        ),
        _ => format!("unreadable after the error at record {record}"),
    };
    let unread = (!going_on && rest > 0).then(|| Skipped {
        sample: format!("records {} to {}", record + 1, end - 1),
        file: error.file.clone(),
        stage: StageName::Read,
        count: rest,
        message,
        detail: String::new(),
    });
    std::iter::once(error).chain(unread).collect()
}

/// Turns a worker's panic payload into an error instead of unwinding through the harness.
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> RunError {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    RunError::Panic(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_error_counts_the_records_it_leaves_unread_up_to_where_reading_went_on() {
        let own = || Skipped {
            sample: "record 3".into(),
            file: "shard-00000-of-00001.tfrecord.gz".into(),
            stage: StageName::Read,
            count: 1,
            message: "truncated header at byte 99".into(),
            detail: String::new(),
        };
        let counts = |rows: Vec<Skipped>| -> Vec<(u64, String)> {
            rows.into_iter().map(|r| (r.count, r.sample)).collect()
        };
        // Stepped over, stuck, resumed at a restart, resumed at once, after the last record.
        assert_eq!(
            counts(read_error_rows(own(), 3, 10, true, None)),
            [(1, "record 3".into())]
        );
        let stuck = counts(read_error_rows(own(), 3, 10, false, None));
        assert_eq!(
            stuck,
            [(1, "record 3".into()), (6, "records 4 to 9".into())]
        );
        let resumed = read_error_rows(own(), 3, 10, false, Some(7));
        assert!(resumed[1]
            .message
            .ends_with("up to the shard's restart at record 7"));
        let resumed = counts(resumed);
        assert_eq!(
            resumed,
            [(1, "record 3".into()), (3, "records 4 to 6".into())]
        );
        let next = counts(read_error_rows(own(), 3, 10, false, Some(4)));
        assert_eq!(next, [(1, "record 3".into())]);
        // A part of the shard that ends before the restart: the rest of the part.
        let beyond = counts(read_error_rows(own(), 3, 5, false, Some(7)));
        assert_eq!(
            beyond,
            [(1, "record 3".into()), (1, "records 4 to 4".into())]
        );
        assert_eq!(
            counts(read_error_rows(own(), 10, 10, false, None)),
            [(0, "record 3".into())]
        );
    }

    #[test]
    fn a_thread_the_system_refuses_is_an_error_naming_it() {
        std::thread::scope(|scope| {
            // No system maps a petabyte stack: the start fails as under a thread limit.
            let huge = std::thread::Builder::new().stack_size(1 << 50);
            let err = spawn_worker(scope, huge, ("online worker", 3, 8), || ()).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("online worker thread 3 of 8"), "{text}");
            assert!(text.contains("lower --threads"), "{text}");
            let fine = spawn_worker(scope, std::thread::Builder::new(), ("w", 0, 1), || 7);
            assert_eq!(fine.unwrap().join().unwrap(), 7);
        });
    }
}
