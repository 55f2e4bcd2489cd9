//! What a run measures beyond throughput: where the time went (stages), what the system did
//! (samples.csv), and emulated storage.

use super::*;

#[test]
fn stages_account_for_the_workers_time_and_the_report_names_the_bound() {
    let work = run_cv_ok(&argv!["--strategy unprocessed,decoded --epochs 1"]);
    let dir = work.path().join("out");
    let stages = Csv::read(&dir.join("stages.csv"));
    let runs = Csv::read(&dir.join("runs.csv"));
    assert_eq!(runs.rows.len(), 2);
    for run in &runs.rows {
        let id = runs.col(run, "run_id");
        let mine: Vec<&Vec<String>> = stages
            .rows
            .iter()
            .filter(|r| stages.col(r, "run_id") == id)
            .collect();
        let names: Vec<String> = mine.iter().map(|r| stages.col(r, "stage")).collect();
        let expected: &[&str] = if runs.col(run, "strategy") == "decoded" {
            &["read", "decompress", "deserialize", "step:resized"]
        } else {
            &["step:concatenated", "step:decoded"]
        };
        for e in expected {
            assert!(names.iter().any(|n| n == e), "{names:?}");
        }
        let worker_share: f64 = mine
            .iter()
            .filter(|r| stages.col(r, "kind") != "consumer")
            .map(|r| stages.num(r, "share_pct"))
            .sum();
        assert!((worker_share - 100.0).abs() < 0.1, "{worker_share}");
        // Two workers cannot have been busy for more than twice the wall time.
        let worker_s: f64 = mine
            .iter()
            .filter(|r| stages.col(r, "kind") != "consumer")
            .map(|r| stages.num(r, "seconds"))
            .sum();
        assert!(
            worker_s <= 2.0 * runs.num(run, "online_s") * 1.05,
            "{worker_s}"
        );
    }
    prepbench_ok(&["report", &dir.display().to_string(), "--quiet"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md.split("### Where the time goes").nth(1).expect("section");
    assert!(
        section.contains("| decoded | io-bound |") || section.contains("| decoded | cpu-bound |"),
        "{section}"
    );
}

#[test]
fn system_samples_cover_every_phase_and_see_cold_reads() {
    let work = run_cv_ok(&argv!["--strategy decoded --epochs 2"]);
    let dir = work.path().join("out");
    let samples = Csv::read(&dir.join("samples.csv"));
    let runs = Csv::read(&dir.join("runs.csv"));
    let id = runs.col(&runs.rows[0], "run_id");
    let online = |epoch: &str| -> Vec<&Vec<String>> {
        samples
            .rows
            .iter()
            .filter(|r| {
                samples.col(r, "run_id") == id
                    && samples.col(r, "phase") == "online"
                    && samples.col(r, "epoch") == epoch
            })
            .collect()
    };
    for epoch in ["0", "1"] {
        let rows = online(epoch);
        assert!(!rows.is_empty(), "epoch {epoch}");
        // One row per started second of the phase.
        let wall = runs
            .rows
            .iter()
            .find(|r| runs.col(r, "epoch") == epoch)
            .map(|r| runs.num(r, "online_s"))
            .unwrap();
        assert!(
            rows.len() as f64 <= wall.ceil() + 1.0,
            "{} rows for {wall} s",
            rows.len()
        );
        let covered: f64 = rows.iter().map(|r| samples.num(r, "interval_s")).sum();
        assert!(
            (covered - wall).abs() < 0.25 + 0.1 * wall,
            "{covered} vs {wall}"
        );
    }
    let device = samples.col(online("0")[0], "device");
    let read = |epoch: &str| -> f64 {
        online(epoch)
            .iter()
            .map(|r| samples.num(r, "read_mb_s") * samples.num(r, "interval_s"))
            .sum()
    };
    if device.contains("no block device") {
        eprintln!("skipping the read checks: the data directory is on {device}");
    } else if runs
        .col(&runs.rows[0], "evict_method")
        .contains("drop_caches")
    {
        // A cold epoch of 40 decoded images (~25 MB) reads from the device. (The warm epoch is
        // not checked: tests running in parallel drop the page cache too.)
        assert!(read("0") > 5.0, "cold epoch read {} MB", read("0"));
    }
    assert!(samples
        .rows
        .iter()
        .any(|r| samples.col(r, "phase") == "offline"));
}

#[test]
fn emulated_ceph_slows_small_raw_files_and_the_report_names_the_profile() {
    // A private dataset: other tests reading the shared one would warm its pages mid-epoch.
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).display().to_string();
    let (data, store, out_dir) = (path("data"), path("store"), path("out"));
    prepbench_ok(&argv!["run cv --samples", SAMPLES, "--threads 2 --strategy unprocessed,concatenated --storage paper-ceph-hdd --evict fadvise --data-dir", &data, "--store-dir", &store, "--out", &out_dir, "--quiet"]);
    let dir = work.path().join("out");
    let runs = Csv::read(&dir.join("runs.csv"));
    assert!(runs
        .rows
        .iter()
        .all(|r| runs.col(r, "storage") == "paper-ceph-hdd"));
    let raw = runs
        .rows
        .iter()
        .find(|r| runs.col(r, "strategy") == "unprocessed")
        .unwrap();
    if runs.num(raw, "residency_after_pct") > 5.0 {
        eprintln!("skipping the delay checks: the raw files stayed cached (tmpfs?)");
    } else {
        // Each reader takes 0.614 ms per 4 KiB of a small file: two readers cannot exceed
        // 2 x 6.67 MB/s, whatever the machine (the delay only slows).
        let bytes_per_sample = runs.num(raw, "storage_bytes") / runs.num(raw, "samples");
        let ceiling = 2.0 * 4096.0 * 1629.0 / bytes_per_sample;
        let sps = runs.num(raw, "throughput_sps");
        assert!(
            sps <= ceiling * 1.05,
            "{sps} samples/s over the ceiling {ceiling}"
        );
        // Reading the raw files (step:concatenated) is most of the workers' time.
        let stages = Csv::read(&dir.join("stages.csv"));
        let id = runs.col(raw, "run_id");
        let read = stages
            .rows
            .iter()
            .find(|r| {
                stages.col(r, "run_id") == id && stages.col(r, "stage") == "step:concatenated"
            })
            .unwrap();
        assert_eq!(stages.col(read, "kind"), "io");
        assert!(stages.num(read, "share_pct") > 50.0, "{read:?}");
    }
    prepbench_ok(&["report", &dir.display().to_string(), "--quiet"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## cv [storage paper-ceph-hdd]"), "{md}");
    assert!(
        md.contains("emulated storage profile `paper-ceph-hdd`"),
        "{md}"
    );
    assert!(md.contains("Storage profiles: `paper-ceph-hdd`"), "{md}");

    let (out, _work) = run_cv(&argv!["--strategy unprocessed --storage nfs"]);
    fails_naming(
        &out,
        &["no storage profile `nfs`; known: local, paper-ceph-hdd"],
    );
}

/// `--memory-limit-mb` reads a store larger than the limit as on a machine with that much
/// memory: the page cache keeps a part of it from one epoch to the next (finding 4d), the
/// rows carry the limit and the report keeps them apart as a condition of their own. Where no
/// memory cgroup can be made the run is refused, naming why.
#[test]
fn a_memory_limit_keeps_a_larger_store_from_staying_cached() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let args = argv![
        "run cv --strategy pixel-centered --samples 200 --epochs 2 --threads 2 --quiet \
         --memory-limit-mb 64 --data-dir",
        // Its own data: 200 samples would grow the dataset other tests read.
        work.path().join("data").to_str().unwrap(),
        "--store-dir",
        work.path().join("store").to_str().unwrap(),
        "--out",
        out.to_str().unwrap()
    ];
    let run = prepbench(&args);
    if !run.status.success() {
        let err = fails_naming(&run, &["--memory-limit-mb"]);
        // Every refusal names the cgroup (or its path) it could not make or use.
        assert!(err.contains("cgroup"), "{err}");
        eprintln!("skipped: no memory cgroup here: {err}");
        return;
    }
    let runs = Csv::read(&out.join("runs.csv"));
    assert_eq!(runs.rows.len(), 2);
    for row in &runs.rows {
        assert_eq!(runs.col(row, "memory_limit_mb"), "64");
    }
    // About 213 MB of store against 64 MB: most of it is gone by the second epoch.
    let warm = &runs.rows[1];
    assert_eq!(runs.col(warm, "cache"), "warm");
    let resident = runs.num(warm, "residency_before_pct");
    assert!(resident < 50.0, "{resident} % resident under a 64 MB limit");
    prepbench_ok(&argv!["report --quiet", out.to_str().unwrap()]);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("memory 64 MB"), "{report}");
    // No cgroup of prepbench's is left behind beneath the one it ran in (this test's).
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let memory = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':').skip(1);
        let controllers = parts.next()?;
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| parts.next())?
    });
    if let Some(path) = memory {
        let dir = Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'));
        let left: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("prepbench-"))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "left in {}: {left:?}", dir.display());
    }
    // The application cache is not held inside the limit.
    let mut app = args.clone();
    app.extend(argv!["--cache app"]);
    fails_naming(&prepbench(&app), &["--memory-limit-mb", "--cache app"]);
}

