//! Bad input and faults: corrupt shards and media, strict workload files, skipped samples, a
//! full disk. Each names the file and what is wrong, and nothing already written is lost.

use super::*;

#[test]
fn a_flipped_byte_in_a_shard_fails_with_shard_and_offset() {
    let work = run_cv_ok(&argv!["--strategy resized --epochs 1 --evict fadvise"]);
    let shard = find_files(&work.path().join("store"), "shard-00001-of-00004.tfrecord")
        .pop()
        .unwrap();
    let mut bytes = std::fs::read(&shard).unwrap();
    let len = bytes.len();
    bytes[len / 2] ^= 0x04;
    std::fs::write(&shard, bytes).unwrap();
    let out2 = run_cv_in(
        work.path(),
        &argv!["--strategy resized --epochs 1 --evict fadvise"],
    );
    fails_naming(
        &out2,
        &["shard-00001-of-00004.tfrecord", "at byte", "checksum"],
    );
    // Rows of the first, complete run are still there.
    assert_eq!(Csv::read(&work.path().join("out/runs.csv")).rows.len(), 1);

    // With `--on-error skip` a record whose payload fails its checksum is stepped over; a
    // broken length loses the rest of its shard. Every sample is delivered or counted skipped.
    let skip_run = || {
        let run = run_cv_in(
            work.path(),
            &argv!["--strategy resized --epochs 1 --evict fadvise --on-error skip"],
        );
        assert!(run.status.success(), "{}", stderr(&run));
        let csv = Csv::read(&work.path().join("out/runs.csv"));
        let row = csv.rows.last().unwrap().clone();
        (
            csv.num(&row, "samples"),
            csv.num(&row, "skipped_samples"),
            csv.col(&row, "offline_reused"),
        )
    };
    let total: f64 = SAMPLES.parse().unwrap();
    let (delivered, skipped, _) = skip_run();
    assert!(
        skipped == 1.0 && delivered + skipped == total,
        "{delivered} + {skipped}"
    );
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[2] ^= 0x10;
    std::fs::write(&shard, &bytes).unwrap();
    let (delivered, skipped, _) = skip_run();
    assert!(
        skipped >= 2.0 && delivered + skipped == total,
        "{delivered} + {skipped}"
    );
    // A shard of another size than its manifest says is an incomplete store: made again, not
    // read.
    std::fs::write(&shard, &bytes[..bytes.len() / 3]).unwrap();
    let (delivered, skipped, reused) = skip_run();
    assert_eq!((delivered, skipped, reused.as_str()), (total, 0.0, "false"));
}

#[test]
fn a_corrupt_jpeg_is_an_error_naming_the_file_and_step() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("imagenet-seed0");
    prepbench_ok(&argv![
        "generate imagenet --samples 4 --out",
        &root.display().to_string(),
        "--quiet"
    ]);
    let victim = find_files(&root, "n01001009_0.JPEG")
        .pop()
        .expect("sample 1 exists");
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..bytes.len() / 3]).unwrap();
    let out = run_with_policy(work.path(), "cv", "4", "unprocessed", "fail");
    fails_naming(&out, &["n01001009_0.JPEG", "step `decoded`", "sample 1"]);
}

#[test]
fn strict_workload_errors_name_file_key_and_line() {
    let work = tempfile::tempdir().unwrap();
    let cv = include_str!("../../workloads/defs/cv.yaml");
    let good = work.path().join("good.yaml");
    std::fs::write(&good, cv).unwrap();
    prepbench_ok(&["validate", &good.display().to_string()]);
    let line = cv.lines().position(|l| l.starts_with("sweep:")).unwrap() + 1;
    let bad = work.path().join("bad.yaml");
    std::fs::write(&bad, cv.replace("sweep:", "sweeps:")).unwrap();
    let out = prepbench(&["validate", &bad.display().to_string()]);
    fails_naming(
        &out,
        &[&format!("bad.yaml:{line}"), "unknown field `sweeps`"],
    );
    let crop = work.path().join("crop.yaml");
    std::fs::write(
        &crop,
        cv.replace("strategies: [unprocessed,", "strategies: [cropped,"),
    )
    .unwrap();
    let err = stderr(&prepbench(&["validate", &crop.display().to_string()]));
    assert!(
        err.contains("random step `cropped`") && err.contains("allowed strategies"),
        "{err}"
    );
    let out = prepbench(&argv!["run cv --strategy cropped --quiet"]);
    assert!(
        !out.status.success() && stderr(&out).contains("must run online"),
        "{}",
        stderr(&out)
    );
    let out = prepbench(&["validate", "/no/such/file.yaml"]);
    assert!(!out.status.success() && stderr(&out).contains("/no/such/file.yaml"));
}

