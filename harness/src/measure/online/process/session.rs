//! A loader process's life: started in its own process group with the job on stdin, its
//! greeting, `go`, its answer, and its end (given a grace to end by itself, then its group
//! ended and reaped). A process that keeps an application cache (`--cache app` under
//! tf-data) lives on between the epochs of one run, kept by the run's cache, and is asked for
//! each next epoch with a line of its own.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::measure::errors::RunError;
use workloads::python::watch::Watched;
use workloads::Workload;

/// A loader's error, named by the loader.
pub(crate) fn loader_error(loader: &'static str, message: impl Into<String>) -> RunError {
    RunError::Loader {
        loader,
        message: message.into(),
    }
}

/// A running loader process. Its fields end in order: stdin first (the process sees no more
/// epochs are coming), then its group.
pub(super) struct Session {
    stdin: Option<ChildStdin>,
    stdout: BufReader<Watched<ChildStdout>>,
    stderr: Stderr,
    loader: Loader,
    name: &'static str,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} loader's process {}",
            self.name,
            self.loader.child.id()
        )
    }
}

impl Session {
    /// Starts `module`'s `main()` in the run's interpreter, in a process group of its own (its
    /// DataLoader workers, and any helper a step leaves, end with it).
    pub(super) fn start(name: &'static str, module: &str) -> Result<Session, RunError> {
        use std::os::unix::process::CommandExt;
        let python = workloads::python::interpreter();
        // A temporary folder of its own, gone with it: what TensorFlow's autograph and
        // PyTorch's workers leave in the temporary folder when their process is ended (a
        // memory limit's kill, a group ended) does not outlive the run. Named for this
        // process, so that one a killed prepbench left is known and removed here.
        remove_orphan_folders(&std::env::temp_dir());
        let tmp = tempfile::Builder::new()
            .prefix(&format!("{TMP_PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(|e| loader_error(name, format!("a temporary folder for it: {e}")))?;
        let mut child = Command::new(&python)
            .args(["-c", &format!("from {module} import main; main()")])
            .env(workloads::python::WORKER_ENV, "1")
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| loader_error(name, format!("cannot start {}: {e}", python.display())))?;
        let stderr = Stderr::watch(&mut child);
        let stdin = child.stdin.take();
        let stdout = BufReader::new(Watched {
            pipe: child.stdout.take().expect("piped"),
            pid: child.id(),
        });
        Ok(Session {
            stdin,
            stdout,
            stderr,
            loader: Loader {
                child,
                grace: Duration::ZERO,
                _tmp: tmp,
            },
            name,
        })
    }

    /// Writes one line (a job, `go`); an error when the process no longer reads.
    pub(super) fn send(&mut self, line: &str) -> std::io::Result<()> {
        match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{line}"),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// The process's next answer line, or its end.
    pub(super) fn answer_line(&mut self) -> Result<String, RunError> {
        let mut line = String::new();
        let read = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| loader_error(self.name, format!("its answer: {e}")))?;
        if read == 0 {
            let status = self.loader.child.wait();
            let signalled = status.as_ref().is_ok_and(|s| {
                use std::os::unix::process::ExitStatusExt;
                s.signal().is_some()
            });
            let status = status.map(|s| s.to_string()).unwrap_or_default();
            let why = match crate::measure::memory_limit::killed_for_memory(
                self.name,
                (crate::measure::online::engine(self.name))
                    .map(|e| (e.own_memory_mb(1), e.own_memory_mb(2))),
            ) {
                Some(why) if signalled => format!(": {why}"),
                _ => String::new(),
            };
            return Err(loader_error(
                self.name,
                format!("its process ended ({status}) without answering{why}"),
            ));
        }
        Ok(line)
    }

    /// Sends `line` and reads the answer line (`None`: the process did not take the line, or
    /// ended without answering); `Err` where none came within `limit`, the process's group
    /// then killed.
    pub(super) fn ask_within(&mut self, line: &str, limit: Duration) -> Result<Option<String>, ()> {
        let group = -(self.loader.child.id() as libc::pid_t);
        let (answered, watch) = workloads::python::end_unless_answered(group, limit);
        let answer = (self.send(line).ok()).and_then(|()| self.answer_line().ok());
        drop(answered);
        match watch.join() {
            Ok(true) if answer.is_none() => Err(()),
            _ => Ok(answer),
        }
    }

    /// Ends the process, giving it `grace` to end by itself once its stdin is closed; the last
    /// lines of its stderr.
    pub(super) fn end(mut self, grace: Duration) -> String {
        self.stdin = None;
        self.loader.grace = grace;
        let Session { stderr, loader, .. } = self;
        drop(loader);
        stderr.tail()
    }
}

/// The loader process kept between runs, with its key (the loader and the workload it was
/// started for): at most one, so that no framework stays in memory beside another's runs.
static IDLE: std::sync::Mutex<Option<(String, Session)>> = std::sync::Mutex::new(None);

/// How long a process that ended its run is given to let go of it (an application cache
/// freed) and say it is idle.
const IDLE_WITHIN: Duration = Duration::from_secs(30);

impl Session {
    /// The idle process kept for `key`, taken for a run; none under a memory limit (a process
    /// started outside the run's cgroup would not be limited), and none of another key (that
    /// one is ended).
    pub(super) fn idle(key: &str) -> Option<Session> {
        let kept = IDLE.lock().unwrap_or_else(|e| e.into_inner()).take();
        match kept {
            Some((k, session)) if k == key && !crate::measure::memory_limit::active() => {
                Some(session)
            }
            Some((_, other)) => {
                drop(other.end(Duration::ZERO));
                None
            }
            None => None,
        }
    }

