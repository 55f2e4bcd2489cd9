use super::*;
use std::os::unix::fs::FileExt;

use workloads::StorageProfile;

/// A new folder and its view, unmounted when the test is done with it.
struct Viewed {
    dir: tempfile::TempDir,
    view: PathBuf,
}

impl Drop for Viewed {
    fn drop(&mut self) {
        unmount_view(self.dir.path());
    }
}

/// A view of a new folder holding `files`, or `None` (said on stderr) where this machine
/// cannot mount one: the tests below need FUSE, which a container may lack.
fn view_of(files: &[(&str, Vec<u8>)]) -> Option<Viewed> {
    if let Some(why) = refusal() {
        eprintln!("skipped: a FUSE view {why}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let view = path(dir.path()).unwrap();
    Some(Viewed { dir, view })
}

/// A profile streaming every file (none is small) at `mb_s` per reader.
fn streaming_at(mb_s: f64) -> StorageProfile {
    let mut profile = StorageProfile::local();
    profile.name = "slow".into();
    profile.stream_mb_s = Some(mb_s);
    profile.small_file_kb = 0.5;
    profile
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn a_view_shows_the_folder_as_it_is_and_refuses_writes() {
    let files = [
        ("a.bin", bytes(300_000, 1)),
        ("sub/b.bin", bytes(5, 2)),
        ("sub/deeper/c.bin", Vec::new()),
    ];
    let Some(viewed) = view_of(&files) else {
        return;
    };
    let (dir, view) = (viewed.dir.path(), &viewed.view);
    for (name, expected) in &files {
        assert_eq!(&std::fs::read(view.join(name)).unwrap(), expected, "{name}");
    }
    // A read by offset, as a store reader's seek to a restart.
    let f = File::open(view.join("a.bin")).unwrap();
    let mut piece = vec![0u8; 1000];
    f.read_exact_at(&mut piece, 123_456).unwrap();
    assert_eq!(piece, files[0].1[123_456..124_456]);
    let mut names: Vec<String> = std::fs::read_dir(view.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["b.bin", "deeper"]);
    assert!(view.join("sub/deeper").is_dir());
    // Nothing is written into the folder through its view.
    assert!(std::fs::write(view.join("new.bin"), b"x").is_err());
    assert!(std::fs::OpenOptions::new()
        .append(true)
        .open(view.join("a.bin"))
        .is_err());
    assert!(!dir.join("new.bin").exists());
    assert_eq!(std::fs::read(dir.join("a.bin")).unwrap(), files[0].1);
    // The same folder has the same view.
    assert_eq!(&path(dir).unwrap(), view);
    // The probe (`refusal`) left no folder of its own: each of this process's folders is a
    // mounted view's.
    let prefix = format!("{NAME}-{}-", std::process::id());
    let views: Vec<PathBuf> = (VIEWS.lock().unwrap().iter())
        .map(|(_, m)| m.path.clone())
        .collect();
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            assert!(
                views.contains(&entry.path()),
                "{} left",
                entry.path().display()
            );
        }
    }
}

#[test]
fn links_show_what_they_reach_within_the_folder_and_stay_links_beyond_it() {
    let Some(viewed) = view_of(&[("data/x.bin", bytes(10, 3))]) else {
        return;
    };
    let (dir, view) = (viewed.dir.path(), &viewed.view);
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.join("data/x.bin"), dir.join("file-link")).unwrap();
    std::os::unix::fs::symlink("data", dir.join("dir-link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.join("out-link")).unwrap();
    std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
    assert_eq!(std::fs::read(view.join("file-link")).unwrap(), bytes(10, 3));
    assert!(!std::fs::symlink_metadata(view.join("file-link"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata(view.join("dir-link"))
        .unwrap()
        .is_dir());
    for link in ["out-link", "dangling"] {
        let meta = std::fs::symlink_metadata(view.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link}");
    }
    assert_eq!(
        std::fs::read_link(view.join("dangling")).unwrap(),
        Path::new("nowhere")
    );
}

#[test]
fn reads_through_a_view_wait_for_the_epochs_throttle_and_not_between_epochs() {
    let Some(viewed) = view_of(&[("big.bin", bytes(3_000_000, 4))]) else {
        return;
    };
    let (dir, view) = (viewed.dir.path(), &viewed.view);
    let throttle = Throttle::new(&streaming_at(30.0)).unwrap();
    let folder = dir;
    crate::measure::cache::evict(
        &[folder.join("big.bin")],
        crate::measure::cache::EvictPolicy::Fadvise,
    )
    .unwrap();
    {
        let _on = throttling(&[folder], &throttle).unwrap();
        assert_eq!(
            std::fs::read(view.join("big.bin")).unwrap(),
            bytes(3_000_000, 4)
        );
    }
    // The file's bytes came from the device (evicted above) through the profile: the readers
    // slept for them. Not a timing bound: a machine too slow to beat the profile sleeps less.
    let slept = throttle.delayed_seconds();
    assert!(slept > 0.0, "no read waited for the profile");
    // Between epochs the view reads unthrottled.
    std::fs::read(view.join("big.bin")).unwrap();
    assert_eq!(throttle.delayed_seconds(), slept);
}

#[test]
fn a_file_kept_open_across_epochs_reads_through_each_epochs_throttle_not_the_views_cache() {
    let Some(viewed) = view_of(&[("kept.bin", bytes(2_000_000, 5))]) else {
        return;
    };
    let (dir, view) = (viewed.dir.path(), &viewed.view);
    let profile = streaming_at(20.0);
    let evict = || {
        let path = dir.join("kept.bin");
        crate::measure::cache::evict(&[path], crate::measure::cache::EvictPolicy::Fadvise).unwrap();
    };
    // Opened between epochs, as a loader kept from its last epoch holds its files; each epoch
    // reads the same bytes cold, as a cold epoch of a kept loader does.
    let file = File::open(view.join("kept.bin")).unwrap();
    let mut half = vec![0u8; 1_000_000];
    for (epoch, offset) in [(1, 0u64), (2, 1_000_000), (3, 1_000_000)] {
        evict();
        let throttle = Throttle::new(&profile).unwrap();
        let _on = throttling(&[dir], &throttle).unwrap();
        file.read_exact_at(&mut half, offset).unwrap();
        assert_eq!(half, bytes(2_000_000, 5)[offset as usize..][..1_000_000]);
        assert!(
            throttle.delayed_seconds() > 0.0,
            "epoch {epoch} read unthrottled"
        );
    }
}

#[test]
fn what_a_process_that_is_gone_left_is_removed_and_nothing_else() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let tmp = std::env::temp_dir();
    let left = tmp.join(format!("{NAME}-{dead}-0"));
    let full = tmp.join(format!("{NAME}-{dead}-1"));
    let alive = tmp.join(format!("{NAME}-{}-999", std::process::id()));
    for dir in [&left, &full, &alive] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(full.join("someone's"), b"x").unwrap();
    unmount_orphans();
    // An empty folder of a process that is gone goes; one holding a file stays, as does one
    // of a process still running.
    assert!(!left.exists());
    assert!(full.join("someone's").exists());
    assert!(alive.exists());
    std::fs::remove_dir_all(&full).unwrap();
    std::fs::remove_dir(&alive).unwrap();
}