/// A workload of `samples` synthetic 10 KB arrays (`tiny`), calibrated for `strategy`, whose
/// recorded calibration then claims `field` of that strategy takes `claimed` seconds a sample;
/// its sweeps with `flags` (and `--trials`) give their stderr.
struct Miscalibrated {
    work: tempfile::TempDir,
    yaml: String,
    places: Vec<String>,
}

impl Miscalibrated {
    fn new(samples: usize, strategy: &str, (field, claimed): (&str, f64)) -> Miscalibrated {
        let work = tempfile::tempdir().unwrap();
        let at = |p: &str| work.path().join(p).to_str().unwrap().to_string();
        let yaml = at("tiny.yaml");
        std::fs::write(
            &yaml,
            format!(
                "name: tiny\ndataset:\n  kind: synthetic\n  samples: {samples}\n  seed: 0\n  \
                 options: {{dtype: float32, mb_per_sample: 0.01}}\nsteps:\n  - name: \
                 concatenated\n    op: read_file\n  - name: decoded\n    op: decode_npy\n"
            ),
        )
        .unwrap();
        let places = argv![
            "--strategies",
            strategy,
            "--data-dir",
            at("data"),
            "--store-dir",
            at("stores"),
            "--out",
            at("out")
        ];
        let mut calibrate = argv!["calibrate", yaml.as_str(), "--quiet"];
        calibrate.extend(places.iter().cloned());
        prepbench_ok(&calibrate);
        let made = Miscalibrated { work, yaml, places };
        let mut m = made.manifest();
        m["calibration"]["strategies"][format!("tiny/{strategy}/none")][field] =
            serde_json::json!(claimed);
        std::fs::write(made.path("out/manifest.json"), m.to_string()).unwrap();
        made
    }

