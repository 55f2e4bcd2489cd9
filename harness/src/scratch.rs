//! Folders prepbench makes for itself (calibration files, staging for uploads) and removes
//! however the work that made them ends.

use std::path::{Path, PathBuf};

/// A folder removed (with everything in it) when this value is dropped; it need not exist yet.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(path: PathBuf) -> ScratchDir {
        ScratchDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
