//! Emulated storage (`--storage`) under a loader in a process of its own: the loader reads a
//! FUSE view of the raw files and the store whose reads wait for the epoch's throttle, as
//! prepbench's own reader's do; the views are gone when the command ends. And the emulated
//! smaller machine (`--memory-limit-mb`), whose limit holds the loader's own memory too.

use super::*;
use std::path::PathBuf;

/// A storage profile no local disk is as slow as: 2 MB/s for every reader together.
const SLOW: &str =
    "storage_profiles:\n  slow: {stream_mb_s: 2, aggregate_mb_s: 2, small_file_kb: 1}\n";

/// prepbench with its Python package, `args` run by `python` with `tmp` as the temporary
/// folder.
fn prepbench_under(native: &Path, python: &str, tmp: &Path, args: &[String]) -> Output {
    common::with_package(&mut Command::new(env!("CARGO_BIN_EXE_prepbench")), native)
        .env("TMPDIR", tmp)
        .arg("--python")
        .arg(python)
        .args(args)
        .output()
        .unwrap()
}

/// The native module, a private folder, CV as `cv-slow` with the [`SLOW`] profile in it, and
/// a temporary folder for the loader; `None` (said) where no view can be mounted here.
fn slow_cv() -> Option<(PathBuf, tempfile::TempDir, PathBuf, PathBuf)> {
    let native = common::native_module()?;
    if let Some(why) = harness::measure::view::refusal() {
        eprintln!("skipped: a FUSE view {why}");
        return None;
    }
    let work = tempfile::tempdir().unwrap();
    let cv = include_str!("../../workloads/defs/cv.yaml");
    let yaml = work.path().join("cv-slow.yaml");
    std::fs::write(
        &yaml,
        format!("{}{SLOW}", cv.replace("name: cv", "name: cv-slow")),
    )
    .unwrap();
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    Some((native, work, yaml, tmp))
}

/// What this process's mounts say of views (`fuse.prepbench-view`), by mount point.
fn views_mounted() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mounts
        .lines()
        .filter(|l| l.contains("fuse.prepbench-view"))
        .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
        .collect()
}

#[test]
fn a_loader_in_its_own_process_reads_emulated_storage_through_a_view_as_native_does() {
    if let Some(python) = common::tf_python() {
        reads_emulated_storage_through_a_view("tf-data", &python);
    }
}

#[test]
fn pytorchs_dataloader_reads_emulated_storage_through_a_view_as_native_does() {
    if let Some(python) = common::torch_python() {
        reads_emulated_storage_through_a_view("torch", &python);
    }
}

/// `loader` (run by `python`) and native, each reading CV's raw files and a store locally and
/// under a profile no disk is as slow as: the same samples, the profile's floor, what was read
/// counted once, and no view left when the command ends.
fn reads_emulated_storage_through_a_view(loader: &str, python: &str) {
    let Some((native, work, yaml, tmp)) = slow_cv() else {
        return;
    };
    let out_dir = work.path().join("out");
    let args = argv![
        "sweep",
        yaml.to_str().unwrap(),
        "--loaders",
        format!("native,{loader}"),
        "--storage local,slow --strategies unprocessed,resized",
        "--samples 24 --threads 2 --trials 1 --epochs 1 --no-calibrate --evict fadvise --quiet",
        // Its own raw files: another test reading the shared ones at the same time would
        // leave them in the page cache, which the emulation does not delay.
        "--data-dir",
        work.path().join("data").to_str().unwrap(),
        "--store-dir",
        work.path().join("stores").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap()
    ];
    let before = views_mounted();
    let out = prepbench_under(&native, python, &tmp, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&out_dir.join("runs.csv"));
    for loader in ["native", loader] {
        for strategy in ["unprocessed", "resized"] {
            let row = |storage: &str| {
                let found: Vec<_> = (runs.rows.iter())
                    .filter(|r| runs.col(r, "loader") == loader)
                    .filter(|r| runs.col(r, "strategy") == strategy)
                    .filter(|r| runs.col(r, "storage") == storage)
                    .collect();
                assert_eq!(
                    found.len(),
                    1,
                    "{loader} {strategy} {storage}: {:?}",
                    runs.rows
                );
                found[0].clone()
            };
            let (local, slow) = (row("local"), row("slow"));
            assert_eq!(runs.col(&slow, "samples"), "24", "{slow:?}");
            assert_eq!(runs.col(&slow, "samples"), runs.col(&local, "samples"));
            // Read cold at 2 MB/s for every reader together, the epoch lasts at least what its
            // bytes take at that rate (a floor the emulation sleeps for, whatever the machine).
            let bytes = runs.num(&slow, "storage_bytes");
            assert!(bytes > 1e6, "{slow:?}");
            let floor = 0.9 * bytes / 2e6;
            let online = runs.num(&slow, "online_s");
            assert!(
                online >= floor,
                "{loader} {strategy}: {online} s for {bytes} bytes at 2 MB/s (>= {floor} s)"
            );
            // What was read is counted once: the loader's reads through the view, not those
            // and the view's own reads of the same bytes as well.
            let (chars, local_chars) = (
                runs.num(&slow, "read_chars"),
                runs.num(&local, "read_chars"),
            );
            assert!(
                chars <= 1.5 * local_chars.max(bytes),
                "{loader} {strategy}: read {chars} chars through the view, {local_chars} locally"
            );
        }
    }
    // The views are unmounted with the command, and their folders gone.
    let left = common::entries(&tmp);
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
    let after = views_mounted();
    assert!(
        after.iter().all(|m| before.contains(m)),
        "views left mounted: {after:?}"
    );
}

