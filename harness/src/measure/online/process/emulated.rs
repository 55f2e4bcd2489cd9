//! A loader in a process of its own under emulated storage (`--storage`): it reads views of
//! its folders ([`crate::measure::view`]) whose reads wait for the epoch's throttle, as
//! prepbench's own reader's do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::engine::{OnlineInput, OnlineJob};
use super::session::loader_error;
use crate::measure::emulate::Throttle;
use crate::measure::errors::RunError;
use crate::measure::view;

/// Where the loader `name` reads `folder` for `job`: the folder, or its view under emulated
/// storage.
pub(super) fn seen(
    name: &'static str,
    job: &OnlineJob,
    folder: &Path,
) -> Result<PathBuf, RunError> {
    match job.throttle {
        Some(_) => view::path(folder).map_err(|e| loader_error(name, e)),
        None => Ok(folder.to_path_buf()),
    }
}

/// The views of the folders `job` reads (the raw items' folder, and a store's) waiting for
/// `throttle` until the result is dropped.
pub(super) fn throttling(
    name: &'static str,
    job: &OnlineJob,
    throttle: &Arc<Throttle>,
) -> Result<view::Throttling, RunError> {
    let mut folders = vec![job.source.root.clone()];
    if let OnlineInput::Store { backend, .. } = &job.input {
        let manifest = backend.local_path(crate::store::STORE_MANIFEST);
        if let Some(dir) = manifest.as_deref().and_then(Path::parent) {
            folders.push(dir.to_path_buf());
        }
    }
    let folders: Vec<&Path> = folders.iter().map(PathBuf::as_path).collect();
    view::throttling(&folders, throttle).map_err(|e| loader_error(name, e))
}
