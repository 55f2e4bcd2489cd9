//! The user's Python interpreter and how prepbench starts it: which one, with which driver and
//! environment, the live workers' process ids, and the folder a workload's Python paths are
//! relative to.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::python::link::Link;

/// The worker's source, run with `python -c`.
/// Set in every Python process prepbench starts (step workers, loaders): a module one of them
/// imports that starts prepbench again is refused rather than recursed into.
pub const WORKER_ENV: &str = "PREPBENCH_WORKER";

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
pub(super) static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

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

/// Why `python` did not start, and how to name another.
pub(super) fn cannot_start(python: &Path, e: &std::io::Error) -> String {
    format!(
        "cannot start the Python interpreter `{}`: {e} (set it with --python or \
         PREPBENCH_PYTHON)",
        python.display()
    )
}

/// The driver run by the user's interpreter with `mode` (and its arguments) for `links`; Python
/// writes no `__pycache__` into the user's folders (prepbench writes only in its own).
pub(super) fn driver(mode: &[&str], links: &[Link]) -> Command {
    let mut command = Command::new(interpreter());
    command
        .arg("-c")
        .arg(BOOTSTRAP)
        .arg(DRIVER)
        .args(mode)
        .args(links.iter().flat_map(Link::args))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        // prepbench's Python API refuses to start prepbench from a module a worker imports
        // (a script without an `if __name__ == "__main__":` guard).
        .env(WORKER_ENV, "1");
    command
}

/// The program `-c` runs: it checks that the interpreter is Python 3.7 or newer (the driver
/// times with `time.perf_counter_ns`, new in 3.7) in syntax every Python since 2.6 reads, then runs the driver (its first argument) as `__main__`. An older Python is refused
/// in words, as the first link's failure (`0 message`, the driver's own format), instead of
/// failing every sample with an error blamed on the user's step.
const BOOTSTRAP: &str = concat!(
    "import sys\n",
    "if sys.version_info < (3, 7):\n",
    "    sys.stderr.write('0 Python %d.%d is older than the 3.7 that prepbench\\'s Python steps ",
    "need: name a newer interpreter with --python or PREPBENCH_PYTHON\\n' % ",
    "tuple(sys.version_info[:2]))\n",
    "    sys.exit(3)\n",
    "source = sys.argv.pop(1)\n",
    "exec(compile(source, 'prepbench-driver', 'exec'))\n",
);

/// What the driver's `check` mode prints last when every link imported (driver.py `CHECKED`).
const CHECKED: &str = "prepbench-driver: imports checked";

/// How long an interpreter may take to import the steps and answer
/// (`PREPBENCH_PYTHON_START_S`, default 300 s: importing PyTorch or TensorFlow takes seconds,
/// not minutes).
pub fn start_timeout() -> std::time::Duration {
    let seconds = std::env::var("PREPBENCH_PYTHON_START_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(300.0);
    std::time::Duration::from_secs_f64(seconds.min(86_400.0))
}

/// Why `python` was ended before it answered: it took longer than [`start_timeout`].
pub fn no_answer(python: &Path, limit: std::time::Duration) -> String {
    format!(
        "{} did not answer within {} s (is it a Python interpreter? a module that blocks when \
         imported?); PREPBENCH_PYTHON_START_S sets the limit",
        python.display(),
        limit.as_secs()
    )
}

/// Sends SIGKILL to `target` (a pid, or minus a process group's id) unless `answered` is
/// dropped or sent on within `limit`: whether it did. (The caller has not waited for the
/// process yet, so the pid is still its child's.)
pub fn end_unless_answered(
    target: libc::pid_t,
    limit: std::time::Duration,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<bool>) {
    let (answered, wait) = std::sync::mpsc::channel::<()>();
    let watch = std::thread::spawn(move || {
        let late = wait.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout);
        if late {
            // SAFETY: kill takes a pid and a signal; the child is not reaped before the
            // caller joins this thread, so the pid is still its.
            unsafe { libc::kill(target, libc::SIGKILL) };
        }
        late
    });
    (answered, watch)
}

/// Checks in one interpreter, running nothing else, that every link's callable imports and is
/// callable: the index of the first that does not, and the Python error. An interpreter that
/// does not answer within [`start_timeout`] is ended, and one that exits without running the
/// driver (a script that prints a line) is not taken for Python.
pub fn check(links: &[Link]) -> Result<(), (usize, String)> {
    if links.is_empty() {
        return Ok(());
    }
    let python = interpreter();
    // In a process group of its own, so that ending it ends what it started too (a wrapper's
    // `sleep`), which would otherwise hold its output open.
    use std::os::unix::process::CommandExt;
    let child = driver(&["check"], links)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| (0, cannot_start(&python, &e)))?;
    let limit = start_timeout();
    let (answered, watch) = end_unless_answered(-(child.id() as libc::pid_t), limit);
    let out = child.wait_with_output();
    drop(answered);
    if watch.join().unwrap_or(false) {
        return Err((0, no_answer(&python, limit)));
    }
    let out = out.map_err(|e| (0, cannot_start(&python, &e)))?;
    let (status, out, err) = (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    if status.success() {
        if out.lines().last() == Some(CHECKED) {
            return Ok(());
        }
        return Err((
            0,
            format!(
                "{} exited without running prepbench's Python driver (it printed {:?}): name a \
                 Python interpreter with --python or PREPBENCH_PYTHON",
                python.display(),
                out.lines().last().unwrap_or("")
            ),
        ));
    }
    let last = err.lines().last().unwrap_or("failed");
    Err(match last.split_once(' ') {
        Some((index, message)) if index.parse::<usize>().is_ok_and(|i| i < links.len()) => {
            (index.parse().unwrap_or(0), message.to_string())
        }
        _ => (0, last.to_string()),
    })
}
