//! The page cache of the software that runs a cold epoch, kept across its eviction.
//!
//! `drop_caches` frees every clean page no process has mapped: the store's, and also the
//! pages of libraries and interpreters that only exited processes touched. A PyTorch
//! DataLoader starts its workers at every epoch and they end with it, so after a drop each cold
//! epoch's workers read the parts of libtorch they run from disk again, inside the timed epoch;
//! a training job whose data is cold has its framework cached (measured in docs/decisions.md,
//! "Cache control").
//!
//! So around each drop, the files that prepbench and the processes it started map (libraries,
//! interpreters, the binary; never the files being evicted) are looked at with `mincore`, and
//! what the drop freed of the pages the software has been seen to use is read back before the
//! epoch starts (`evict_method` ends `+code`). A page is seen to be used when it came into the
//! cache between one drop's read-back and the next drop: what a loader's workers faulted in.
//! Reading back everything that was cached would read hundreds of MB a cold epoch, most of it
//! read ahead when the libraries were loaded and never touched again. So as a loader process
//! starts, what no process maps of a file no drop has seen yet is dropped ([`loader_started`]),
//! and what its first epoch's workers then fault in is learned at the next drop (a sweep's
//! sizing probe comes before its runs). A file first seen at a drop learns there and reads
//! nothing back of it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::pages::{page_size, resident_pages};

/// What the running software has been seen to use of each file it maps, by (device, inode).
#[derive(Debug, Default)]
pub struct CodeCache {
    files: HashMap<(u64, u64), Learned>,
}

#[derive(Debug, Default)]
struct Learned {
    /// The file's pages in the cache right after the last drop's read-back.
    settled: Vec<u8>,
    /// Pages seen to come into the cache since a read-back (1 where so).
    used: Vec<u8>,
}

/// The files the software maps and their pages in the cache, noted before a drop.
#[derive(Debug, Default)]
pub struct Noted {
    files: Vec<CodeFile>,
}

#[derive(Debug)]
struct CodeFile {
    path: PathBuf,
    /// Device and inode: the file read back must be the one noted.
    id: (u64, u64),
    len: usize,
    resident: Vec<u8>,
}

impl CodeFile {
    /// The file opened again, if it is still the one noted.
    fn reopen(&self) -> Option<File> {
        let file = File::open(&self.path).ok()?;
        let meta = file.metadata().ok()?;
        ((meta.dev(), meta.ino()) == self.id).then_some(file)
    }
}

/// The process's record, across its runs.
static CACHE: Mutex<Option<CodeCache>> = Mutex::new(None);

/// Notes the software's files before a drop ([`CodeCache::note`]).
pub fn before_drop(exclude: &[PathBuf]) -> Noted {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.get_or_insert_with(CodeCache::default).note(exclude)
}

/// As a loader process greets, where drops are in use (one was made in this process) and no
/// memory limit: [`CodeCache::shed_new`].
pub fn loader_started() {
    if crate::measure::memory_limit::active() {
        return;
    }
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cache) = cache.as_mut() {
        cache.shed_new();
    }
}

/// Reads back what the drop freed of the pages the software uses ([`CodeCache::read_back`]).
pub fn after_drop(noted: &Noted) -> u64 {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .get_or_insert_with(CodeCache::default)
        .read_back(noted)
}

impl CodeCache {
    /// For each file the software maps that no drop has seen yet (a loader's framework, just
    /// imported), drops what no process maps of it and notes what it holds then: what its
    /// workers fault in after this is seen in use at the next drop. Without it, the import's
    /// read-ahead held most of what the workers run (26,000 pages of `libtorch_cpu` after
    /// `import torch`), the first drop that saw the file could not tell those from what was
    /// only read ahead, and the first run under torch in a sweep read 72-80 MB of libtorch in
    /// its cold epoch. The first epoch after this reads them instead (a sweep's sizing probe).
    pub fn shed_new(&mut self) {
        for (_, file, id, len) in mapped_regular_files() {
            if self.files.contains_key(&id) {
                continue;
            }
            use std::os::fd::AsRawFd;
            // SAFETY: a valid descriptor; advice only (pages a process maps stay).
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            let Ok(settled) = resident_pages(&file, len) else {
                continue;
            };
            let used = vec![0; settled.len()];
            self.files.insert(id, Learned { settled, used });
        }
    }

