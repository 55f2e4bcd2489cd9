//! One `op: python` step as a worker process runs it.

use std::ffi::OsString;
use std::path::PathBuf;

/// One `op: python` step as a worker runs it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// `module:callable`.
    pub function: String,
    /// Folder put first on the module search path (absolute).
    pub search_path: PathBuf,
    /// The one field the callable gets; `None`: a dict of every field.
    pub from: Option<String>,
    /// Where one returned value goes.
    pub to: String,
    /// A random step: its worker seeds Python's, NumPy's and torch's generators before each
    /// call (other steps draw from nothing, so an unmarked random step shows under --verify).
    pub random: bool,
    /// Arguments (JSON: a list or a map) the callable is called with once, at the worker's
    /// start, to make the callable that runs on samples.
    pub init: Option<String>,
}

impl Link {
    /// The callable and where it is looked for, for messages.
    pub fn described(&self) -> String {
        format!("`{}` (from {})", self.function, self.search_path.display())
    }

    /// The link as the driver's six arguments.
    pub fn args(&self) -> [OsString; 6] {
        [
            self.search_path.clone().into_os_string(),
            self.function.clone().into(),
            self.from.clone().unwrap_or_default().into(),
            self.to.clone().into(),
            if self.random { "1" } else { "0" }.into(),
            self.init.clone().unwrap_or_default().into(),
        ]
    }
}
