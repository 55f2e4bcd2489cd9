use super::*;
use crate::measure::cache::{prefetch, residency};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

#[test]
fn maps_lines_name_files_only() {
    let line = |rest: &str| format!("7f1c2a000000-7f1c2a021000 r--p 00000000 fd:01 1234 {rest}");
    assert_eq!(
        mapped_path(&line("   /usr/lib/x86_64-linux-gnu/libc.so.6")),
        Some(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"))
    );
    assert_eq!(
        mapped_path(&line("/opt/my libs/lib a.so")),
        Some(Path::new("/opt/my libs/lib a.so"))
    );
    for rest in [
        "",
        "[heap]",
        "[vdso]",
        "/usr/lib/x.so (deleted)",
        "/dev/zero",
        "/dev/shm/t",
    ] {
        assert_eq!(mapped_path(&line(rest)), None, "{rest:?}");
    }
    assert_eq!(mapped_path("garbage"), None);
}

#[test]
fn a_parent_is_read_after_the_command_name_whatever_it_holds() {
    assert_eq!(parent_of("42 (python3) S 7 42 42 0 -1"), Some(7));
    assert_eq!(parent_of("42 (a) b (c) R 9 1 1"), Some(9));
    assert_eq!(parent_of("42 (x"), None);
}

#[test]
fn runs_are_the_pages_resident_before_and_gone_now() {
    assert_eq!(
        runs(&[1, 1, 0, 1, 1, 1], &[0, 0, 0, 1, 0, 0]),
        vec![(0, 2), (4, 2)]
    );
    assert_eq!(runs(&[1, 1], &[1, 1]), vec![]);
    // Only the low bit counts.
    assert_eq!(runs(&[3, 2], &[2, 0]), vec![(0, 1)]);
    assert_eq!(runs(&[], &[]), vec![]);
}

/// Drops `path`'s pages that no process maps, as `drop_caches` would.
fn drop_unmapped(path: &Path) {
    let file = File::open(path).unwrap();
    file.sync_data().unwrap(); // only clean pages are dropped
                               // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole file.
    assert_eq!(
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) },
        0
    );
}

fn on_tmpfs(path: &Path) -> bool {
    crate::results::system::filesystem_of(path).is_some_and(|fs| fs.fs_type == "tmpfs")
}

fn range_resident(path: &Path, from: usize, to: usize) -> usize {
    let file = File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    let pages = resident_pages(&file, len).unwrap();
    let page = page_size();
    pages[from / page..to / page]
        .iter()
        .filter(|&&v| v & 1 == 1)
        .count()
}

/// A child process (a copy of `sleep`, so that it maps a file this test owns) is found through
/// its maps; what it cached but never used is not read back after a drop, what came into the
/// cache between two drops (as a DataLoader's workers fault a library in) is, and the files
/// being evicted never are.
#[test]
fn pages_seen_in_use_between_drops_are_read_back_and_evicted_files_are_not() {
    let _alone = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((program, tail)) = holder(dir.path()) else {
        return;
    };
    let store = dir.path().join("store");
    std::fs::write(&store, vec![7u8; 1 << 20]).unwrap();
    let child = spawn(&program);
    let mut cache = CodeCache::default();
    let files = [program.clone(), store.clone()];
    prefetch(&files).unwrap();
    let padding = |path: &Path| range_resident(path, tail, tail + (8 << 20));
    let all = (8 << 20) / page_size();
    assert_eq!(padding(&program), all);
    // The first drop a file is seen in learns; it reads nothing back.
    let noted = cache.note(std::slice::from_ref(&store));
    assert!(
        noted.files.iter().any(|f| f.path == program),
        "the child's program is noted: {noted:?}"
    );
    assert!(
        noted.files.iter().all(|f| f.path != store),
        "the evicted files are left out"
    );
    drop_unmapped(&program);
    drop_unmapped(&store);
    assert_eq!(cache.read_back(&noted), 0);
    assert_eq!(padding(&program), 0, "what was never used stays dropped");
    // 64 KiB used between two drops: read back after the second.
    let in_use = use_64_kib(&program, tail);
    dropped_and_read_back(&mut cache, &program, tail, &store, in_use, child);
    assert!(
        in_use < all / 2,
        "only what was used: {in_use} of {all} pages"
    );
    assert!(residency(&[store]).unwrap().pct() < 5.0);
    // Nothing to read back where nothing was dropped.
    let noted = cache.note(&[]);
    assert_eq!(cache.read_back(&noted), 0);
}

