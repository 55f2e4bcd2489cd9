use std::os::fd::AsRawFd;
use std::path::Path;

use super::*;
use crate::measure::pages::{page_size, resident_pages};
use crate::store::testing::make_store;

/// Record `i`: 256 KiB of its own byte.
fn quarter_mib(i: u64) -> Vec<u8> {
    vec![(i % 251) as u8; 256 << 10]
}

/// `path` opened once its pages are dropped from the page cache (`None` where they cannot
/// be, as on tmpfs).
fn evicted(path: &Path) -> Option<File> {
    let file = File::open(path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: a valid descriptor; advice only.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    (resident_bytes(&file) == 0).then_some(file)
}

fn resident_bytes(file: &File) -> u64 {
    let len = file.metadata().unwrap().len() as usize;
    let pages = resident_pages(file, len).unwrap();
    pages.iter().filter(|p| *p & 1 == 1).count() as u64 * page_size() as u64
}

/// A part of a shard (its first records) reads those and no more, and is read ahead no
/// further than the restart after them. Read ahead as a whole shard, the first 100 records
/// (25 MiB) of this 40 MiB shard left the rest of it in the page cache on a VM whose disk
/// reads 8 MiB ahead (an epoch of `--loader torch` reading the first 141 of 187 records read
/// 11 MB a shard past its part); stopped after them, 2.5 KB (their last page).
#[test]
fn a_part_of_a_shard_reads_its_records_and_reads_ahead_no_further() {
    let dir = tempfile::tempdir().unwrap();
    let m = make_store(dir.path(), Codec::None, 1, 160, quarter_mib);
    let store = OpenStore::open(dir.path(), 1).unwrap();
    let path = dir.path().join(&m.shards[0].file);
    let read = |limit: u64| {
        let mut records = store.in_order(0).unwrap().unwrap();
        records.stop_after(limit);
        let mut got = Vec::new();
        while let Some((local, payload)) = records.next_record().unwrap() {
            assert_eq!(payload, quarter_mib(local));
            got.push(local);
        }
        got
    };
    for n in [0, 1, 8, 159, 160, 500] {
        assert_eq!(read(n), (0..n.min(160)).collect::<Vec<_>>(), "{n}");
    }
    // What the page cache holds after a part (unchecked where the shard cannot be evicted).
    let Some(file) = evicted(&path) else {
        eprintln!(
            "the page cache of {} cannot be dropped: residency unchecked",
            path.display()
        );
        return;
    };
    read(100);
    // Read-ahead is asynchronous: what was asked lands in the page cache within this.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let cached = resident_bytes(&file);
    let end = 100 * (quarter_mib(0).len() as u64 + crate::store::framing::FRAMING_BYTES);
    // The restart after the part is where its records end (one every 1 MiB, here at a
    // record's start).
    let restart = next_restart(&m.shards[0].restarts, 99).map(|r| r.file_offset());
    assert!(
        restart.is_some_and(|r| (end..end + (1 << 20)).contains(&r)),
        "{restart:?}"
    );
    // Its last page here; a MiB allowed for a kernel whose read-ahead still misses. (No
    // lower bound: another test's `drop_caches` may take the part's own pages meanwhile.)
    assert!(
        cached <= restart.unwrap() + (1 << 20),
        "{cached} bytes cached after a part of {end}"
    );
}
