//! Process counters read around a phase: storage bytes read (`/proc/self/io`) and CPU time
//! (`getrusage`), as deltas between two snapshots.

use std::time::Instant;

/// Counters of this process at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub at: Instant,
    /// Bytes this process caused to be fetched from storage (`read_bytes`; 0 where unavailable).
    pub read_bytes: u64,
    /// Bytes this process read through syscalls, cached or not (`rchar`).
    pub read_chars: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

/// Differences between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Delta {
    pub wall_s: f64,
    pub read_bytes: u64,
    pub read_chars: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

fn proc_io() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("read_bytes:"), field("rchar:"))
}

fn rusage() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

impl Snapshot {
    pub fn now() -> Snapshot {
        let (read_bytes, read_chars) = proc_io();
        let (cpu_user_s, cpu_sys_s) = rusage();
        Snapshot {
            at: Instant::now(),
            read_bytes,
            read_chars,
            cpu_user_s,
            cpu_sys_s,
        }
    }

    pub fn since(&self, earlier: &Snapshot) -> Delta {
        Delta {
            wall_s: self.at.duration_since(earlier.at).as_secs_f64(),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            read_chars: self.read_chars.saturating_sub(earlier.read_chars),
            cpu_user_s: (self.cpu_user_s - earlier.cpu_user_s).max(0.0),
            cpu_sys_s: (self.cpu_sys_s - earlier.cpu_sys_s).max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_and_syscall_reads_are_counted() {
        let before = Snapshot::now();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed().as_millis() < 60 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 300_000]).unwrap();
        std::hint::black_box(std::fs::read(&path).unwrap());
        let d = Snapshot::now().since(&before);
        assert!(d.wall_s >= 0.06);
        assert!(d.cpu_user_s + d.cpu_sys_s > 0.02, "{d:?}");
        if std::path::Path::new("/proc/self/io").exists() {
            assert!(d.read_chars >= 300_000, "{d:?}");
        }
    }
}
