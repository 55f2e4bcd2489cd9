//! A memory limit on a run and its page cache (`--memory-limit-mb`): for its online epochs
//! prepbench moves itself, and so every loader process it starts, into a memory cgroup of its
//! own, beneath the one it runs in, whose limit the kernel enforces on the pages it reads as on
//! what it allocates. A store larger than the limit cannot stay cached from one epoch to the
//! next, as on a machine with that much memory (the paper's claim 4d). cgroup v1's memory
//! controller takes a limit on any child; v2 needs the memory controller delegated to the
//! children of the cgroup prepbench runs in, which it asks for and which is refused when
//! that cgroup holds other processes. Where neither works the run is refused, naming why.

use std::path::{Path, PathBuf};

/// The smallest limit taken: below it the workers' own buffers would not fit.
pub const MIN_LIMIT_MB: u64 = 64;

/// Which memory controller prepbench is under, and where its cgroup is.
#[derive(Clone, Debug, PartialEq)]
enum Hierarchy {
    V1(PathBuf),
    V2(PathBuf),
}

/// Where the memory controller of this process's cgroup is, from `/proc/self/cgroup` (`cgroup`)
/// and `/proc/self/mountinfo` (`mounts`).
fn hierarchy(cgroup: &str, mounts: &str) -> Result<Hierarchy, String> {
    // v1: "4:memory:/path" (the controller may share a line: "4:cpu,memory:/path").
    let v1 = cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    });
    let v2 = cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::").map(str::to_string));
    for line in mounts.lines() {
        // mountinfo: id parent dev root mountpoint options ... - fstype source superoptions
        let (left, right) = match line.split_once(" - ") {
            Some(halves) => halves,
            None => continue,
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let theirs: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(point), Some(fstype)) =
            (fields.get(3), fields.get(4), theirs.first())
        else {
            continue;
        };
        let inside = |path: &str| {
            let rest = path
                .strip_prefix(root.trim_end_matches('/'))
                .unwrap_or(path);
            Path::new(&unescape(point)).join(rest.trim_start_matches('/'))
        };
        match (*fstype, &v1, &v2) {
            ("cgroup", Some(path), _)
                if theirs
                    .get(2)
                    .is_some_and(|o| o.split(',').any(|o| o == "memory")) =>
            {
                return Ok(Hierarchy::V1(inside(path)));
            }
            ("cgroup2", None, Some(path)) => return Ok(Hierarchy::V2(inside(path))),
            _ => {}
        }
    }
    Err("no memory cgroup controller is mounted (/proc/self/cgroup, /proc/self/mountinfo)".into())
}

/// A mount point as mountinfo escapes it (`\040` for a space).
fn unescape(text: &str) -> String {
    crate::results::system::unescape(text)
}

/// While alive, this process runs in a memory cgroup of its own with a limit; dropped, it is
/// back where it was and the cgroup is gone.
#[derive(Debug)]
pub struct MemoryLimit {
    dir: PathBuf,
    home: PathBuf,
}

/// The limit this process is under now (`None`: none): its cgroup's file that counts the
/// processes the kernel killed there for lack of memory, and the limit in MB.
static CURRENT: std::sync::Mutex<Option<(PathBuf, u64)>> = std::sync::Mutex::new(None);

fn current() -> std::sync::MutexGuard<'static, Option<(PathBuf, u64)>> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether this process runs under a memory limit now (a run's, until it ends).
pub fn active() -> bool {
    current().is_some()
}

/// Under a limit, where the kernel has killed a process in its cgroup for lack of memory
/// since it was set: why, said for the process of the loader `loader` that ended by a signal,
/// with what `reproduce` adds to a limit for that loader's own memory at one and two threads
/// (`own`, its `Engine::own_memory_mb`).
pub fn killed_for_memory(loader: &str, own: Option<(u64, u64)>) -> Option<String> {
    let (events, mb) = current().clone()?;
    let kills = oom_kills(&std::fs::read_to_string(events).ok()?)?;
    (kills > 0).then(|| {
        format!(
            "the kernel killed it for lack of memory: the run's memory limit \
             (--memory-limit-mb {mb}) holds the loader's own memory as well as the page cache{}; \
             give it a larger limit",
            own.map_or(String::new(), |own| own_memory(loader, own))
        )
    })
}

/// What `reproduce` adds to a memory limit for `loader`'s own processes, from its additions at
/// one and two threads.
fn own_memory(loader: &str, (one, two): (u64, u64)) -> String {
    let each = two.saturating_sub(one);
    match (one, each) {
        (0, _) => String::new(),
        (_, 0) => format!(" (`reproduce` adds {one} MB to a limit for the {loader} loader's own)"),
        _ => format!(
            " (`reproduce` adds {} MB and {each} MB a worker to a limit for the {loader} \
             loader's own)",
            one - each
        ),
    }
}

