//! Process counters read around a phase: storage bytes read (`/proc/self/io`), CPU time
//! (`getrusage`, this process and its children, plus the live Python step workers), and the
//! whole machine's busy and steal time (`/proc/stat`), as deltas between two snapshots. The
//! machine's busy time less ours is the foreign load a measurement ran beside.

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
    /// CPU seconds of waited-for child processes (user + system).
    pub children_cpu_s: f64,
    /// The machine's busy and stolen CPU seconds since boot, all cores; `None` without
    /// `/proc/stat`.
    pub machine: Option<MachineCpu>,
}

/// The whole machine's CPU time since boot, summed over its cores.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineCpu {
    /// user + nice + system + irq + softirq.
    pub busy_s: f64,
    /// Time the hypervisor ran something else while a virtual CPU wanted to run.
    pub steal_s: f64,
    /// The cores counted (`cpuN` lines).
    pub cores: usize,
}

/// `/proc/stat`'s and `/proc/PID/stat`'s ticks a second (`_SC_CLK_TCK`); `None` where the
/// system does not say.
fn ticks_per_s() -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as f64)
}

/// The `cpu` line of `/proc/stat`, in seconds.
fn machine_cpu() -> Option<MachineCpu> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let hz = ticks_per_s()?;
    if ticks.len() < 8 {
        return None;
    }
    let at = |i: usize| ticks[i] / hz;
    let cores = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    Some(MachineCpu {
        busy_s: at(0) + at(1) + at(2) + at(5) + at(6),
        steal_s: at(7),
        cores: cores.max(1),
    })
}

/// Differences between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Delta {
    pub wall_s: f64,
    pub read_bytes: u64,
    pub read_chars: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU seconds the rest of the machine used meanwhile (busy time not ours nor our
    /// children's); `None` without `/proc/stat`.
    pub foreign_cpu_s: Option<f64>,
    /// CPU seconds stolen by the hypervisor meanwhile.
    pub steal_s: Option<f64>,
    /// The machine's cores, which those seconds are shared by.
    pub cores: usize,
}

/// The least of the machine's capacity (its cores times the phase's wall time), in
/// `/proc/stat` ticks, over which a share of it is measured. The machine's busy and stolen time
/// count in ticks (10 ms), ours to the microsecond, so the foreign time of a phase is off by a
/// tick or two: measured on 2 idle cores, up to 184 % of the machine over epochs of 2 ms, 32 %
/// over 16 ms, 8.9 % over 70 ms (14 ticks of the machine). From 20 ticks (0.1 s on 2 cores) the
/// error is under what 14 gave, far under the 25 % that has a run measured again; below it the
/// shares are not recorded.
pub const MIN_LOAD_TICKS: f64 = 20.0;

impl Delta {
    /// The machine's capacity over the phase, CPU seconds, where it spans at least
    /// [`MIN_LOAD_TICKS`]; `None` for a shorter phase, whose share would be mostly rounding.
    fn measurable_capacity(&self) -> Option<f64> {
        let capacity = self.wall_s * self.cores.max(1) as f64;
        // Without the tick rate there is no `/proc/stat` time to share out either.
        let ticks = capacity * ticks_per_s()?;
        (capacity > 0.0 && ticks >= MIN_LOAD_TICKS).then_some(capacity)
    }

    /// Foreign CPU time as a share of the machine's capacity over the phase, %; `None` without
    /// `/proc/stat` or over less than [`MIN_LOAD_TICKS`] of the machine.
    pub fn foreign_load_pct(&self) -> Option<f64> {
        let capacity = self.measurable_capacity()?;
        self.foreign_cpu_s.map(|s| 100.0 * s / capacity)
    }

    /// Stolen CPU time as a share of the machine's capacity over the phase, %; `None` as for
    /// [`Delta::foreign_load_pct`].
    pub fn steal_pct(&self) -> Option<f64> {
        let capacity = self.measurable_capacity()?;
        self.steal_s.map(|s| 100.0 * s / capacity)
    }
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

fn rusage(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

/// User and system CPU seconds of the live Python step workers (`/proc/PID/stat`): their work
/// is the run's, as a DataLoader's workers' is. A worker once ended and waited for is counted in
/// the children's time instead.
fn python_workers_cpu() -> (f64, f64) {
    let Some(hz) = ticks_per_s() else {
        return (0.0, 0.0);
    };
    let mut total = (0.0, 0.0);
    for pid in workloads::python::worker_pids() {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) in parentheses: state is the
        // first, utime the 12th, stime the 13th.
        let Some((_, rest)) = text.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        total.0 += ticks(11) / hz;
        total.1 += ticks(12) / hz;
    }
    total
}

impl Snapshot {
    pub fn now() -> Snapshot {
        let (read_bytes, read_chars) = proc_io();
        let (own_user_s, own_sys_s) = rusage(libc::RUSAGE_SELF);
        let (workers_user_s, workers_sys_s) = python_workers_cpu();
        let (cpu_user_s, cpu_sys_s) = (own_user_s + workers_user_s, own_sys_s + workers_sys_s);
        let (child_user_s, child_sys_s) = rusage(libc::RUSAGE_CHILDREN);
        Snapshot {
            at: Instant::now(),
            read_bytes,
            read_chars,
            cpu_user_s,
            cpu_sys_s,
            children_cpu_s: child_user_s + child_sys_s,
            machine: machine_cpu(),
        }
    }

