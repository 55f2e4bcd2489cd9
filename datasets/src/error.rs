//! What can go wrong with a dataset.

use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Layout { path: String, message: String },
    #[error("unknown dataset kind `{0}`{2}; known kinds: {1}")]
    UnknownKind(String, String, String),
    #[error("generating data failed: {0}")]
    Generate(String),
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Io {
        path: path.display().to_string(),
        source,
    }
}