/// The `oom_kill` count in a cgroup's `memory.oom_control` (v1) or `memory.events` (v2).
fn oom_kills(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

impl MemoryLimit {
    /// Moves this process into a new memory cgroup limited to `limit_mb` MB, beneath its own.
    pub fn enter(limit_mb: u64) -> Result<MemoryLimit, String> {
        if limit_mb < MIN_LIMIT_MB {
            return Err(format!(
                "a memory limit of {limit_mb} MB is below the {MIN_LIMIT_MB} MB a run needs"
            ));
        }
        let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
        let hierarchy = hierarchy(&read("/proc/self/cgroup")?, &read("/proc/self/mountinfo")?)?;
        let home = match &hierarchy {
            Hierarchy::V1(dir) | Hierarchy::V2(dir) => dir.clone(),
        };
        let dir = home.join(format!("prepbench-{}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            // Left by a run of this process that could not remove it: reused.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(format!(
                    "cannot make a memory cgroup in {} ({e}): a memory limit needs root or a \
                     delegated cgroup",
                    home.display()
                ))
            }
        }
        let entered = (|| {
            let limit = (limit_mb * 1_000_000).to_string();
            match &hierarchy {
                Hierarchy::V1(_) => write(&dir.join("memory.limit_in_bytes"), &limit)?,
                Hierarchy::V2(_) => {
                    write(&home.join("cgroup.subtree_control"), "+memory").map_err(|e| {
                        format!(
                            "{e}: cgroup v2 delegates the memory controller only from a cgroup \
                             that holds no processes; run prepbench in a cgroup of its own"
                        )
                    })?;
                    write(&dir.join("memory.max"), &limit)?;
                    // No swap: the limit is on memory, as a smaller machine's would be.
                    let _ = write(&dir.join("memory.swap.max"), "0");
                }
            }
            write(&dir.join("cgroup.procs"), &std::process::id().to_string())
        })();
        let events = match &hierarchy {
            Hierarchy::V1(_) => dir.join("memory.oom_control"),
            Hierarchy::V2(_) => dir.join("memory.events"),
        };
        *current() = Some((events, limit_mb));
        let limit = MemoryLimit { dir, home };
        // Dropped on failure too: back home, the cgroup removed.
        entered.map(|()| limit)
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        *current() = None;
        let _ = write(
            &self.home.join("cgroup.procs"),
            &std::process::id().to_string(),
        );
        // A loader process still ending keeps the cgroup busy for a moment.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Under `limit_mb` MB until the guard is dropped (`None`: no limit, no guard); an error names
/// the option and why the limit cannot be set.
pub fn enter(limit_mb: Option<u64>) -> anyhow::Result<Option<MemoryLimit>> {
    limit_mb
        .map(MemoryLimit::enter)
        .transpose()
        .map_err(|why| anyhow::anyhow!("--memory-limit-mb: {why}"))
}

/// The limit [`available`] tries: roomy, so that nothing this process does while inside is
/// pressed.
const PROBE_LIMIT_MB: u64 = 1024;

/// Whether a memory limit can be set here; `Err` says why not.
pub fn available() -> Result<(), String> {
    MemoryLimit::enter(PROBE_LIMIT_MB).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_kills_for_lack_of_memory_are_read_from_v1_and_v2() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(oom_kills(v1), Some(2));
        let v2 = "low 0\nhigh 0\nmax 14\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(oom_kills(v2), Some(1));
        // A kernel before 4.13 counts none in v1.
        assert_eq!(oom_kills("oom_kill_disable 0\nunder_oom 0\n"), None);
    }

    /// Each loader's kill names what `reproduce` adds for that loader's own memory, not
    /// another's: under torch it named TensorFlow's 400 MB.
    #[test]
    fn a_kill_names_what_its_own_loader_holds() {
        // tf.data's figures: a flat 512 MB; a DataLoader's: 448 MB and 32 MB a worker.
        let tf = own_memory("tf-data", (512, 512));
        assert!(tf.contains("512 MB to a limit for the tf-data"), "{tf}");
        let torch = own_memory("torch", (480, 512));
        assert!(
            torch.contains("448 MB and 32 MB a worker") && torch.contains("torch loader"),
            "{torch}"
        );
        assert_eq!(own_memory("native", (0, 0)), "");
    }

    #[test]
    fn the_memory_cgroup_is_found_under_v1_and_v2_mounts() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        let mounts = "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                      33 25 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";
        assert_eq!(
            hierarchy(v1, mounts),
            Ok(Hierarchy::V1(
                "/sys/fs/cgroup/memory/process_api/abc".into()
            ))
        );
        // A container sees its own cgroup as the mount's root.
        let nested = "44 25 0:29 /process_api /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(
            hierarchy(v1, nested),
            Ok(Hierarchy::V1("/sys/fs/cgroup/memory/abc".into()))
        );
        let v2 = "0::/user.slice/session-1.scope\n";
        let unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        assert_eq!(
            hierarchy(v2, unified),
            Ok(Hierarchy::V2(
                "/sys/fs/cgroup/user.slice/session-1.scope".into()
            ))
        );
        assert!(hierarchy(v1, "").unwrap_err().contains("no memory cgroup"));
    }

    #[test]
    fn a_limit_below_what_a_run_needs_is_refused() {
        let err = MemoryLimit::enter(8).unwrap_err();
        assert!(err.contains("8 MB") && err.contains("64 MB"), "{err}");
    }
}