    /// Ends the run this process served (`end_run`: it lets go of the run's dataset and any
    /// application cache) and keeps it idle for the next run of `key`, once it says it is
    /// idle; ended instead where it does not say so in time, or under a memory limit.
    pub(super) fn park(mut self, key: String) {
        if crate::measure::memory_limit::active()
            || self.send(r#"{"end_run": true}"#).is_err()
            || !self.idle_within(IDLE_WITHIN)
        {
            drop(self.end(Duration::ZERO));
            return;
        }
        self.keep_idle(key);
    }

    /// Keeps this process, which waits for a job, idle for the next run of `key` (the only
    /// one kept: another is ended); ended instead under a memory limit.
    pub(super) fn keep_idle(self, key: String) {
        if crate::measure::memory_limit::active() {
            drop(self.end(Duration::ZERO));
            return;
        }
        let previous = IDLE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace((key, self));
        if let Some((_, other)) = previous {
            drop(other.end(Duration::ZERO));
        }
    }

    /// Whether the process says `idle` within `limit`.
    fn idle_within(&mut self, limit: Duration) -> bool {
        use std::os::fd::AsRawFd;
        if self.stdout.buffer().is_empty() {
            let mut poll = libc::pollfd {
                fd: self.stdout.get_ref().pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: poll reads and writes the one pollfd it is given.
            if unsafe { libc::poll(&mut poll, 1, ms) } <= 0 {
                return false;
            }
        }
        #[derive(serde::Deserialize)]
        struct Idle {
            idle: serde_json::Value,
        }
        self.answer_line()
            .ok()
            .and_then(|line| serde_json::from_str::<Idle>(&line).ok())
            .is_some_and(|i| !i.idle.is_null())
    }
}

/// Ends the loader process kept idle between runs, if any: at the end of a command, so that
/// none outlives it.
pub fn retire_idle() {
    let kept = IDLE.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((_, session)) = kept {
        drop(session.end(Duration::from_secs(5)));
    }
}

/// The key of a loader process kept idle (`PythonLoader::key`): `loader`, and `workload`'s
/// spec where a step of it is Python.
pub(super) fn process_key(loader: &str, workload: &Workload) -> String {
    let python = workload
        .steps
        .iter()
        .any(|d| d.step.python_link().is_some());
    if python {
        let spec = serde_json::to_string(&workload.spec).unwrap_or_default();
        format!("{loader} {spec}")
    } else {
        loader.to_string()
    }
}

/// A loader process's stderr (the user's prints, the framework's warnings), read as it comes
/// and kept for an error's message.
struct Stderr {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    finished: std::sync::mpsc::Receiver<()>,
}

impl Stderr {
    fn watch(child: &mut Child) -> Stderr {
        let mut err = Watched {
            pipe: child.stderr.take().expect("piped"),
            pid: child.id(),
        };
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (done, finished) = std::sync::mpsc::channel();
        let kept = text.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut chunk) {
                if let Ok(mut text) = kept.lock() {
                    text.push_str(&String::from_utf8_lossy(&chunk[..n]));
                }
            }
            let _ = done.send(());
        });
        Stderr { text, finished }
    }