#[test]
fn truncated_and_garbage_audio_are_errors_naming_the_file() {
    let work = tempfile::tempdir().unwrap();
    for (workload, kind, extension) in [
        ("mp3", "commonvoice", "mp3"),
        ("flac", "librispeech", "flac"),
    ] {
        let root = work.path().join(format!("{kind}-seed0"));
        prepbench_ok(&argv![
            "generate",
            kind,
            "--samples 3 --out",
            &root.display().to_string(),
            "--quiet"
        ]);
        let mut files: Vec<_> = walk(&root)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == extension))
            .collect();
        files.sort();
        assert_eq!(files.len(), 3);
        let (victim, bytes) = (&files[1], std::fs::read(&files[1]).unwrap());
        for (damage, content) in [
            ("truncated", bytes[..bytes.len() / 2].to_vec()),
            ("garbage", b"\x00\x01garbage".repeat(300)),
        ] {
            std::fs::write(victim, &content).unwrap();
            let out = run_with_policy(work.path(), workload, "3", "unprocessed", "fail");
            assert!(!out.status.success(), "{workload} {damage}");
            let err = stderr(&out);
            let name = victim.file_name().unwrap().to_string_lossy();
            assert!(
                err.contains(&*name) && err.contains("step `decoded`") && !err.contains("panic"),
                "{workload} {damage}: {err}"
            );
        }
    }
}

/// `prepbench run WORKLOAD` on the dataset under `work` with a bad-input policy.
fn run_with_policy(
    work: &Path,
    workload: &str,
    samples: &str,
    strategies: &str,
    policy: &str,
) -> Output {
    prepbench(&argv![
        "run",
        workload,
        "--strategy",
        strategies,
        "--samples",
        samples,
        "--threads 2 --shards 2 --epochs 1 --on-error",
        policy,
        "--verify --data-dir",
        &work.display().to_string(),
        "--store-dir",
        &work.join(format!("store-{policy}")).display().to_string(),
        "--out",
        &work.join(format!("out-{policy}")).display().to_string(),
        "--quiet --evict fadvise"
    ])
}

#[test]
fn one_bad_file_of_each_format_fails_naming_it_or_is_skipped_and_counted() {
    type Damage = fn(&[u8]) -> Vec<u8>;
    let truncated: Damage = |b| b[..b.len() / 2].to_vec();
    let garbage: Damage = |_| b"\x00\x01garbage".repeat(300);
    let empty: Damage = |_| Vec::new();
    let bad_utf8: Damage = |b| [b"\xff\xfe\xc3".as_slice(), b].concat();
    // (workload, file extension, samples, a stored strategy, damage, what)
    let cases: [(&str, &str, &str, &str, Damage, &str); 7] = [
        ("cv", "JPEG", "6", "decoded", truncated, "truncated JPEG"),
        ("cv", "JPEG", "6", "concatenated", empty, "zero-byte JPEG"),
        ("cv2-png", "png", "3", "decoded", garbage, "garbage PNG"),
        ("mp3", "mp3", "4", "decoded", truncated, "truncated MP3"),
        ("flac", "flac", "4", "decoded", garbage, "garbage FLAC"),
        (
            "nilm",
            "hdf5",
            "720",
            "decoded",
            truncated,
            "truncated HDF5",
        ),
        ("nlp", "txt", "4", "decoded", bad_utf8, "invalid UTF-8"),
    ];
    for (workload, extension, samples, stored, damage, what) in cases {
        let work = tempfile::tempdir().unwrap();
        // Generate through a run (the workload's own dataset options), then damage one file.
        let out = run_with_policy(work.path(), workload, samples, "unprocessed", "fail");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let mut files: Vec<_> = walk(work.path())
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == extension))
            .filter(|p| !p.starts_with(work.path().join("store-fail")))
            .collect();
        files.sort();
        assert!(files.len() >= 2, "{what}: {files:?}");
        let victim = &files[1];
        let name = victim.file_name().unwrap().to_string_lossy().to_string();
        std::fs::write(victim, damage(&std::fs::read(victim).unwrap())).unwrap();
        let strategies = format!("unprocessed,{stored}");

        let out = run_with_policy(work.path(), workload, samples, &strategies, "fail");
        assert!(!out.status.success(), "{what}: fail should stop");
        let err = stderr(&out);
        assert!(
            err.contains(&name) && !err.contains("panic"),
            "{what}: {err}"
        );

        let out = run_with_policy(work.path(), workload, samples, &strategies, "skip");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let dir = work.path().join("out-skip");
        let runs = Csv::read(&dir.join("runs.csv"));
        assert_eq!(runs.rows.len(), 2, "{what}");
        for row in &runs.rows {
            assert_eq!(runs.num(row, "skipped_samples"), 1.0, "{what}: {row:?}");
            assert_eq!(runs.col(row, "verified"), "pass", "{what}: {row:?}");
        }
        let errors = Csv::read(&dir.join("errors.csv"));
        assert_eq!(errors.rows.len(), 2, "{what}: one per run");
        for row in &errors.rows {
            assert!(errors.col(row, "file").ends_with(&name), "{what}: {row:?}");
            assert_eq!(errors.col(row, "count"), "1");
        }
        let phases: Vec<String> = errors.rows.iter().map(|r| errors.col(r, "phase")).collect();
        // A stored strategy that decodes meets the bad file offline; `concatenated` stores
        // its bytes and meets it online, as `unprocessed` does.
        let expected = if stored == "concatenated" {
            ["online", "online"]
        } else {
            ["online", "offline"]
        };
        assert_eq!(phases, expected, "{what}");
    }
}

