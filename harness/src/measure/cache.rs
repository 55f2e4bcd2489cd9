//! Page-cache control for a strategy's files: eviction before cold epochs (`sync` +
//! `/proc/sys/vm/drop_caches` when permitted, else `posix_fadvise(DONTNEED)` per file after
//! `fdatasync`, since DONTNEED drops only clean pages), residency measured with `mincore` over a
//! read-only mapping, and prefetching for warm epochs.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub use super::pages::{page_size, resident_pages};
use crate::results::system::meminfo_kib;
use crate::store::{io_error, StoreError};

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// How to evict, as asked on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EvictPolicy {
    /// `drop_caches` when permitted, per-file fadvise otherwise.
    Auto,
    /// Always `sync` + `drop_caches` (system-wide; needs root).
    DropCaches,
    /// Per-file `fdatasync` + `posix_fadvise(POSIX_FADV_DONTNEED)` (touches only these files).
    Fadvise,
}

/// Whether this process may write `/proc/sys/vm/drop_caches`.
pub fn can_drop_caches() -> bool {
    let path = std::ffi::CString::new(DROP_CACHES).expect("no NUL");
    // SAFETY: access(2) only reads the NUL-terminated path.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

/// Fraction of a set of files' pages held in the page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Residency {
    pub resident_pages: u64,
    pub total_pages: u64,
}

impl Residency {
    pub fn pct(&self) -> f64 {
        if self.total_pages == 0 {
            0.0
        } else {
            100.0 * self.resident_pages as f64 / self.total_pages as f64
        }
    }
}

/// Counts resident pages of one file with mincore(2) over a read-only shared mapping (mapping
/// does not fault pages in, so measuring does not change what it measures).
fn file_residency(path: &Path, page: usize) -> Result<Residency, StoreError> {
    let file = File::open(path).map_err(io_error(path))?;
    open_file_residency(&file, path, page)
}

/// Residency of a file already open (`path` names it in errors).
pub fn open_file_residency(file: &File, path: &Path, page: usize) -> Result<Residency, StoreError> {
    let len = file.metadata().map_err(io_error(path))?.len() as usize;
    let vec = resident_pages(file, len).map_err(io_error(path))?;
    let resident = vec.iter().filter(|&&v| v & 1 == 1).count() as u64;
    Ok(Residency {
        resident_pages: resident,
        total_pages: len.div_ceil(page) as u64,
    })
}

/// Residency of all `files` together.
pub fn residency(files: &[PathBuf]) -> Result<Residency, StoreError> {
    let page = page_size();
    files.iter().try_fold(Residency::default(), |acc, f| {
        let r = file_residency(f, page)?;
        Ok(Residency {
            resident_pages: acc.resident_pages + r.resident_pages,
            total_pages: acc.total_pages + r.total_pages,
        })
    })
}