    /// Notes the pages in the cache of every regular file mapped by this process or one it
    /// started (its loader processes, their workers, its Python workers), leaving out
    /// `exclude` (the files about to be evicted), and learns from them what the software
    /// used since the last read-back. Files that cannot be opened are left out: a process may
    /// end, or a library be replaced, while this looks.
    pub fn note(&mut self, exclude: &[PathBuf]) -> Noted {
        let excluded: HashSet<(u64, u64)> = exclude
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| (m.dev(), m.ino()))
            .collect();
        let mut seen = HashSet::new();
        let mut files = Vec::new();
        for (path, file, id, len) in mapped_regular_files() {
            if excluded.contains(&id) || !seen.insert(id) {
                continue;
            }
            let Ok(resident) = resident_pages(&file, len) else {
                continue;
            };
            if let Some(learned) = self.files.get_mut(&id) {
                learned.used.resize(resident.len(), 0);
                for (i, &now) in resident.iter().enumerate() {
                    let before = learned.settled.get(i).is_some_and(|b| b & 1 == 1);
                    if now & 1 == 1 && !before {
                        learned.used[i] = 1;
                    }
                }
            }
            files.push(CodeFile {
                path,
                id,
                len,
                resident,
            });
        }
        Noted { files }
    }

    /// After a drop: reads back the pages of `noted` that were in the cache before it, are
    /// not now, and have been seen in use; then notes what each file holds, to learn from at
    /// the next drop. The bytes read.
    pub fn read_back(&mut self, noted: &Noted) -> u64 {
        let page = page_size();
        let mut buf = vec![0u8; 1 << 20];
        let mut read = 0u64;
        for f in &noted.files {
            let Some(file) = f.reopen() else {
                continue;
            };
            let learned = self.files.entry(f.id).or_default();
            let Ok(now) = resident_pages(&file, f.len) else {
                continue;
            };
            let wanted: Vec<u8> = f
                .resident
                .iter()
                .enumerate()
                .map(|(i, &r)| r & learned.used.get(i).copied().unwrap_or(0))
                .collect();
            for (first, count) in runs(&wanted, &now) {
                let start = first * page;
                let end = ((first + count) * page).min(f.len);
                read += read_range(&file, start as u64, end as u64, &mut buf);
            }
            learned.settled = resident_pages(&file, f.len).unwrap_or(now);
        }
        read
    }
}

/// The regular files this process and those it started map, each opened: its path, the file,
/// its (device, inode) and length. Files that cannot be opened are left out: a process may
/// end, or a library be replaced, while this looks.
fn mapped_regular_files() -> impl Iterator<Item = (PathBuf, File, (u64, u64), usize)> {
    mapped_files(&family(std::process::id()))
        .into_iter()
        .filter_map(|path| {
            let file = File::open(&path).ok()?;
            let meta = file.metadata().ok()?;
            let (id, len) = ((meta.dev(), meta.ino()), meta.len() as usize);
            meta.is_file().then_some((path, file, id, len))
        })
}

/// Runs of pages (first, count) resident in `before` and not in `now`.
fn runs(before: &[u8], now: &[u8]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, &b) in before.iter().enumerate() {
        let gone = b & 1 == 1 && now.get(i).is_some_and(|n| n & 1 == 0);
        if !gone {
            continue;
        }
        match out.last_mut() {
            Some((first, count)) if *first + *count == i => *count += 1,
            _ => out.push((i, 1)),
        }
    }
    out
}

/// Reads `start..end` of `file` (into the page cache); the bytes read, short where it ends.
fn read_range(file: &File, start: u64, end: u64, buf: &mut [u8]) -> u64 {
    let mut at = start;
    while at < end {
        let want = (end - at).min(buf.len() as u64) as usize;
        match file.read_at(&mut buf[..want], at) {
            Ok(0) | Err(_) => break,
            Ok(n) => at += n as u64,
        }
    }
    at - start
}

/// `root` and every process descended from it, from each process's parent in `/proc/PID/stat`.
fn family(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some(parent) = parent_of(&stat) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut out = vec![root];
    let mut seen = HashSet::from([root]);
    let mut i = 0;
    while i < out.len() {
        for &kid in children.get(&out[i]).into_iter().flatten() {
            if seen.insert(kid) {
                out.push(kid);
            }
        }
        i += 1;
    }
    out
}

/// The parent's pid in a `/proc/PID/stat` line: the fourth field, counted after the command
/// name's closing parenthesis (a name may hold spaces and parentheses).
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The files `pids` map (from `/proc/PID/maps`), each once, in the order first seen.
fn mapped_files(pids: &[u32]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for pid in pids {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            continue;
        };
        for path in maps.lines().filter_map(mapped_path) {
            if seen.insert(path.to_path_buf()) {
                out.push(path.to_path_buf());
            }
        }
    }
    out
}

/// The file of one `/proc/PID/maps` line: after five fields (address, permissions, offset,
/// device, inode), an absolute path; none for anonymous memory, `[heap]`-style names, a
/// deleted file, or a device.
fn mapped_path(line: &str) -> Option<&Path> {
    let mut rest = line;
    for _ in 0..5 {
        rest = rest.trim_start();
        rest = &rest[rest.find(char::is_whitespace)?..];
    }
    let path = rest.trim_start();
    (path.starts_with('/') && !path.ends_with(" (deleted)") && !path.starts_with("/dev/"))
        .then(|| Path::new(path))
}

#[cfg(test)]
mod tests;