    fn path(&self, p: &str) -> std::path::PathBuf {
        self.work.path().join(p)
    }

    fn manifest(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.path("out/manifest.json")).unwrap())
            .unwrap()
    }

    fn sweep(&self, flags: &str, trials: &str) -> String {
        let mut args = argv!["sweep", self.yaml.as_str()];
        args.extend(flags.split_whitespace().map(String::from));
        args.extend(argv!["--evict fadvise --trials", trials]);
        args.extend(self.places.iter().cloned());
        let out = prepbench(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    }
}

/// A store of prepbench's own engine is sized from the model, and its cold epoch is timed
/// before its runs: a calibration that errs (here one claiming 10 ms to deserialize a 10 KB
/// record, where the model then sizes the store at the dataset, read cold in milliseconds)
/// still gives epochs that last the floor (half of it at least, here, where epochs are
/// hundredths of a second), the store made again larger and its size recorded.
/// A resumed sweep reads the same store without timing it again.
#[test]
fn a_store_the_model_sizes_short_is_timed_and_grown_so_its_epochs_last_the_floor() {
    let tiny = Miscalibrated::new(500, "decoded", ("deserialize_s", 0.01));
    let flags = "--min-epoch-s 0.05 --threads 1 --epochs 1 --shards 2";
    let said = tiny.sweep(flags, "1");
    let runs = Csv::read(&tiny.path("out/runs.csv"));
    assert_eq!(runs.rows.len(), 1);
    let row = &runs.rows[0];
    let (samples, seconds) = (runs.num(row, "samples"), runs.num(row, "online_s"));
    // Grown, unless even the dataset's 500 records read cold in the floor.
    assert!(
        (samples > 500.0 && said.contains("its store made again with")) || seconds >= 0.05,
        "{samples} samples in {seconds} s: {said}"
    );
    assert!(seconds >= 0.025, "{samples} samples in {seconds} s: {said}");
    let m = tiny.manifest();
    let sizing = &m["sizing"]["tiny"];
    assert_eq!(
        sizing["checked"]["decoded/none"].as_f64(),
        Some(samples),
        "{m}"
    );
    assert_eq!(
        sizing["stores"]["decoded/none"].as_f64(),
        Some(samples),
        "{m}"
    );

    let said = tiny.sweep(flags, "2");
    assert!(!said.contains("made again"), "{said}");
    let runs = Csv::read(&tiny.path("out/runs.csv"));
    let read: Vec<f64> = runs.rows.iter().map(|r| runs.num(r, "samples")).collect();
    assert!(read.len() == 2 && read[0] == read[1], "{read:?}");
}

