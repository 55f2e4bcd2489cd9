//! Applying a range of a workload's steps to one sample, with errors that name the sample, its
//! file and the step.

use std::ops::Range;

use datasets::Source;
use thiserror::Error;
use workloads::encoding::EncodingError;
use workloads::{Sample, StepContext, Workload};

use crate::store::StoreError;

/// Why a run stopped.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("sample {id} ({file}), step `{step}` (op {op}): {message}")]
    Step {
        id: u64,
        file: String,
        step: String,
        op: &'static str,
        message: String,
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
    #[error("a worker thread panicked: {0}")]
    Panic(String),
}

/// Runs `steps[range]` of `workload` on `sample` at `epoch`.
pub fn apply_steps(
    workload: &Workload,
    range: Range<usize>,
    mut sample: Sample,
    source: &Source,
    seed: u64,
    epoch: u64,
) -> Result<Sample, RunError> {
    for step_index in range {
        let def = &workload.steps[step_index];
        let ctx = StepContext {
            seed,
            epoch,
            step_index,
        };
        let id = sample.id;
        sample = def.step.apply(sample, &ctx).map_err(|e| RunError::Step {
            id,
            file: source
                .items
                .get(id as usize)
                .map(|i| i.path.display().to_string())
                .unwrap_or_else(|| "?".into()),
            step: def.name.clone(),
            op: def.spec.op,
            message: e.message,
        })?;
    }
    Ok(sample)
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