    pub fn since(&self, earlier: &Snapshot) -> Delta {
        Delta {
            wall_s: self.at.duration_since(earlier.at).as_secs_f64(),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            read_chars: self.read_chars.saturating_sub(earlier.read_chars),
            cpu_user_s: (self.cpu_user_s - earlier.cpu_user_s).max(0.0),
            cpu_sys_s: (self.cpu_sys_s - earlier.cpu_sys_s).max(0.0),
            foreign_cpu_s: self.machine.zip(earlier.machine).map(|(now, then)| {
                let ours = (self.cpu_user_s + self.cpu_sys_s + self.children_cpu_s)
                    - (earlier.cpu_user_s + earlier.cpu_sys_s + earlier.children_cpu_s);
                // /proc/stat counts in ticks (10 ms): a phase's own time can exceed the
                // machine's by a tick; foreign time is never negative.
                (now.busy_s - then.busy_s - ours).max(0.0)
            }),
            steal_s: self
                .machine
                .zip(earlier.machine)
                .map(|(now, then)| (now.steal_s - then.steal_s).max(0.0)),
            cores: self.machine.map_or(1, |m| m.cores),
        }
    }
}

/// Minimum samples for a steady-state rate.
const STEADY_MIN_SAMPLES: usize = 20;

/// The steady-state rate from the arrival times (seconds since the start, ascending).
pub fn steady_rate(arrivals: &[f64]) -> Option<f64> {
    let n = arrivals.len();
    if n < STEADY_MIN_SAMPLES {
        return None;
    }
    let (a, b) = (n / 10, n * 9 / 10);
    let seconds = arrivals[b] - arrivals[a];
    (seconds > 0.0).then(|| (b - a) as f64 / seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_and_syscall_reads_are_counted() {
        let before = Snapshot::now();
        let mut x = 0u64;
        let start = Instant::now();
        // Spins until the process has used 30 ms of CPU (or 10 s have passed): a fixed wall
        // time gets little CPU on a busy machine.
        let used = || {
            let d = Snapshot::now().since(&before);
            d.cpu_user_s + d.cpu_sys_s
        };
        while start.elapsed().as_millis() < 60 || (used() < 0.03 && start.elapsed().as_secs() < 10)
        {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
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

    #[test]
    fn a_phase_too_short_for_proc_stat_ticks_has_no_load_share() {
        // Two ticks of other processes' time over 4 ms of 2 cores would read as 250 %.
        let delta = |wall_s: f64| Delta {
            wall_s,
            foreign_cpu_s: Some(0.02),
            steal_s: Some(0.0),
            cores: 2,
            ..Delta::default()
        };
        assert_eq!(delta(0.004).foreign_load_pct(), None);
        assert_eq!(delta(0.004).steal_pct(), None);
        // 20 ticks of the machine at 100 a second: 0.1 s of 2 cores.
        let floor = MIN_LOAD_TICKS / ticks_per_s().unwrap() / 2.0;
        assert_eq!(delta(floor * 0.9).foreign_load_pct(), None);
        let pct = delta(floor * 1.1).foreign_load_pct().unwrap();
        assert!((pct - 100.0 * 0.02 / (floor * 2.2)).abs() < 1e-9, "{pct}");
        assert_eq!(delta(1.0).steal_pct(), Some(0.0));
    }

    #[test]
    fn a_busy_neighbour_shows_as_foreign_load() {
        if machine_cpu().is_none() {
            eprintln!("skipped: no /proc/stat");
            return;
        }
        // A process spinning that we have not waited for is not ours: its CPU time is foreign.
        let mut neighbour = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = Snapshot::now();
        std::thread::sleep(std::time::Duration::from_millis(400));
        let d = Snapshot::now().since(&before);
        neighbour.kill().unwrap();
        neighbour.wait().unwrap();
        let foreign = d.foreign_cpu_s.unwrap();
        // About 0.4 s of one core (ticks are 10 ms; the scheduler may share the core).
        assert!(foreign >= 0.2, "{d:?}");
        assert!(d.foreign_load_pct().unwrap() <= 100.0 + 1.0, "{d:?}");
        assert!(d.steal_pct().unwrap() >= 0.0);
    }
}
