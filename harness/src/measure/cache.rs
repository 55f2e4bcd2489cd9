//! Page-cache control for a strategy's files: eviction before cold epochs (`sync` +
//! `/proc/sys/vm/drop_caches` when permitted, else `posix_fadvise(DONTNEED)` per file after
//! `fdatasync`, since DONTNEED drops only clean pages), residency measured with `mincore` over a
//! read-only mapping, and prefetching for warm epochs.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

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

pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
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
    if len == 0 {
        return Ok(Residency::default());
    }
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: we map `len` bytes of a file we hold open, read-only and shared, check the result,
    // pass mincore a vector of one byte per page of the mapping, and unmap before returning.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(io_error(path)(std::io::Error::last_os_error()));
        }
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(addr, len);
        if rc != 0 {
            return Err(io_error(path)(err));
        }
    }
    let resident = vec.iter().filter(|&&v| v & 1 == 1).count() as u64;
    Ok(Residency {
        resident_pages: resident,
        total_pages: pages as u64,
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
    /// `drop_caches`, `fadvise`, or `drop_caches+fadvise` when pages survived the drop.
    pub method: String,
    pub before: Residency,
    pub after: Residency,
}

/// Evicts `files` from the page cache and measures their residency before and after.
pub fn evict(files: &[PathBuf], policy: EvictPolicy) -> Result<Eviction, StoreError> {
    let before = residency(files)?;
    let use_drop = match policy {
        EvictPolicy::Auto => can_drop_caches(),
        EvictPolicy::DropCaches => true,
        EvictPolicy::Fadvise => false,
    };
    let mut method = String::new();
    if use_drop {
        match drop_caches() {
            Ok(()) => method.push_str("drop_caches"),
            Err(e) if policy == EvictPolicy::DropCaches => {
                return Err(StoreError::Invalid {
                    path: DROP_CACHES.to_string(),
                    message: format!(
                        "cannot drop caches ({e}); run as root or use --evict fadvise"
                    ),
                })
            }
            Err(_) => {}
        }
    }
    let mut after = residency(files)?;
    if method.is_empty() || after.resident_pages > 0 {
        for f in files {
            fadvise_dontneed(f)?;
        }
        method.push_str(if method.is_empty() {
            "fadvise"
        } else {
            "+fadvise"
        });
        after = residency(files)?;
    }
    Ok(Eviction {
        method,
        before,
        after,
    })
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

    #[test]
    fn eviction_lowers_residency_and_prefetch_raises_it() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = (0..3)
            .map(|i| {
                let p = dir.path().join(format!("f{i}"));
                std::fs::write(&p, vec![i as u8; 1 << 20]).unwrap();
                p
            })
            .collect();
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

    fn on_tmpfs(path: &Path) -> bool {
        crate::results::system::filesystem_of(path)
            .map(|fs| fs.fs_type == "tmpfs")
            .unwrap_or(false)
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