    /// The last lines, for an error: what was read by the time the reader finished (the
    /// process ended), or a second later.
    fn tail(self) -> String {
        let _ = self.finished.recv_timeout(Duration::from_secs(1));
        let text = self.text.lock().map(|t| t.clone()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }
}

/// The loader process: when it goes out of scope (its answer read, or an error on the way),
/// it is given `grace` to end by itself, then its group (its DataLoader workers, helpers a step
/// left) is ended and it is reaped, so no run leaves a process behind; its temporary folder
/// goes after it.
struct Loader {
    child: Child,
    grace: Duration,
    _tmp: tempfile::TempDir,
}

impl Drop for Loader {
    fn drop(&mut self) {
        use workloads::python::watch::{end_group, ended};
        let pid = self.child.id();
        let until = std::time::Instant::now() + self.grace;
        while !ended(pid) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Before it is reaped, while its process id still names the group.
        end_group(pid);
        let _ = self.child.wait();
    }
}

/// The start of a loader's temporary folder's name, followed by prepbench's process id.
const TMP_PREFIX: &str = "prepbench-loader-";

/// Removes the loaders' temporary folders under `tmp` whose prepbench is gone: killed (it
/// sets no signal handler, so Ctrl-C ends it before the folder's guard runs). Only folders
/// of this user named for a process id that no process has now; a symbolic link is never
/// followed.
fn remove_orphan_folders(tmp: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let orphan = (entry.file_name().to_str())
            .is_some_and(|n| crate::measure::view::left_by_a_dead_process(n, TMP_PREFIX));
        let ours =
            std::fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if orphan && ours {
            drop(std::fs::remove_dir_all(entry.path()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::process_key;

    #[test]
    fn a_loader_folder_a_killed_prepbench_left_is_removed_and_no_other() {
        let tmp = tempfile::tempdir().unwrap();
        let at = |name: &str| tmp.path().join(name);
        // Beyond any pid_max (2^22): no process has it.
        let gone = format!("{}4194305-abc", super::TMP_PREFIX);
        let alive = format!("{}{}-abc", super::TMP_PREFIX, std::process::id());
        let unnamed = format!("{}abcdef", super::TMP_PREFIX);
        for name in [&gone, &alive, &unnamed, &"other-4194305-abc".to_string()] {
            std::fs::create_dir(at(name)).unwrap();
            std::fs::write(at(name).join("autograph.py"), "x").unwrap();
        }
        let outside = tempfile::tempdir().unwrap();
        let link = format!("{}4194306-link", super::TMP_PREFIX);
        std::os::unix::fs::symlink(outside.path(), at(&link)).unwrap();
        super::remove_orphan_folders(tmp.path());
        assert!(!at(&gone).exists(), "a dead process's folder stays");
        for kept in [&alive, &unnamed, &"other-4194305-abc".to_string()] {
            assert!(at(kept).join("autograph.py").exists(), "{kept} was removed");
        }
        assert!(outside.path().exists() && at(&link).symlink_metadata().is_ok());
    }

    fn workload(name: &str, last: &str) -> workloads::Workload {
        let yaml = format!(
            "name: {name}\ndataset: {{kind: imagenet, samples: 4}}\nsteps:\n  - name: \
             concatenated\n    op: read_file\n{last}"
        );
        workloads::Workload::from_yaml(&yaml, "t.yaml").unwrap()
    }

    #[test]
    fn workloads_of_prepbench_steps_share_a_loader_process_and_python_steps_have_their_own() {
        let ours = "  - name: decoded\n    op: decode_jpeg\n";
        let python = "  - name: decoded\n    op: python\n    params: {function: \"pipe:decode\", \
                      from: data}\n";
        let (a, b) = (workload("a", ours), workload("b", ours));
        assert_eq!(process_key("tf-data", &a), process_key("tf-data", &b));
        assert_ne!(process_key("tf-data", &a), process_key("torch", &a));
        let (c, d) = (workload("c", python), workload("d", python));
        assert_ne!(process_key("torch", &c), process_key("torch", &d));
        assert_ne!(process_key("torch", &c), process_key("torch", &a));
        assert_eq!(
            process_key("torch", &c),
            process_key("torch", &workload("c", python))
        );
    }
}
