//! What can go wrong with a store.

use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("corrupt shard {shard}: record {record} at byte {offset}{}: {what}", if *.compressed { " of the decompressed stream" } else { "" })]
    Corrupt {
        shard: String,
        record: u64,
        offset: u64,
        compressed: bool,
        what: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error(
        "not enough space for the store in {dir}: {}; {:.1} MB free{}",
        if *.during_write { "the disk filled up while writing (the partial store was removed)" } else { "refused before writing" },
        *.free_bytes as f64 / 1e6,
        needed_bytes.map(|n| format!(", the store needs about {:.1} MB uncompressed", n as f64 / 1e6)).unwrap_or_default()
    )]
    NoSpace {
        dir: String,
        free_bytes: u64,
        needed_bytes: Option<u64>,
        during_write: bool,
    },
}

impl StoreError {
    /// Whether the error is the disk being full (ENOSPC or a quota), anywhere in a store write.
    pub fn is_no_space(&self) -> bool {
        match self {
            StoreError::Io { source, .. } => matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT)
            ),
            StoreError::NoSpace { .. } => true,
            _ => false,
        }
    }
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}