/// Unmounts a test's tmpfs when dropped.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_fails_naming_the_directory_and_leaves_nothing_half_written() {
    let work = tempfile::tempdir().unwrap();
    let small = work.path().join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("skipping: cannot mount a 1 MB tmpfs here (needs root and mount(8))");
        return;
    }
    let _unmount = Mounted(small.clone());
    // Earlier results, which a failed run must leave as they are.
    let out = run_cv_in(work.path(), &argv!["--strategy resized --epochs 1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = work.path().join("out/runs.csv");
    let before = std::fs::read_to_string(&runs).unwrap();
    let store = small.join("store").display().to_string();
    for (codec, expect) in [
        ("none", "refused before writing"),
        ("gzip", "the disk filled up while writing"),
    ] {
        let out = prepbench(&argv![
            "run cv --strategy decoded --codec",
            codec,
            "--samples",
            SAMPLES,
            "--threads 2 --data-dir",
            &data_dir().display().to_string(),
            "--store-dir",
            &store,
            "--out",
            &work.path().join("out").display().to_string(),
            "--quiet"
        ]);
        assert!(!out.status.success(), "{codec}");
        let err = stderr(&out);
        assert!(
            err.contains("not enough space for the store in")
                && err.contains(&store)
                && err.contains(expect)
                && err.contains("MB free"),
            "{codec}: {err}"
        );
        let left: Vec<_> = walk(&small).into_iter().collect();
        assert!(left.is_empty(), "{codec}: left behind {left:?}");
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), before);
    }
}