/// prepbench's own engine reads a part of the raw files where the dataset holds far more than
/// its epochs need; the part the calibration predicts is timed before the runs, as a slower
/// loader's is, and recorded: a calibration that errs (here one claiming 10 ms to read a
/// 10 KB file, as a disk busy with other work can make it) still gives epochs that last the
/// floor, where the predicted part (78 files) read in 5 to 17 ms. The part is then read once
/// more as a run reads it, and grown where that fell short: in one CI run, before that check, a
/// part of 274 files read in 0.062 s (the test passed three times alone). A resumed sweep reads
/// the same part without timing it again.
#[test]
fn the_raw_part_a_calibration_predicts_is_timed_so_a_wrong_calibration_leaves_no_short_epochs() {
    let tiny = Miscalibrated::new(20000, "unprocessed", ("read_s", 0.01));
    let flags = "--min-epoch-s 0.2 --threads 2 --epochs 1";
    let said = tiny.sweep(flags, "1");
    assert!(said.contains("timing unprocessed under native"), "{said}");
    let runs = Csv::read(&tiny.path("out/runs.csv"));
    assert_eq!(runs.rows.len(), 1);
    let row = &runs.rows[0];
    let (samples, seconds) = (runs.num(row, "samples"), runs.num(row, "online_s"));
    // The whole dataset where even it reads faster than the floor (a disk as fast as memory).
    assert!(
        samples == 20000.0 || seconds >= 0.1,
        "{samples} samples in {seconds} s"
    );
    let m = tiny.manifest();
    let recorded = &m["sizing"]["tiny"]["loader_parts"]["native:unprocessed/none"];
    assert!(
        samples == 20000.0 || recorded.as_f64() == Some(samples),
        "{m}"
    );

    let said = tiny.sweep(flags, "2");
    assert!(!said.contains("to size its epochs"), "{said}");
    let runs = Csv::read(&tiny.path("out/runs.csv"));
    let read: Vec<f64> = runs.rows.iter().map(|r| runs.num(r, "samples")).collect();
    assert!(read.len() == 2 && read[0] == read[1], "{read:?}");
}
