//! Writing a generated dataset's files: whole or not at all, on several threads.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{io_err, DatasetError};

/// Writes `bytes` to `path` through a temporary name and a rename, so a reader never sees a
/// partial file under the final name.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), DatasetError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    // Unique per process: shards of a sweep may generate the same dataset at once (the same
    // bytes; each rename is whole).
    let tmp = path.with_extension(format!("prepbench-tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(io_err(&tmp))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(io_err(path)));
    if written.is_err() {
        // A full disk leaves no half-written temporary behind; the old file stays as it was.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Runs `work(i)` for every `i` in `range` on `threads` threads (each taking the next index
/// when it is free) and returns the first error; a thread that panics gives `panicked()`.
pub fn for_each_index<E: Send>(
    threads: usize,
    range: std::ops::Range<usize>,
    panicked: impl Fn() -> E + Sync,
    work: impl Fn(usize) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let next = AtomicUsize::new(range.start);
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= range.end {
            return Ok(());
        }
        work(i)?;
    };
    std::thread::scope(|scope| {
        // Workers share one counter, so fewer threads than asked (the system refused some) do
        // the same work; with none started, this thread does it.
        let workers: Vec<_> = (0..threads.max(1))
            .map_while(|_| std::thread::Builder::new().spawn_scoped(scope, worker).ok())
            .collect();
        if workers.is_empty() {
            return worker();
        }
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or_else(|_| Err(panicked())))
    })
}
