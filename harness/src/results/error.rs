//! What can go wrong reading or writing a results folder.

use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path}: {message}")]
    Conflict { path: String, message: String },
    /// Writing a whole file (the manifest) through a temporary name failed.
    #[error(transparent)]
    Write(#[from] datasets::DatasetError),
}

impl ResultsError {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsError + '_ {
        move |source| ResultsError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn invalid(path: &Path, message: String) -> ResultsError {
        ResultsError::Invalid {
            path: path.display().to_string(),
            message,
        }
    }
}