/// Data that cannot fit is refused before any of it is written: a sweep's dataset variants
/// (the paper's twelve synthetic datasets, 15 GB each at the workload's defaults) summed
/// before the first is generated, and `generate` of more than the filesystem holds.
#[test]
fn datasets_larger_than_the_disks_room_are_refused_before_anything_is_written() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let sweep = prepbench(&argv![
        "sweep synthetic-reading --dataset-mb 100000000 --quiet --data-dir",
        data.to_str().unwrap(),
        "--store-dir",
        work.path().join("stores").to_str().unwrap(),
        "--out",
        work.path().join("out").to_str().unwrap()
    ]);
    fails_naming(
        &sweep,
        &[
            data.to_str().unwrap(),
            "the 12 dataset variants of this sweep need about",
            "GB free",
            "--dataset-mb",
            "nothing was written",
        ],
    );
    let generated = work.path().join("generated");
    let generate = prepbench(&argv![
        "generate synthetic --samples 100000000 --quiet --out",
        generated.to_str().unwrap()
    ]);
    fails_naming(
        &generate,
        &[
            generated.to_str().unwrap(),
            "generating 100000000 files of `synthetic`",
            "GB free",
            "nothing was written",
        ],
    );
    let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_results_folder_in_use_is_refused_naming_its_holder_and_nothing_is_written() {
    use std::io::Write as _;
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // Another process writing the folder, as a running sweep holds its lock.
    let lock = out.join(".prepbench.lock");
    let mut held = std::fs::File::create(&lock).unwrap();
    held.lock().unwrap();
    write!(
        held,
        "pid 4242, `prepbench sweep cv`, since 2026-11-24T18:00:00Z"
    )
    .unwrap();
    let refused = run_cv_in(work.path(), &["--strategy", "resized", "--epochs", "1"]);
    fails_naming(
        &refused,
        &["in use by another prepbench", "pid 4242", "out"],
    );
    let written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, vec![".prepbench.lock".to_string()], "{written:?}");
    // Let go, the same command runs, and removes the lock file it took.
    drop(held);
    std::fs::remove_file(&lock).unwrap();
    let ok = run_cv_in(work.path(), &["--strategy", "resized", "--epochs", "1"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(!lock.exists());
}

#[test]
fn two_processes_materializing_one_store_both_succeed_and_one_reuses_it() {
    let work = tempfile::tempdir().unwrap();
    let spawn = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_prepbench"))
            .args(argv![
                "run cv --samples",
                SAMPLES,
                "--strategy pixel-centered --epochs 1 --threads 2 --shards 4 --quiet --data-dir",
                data_dir().to_str().unwrap(),
                "--store-dir",
                work.path().join("store").to_str().unwrap(),
                "--out",
                work.path().join(out).to_str().unwrap()
            ])
            .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
            .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("a"), spawn("b"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    // Exactly one of them made the store; the other found it whole.
    let reused: Vec<String> = ["a", "b"]
        .iter()
        .map(|o| {
            let csv = Csv::read(&work.path().join(o).join("runs.csv"));
            csv.col(&csv.rows[0], "offline_reused")
        })
        .collect();
    let mut sorted = reused.clone();
    sorted.sort();
    assert_eq!(sorted, vec!["false", "true"], "{reused:?}");
}

#[test]
fn names_that_would_be_paths_are_refused_naming_the_file_and_line() {
    let work = tempfile::tempdir().unwrap();
    let cv = include_str!("../../workloads/defs/cv.yaml");
    let name_line = |needle: &str| cv.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let cases = [
        (
            "name: cv\n",
            "name: ../outside\n",
            "name: cv",
            "\"../outside\"",
        ),
        ("name: cv\n", "name: /tmp/abs\n", "name: cv", "\"/tmp/abs\""),
        (
            "name: cv\n",
            "name: .hidden\n",
            "name: cv",
            "starts with `.`",
        ),
        (
            "name: resized",
            "name: re/sized",
            "name: resized",
            "\"re/sized\"",
        ),
        ("name: resized", "name: \"..\"", "name: resized", "\"..\""),
    ];
    for (i, (from, to, at, what)) in cases.iter().enumerate() {
        assert!(cv.contains(from), "{from}");
        let path = work.path().join(format!("bad{i}.yaml"));
        std::fs::write(&path, cv.replacen(from, to, 1)).unwrap();
        let out = prepbench(&["validate", &path.display().to_string()]);
        fails_naming(
            &out,
            &[
                &format!("bad{i}.yaml:{}", name_line(at)),
                what,
                "folder name",
            ],
        );
    }
    // Nothing was written beside the workload files.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), cases.len());
}

#[test]
fn counts_out_of_range_are_refused_with_the_allowed_range() {
    for (args, flag) in [
        ("run cv --epochs 0", "--epochs"),
        ("run cv --shards 0", "--shards"),
        ("run cv --threads 0", "--threads"),
        ("run cv --samples=-3", "--samples"),
        ("sweep cv --trials 100000000", "--trials"),
        ("sweep cv --threads 1,0", "--threads"),
        ("sweep cv --max-trials 0", "--max-trials"),
        ("generate imagenet --samples 0 --out x", "--samples"),
        ("whatif out --cores 0", "--cores"),
    ] {
        let out = prepbench(&args.split_whitespace().collect::<Vec<_>>());
        fails_naming(&out, &[flag, "is not a whole number from 1 to"]);
    }
    // Sizes, rates and factors: no NaN, infinity, negative or absurd value.
    for (args, flag) in [
        ("whatif out --read-mbps inf", "--read-mbps"),
        ("whatif out --read-mbps=-5", "--read-mbps"),
        ("whatif out --latency-ms NaN", "--latency-ms"),
        ("whatif out --cpu-speed 0", "--cpu-speed"),
        ("sweep synthetic-reading --dataset-mb NaN", "--dataset-mb"),
        ("run cv --app-cache-mb 1e300", "--app-cache-mb"),
    ] {
        let out = prepbench(&args.split_whitespace().collect::<Vec<_>>());
        fails_naming(&out, &[flag, "is not a number of"]);
    }
}

#[test]
fn a_run_that_skipped_every_sample_fails_and_its_row_is_invalid() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("imagenet-seed0");
    prepbench_ok(&argv![
        "generate imagenet --samples 3 --out",
        &root.display().to_string(),
        "--quiet"
    ]);
    // Every image of the dataset garbled.
    let mut victims = 0;
    for class in std::fs::read_dir(root.join("train")).unwrap().flatten() {
        for file in std::fs::read_dir(class.path()).unwrap().flatten() {
            std::fs::write(file.path(), b"not a jpeg").unwrap();
            victims += 1;
        }
    }
    assert_eq!(victims, 3);
    let out = run_with_policy(work.path(), "cv", "3", "unprocessed", "skip");
    fails_naming(
        &out,
        &["no sample was delivered", "3 skipped", "valid=false"],
    );
    // The row is kept, and says what happened.
    let runs = Csv::read(&work.path().join("out-skip/runs.csv"));
    assert_eq!(runs.rows.len(), 1);
    let row = &runs.rows[0];
    assert_eq!(runs.col(row, "valid"), "false");
    assert_eq!(runs.col(row, "samples"), "0");
    assert_eq!(runs.col(row, "skipped_samples"), "3");
}

#[test]
fn a_row_with_a_nan_rate_is_left_out_and_named_not_its_cell() {
    let work = run_cv_ok(&["--strategy", "resized", "--epochs", "2"]);
    let out = work.path().join("out");
    let runs = out.join("runs.csv");
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let column = lines[0]
        .split(',')
        .position(|c| c == "throughput_sps")
        .unwrap();
    let last = lines.len() - 1;
    let mut fields: Vec<String> = lines[last].split(',').map(str::to_string).collect();
    fields[column] = "NaN".into();
    lines[last] = fields.join(",");
    std::fs::write(&runs, lines.join("\n") + "\n").unwrap();
    prepbench_ok(&["report", &out.display().to_string(), "--quiet"]);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("**1 row of runs.csv left out**") && report.contains("throughput_sps NaN"),
        "{report}"
    );
    // The epoch-0 cell is still reported.
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let cells: Vec<&str> = summary.lines().skip(1).collect();
    assert!(
        cells.len() == 1 && cells[0].contains("resized") && cells[0].contains(",cold,0,"),
        "{summary}"
    );
}

