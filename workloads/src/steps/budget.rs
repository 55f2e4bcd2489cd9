//! One memory budget per sample, shared by its steps: before a step allocates an output that
//! grows with its input or its parameters, it asks [`reserve`] whether what the sample holds
//! plus that output fits. A decoder's `max_expansion` bounds what it makes of its input bytes;
//! this bounds what any step makes of anything, so a file that decodes within bounds (2.9 hours
//! of FLAC silence, 334 MB) cannot make a later step (its STFT, 4.28 GB) abort the process
//! where memory is capped: the sample fails, naming the step, and `--on-error skip` goes on.
//!
//! The budget is the memory this process can still have (the least of the machine's available
//! memory, the address-space limit less what is mapped, and the cgroup's limit less its use),
//! measured once, shared among the workers that hold a sample at a time and one more (what the
//! pipeline holds besides), at least 64 MiB and at most [`MAX_TENSOR_BYTES`] a tensor may be.
//! `PREPBENCH_SAMPLE_BUDGET_MB` sets it instead.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::error::StepError;
use crate::sample::MAX_TENSOR_BYTES;

/// The least budget a sample gets, however little memory is free: normal samples need far less.
pub const MIN_SAMPLE_BUDGET: u64 = 64 << 20;

/// Workers that process samples at once (default: the CPUs); set by whoever starts them.
static WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Says how many workers hold a sample at once, so each gets its share of the memory.
pub fn set_workers(workers: usize) {
    WORKERS.store(workers.max(1), Ordering::Relaxed);
}

fn workers() -> usize {
    match WORKERS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// The bytes one sample may hold at any point of its steps.
pub fn sample_budget() -> u64 {
    static SET: OnceLock<Option<u64>> = OnceLock::new();
    static FREE: OnceLock<Option<u64>> = OnceLock::new();
    let set = SET.get_or_init(|| {
        std::env::var("PREPBENCH_SAMPLE_BUDGET_MB")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|mb| *mb > 0)
            .map(|mb| mb.saturating_mul(1 << 20).min(MAX_TENSOR_BYTES))
    });
    if let Some(bytes) = *set {
        return bytes;
    }
    match *FREE.get_or_init(memory_left) {
        Some(free) => (free / (workers() as u64 + 1)).clamp(MIN_SAMPLE_BUDGET, MAX_TENSOR_BYTES),
        None => MAX_TENSOR_BYTES,
    }
}

/// The element count of a tensor of `dims` with `bytes_per` bytes per element that `field`
/// would become in a sample already holding `held` bytes: refused when it overflows, exceeds
/// [`MAX_TENSOR_BYTES`], or would take the sample past [`sample_budget`].
pub(crate) fn reserve(
    field: &str,
    held: usize,
    dims: &[usize],
    bytes_per: usize,
) -> Result<usize, StepError> {
    let elements = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let bytes = elements.map(|n| (n as u64).saturating_mul(bytes_per as u64));
    let (Some(n), Some(bytes)) = (elements, bytes.filter(|b| *b <= MAX_TENSOR_BYTES)) else {
        return Err(StepError::new(format!(
            "field `{field}` would be a tensor of shape {dims:?} ({bytes_per} bytes per \
             element), more than the {} GiB a step may allocate for one sample",
            MAX_TENSOR_BYTES >> 30
        )));
    };
    within_budget(
        &format!("field `{field}` would be a tensor of shape {dims:?}"),
        held,
        bytes,
    )?;
    Ok(n)
}

/// Refuses `bytes` more (what `what` would allocate) in a sample holding `held` bytes when
/// that takes it past [`sample_budget`].
pub(crate) fn within_budget(what: &str, held: usize, bytes: u64) -> Result<(), StepError> {
    let budget = sample_budget();
    if (held as u64).saturating_add(bytes) > budget {
        return Err(StepError::new(format!(
            "{what} ({:.1} MB) in a sample already holding {:.1} MB: more than the {:.0} MB one \
             sample may hold here (the memory left to prepbench, shared {}+1 ways by its workers \
             and the rest; PREPBENCH_SAMPLE_BUDGET_MB sets it)",
            bytes as f64 / 1e6,
            held as f64 / 1e6,
            budget as f64 / 1e6,
            workers()
        )));
    }
    Ok(())
}

/// Bytes this process can still allocate, the least of what the machine, its address-space
/// limit and its cgroup leave; `None` when none of them can be read.
fn memory_left() -> Option<u64> {
    [available(), address_space_left(), cgroup_left()]
        .into_iter()
        .flatten()
        .min()
}

/// `MemAvailable` of /proc/meminfo, in bytes.
fn available() -> Option<u64> {
    kib_field(
        &std::fs::read_to_string("/proc/meminfo").ok()?,
        "MemAvailable:",
    )
}

/// The address-space limit (`RLIMIT_AS`, as `ulimit -v` sets it) less what is mapped now.
fn address_space_left() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let mapped = kib_field(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmSize:",
    )?;
    Some(limit.rlim_cur.saturating_sub(mapped))
}

/// The memory cgroup's limit less its use (v2 `memory.max`/`memory.current`, v1
/// `memory.limit_in_bytes`/`memory.usage_in_bytes`).
fn cgroup_left() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (dir, limit, usage) = match controllers {
            "" => (
                format!("/sys/fs/cgroup{path}"),
                "memory.max",
                "memory.current",
            ),
            c if c.split(',').any(|c| c == "memory") => (
                format!("/sys/fs/cgroup/memory{path}"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            ),
            _ => continue,
        };
        let read = |name: &str| -> Option<u64> {
            std::fs::read_to_string(format!("{dir}/{name}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        // "max" (v2) does not parse; v1's unlimited is a number near 2^63.
        if let (Some(limit), Some(usage)) = (read(limit), read(usage)) {
            if limit < 1 << 60 {
                return Some(limit.saturating_sub(usage));
            }
        }
    }
    None
}

/// A `Name:  N kB` line's value in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_bounds_what_a_sample_holds_and_names_the_field() {
        let budget = sample_budget();
        assert!((MIN_SAMPLE_BUDGET..=MAX_TENSOR_BYTES).contains(&budget));
        assert_eq!(reserve("x", 0, &[4, 4], 4).unwrap(), 16);
        // What fits alone does not fit beside what the sample already holds.
        let half = (budget / 2) as usize;
        assert!(reserve("x", 0, &[half], 1).is_ok());
        let err = reserve("spectrogram", half + 1, &[half], 1).unwrap_err();
        assert!(
            err.to_string().contains("field `spectrogram`")
                && err.to_string().contains("one sample may hold"),
            "{err}"
        );
        // Overflow and the per-tensor cap are refused as before.
        assert!(reserve("x", 0, &[usize::MAX, 2], 1).is_err());
        assert!(reserve("x", 0, &[1 << 31], 4).is_err());
    }

    #[test]
    fn kib_fields_read_as_bytes() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(kib_field(text, "MemAvailable:"), Some(1_024_000));
        assert_eq!(kib_field(text, "VmSize:"), None);
        assert!(
            memory_left().is_some(),
            "Linux tells how much memory is left"
        );
    }
}