fn fadvise_dontneed(path: &Path) -> Result<(), StoreError> {
    let file = File::open(path).map_err(io_error(path))?;
    file.sync_data().map_err(io_error(path))?;
    // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole file.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io_error(path)(std::io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}

fn drop_caches() -> std::io::Result<()> {
    flush_dirty_pages();
    std::fs::write(DROP_CACHES, b"3\n")
}

/// Writes every dirty page of the machine back (sync(2)), so that what others wrote, a dataset
/// just generated or a store just made, is not flushed inside a timed phase: ext4 commits all
/// of a file system's dirty data with the journal, so a store's fsync would otherwise pay for
/// it (measured: 2.6 s of writing for a 1.8 MB store right after 400 MB of frames).
pub fn flush_dirty_pages() {
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
}

/// What an eviction did and what it achieved.
#[derive(Clone, Debug, PartialEq)]
pub struct Eviction {
    /// `drop_caches`, `fadvise`, or `drop_caches+fadvise` when pages survived the drop;
    /// prefixed `read+` when the files were first read in part (`evict_for_cold_read`).
    pub method: String,
    /// Residency before anything was read or dropped.
    pub before: Residency,
    pub after: Residency,
    /// Bytes of the files read before the eviction so that it freed as much as they hold.
    pub primed_bytes: u64,
    /// Bytes of the running software's files that the drop freed and that were read back
    /// (`+code`; [`super::code_cache`]).
    pub code_bytes: u64,
}

/// Evicts `files` from the page cache and measures their residency before and after.
pub fn evict(files: &[PathBuf], policy: EvictPolicy) -> Result<Eviction, StoreError> {
    evict_with(files, policy, false, None)
}

/// Evicts `files` before a cold read of them. On a machine whose free memory goes back to the
/// hypervisor, the page cache the read fills is fast to take only where the eviction just
/// freed it (docs/measurement.md, "Cold reads on a VM"): so when the eviction would free less
/// than the files hold, as much of them is read first (`primed_bytes`), and every cold epoch
/// starts from the state of one whose store was resident until its eviction. Under a memory
/// limit of `within` bytes the read takes that much page cache at most, then recycles its own:
/// only that much is read first. Reading nothing there, the first cold epoch of a quick
/// reproduction's 256 MB sweep, its store not resident, took 3.76 s where its others took
/// 1.43-1.85 s (2.06 against 1.42-1.44 in the run before), which left 4d unsettled.
pub fn evict_for_cold_read(
    files: &[PathBuf],
    policy: EvictPolicy,
    within: Option<u64>,
) -> Result<Eviction, StoreError> {
    evict_with(files, policy, memory_goes_back(), within)
}

/// What a read needs freed before it so that its page cache is fast to take: the files' bytes,
/// at most the memory limit it runs `within`, and the running software's pages read back
/// after a drop (`code_back`, none under a limit: nothing is read back there).
fn prime_need(files_bytes: u64, within: Option<u64>, code_back: u64) -> u64 {
    match within {
        Some(limit) => files_bytes.min(limit),
        None => files_bytes + code_back,
    }
}

/// `prime`: read first what the eviction would not free, of at most the memory limit's bytes
/// the read runs `within` where it has one.
fn evict_with(
    files: &[PathBuf],
    policy: EvictPolicy,
    prime: bool,
    within: Option<u64>,
) -> Result<Eviction, StoreError> {
    let before = residency(files)?;
    let use_drop = match policy {
        EvictPolicy::Auto => can_drop_caches(),
        EvictPolicy::DropCaches => true,
        EvictPolicy::Fadvise => false,
    };
    let mut method = String::new();
    let mut primed_bytes = 0;
    // What the running software uses of its own files, kept across a drop; not under a memory
    // limit, whose cgroup would be charged for pages read back for processes outside it.
    let code = (use_drop && !crate::measure::memory_limit::active())
        .then(|| super::code_cache::before_drop(files));
    if prime {
        let page = page_size() as u64;
        // What the eviction frees: all droppable page cache for a drop, the files' own pages
        // for fadvise.
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let freed = if use_drop {
            droppable_bytes(&meminfo).unwrap_or(0)
        } else {
            before.resident_pages * page
        };
        let free = meminfo_kib(&meminfo, "MemFree:").map_or(0, |k| k * 1024);
        // The code read back after the drop takes freed pages too: as much as last time.
        let code_back = LAST_CODE_BYTES.load(std::sync::atomic::Ordering::Relaxed);
        let need = prime_need(before.total_pages * page, within, code_back);
        let deficit = prime_deficit(need, freed, free);
        if deficit > 0 {
            primed_bytes = read_prefix(files, deficit)?;
            method.push_str(crate::results::rows::EVICT_PRIMED);
        }
    }
    let dropped = use_drop
        && match drop_caches() {
            Ok(()) => true,
            Err(e) if policy == EvictPolicy::DropCaches => {
                return Err(StoreError::Invalid {
                    path: DROP_CACHES.to_string(),
                    message: format!(
                        "cannot drop caches ({e}); run as root or use --evict fadvise"
                    ),
                })
            }
            Err(_) => false,
        };
    if dropped {
        method.push_str("drop_caches");
    }
    let mut after = residency(files)?;
    if !dropped || after.resident_pages > 0 {
        fadvise_all(files)?;
        method.push_str(if dropped { "+fadvise" } else { "fadvise" });
        after = residency(files)?;
    }
    let code_bytes = match code.filter(|_| dropped) {
        Some(noted) => {
            let read = super::code_cache::after_drop(&noted);
            LAST_CODE_BYTES.store(read, std::sync::atomic::Ordering::Relaxed);
            read
        }
        None => 0,
    };
    if code_bytes > 0 {
        method.push_str(crate::results::rows::EVICT_CODE);
    }
    Ok(Eviction {
        method,
        before,
        after,
        primed_bytes,
        code_bytes,
    })
}

/// Frees the page cache of `files` just written, on a machine whose free memory goes back to
/// the hypervisor: a written page, once dropped, does not serve a later read as a read one does
/// (docs/measurement.md, "Cold reads on a VM"), so a store left resident from its writing would
/// make its first cold epoch the slow one. Freed now, the store is not resident before that
/// epoch's eviction, which reads first like every other's (`evict_for_cold_read`). Elsewhere
/// nothing is done: the first eviction drops the pages.
pub fn release_written(files: &[PathBuf]) -> Result<(), StoreError> {
    release_written_with(files, memory_goes_back())
}

fn release_written_with(files: &[PathBuf], goes_back: bool) -> Result<(), StoreError> {
    if goes_back {
        fadvise_all(files)?;
    }
    Ok(())
}

fn fadvise_all(files: &[PathBuf]) -> Result<(), StoreError> {
    files.iter().try_for_each(|f| fadvise_dontneed(f))
}

/// Bytes of code the last drop's restore read back (an estimate of the next one's).
static LAST_CODE_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A shortfall under this is not worth a read: at most tens of milliseconds of faults.
const PRIME_MIN_BYTES: u64 = 16 << 20;

/// How much to read before an eviction that frees `freed` bytes, for a read of `needed` bytes:
/// the shortfall, bounded by the free memory it is read into, none when small.
fn prime_deficit(needed: u64, freed: u64, free: u64) -> u64 {
    let deficit = needed.saturating_sub(freed).min(free);
    if deficit < PRIME_MIN_BYTES {
        0
    } else {
        deficit
    }
}

/// Whether this machine's free memory goes back to the hypervisor now: its balloon reports free
/// pages (read once) and the reporter is not held off (`--page-reporting hold`, or by hand).
fn memory_goes_back() -> bool {
    static REPORTS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REPORTS.get_or_init(crate::results::system::reports_free_pages)
        && !super::page_reporting::off_now()
}

/// The page cache `drop_caches` can free: Cached and Buffers, less Shmem (tmpfs, the only copy
/// of its pages) and Mapped (pages that processes have mapped stay).
fn droppable_bytes(meminfo: &str) -> Option<u64> {
    let kib = |f| meminfo_kib(meminfo, f);
    let cached = kib("Cached:")? + kib("Buffers:").unwrap_or(0);
    let kept = kib("Shmem:").unwrap_or(0) + kib("Mapped:").unwrap_or(0);
    Some(cached.saturating_sub(kept) * 1024)
}

/// Reads the first `bytes` of `files` taken in order (whole files, then the start of the
/// last); returns how many were read.
fn read_prefix(files: &[PathBuf], bytes: u64) -> Result<u64, StoreError> {
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    for path in files {
        let mut file = File::open(path).map_err(io_error(path))?;
        while done < bytes {
            let want = (bytes - done).min(buf.len() as u64) as usize;
            let n = file.read(&mut buf[..want]).map_err(io_error(path))?;
            if n == 0 {
                break;
            }
            done += n as u64;
        }
        if done >= bytes {
            break;
        }
    }
    Ok(done)
}

/// Reads every file once so its pages are cached (the start of a warm epoch).
pub fn prefetch(files: &[PathBuf]) -> Result<(), StoreError> {
    let mut buf = vec![0u8; 1 << 20];
    for path in files {
        let mut file = File::open(path).map_err(io_error(path))?;
        while file.read(&mut buf).map_err(io_error(path))? > 0 {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three files of `mib` MiB each under `dir`.
    fn three_files(dir: &Path, mib: usize) -> Vec<PathBuf> {
        (0..3)
            .map(|i| {
                let p = dir.join(format!("f{i}"));
                std::fs::write(&p, vec![i as u8; mib << 20]).unwrap();
                p
            })
            .collect()
    }

    #[test]
    fn eviction_lowers_residency_and_prefetch_raises_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = three_files(dir.path(), 1);
        prefetch(&files).unwrap();
        let warm = residency(&files).unwrap();
        assert_eq!(warm.total_pages, 3 * (1 << 20) / page_size() as u64);
        let ev = evict(&files, EvictPolicy::Fadvise).unwrap();
        assert_eq!(ev.method, "fadvise");
        assert_eq!(ev.before, warm);
        // tmpfs cannot drop its pages (they are the only copy): only assert where it can.
        if warm.pct() > 99.0 && !on_tmpfs(dir.path()) {
            assert!(
                ev.after.pct() < 5.0,
                "after eviction {:.1} %",
                ev.after.pct()
            );
            prefetch(&files).unwrap();
            assert!(residency(&files).unwrap().pct() > 95.0);
        }
    }

    /// Three files of `mib` MiB each in a new directory, `None` on tmpfs (whose pages cannot be
    /// evicted: they are the only copy).
    fn evictable_files(mib: usize) -> Option<(tempfile::TempDir, Vec<PathBuf>)> {
        let dir = tempfile::tempdir().unwrap();
        if on_tmpfs(dir.path()) {
            return None;
        }
        let files = three_files(dir.path(), mib);
        Some((dir, files))
    }

    fn on_tmpfs(path: &Path) -> bool {
        crate::results::system::filesystem_of(path)
            .map(|fs| fs.fs_type == "tmpfs")
            .unwrap_or(false)
    }

    #[test]
    fn a_cold_read_is_primed_by_the_shortfall_of_what_its_eviction_frees() {
        let gib = 1u64 << 30;
        // Freeing as much as the read needs, or more: nothing to read.
        assert_eq!(prime_deficit(gib, gib, 8 * gib), 0);
        assert_eq!(prime_deficit(gib, 2 * gib, 8 * gib), 0);
        // Freeing less: the shortfall, bounded by free memory, none when small.
        assert_eq!(prime_deficit(3 * gib, gib, 8 * gib), 2 * gib);
        assert_eq!(prime_deficit(3 * gib, 0, gib), gib);
        assert_eq!(prime_deficit(gib, gib - (1 << 20), 8 * gib), 0);
        let meminfo = "MemTotal:       24683700 kB\nMemFree:        23000000 kB\n\
                       Buffers:           10000 kB\nCached:          500000 kB\n\
                       Shmem:              8000 kB\nMapped:           90000 kB\n";
        assert_eq!(droppable_bytes(meminfo), Some((510_000 - 98_000) * 1024));
        assert_eq!(meminfo_kib(meminfo, "MemFree:"), Some(23_000_000));
        assert_eq!(droppable_bytes("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn a_cold_read_reads_first_what_its_eviction_would_not_free_where_memory_goes_back() {
        let Some((_dir, files)) = evictable_files(8) else {
            return;
        };
        evict(&files, EvictPolicy::Fadvise).unwrap();
        let ev = evict_for_cold_read(&files, EvictPolicy::Fadvise, None).unwrap();
        // Residency is what it was before the read, and the files end evicted either way.
        assert!(ev.before.pct() < 5.0, "{:.1} %", ev.before.pct());
        assert!(ev.after.pct() < 5.0, "{:.1} %", ev.after.pct());
        if memory_goes_back() {
            // Fadvise frees the files' own pages, none of them resident: all 24 MiB read.
            assert_eq!(ev.method, "read+fadvise");
            assert_eq!(ev.primed_bytes, 24 << 20);
        } else {
            assert_eq!((ev.method.as_str(), ev.primed_bytes), ("fadvise", 0));
        }
        // Resident files free what they hold: nothing to read.
        prefetch(&files).unwrap();
        let ev = evict_for_cold_read(&files, EvictPolicy::Fadvise, None).unwrap();
        assert_eq!((ev.method.as_str(), ev.primed_bytes), ("fadvise", 0));
    }

    #[test]
    fn under_a_memory_limit_a_cold_read_needs_freed_only_what_the_limit_holds() {
        const GB: u64 = 1 << 30;
        assert_eq!(prime_need(4 * GB, None, GB / 4), 4 * GB + GB / 4);
        // 256 MB of a 4 GB store: the read recycles its cgroup's pages past that, and reads
        // nothing back of the software's own (its cgroup would be charged).
        assert_eq!(prime_need(4 * GB, Some(GB / 4), GB / 4), GB / 4);
        assert_eq!(prime_need(GB / 8, Some(GB / 4), 0), GB / 8);
        // Within a limit the deficit is what the drop leaves of the limit's bytes.
        assert_eq!(
            prime_deficit(prime_need(4 * GB, Some(GB / 4), 0), GB / 8, 8 * GB),
            GB / 8
        );
    }

    #[test]
    fn written_files_are_released_only_where_memory_goes_back() {
        let Some((dir, files)) = evictable_files(2) else {
            return;
        };
        let written = residency(&files).unwrap();
        release_written_with(&files, false).unwrap();
        assert_eq!(residency(&files).unwrap(), written);
        release_written_with(&files, true).unwrap();
        let after = residency(&files).unwrap();
        assert!(after.pct() < 5.0, "after release {:.1} %", after.pct());
        let missing = dir.path().join("missing");
        let err = release_written_with(&[missing], true).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn a_prefix_read_stops_at_its_bytes_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let files = three_files(dir.path(), 3);
        assert_eq!(read_prefix(&files, 0).unwrap(), 0);
        assert_eq!(read_prefix(&files, 5 << 20).unwrap(), 5 << 20);
        assert_eq!(read_prefix(&files, (7 << 20) + 5).unwrap(), (7 << 20) + 5);
        // Asking for more than the files hold reads them all.
        assert_eq!(read_prefix(&files, 100 << 20).unwrap(), 9 << 20);
        let missing = dir.path().join("gone");
        let err = read_prefix(&[missing], 1).unwrap_err().to_string();
        assert!(err.contains("gone"), "{err}");
    }

    #[test]
    fn empty_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(residency(std::slice::from_ref(&empty)).unwrap().pct(), 0.0);
        let missing = dir.path().join("missing");
        assert!(residency(&[missing])
            .unwrap_err()
            .to_string()
            .contains("missing"));
    }
}