#[test]
fn a_shard_replaced_by_a_copy_of_another_is_refused_not_read_twice() {
    let args = argv!["--strategy resized --epochs 1 --evict fadvise"];
    let work = run_cv_ok(&args);
    let store = work.path().join("store");
    let first = find_files(&store, "shard-00000-of-00004.tfrecord")
        .pop()
        .unwrap();
    let second = find_files(&store, "shard-00001-of-00004.tfrecord")
        .pop()
        .unwrap();
    let runs_before = std::fs::read(work.path().join("out/runs.csv")).unwrap();
    // Same size (equal-sized samples would make it so): the store's size check passes.
    let mut copy = std::fs::read(&first).unwrap();
    copy.resize(std::fs::metadata(&second).unwrap().len() as usize, 0);
    std::fs::write(&second, &copy).unwrap();
    for policy in ["fail", "skip"] {
        let mut again = args.clone();
        again.extend(argv!["--on-error", policy]);
        let out = run_cv_in(work.path(), &again);
        fails_naming(
            &out,
            &[
                "shard-00001-of-00004.tfrecord",
                "not the shard its store wrote",
                "--rematerialize",
            ],
        );
        // The earlier run's rows are all still there.
        let runs = std::fs::read(work.path().join("out/runs.csv")).unwrap();
        assert!(runs.starts_with(&runs_before));
    }
    // Made again, the store reads whole.
    let mut again = args.clone();
    again.push("--rematerialize".into());
    let out = run_cv_in(work.path(), &again);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Every table of a results folder with its rows (each read through prepbench's typed reader,
/// so a torn or misaligned line fails here).
fn table_rows(out: &Path) -> Vec<(String, usize)> {
    [
        "runs.csv",
        "stages.csv",
        "samples.csv",
        "errors.csv",
        "offline.csv",
    ]
    .iter()
    .filter(|t| out.join(t).exists())
    .map(|t| {
        let bytes = std::fs::read(out.join(t)).unwrap();
        assert!(bytes.ends_with(b"\n"), "{t} ends inside a line");
        (t.to_string(), Csv::read(&out.join(t)).rows.len())
    })
    .collect()
}

/// `prepbench sweep cv` of one strategy, `trials` trials, in `work`.
fn sweep_cv(work: &Path, trials: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prepbench"));
    command
        .args(argv![
            "sweep cv --strategies resized --threads 1 --epochs 1 --shards 4 --no-calibrate",
            "--evict fadvise --quiet --samples",
            SAMPLES,
            "--trials",
            trials,
            "--data-dir",
            data_dir().to_str().unwrap(),
            "--store-dir",
            work.join("store").to_str().unwrap(),
            "--out",
            work.join("out").to_str().unwrap()
        ])
        .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000");
    command
}

#[test]
fn a_write_cut_short_by_a_full_disk_leaves_every_table_whole_and_the_run_not_done() {
    let work = tempfile::tempdir().unwrap();
    let first = sweep_cv(work.path(), "1").output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let out = work.path().join("out");
    let before = table_rows(&out);
    let manifest = std::fs::read(out.join("manifest.json")).unwrap();
    // Files may grow only a few bytes past runs.csv's size now: an append to it (or to a
    // larger table, appended before it) is cut short, as on a disk that fills up (EFBIG for
    // ENOSPC).
    let limit = std::fs::metadata(out.join("runs.csv")).unwrap().len() + 40;
    let mut full = sweep_cv(work.path(), "2");
    let cut = limited(&mut full, libc::RLIMIT_FSIZE, limit)
        .output()
        .unwrap();
    let err = fails_naming(&cut, &[out.to_str().unwrap(), "File too large"]);
    assert_eq!(err.matches("File too large").count(), 1, "said once: {err}");
    // Nothing half-written or lost: every table parses, ends with a line break and starts
    // with what it held; the cut run is recorded whole or not at all.
    let after = table_rows(&out);
    for ((table, was), (_, now)) in before.iter().zip(&after) {
        assert!(now >= was, "{table} lost rows: {err}");
    }
    assert!(after[0].1 <= before[0].1 + 1);
    let now = std::fs::read(out.join("manifest.json")).unwrap();
    assert!(now == manifest || serde_json::from_slice::<serde_json::Value>(&now).is_ok());
    let strays: Vec<_> = walk(&out)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains("tmp"))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
    // The cut run is not taken as done: resumed, the sweep runs it and records it once.
    let again = sweep_cv(work.path(), "2").output().unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    let runs = Csv::read(&out.join("runs.csv"));
    assert_eq!(runs.rows.len(), before[0].1 + 1);
    let mut ids: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "run_id")).collect();
    ids.dedup();
    assert_eq!(ids.len(), runs.rows.len(), "a run recorded twice");
}

