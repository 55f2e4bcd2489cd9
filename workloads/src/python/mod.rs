//! Python worker processes for `op: python` steps: one persistent interpreter per worker thread
//! (as PyTorch's DataLoader keeps its workers). Consecutive Python steps of one phase form a
//! chain that one worker runs in a single round trip, so a sample crosses to Python once and
//! back once however many Python steps it passes through. Samples cross through a shared
//! memory file; the pipes carry only 16-byte messages. The interpreter is the user's:
//! `--python`, else `PREPBENCH_PYTHON`, else `python3`. The protocol is described in
//! `driver.py`, which is sent to the interpreter with `-c` (nothing is written to disk).

mod chain;
mod memory;
mod worker;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

pub use chain::{Chain, ChainError, Finished, Lease, Pools};

/// The worker's source, run with `python -c`.
pub const DRIVER: &str = include_str!("driver.py");

static INTERPRETER: OnceLock<PathBuf> = OnceLock::new();

/// Sets the interpreter Python steps use (the CLI's `--python`); the first call wins.
pub fn set_interpreter(path: PathBuf) {
    let _ = INTERPRETER.set(path);
}

/// The interpreter Python steps run: `--python`, else `PREPBENCH_PYTHON`, else `python3`.
pub fn interpreter() -> PathBuf {
    INTERPRETER
        .get()
        .cloned()
        .or_else(|| std::env::var_os("PREPBENCH_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// Process ids of the live workers, for CPU accounting (their time is this run's).
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The process ids of every live Python worker.
pub fn worker_pids() -> Vec<u32> {
    LIVE.lock().map(|l| l.clone()).unwrap_or_default()
}

thread_local! {
    /// The folder of the workload file being loaded on this thread: a Python step's module
    /// search path is relative to it.
    static WORKLOAD_DIR: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// Runs `load` with `dir` as the folder Python steps' paths are relative to.
pub(crate) fn in_workload_dir<T>(dir: &Path, load: impl FnOnce() -> T) -> T {
    let before = WORKLOAD_DIR.with(|d| d.replace(Some(dir.to_path_buf())));
    let out = load();
    WORKLOAD_DIR.with(|d| *d.borrow_mut() = before);
    out
}

/// The folder of the workload file being loaded (the current folder for a built-in or
/// in-memory workload).
pub(crate) fn workload_dir() -> PathBuf {
    WORKLOAD_DIR
        .with(|d| d.borrow().clone())
        .unwrap_or_else(|| PathBuf::from("."))
}

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
    fn args(&self) -> [OsString; 6] {
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

/// Why `python` did not start, and how to name another.
fn cannot_start(python: &Path, e: &std::io::Error) -> String {
    format!(
        "cannot start the Python interpreter `{}`: {e} (set it with --python or \
         PREPBENCH_PYTHON)",
        python.display()
    )
}

/// The driver run by the user's interpreter with `mode` (and its arguments) for `links`; Python
/// writes no `__pycache__` into the user's folders (prepbench writes only in its own).
fn driver(mode: &[&str], links: &[Link]) -> Command {
    let mut command = Command::new(interpreter());
    command
        .arg("-c")
        .arg(DRIVER)
        .args(mode)
        .args(links.iter().flat_map(Link::args))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        // prepbench's Python API refuses to start prepbench from a module a worker imports
        // (a script without an `if __name__ == "__main__":` guard).
        .env("PREPBENCH_WORKER", "1");
    command
}

/// Checks in one interpreter, running nothing else, that every link's callable imports and is
/// callable: the index of the first that does not, and the Python error.
pub fn check(links: &[Link]) -> Result<(), (usize, String)> {
    if links.is_empty() {
        return Ok(());
    }
    let out = driver(&["check"], links)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| (0, cannot_start(&interpreter(), &e)))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or("failed");
    Err(match last.split_once(' ') {
        Some((index, message)) if index.parse::<usize>().is_ok_and(|i| i < links.len()) => {
            (index.parse().unwrap_or(0), message.to_string())
        }
        _ => (0, last.to_string()),
    })
}