/// A loader's epochs under emulated storage last the floor they are sized for, not what the
/// local disk would have given: a part timed locally had tf.data read all of CV's raw files
/// through the paper's storage, 9.9 s a cold epoch against a 1 s floor.
#[test]
fn a_loaders_epochs_under_emulated_storage_are_sized_through_it() {
    if let Some(python) = common::tf_python() {
        sized_through_the_emulation("tf-data", &python);
    }
    if let Some(python) = common::torch_python() {
        sized_through_the_emulation("torch", &python);
    }
}

/// `loader` (run by `python`) reading 200 of CV's raw files (about 22 MB: 11 s at the
/// profile's 2 MB/s) with epochs of at least 1 s.
fn sized_through_the_emulation(loader: &str, python: &str) {
    let Some((native, work, yaml, tmp)) = slow_cv() else {
        return;
    };
    let out_dir = work.path().join("out");
    let args = argv![
        "sweep",
        yaml.to_str().unwrap(),
        "--loaders",
        loader,
        "--storage slow --strategies unprocessed --samples 200 --threads 2 --trials 1",
        "--epochs 1 --min-epoch-s 1 --evict fadvise --quiet --data-dir",
        work.path().join("data").to_str().unwrap(),
        "--store-dir",
        work.path().join("stores").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap()
    ];
    let out = prepbench_under(&native, python, &tmp, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&out_dir.join("runs.csv"));
    assert_eq!(runs.rows.len(), 1, "{:?}", runs.rows);
    let row = &runs.rows[0];
    let (online, samples) = (runs.num(row, "online_s"), runs.num(row, "samples"));
    // The part aims at 1.5 times the floor; the whole dataset would take 11 s.
    assert!(
        (0.9..4.0).contains(&online) && samples < 100.0,
        "{loader}: {samples} samples in {online} s through a 2 MB/s profile, for a 1 s floor"
    );
}

/// A loader whose own memory is more than the run's memory limit is killed by the kernel; the
/// error says so and what to do, where a bare "signal 9" told nothing, and what the killed
/// processes left in their temporary folder (PyTorch's `pymp-*`) goes with the run.
#[test]
fn a_loader_the_memory_limit_kills_is_said_to_be_killed_for_lack_of_memory() {
    if let Some(python) = common::tf_python() {
        killed_for_memory("tf-data", &python, "resized", 128);
    }
    if let Some(python) = common::torch_python() {
        killed_for_memory("torch", &python, "pixel-centered", 256);
    }
}

/// `loader` run by `python` on CV's `strategy` under `limit_mb` MB, which it does not fit in.
fn killed_for_memory(loader: &str, python: &str, strategy: &str, limit_mb: u32) {
    let Some(native) = common::native_module() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let args = argv![
        "sweep cv --loaders",
        loader,
        "--memory-limit-mb",
        limit_mb.to_string(),
        "--strategies",
        strategy,
        "--samples 200 --threads 2 --trials 1 --epochs 1 --no-calibrate --quiet --data-dir",
        work.path().join("data").to_str().unwrap(),
        "--store-dir",
        work.path().join("stores").to_str().unwrap(),
        "--out",
        work.path().join("out").to_str().unwrap()
    ];
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = prepbench_under(&native, python, &tmp, &args);
    assert!(!out.status.success(), "{loader} ran under {limit_mb} MB");
    let err = stderr(&out);
    if err.contains("cgroup") && !err.contains("killed") {
        eprintln!("skipped: no memory cgroup here: {err}");
        return;
    }
    assert!(
        err.contains("killed it for lack of memory")
            && err.contains(&format!("--memory-limit-mb {limit_mb}"))
            && !err.contains("   "),
        "{loader}: {err}"
    );
    let left = common::entries(&tmp);
    assert!(
        left.is_empty(),
        "{loader} left in the temporary folder: {left:?}"
    );
}