/// `command` with the resource limit `resource` at `value` in the child. A file-size limit
/// makes a write past it fail with EFBIG (its signal, SIGXFSZ, is ignored), as a full disk
/// fails one with ENOSPC.
fn limited(command: &mut Command, resource: libc::__rlimit_resource_t, value: u64) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// `prepbench ARGS` under a virtual-memory limit of `mb` MB (RLIMIT_AS).
fn under_memory_cap(mb: u64, args: &[String]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prepbench"));
    command
        .args(args)
        .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000");
    limited(&mut command, libc::RLIMIT_AS, mb << 20)
        .output()
        .unwrap()
}

#[test]
fn decompression_bombs_are_refused_under_a_memory_cap_not_aborted() {
    // A normal run of these workloads fits in 256 MB of address space; each bomb below would
    // decode to more than the cap (and abort the process when the allocation fails).
    const CAP_MB: u64 = 384;
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    // A JPEG whose header claims 13000 x 13000 pixels: 507 MB of RGB from a few KB.
    let jpeg = super::corpus::jpeg_bomb();
    // An hour of digital silence as FLAC: a few hundred KB that decode to 230 MB of float32.
    let flac = datasets::audio::encode_flac(&vec![0i16; 16_000 * 3600], 16_000).unwrap();
    for (workload, kind, samples, victim, bomb) in [
        ("cv", "imagenet", "4", "n01000000_0.JPEG", jpeg),
        ("flac", "librispeech", "2", "100-1000-0000.flac", flac),
    ] {
        let root = data.join(format!("{kind}-seed0"));
        prepbench_ok(&argv![
            "generate",
            kind,
            "--samples",
            samples,
            "--quiet --out",
            root.to_str().unwrap()
        ]);
        let target = find_files(&root, victim).pop().unwrap();
        std::fs::write(&target, &bomb).unwrap();
        let out = under_memory_cap(
            CAP_MB,
            &argv![
                "run",
                workload,
                "--samples",
                samples,
                "--strategy unprocessed --threads 1 --quiet --evict fadvise --data-dir",
                data.to_str().unwrap(),
                "--store-dir",
                work.path().join("store").to_str().unwrap(),
                "--out",
                work.path().join(format!("out-{kind}")).to_str().unwrap()
            ],
        );
        // Refused with an error (exit 1), not killed by a failed allocation (a signal).
        assert_eq!(out.status.code(), Some(1), "{kind}: {}", stderr(&out));
        fails_naming(&out, &[victim, "max_expansion 1024"]);
    }
    // A file that decodes within max_expansion (ten seconds of noise, 2x) but whose later step
    // asks for more than the sample may hold (an STFT at every sample: 330 MB): the budget is
    // the sample's, across its steps, so the step is refused, and `skip` goes on.
    let files = data.join("noise");
    std::fs::create_dir_all(&files).unwrap();
    let mut x = 1u32;
    let mut noise = |seconds: usize| -> Vec<i16> {
        (0..16_000 * seconds)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 20) as i16 - 2048
            })
            .collect()
    };
    let long = datasets::audio::encode_flac(&noise(10), 16_000).unwrap();
    let short = datasets::audio::encode_flac(&noise(1), 16_000).unwrap();
    std::fs::write(files.join("0-long.flac"), long).unwrap();
    std::fs::write(files.join("1-short.flac"), short).unwrap();
    let yaml = format!(
        "name: noise\ndataset: {{kind: files, path: {}}}\nsteps:\n  - {{name: concatenated, op: \
         read_file}}\n  - {{name: decoded, op: decode_audio}}\n  - {{name: spectrogram, op: \
         stft, params: {{frame_length: 512, hop: 1}}}}\n",
        files.display()
    );
    let workload = work.path().join("noise.yaml");
    std::fs::write(&workload, yaml).unwrap();
    for (on_error, code) in [("fail", 1), ("skip", 0)] {
        let out = under_memory_cap(
            CAP_MB,
            &argv![
                "run",
                workload.to_str().unwrap(),
                "--strategy unprocessed --threads 1 --quiet --evict fadvise --on-error",
                on_error,
                "--store-dir",
                work.path().join("store").to_str().unwrap(),
                "--out",
                work.path()
                    .join(format!("out-noise-{on_error}"))
                    .to_str()
                    .unwrap()
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(code),
            "{on_error}: {}",
            stderr(&out)
        );
        if code == 1 {
            fails_naming(
                &out,
                &["0-long.flac", "step `spectrogram`", "one sample may hold"],
            );
        }
    }
}