#[test]
fn a_file_replaced_since_it_was_noted_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.so");
    std::fs::write(&path, vec![1u8; 64 << 10]).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    let noted = CodeFile {
        path: path.clone(),
        id: (meta.dev(), meta.ino()),
        len: 64 << 10,
        resident: vec![1; 16],
    };
    assert!(noted.reopen().is_some());
    std::fs::remove_file(&path).unwrap();
    std::fs::write(dir.path().join("other"), b"x").unwrap();
    std::fs::write(&path, vec![2u8; 64 << 10]).unwrap();
    let replaced = std::fs::metadata(&path).unwrap();
    if (replaced.dev(), replaced.ino()) != noted.id {
        assert!(noted.reopen().is_none());
    }
    std::fs::remove_file(&path).unwrap();
    assert!(noted.reopen().is_none());
    let mut cache = CodeCache::default();
    cache.files.insert(
        noted.id,
        Learned {
            settled: vec![0; 16],
            used: vec![1; 16],
        },
    );
    let noted = Noted { files: vec![noted] };
    assert_eq!(cache.read_back(&noted), 0);
}

/// A copy of `sleep` in `dir` with 8 MiB after it that no process maps (an ELF file runs as
/// well with bytes after its segments), from an 8 MiB boundary (`tail`): the page cache may
/// hold a file in folios of up to 2 MiB, and one a process maps part of is not dropped. None
/// where there is no `sleep` or `dir`'s pages cannot be dropped (tmpfs).
fn holder(dir: &Path) -> Option<(PathBuf, usize)> {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file())?;
    if on_tmpfs(dir) {
        return None;
    }
    let program = dir.join("holder");
    let mut bytes = std::fs::read(sleep).unwrap();
    let tail = bytes.len().next_multiple_of(8 << 20);
    bytes.resize(tail + (8 << 20), 3);
    std::fs::write(&program, bytes).unwrap();
    // Clean, as a library is: a dirty page is not dropped.
    File::open(&program).unwrap().sync_all().unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    Some((program, tail))
}

/// Held by each test that starts a process: every test's cache sees every child of the test
/// binary, and one test's drops would be another's to read back.
static CHILDREN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `program` started (for 30 s), once it maps itself.
fn spawn(program: &Path) -> std::process::Child {
    let child = std::process::Command::new(program)
        .arg("30")
        .spawn()
        .unwrap();
    let maps = format!("/proc/{}/maps", child.id());
    let holder = program.to_string_lossy().into_owned();
    for _ in 0..200 {
        if std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(&holder)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

/// A loader's process has started (its framework imported, with what the import read ahead
/// around it): what no process maps of a file no drop has seen is shed, so what its workers
/// then fault in is learned at the next drop and read back there; a file seen before is left.
#[test]
fn a_new_loaders_files_are_shed_so_what_its_workers_use_is_learned() {
    let _alone = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((program, tail)) = holder(dir.path()) else {
        return;
    };
    let child = spawn(&program);
    let padding = |path: &Path| range_resident(path, tail, tail + (8 << 20));
    let all = (8 << 20) / page_size();
    // What the import read ahead: all of it.
    prefetch(std::slice::from_ref(&program)).unwrap();
    assert_eq!(padding(&program), all);
    let mut cache = CodeCache::default();
    cache.shed_new();
    assert_eq!(padding(&program), 0, "what no process maps is shed");
    // The workers use 64 KiB; a second start leaves the file it has seen.
    let in_use = use_64_kib(&program, tail);
    cache.shed_new();
    assert_eq!(padding(&program), in_use, "a file seen before is left");
    // The next drop learns it and reads it back.
    let store = dir.path().join("store");
    std::fs::write(&store, b"s").unwrap();
    dropped_and_read_back(&mut cache, &program, tail, &store, in_use, child);
}

/// Reads 64 KiB of `program`'s padding (from `tail`), as a worker faults a library in: the
/// pages that brings into the cache.
fn use_64_kib(program: &Path, tail: usize) -> usize {
    let mut buf = vec![0u8; 64 << 10];
    File::open(program)
        .unwrap()
        .read_exact_at(&mut buf, tail as u64)
        .unwrap();
    let in_use = range_resident(program, tail, tail + (8 << 20));
    assert!(in_use >= (64 << 10) / page_size(), "{in_use}");
    in_use
}

/// A drop of `store` and `program` (which `child` maps) noted by `cache`: the `in_use` pages of
/// its padding are read back, and only they. Ends `child`.
fn dropped_and_read_back(
    cache: &mut CodeCache,
    program: &Path,
    tail: usize,
    store: &Path,
    in_use: usize,
    mut child: std::process::Child,
) {
    let padding = || range_resident(program, tail, tail + (8 << 20));
    let noted = cache.note(&[store.to_path_buf()]);
    drop_unmapped(program);
    drop_unmapped(store);
    assert_eq!(padding(), 0);
    let back = cache.read_back(&noted);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(back, (in_use * page_size()) as u64);
    assert_eq!(padding(), in_use);
}
