//! The crate's errors: a step failing on one sample, and a workload file that cannot be used.

use thiserror::Error;

/// A step failed on one sample. The harness adds the sample id, the file and the step name.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{message}")]
pub struct StepError {
    pub message: String,
    /// More than the message says, for errors.csv (a Python step's traceback).
    pub detail: Option<String>,
}

impl StepError {
    pub fn new(message: impl Into<String>) -> StepError {
        StepError {
            message: message.into(),
            detail: None,
        }
    }

    /// An error with `detail` (a traceback) recorded beside its message.
    pub fn with_detail(message: impl Into<String>, detail: impl Into<String>) -> StepError {
        StepError {
            message: message.into(),
            detail: Some(detail.into()),
        }
    }
}

#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("cannot read workload file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        file: String,
        line: Option<usize>,
        message: String,
    },
}