#[test]
fn a_folder_smaller_than_asked_reads_all_it_holds_unless_samples_asks_for_more() {
    // dataset.samples beyond a folder of your own reads every file there, said once;
    // `--samples` beyond it is an explicit request, refused before anything is written and
    // without the note about dataset.samples, which it overrides.
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let folder = d.join("mine");
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..3 {
        std::fs::write(folder.join(format!("{i}.bin")), vec![i as u8; 64]).unwrap();
    }
    // A file not fetched (a git-annex or DVC dataset links to what it has not downloaded) is
    // not a sample, and the run says so, naming it; a hidden one is not named.
    std::os::unix::fs::symlink(d.join("annex/gone.bin"), folder.join("3.bin")).unwrap();
    std::os::unix::fs::symlink(d.join("annex/gone.bin"), folder.join(".4.bin")).unwrap();
    let yaml = "name: mine\ndataset:\n  kind: files\n  path: mine\n  samples: 10\nsteps:\n  \
                - name: concatenated\n    op: read_file\n";
    std::fs::write(d.join("w.yaml"), yaml).unwrap();
    let run = |samples: Option<&str>| {
        let mut args = argv!["run", d.join("w.yaml").to_str().unwrap()];
        if let Some(n) = samples {
            args.extend(argv!["--samples", n]);
        }
        args.extend(argv![
            "--strategy concatenated --evict fadvise --data-dir",
            d.to_str().unwrap(),
            "--store-dir",
            d.join("store").to_str().unwrap(),
            "--out",
            d.join("out").to_str().unwrap()
        ]);
        prepbench(&args)
    };
    let err = fails_naming(
        &run(Some("5")),
        &[
            "mine: holds 3 samples where --samples asks for 5",
            "at most 3",
        ],
    );
    assert!(!err.contains("dataset.samples"), "{err}");
    assert!(!d.join("out").exists() && !d.join("store").exists());
    let out = run(None);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("holds 3 samples where dataset.samples asks for 10: reading all 3"),
        "{err}"
    );
    let gone = d.join("annex/gone.bin");
    assert!(
        err.contains(&format!(
            "1 entry matching the dataset's pattern is not a regular file and is left out: \
             3.bin (a link to {}, which does not exist)",
            gone.display()
        )) && !err.contains(".4.bin"),
        "{err}"
    );
    let out = run(Some("2"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("dataset.samples"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_dataset_the_workload_names_is_never_generated_and_generation_says_where() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let yaml = "name: mine\ndataset:\n  kind: imagenet\n  path: mine\n  samples: 4\nsteps:\n  \
                - name: concatenated\n    op: read_file\n";
    std::fs::write(d.join("w.yaml"), yaml).unwrap();
    let run = |workload: &str, quiet: bool| {
        let mut args = argv![
            "run",
            workload,
            "--samples 4 --evict fadvise --data-dir",
            data.to_str().unwrap(),
            "--store-dir",
            d.join("store").to_str().unwrap(),
            "--out",
            d.join("out").to_str().unwrap()
        ];
        if quiet {
            args.push("--quiet".into());
        }
        prepbench(&args)
    };
    let w = d.join("w.yaml");
    let w = w.to_str().unwrap();
    // A misspelt or missing folder: an error naming it, and nothing generated there.
    let out = run(w, true);
    fails_naming(
        &out,
        &["data/mine", "does not exist", "never generates", "imagenet"],
    );
    assert!(!data.join("mine").exists());
    assert!(
        !d.join("out").exists(),
        "nothing written, not even the results folder"
    );
    // The same for --dataset, which names the user's data in place of the workload's.
    let elsewhere = d.join("my imagenet");
    let mut args = argv!["run cv --samples 4 --quiet --evict fadvise --dataset"];
    args.push(elsewhere.display().to_string());
    args.extend(argv!["--out", d.join("out").to_str().unwrap()]);
    fails_naming(
        &prepbench(&args),
        &["my imagenet", "does not exist", "--dataset"],
    );
    assert!(!elsewhere.exists() && !d.join("out").exists());
    // An empty one: the same, and it stays empty.
    std::fs::create_dir_all(data.join("mine")).unwrap();
    fails_naming(&run(w, true), &["data/mine", "is empty", "never generates"]);
    assert_eq!(std::fs::read_dir(data.join("mine")).unwrap().count(), 0);
    // A stand-in is generated only into the data directory, saying what and where.
    let out = run("cv", false);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("generated 4 files of `imagenet` samples, stand-ins for ImageNet")
            && err.contains(&data.join("imagenet-seed0").display().to_string())
            && err.contains("dataset.path"),
        "{err}"
    );
}

#[test]
fn workload_show_prints_a_reference_workload_as_shipped() {
    let out = prepbench_ok(&["workload", "show", "cv"]);
    let shipped = include_str!("../../workloads/defs/cv.yaml");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), shipped);
    fails_naming(
        &prepbench(&["workload", "show", "cvv"]),
        &[
            "no reference workload `cvv` (did you mean `cv`?)",
            "cv, cv2-jpg",
        ],
    );
}

#[test]
fn misspelt_names_get_the_name_meant_wherever_they_are_checked() {
    // A workload, a strategy, a dataset kind, a codec and a storage profile on the command
    // line; an op in a workload file.
    fails_naming(&prepbench(&["run", "cvv"]), &["did you mean `cv`?"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let out = out.to_str().unwrap();
    fails_naming(
        &prepbench(&[
            "run",
            "cv",
            "--strategy",
            "unprocesed",
            "--epochs",
            "1",
            "--out",
            out,
        ]),
        &[
            "builtin:cv",
            "no strategy `unprocesed` (did you mean `unprocessed`?)",
        ],
    );
    fails_naming(
        &prepbench(&["generate", "imagnet", "--samples", "2", "--out", out]),
        &["unknown dataset kind `imagnet` (did you mean `imagenet`?)"],
    );
    fails_naming(
        &prepbench(&["run", "cv", "--codec", "zst", "--epochs", "1", "--out", out]),
        &["did you mean `zstd`?"],
    );
    fails_naming(
        &prepbench(&[
            "run",
            "cv",
            "--storage",
            "locall",
            "--epochs",
            "1",
            "--out",
            out,
        ]),
        &["did you mean `local`?"],
    );
    let yaml = dir.path().join("w.yaml");
    std::fs::write(
        &yaml,
        include_str!("../../workloads/defs/cv.yaml")
            .replace("op: pixel_center", "op: pixel_centered"),
    )
    .unwrap();
    fails_naming(
        &prepbench(&["validate", yaml.to_str().unwrap()]),
        &["unknown op `pixel_centered` (did you mean `pixel_center`?)"],
    );
    assert!(!std::path::Path::new(out).exists(), "nothing written");
}
