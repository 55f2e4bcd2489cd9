//! End-to-end tests: the `prepbench` binary on small generated datasets, checked through its
//! exit code, its stderr and the files it writes.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{data_dir, find_files, prepbench, run_json, stderr, Csv, SAMPLES};

/// `prepbench run cv` on the shared dataset with its store and results in `work`.
fn run_cv_in(work: &Path, extra: &[&str]) -> Output {
    let data = data_dir().display().to_string();
    let (out, store) = (
        work.join("out").display().to_string(),
        work.join("store").display().to_string(),
    );
    let mut args = vec![
        "run",
        "cv",
        "--samples",
        SAMPLES,
        "--threads",
        "2",
        "--shards",
        "4",
        "--data-dir",
        &data,
        "--store-dir",
        &store,
        "--out",
        &out,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    prepbench(&args)
}

/// `prepbench run cv` in a fresh working directory.
fn run_cv(extra: &[&str]) -> (Output, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    (run_cv_in(work.path(), extra), work)
}

fn on_tmpfs(path: &Path) -> bool {
    harness::results::system::filesystem_of(path).is_some_and(|f| f.fs_type == "tmpfs")
}

#[test]
fn every_cv_strategy_runs_verifies_and_records_honest_metrics() {
    let (out, work) = run_cv(&["--verify", "--epochs", "2", "--evict", "fadvise"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = Csv::read(&work.path().join("out/runs.csv"));
    let strategies: Vec<String> = csv
        .rows
        .iter()
        .filter(|r| csv.col(r, "epoch") == "0")
        .map(|r| csv.col(r, "strategy"))
        .collect();
    assert_eq!(
        strategies,
        [
            "unprocessed",
            "concatenated",
            "decoded",
            "resized",
            "pixel-centered"
        ]
    );
    assert_eq!(csv.rows.len(), 10, "two epochs per strategy");
    let per_sample = |name: &str| {
        let row = csv
            .rows
            .iter()
            .find(|r| csv.col(r, "strategy") == name)
            .unwrap();
        csv.num(row, "storage_bytes") / csv.num(row, "samples")
    };
    for row in &csv.rows {
        assert_eq!(csv.col(row, "verified"), "pass");
        assert_eq!(csv.num(row, "samples"), 40.0);
        assert!(csv.num(row, "throughput_sps") > 0.0);
        assert!(csv.num(row, "online_s") > 0.0);
        if csv.col(row, "epoch") == "0" {
            assert_eq!(csv.col(row, "cache"), "cold");
            if !on_tmpfs(work.path()) {
                assert!(csv.num(row, "residency_after_pct") < 5.0, "{row:?}");
                assert_eq!(csv.col(row, "valid"), "true");
            }
        } else {
            assert_eq!(csv.col(row, "cache"), "warm");
            assert_eq!(csv.col(row, "evict_method"), "none");
        }
    }
    // The paper's storage shape: decoded ~6x the JPEGs, float32 4x uint8.
    assert!(per_sample("decoded") / per_sample("concatenated") > 3.0);
    assert!((per_sample("pixel-centered") / per_sample("resized") - 4.0).abs() < 0.05);
    assert!(
        (per_sample("unprocessed") - per_sample("concatenated")).abs() / per_sample("unprocessed")
            < 0.01
    );
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join("out/manifest.json")).unwrap(),
    )
    .unwrap();
    assert!(manifest["machine"]["logical_cores"].as_u64().unwrap() >= 1);
    assert_eq!(
        manifest["invocations"][0]["run_ids"]
            .as_array()
            .unwrap()
            .len(),
        5,
        "one run per strategy, each with two epoch rows"
    );
    assert!(manifest["workloads"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .starts_with("cv@"));
}

#[test]
fn stores_are_reused_and_every_codec_preserves_the_output() {
    for codec in ["gzip", "zstd:3", "lz4"] {
        let (out, work) = run_cv(&[
            "--strategy",
            "decoded,pixel-centered",
            "--codec",
            codec,
            "--verify",
            "--epochs",
            "1",
            "--evict",
            "fadvise",
            "--json",
        ]);
        assert!(out.status.success(), "{codec}: {}", stderr(&out));
        let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r["verified"] == "pass"
            && r["codec"]
                .as_str()
                .unwrap()
                .starts_with(codec.split(':').next().unwrap())));
        let again = run_cv_in(
            work.path(),
            &[
                "--strategy",
                "decoded",
                "--codec",
                codec,
                "--json",
                "--epochs",
                "1",
                "--evict",
                "fadvise",
            ],
        );
        assert!(again.status.success(), "{}", stderr(&again));
        let row: serde_json::Value = serde_json::from_str(
            String::from_utf8_lossy(&again.stdout)
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(row["offline_reused"], true);
        assert_eq!(row["storage_bytes"], rows[0]["storage_bytes"]);
    }
}

#[test]
fn a_flipped_byte_in_a_shard_fails_with_shard_and_offset() {
    let (out, work) = run_cv(&[
        "--strategy",
        "resized",
        "--epochs",
        "1",
        "--evict",
        "fadvise",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shard = find_files(&work.path().join("store"), "shard-00001-of-00004.tfrecord")
        .pop()
        .unwrap();
    let mut bytes = std::fs::read(&shard).unwrap();
    let len = bytes.len();
    bytes[len / 2] ^= 0x04;
    std::fs::write(&shard, bytes).unwrap();
    let out2 = run_cv_in(
        work.path(),
        &[
            "--strategy",
            "resized",
            "--epochs",
            "1",
            "--evict",
            "fadvise",
        ],
    );
    assert!(!out2.status.success());
    let err = stderr(&out2);
    assert!(
        err.contains("shard-00001-of-00004.tfrecord")
            && err.contains("at byte")
            && err.contains("checksum"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // Rows of the first, complete run are still there.
    assert_eq!(Csv::read(&work.path().join("out/runs.csv")).rows.len(), 1);

    // With `--on-error skip` a record whose payload fails its checksum is stepped over; a
    // broken length loses the rest of its shard. Every sample is delivered or counted skipped.
    let skip_run = || {
        let run = run_cv_in(
            work.path(),
            &[
                "--strategy",
                "resized",
                "--epochs",
                "1",
                "--evict",
                "fadvise",
                "--on-error",
                "skip",
            ],
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
    let out = prepbench(&[
        "generate",
        "imagenet",
        "--samples",
        "4",
        "--out",
        &root.display().to_string(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let victim = find_files(&root, "n01001009_0.JPEG")
        .pop()
        .expect("sample 1 exists");
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..bytes.len() / 3]).unwrap();
    let out = run_with_policy(work.path(), "cv", "4", "unprocessed", "fail");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("n01001009_0.JPEG")
            && err.contains("step `decoded`")
            && err.contains("sample 1"),
        "{err}"
    );
}

#[test]
fn strict_workload_errors_name_file_key_and_line() {
    let work = tempfile::tempdir().unwrap();
    let cv = include_str!("../workloads/defs/cv.yaml");
    let good = work.path().join("good.yaml");
    std::fs::write(&good, cv).unwrap();
    let out = prepbench(&["validate", &good.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = cv.lines().position(|l| l.starts_with("sweep:")).unwrap() + 1;
    let bad = work.path().join("bad.yaml");
    std::fs::write(&bad, cv.replace("sweep:", "sweeps:")).unwrap();
    let out = prepbench(&["validate", &bad.display().to_string()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("bad.yaml:{line}")) && err.contains("unknown field `sweeps`"),
        "{err}"
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
    let out = prepbench(&["run", "cv", "--strategy", "cropped", "--quiet"]);
    assert!(
        !out.status.success() && stderr(&out).contains("must run online"),
        "{}",
        stderr(&out)
    );
    let out = prepbench(&["validate", "/no/such/file.yaml"]);
    assert!(!out.status.success() && stderr(&out).contains("/no/such/file.yaml"));
}

#[test]
fn lists_show_steps_with_parameters_workloads_and_strategies() {
    let steps = String::from_utf8(prepbench(&["list", "steps"]).stdout).unwrap();
    for op in [
        "read_file",
        "decode_jpeg",
        "resize_shorter",
        "pixel_center",
        "random_crop",
    ] {
        assert!(steps.contains(op), "{op} missing from:\n{steps}");
    }
    assert!(
        steps.contains("size") && steps.contains("required") && steps.contains("always online")
    );
    let workloads = String::from_utf8(prepbench(&["list", "workloads"]).stdout).unwrap();
    assert!(workloads.starts_with("cv "), "{workloads}");
    let strategies = String::from_utf8(prepbench(&["list", "strategies", "cv"]).stdout).unwrap();
    assert_eq!(strategies.lines().count(), 5, "{strategies}");
    assert!(
        strategies.contains("pixel-centered   split 4  online: cropped"),
        "{strategies}"
    );
}

/// prepbench's shards read back by an independent implementation of TFRecord framing, CRC-32C
/// and the sample encoding (scripts/prepbench_records.py, Python standard library only).
#[test]
fn shards_are_readable_by_an_independent_python_reader() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not installed, so the independent reader cannot run");
        return;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/prepbench_records.py"
    );
    for codec in ["none", "gzip", "zlib"] {
        let (out, work) = run_cv(&[
            "--strategy",
            "resized",
            "--codec",
            codec,
            "--epochs",
            "1",
            "--evict",
            "fadvise",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let manifest = find_files(&work.path().join("store"), "store.json")
            .pop()
            .unwrap();
        let py = Command::new("python3")
            .arg(script)
            .arg(manifest.parent().unwrap())
            .output()
            .unwrap();
        assert!(py.status.success(), "{codec}: {}", stderr(&py));
        let summary: serde_json::Value = serde_json::from_slice(&py.stdout).unwrap();
        assert_eq!(summary["records"], 40, "{codec}");
        let ids: Vec<u64> = summary["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(ids, (0..40).collect::<Vec<u64>>());
        assert_eq!(summary["fields"]["image"]["dtype"], "uint8");
        assert_eq!(summary["fields"]["label"]["kind"], "tensor");
        for shape in summary["fields"]["image"]["shapes"].as_array().unwrap() {
            let dims: Vec<u64> = shape
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            assert_eq!(
                (dims.len(), dims[2], dims[0].min(dims[1])),
                (3, 3, 256),
                "{dims:?}"
            );
        }
    }
}

/// Every image workload runs all its strategies with outputs identical to fully-online
/// processing, and stores what the arithmetic says: float32 is exactly 4x uint8, a letterboxed
/// detection sample is 640 x 640 x 3 float32 plus its boxes.
#[test]
fn every_image_workload_verifies_and_stores_what_the_arithmetic_says() {
    let work = tempfile::tempdir().unwrap();
    for workload in [
        "cv2-jpg",
        "cv2-png",
        "cv-greyscale-before",
        "cv-greyscale-after",
        "detection",
    ] {
        let rows = run_json(
            work.path(),
            &work.path().join("data"),
            workload,
            &["--samples", "6"],
        );
        assert!(
            rows.len() >= 5 && rows.iter().all(|r| r["verified"] == "pass"),
            "{workload}: {rows:?}"
        );
        let per_sample = |name: &str| {
            rows.iter()
                .find(|r| r["strategy"] == name)
                .map(|r| r["storage_bytes"].as_f64().unwrap() / 6.0)
                .unwrap()
        };
        // Within 0.1 %: each stored sample adds about 100 bytes of headers and framing once.
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-3;
        match workload {
            "cv-greyscale-before" => assert!(close(
                per_sample("pixel-centered"),
                4.0 * per_sample("greyscaled")
            )),
            "cv-greyscale-after" => assert!(close(
                per_sample("pixel-centered"),
                3.0 * per_sample("greyscaled")
            )),
            "detection" => {
                let floats = 640.0 * 640.0 * 3.0 * 4.0;
                let extra = per_sample("pixel-centered") - floats;
                assert!(
                    (0.0..2000.0).contains(&extra),
                    "{extra} bytes beyond the image: boxes, categories, letterbox record"
                );
            }
            _ => assert!(
                close(per_sample("pixel-centered"), 4.0 * per_sample("resized")),
                "{workload}"
            ),
        }
    }
}

/// Every sample stored under `<store>/<workload>/<strategy>/none-*` (uncompressed), with the
/// encoded length of each, and the store's storage_bytes.
fn stored_samples(
    store: &Path,
    workload: &str,
    strategy: &str,
) -> (Vec<(workloads::Sample, usize)>, u64) {
    let dir = std::fs::read_dir(store.join(workload).join(strategy))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("none-")
        })
        .expect("an uncompressed store");
    let manifest: harness::store::StoreManifest =
        serde_json::from_slice(&std::fs::read(dir.join("store.json")).unwrap()).unwrap();
    let mut samples = Vec::new();
    for shard in &manifest.shards {
        let mut reader =
            harness::store::ShardReader::open(&dir.join(&shard.file), workloads::Codec::None)
                .unwrap();
        let mut payload = Vec::new();
        while reader.next_into(&mut payload).unwrap() {
            samples.push((
                workloads::encoding::decode(&payload).unwrap(),
                payload.len(),
            ));
        }
    }
    (samples, manifest.storage_bytes())
}

#[test]
fn audio_workloads_verify_and_spectrograms_take_frames_x_80_x_4_bytes() {
    let work = tempfile::tempdir().unwrap();
    for (workload, frame, hop, text) in [
        ("mp3", 960, 480, "sentence"),
        ("flac", 320, 160, "transcript"),
    ] {
        let store = work.path().join("store");
        let rows = run_json(
            work.path(),
            &work.path().join("data"),
            workload,
            &["--samples", "6"],
        );
        let strategies = strategy_names(&rows);
        // `run` without --strategy runs every split, intermediate ones included.
        assert_eq!(
            strategies,
            [
                "unprocessed",
                "concatenated",
                "decoded",
                "stft",
                "magnitude",
                "mel",
                "spectrogram-encoded"
            ]
        );
        assert!(
            rows.iter()
                .all(|r| r["verified"] == "pass" || r["strategy"] == "unprocessed"),
            "{workload}: {rows:?}"
        );

        let (decoded, _) = stored_samples(&store, workload, "decoded");
        let pcm_len = |id: u64| {
            let (s, _) = decoded.iter().find(|(s, _)| s.id == id).unwrap();
            s.tensor("audio").unwrap().shape()[0]
        };
        let (spectrograms, storage_bytes) = stored_samples(&store, workload, "spectrogram-encoded");
        assert_eq!(spectrograms.len(), 6);
        // TFRecord framing: 8-byte length, 4-byte CRC of it, payload, 4-byte CRC of the payload.
        let framed: usize = spectrograms.iter().map(|(_, len)| len + 16).sum();
        assert_eq!(storage_bytes, framed as u64);
        for (sample, len) in &spectrograms {
            let frames = 1 + (pcm_len(sample.id) - frame) / hop;
            let spectrogram = sample.tensor("spectrogram").unwrap();
            assert_eq!(spectrogram.shape(), &[frames, 80]);
            assert_eq!(spectrogram.dtype(), workloads::DType::F32);
            assert!(!sample.text(text).unwrap().is_empty());
            // The spectrogram adds exactly frames x 80 x 4 bytes to the sample's header.
            let header_only = sample.clone().with(
                "spectrogram",
                workloads::Field::Tensor(
                    workloads::Tensor::new(vec![0, 80], workloads::TensorData::F32(vec![]))
                        .unwrap(),
                ),
            );
            assert_eq!(
                *len,
                frames * 80 * 4 + workloads::encoding::encoded_len(&header_only),
                "{workload} sample {}",
                sample.id
            );
        }
    }
}

#[test]
fn truncated_and_garbage_audio_are_errors_naming_the_file() {
    let work = tempfile::tempdir().unwrap();
    for (workload, kind, extension) in [
        ("mp3", "commonvoice", "mp3"),
        ("flac", "librispeech", "flac"),
    ] {
        let root = work.path().join(format!("{kind}-seed0"));
        let out = prepbench(&[
            "generate",
            kind,
            "--samples",
            "3",
            "--out",
            &root.display().to_string(),
            "--quiet",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
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

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// The `strategy` of each JSON row, in order.
fn strategy_names(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect()
}

#[test]
fn nilm_cuts_every_generated_hour_into_360_verified_windows() {
    let work = tempfile::tempdir().unwrap();
    let rows = run_json(
        work.path(),
        &work.path().join("data"),
        "nilm",
        &["--samples", "360", "--strategy", "unprocessed,aggregated"],
    );
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["samples"], 360, "{row}");
    }
    assert_eq!(rows[1]["verified"], "pass");
    // [3, 500] float64 per window plus the sample's header.
    let per_window = rows[1]["storage_bytes"].as_f64().unwrap() / 360.0;
    assert!((12_000.0..12_400.0).contains(&per_window), "{per_window}");
}

#[test]
fn nlp_verifies_and_invalid_utf8_names_the_page() {
    let work = tempfile::tempdir().unwrap();
    let rows = run_json(
        work.path(),
        &work.path().join("data"),
        "nlp",
        &["--samples", "6"],
    );
    let strategies = strategy_names(&rows);
    assert_eq!(
        strategies,
        [
            "unprocessed",
            "concatenated",
            "decoded",
            "bpe-encoded",
            "embedded"
        ]
    );
    assert!(
        rows[1..].iter().all(|r| r["verified"] == "pass"),
        "{rows:?}"
    );
    // Embedded: 768 float32 per token; tokens: 4 bytes each.
    let per_sample = |i: usize| rows[i]["storage_bytes"].as_f64().unwrap() / 6.0;
    let ratio = per_sample(4) / per_sample(3);
    assert!((700.0..770.0).contains(&ratio), "{ratio}");

    let page = walk(&work.path().join("data"))
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "2.txt"))
        .unwrap();
    let mut bytes = std::fs::read(&page).unwrap();
    bytes.extend_from_slice(b"<p>caf\xe9</p>");
    std::fs::write(&page, bytes).unwrap();
    let out = prepbench(&[
        "run",
        "nlp",
        "--strategy",
        "unprocessed",
        "--samples",
        "6",
        "--evict",
        "fadvise",
        "--quiet",
        "--data-dir",
        &work.path().join("data").display().to_string(),
        "--store-dir",
        &work.path().join("store").display().to_string(),
        "--out",
        &work.path().join("bad").display().to_string(),
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("2.txt") && err.contains("not valid UTF-8") && err.contains("step `decoded`"),
        "{err}"
    );
}

#[test]
fn synthetic_sizes_are_swept_as_variants_and_judge_finding_5() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let sweep = prepbench(&[
        "sweep",
        "synthetic-reading",
        "--dataset-mb",
        "0.3",
        "--threads",
        "1",
        "--trials",
        "1",
        "--epochs",
        "1",
        "--shards",
        "2",
        "--evict",
        "fadvise",
        "--quiet",
        "--data-dir",
        &work.path().join("data").display().to_string(),
        "--store-dir",
        &work.path().join("store").display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(sweep.status.success(), "{}", stderr(&sweep));
    let csv = Csv::read(&out.join("runs.csv"));
    let mut variants: Vec<String> = csv.rows.iter().map(|r| csv.col(r, "workload")).collect();
    variants.sort();
    variants.dedup();
    assert_eq!(variants.len(), 12, "{variants:?}");
    // Each variant holds about 0.3 MB: 30 samples of 0.01 MB, one of 20.48 MB.
    for row in &csv.rows {
        let (w, n) = (csv.col(row, "workload"), csv.num(row, "samples"));
        if w.ends_with("=0.01") {
            assert_eq!(n, 30.0);
        }
        if w.ends_with("=20.48") {
            assert_eq!(n, 1.0);
        }
    }
    let report = prepbench(&["report", &out.display().to_string(), "--quiet"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## synthetic-reading\n"), "{md}");
    assert!(md.contains("| mb_per_sample=20.48 | 1 |"), "{md}");
    let five = md.lines().find(|l| l.starts_with("5. ")).unwrap();
    assert!(
        five.contains("synthetic-reading/decoded: 0.01 MB samples at"),
        "{five}"
    );
}

#[test]
fn stages_account_for_the_workers_time_and_the_report_names_the_bound() {
    let (out, work) = run_cv(&["--strategy", "unprocessed,decoded", "--epochs", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
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
    let report = prepbench(&["report", &dir.display().to_string(), "--quiet"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md.split("### Where the time goes").nth(1).expect("section");
    assert!(
        section.contains("| decoded | io-bound |") || section.contains("| decoded | cpu-bound |"),
        "{section}"
    );
}

#[test]
fn system_samples_cover_every_phase_and_see_cold_reads() {
    let (out, work) = run_cv(&["--strategy", "decoded", "--epochs", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
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
    } else if runs.col(&runs.rows[0], "evict_method") == "drop_caches" {
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
fn the_application_cache_serves_later_epochs_or_says_it_does_not_fit() {
    let (out, work) = run_cv(&[
        "--strategy",
        "resized",
        "--cache",
        "app",
        "--epochs",
        "3",
        "--verify",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&work.path().join("out").join("runs.csv"));
    let caches: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "cache")).collect();
    assert_eq!(caches, ["app-fill", "app", "app"]);
    assert!(runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"));
    for row in &runs.rows[1..] {
        assert_eq!(runs.num(row, "samples"), SAMPLES.parse::<f64>().unwrap());
    }

    let (out, work) = run_cv(&[
        "--strategy",
        "resized",
        "--cache",
        "app",
        "--epochs",
        "2",
        "--app-cache-mb",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("do not fit the application cache's 1 MB"),
        "{}",
        stderr(&out)
    );
    let runs = Csv::read(&work.path().join("out").join("runs.csv"));
    let caches: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "cache")).collect();
    assert_eq!(caches, ["app-fill", "app-miss"]);

    let (out, _work) = run_cv(&["--strategy", "unprocessed", "--cache", "app"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("stores none"), "{}", stderr(&out));
}

#[test]
fn emulated_ceph_slows_small_raw_files_and_the_report_names_the_profile() {
    // A private dataset: other tests reading the shared one would warm its pages mid-epoch.
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).display().to_string();
    let (data, store, out_dir) = (path("data"), path("store"), path("out"));
    let out = prepbench(&[
        "run",
        "cv",
        "--samples",
        SAMPLES,
        "--threads",
        "2",
        "--strategy",
        "unprocessed,concatenated",
        "--storage",
        "paper-ceph-hdd",
        "--evict",
        "fadvise",
        "--data-dir",
        &data,
        "--store-dir",
        &store,
        "--out",
        &out_dir,
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
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
    let report = prepbench(&["report", &dir.display().to_string(), "--quiet"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## cv [storage paper-ceph-hdd]"), "{md}");
    assert!(
        md.contains("emulated storage profile `paper-ceph-hdd`"),
        "{md}"
    );
    assert!(md.contains("Storage profiles: `paper-ceph-hdd`"), "{md}");

    let (out, _work) = run_cv(&["--strategy", "unprocessed", "--storage", "nfs"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no storage profile `nfs`; known: local, paper-ceph-hdd"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_simulated_consumer_reports_utilisation_beside_its_null_io_control() {
    let (out, work) = run_cv(&[
        "--strategy",
        "resized",
        "--consumer",
        "batch=32,compute=100ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = work.path().join("out");
    let runs = Csv::read(&dir.join("runs.csv"));
    let caches: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "cache")).collect();
    assert_eq!(caches, ["cold", "warm", "null-io"]);
    for row in &runs.rows {
        assert_eq!(runs.col(row, "consumer"), "32x100ms-sleep-p2");
        let (au, stall) = (runs.num(row, "au_pct"), runs.num(row, "stall_pct"));
        assert!(au > 0.0 && au + stall <= 100.5, "{row:?}");
        assert!(runs.num(row, "batch_wait_p99_ms") >= runs.num(row, "batch_wait_p50_ms"));
        // 40 samples: a batch of 32 and a partial one of 8, 100 ms each.
        assert!(runs.num(row, "online_s") >= 0.2, "{row:?}");
    }
    // The consumer alone, fed from memory, computes nearly all the time.
    assert!(
        runs.num(&runs.rows[2], "au_pct") > 95.0,
        "{:?}",
        runs.rows[2]
    );
    let report = prepbench(&["report", &dir.display().to_string(), "--quiet"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md.split("### Simulated training").nth(1).expect("section");
    assert!(section.contains("| resized | cold | 0 |"), "{section}");

    let (out, _work) = run_cv(&["--strategy", "resized", "--consumer", "batch=32"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("compute=TIME"), "{}", stderr(&out));
}

/// `prepbench run WORKLOAD` on the dataset under `work` with a bad-input policy.
fn run_with_policy(
    work: &Path,
    workload: &str,
    samples: &str,
    strategies: &str,
    policy: &str,
) -> Output {
    prepbench(&[
        "run",
        workload,
        "--strategy",
        strategies,
        "--samples",
        samples,
        "--threads",
        "2",
        "--shards",
        "2",
        "--epochs",
        "1",
        "--on-error",
        policy,
        "--verify",
        "--data-dir",
        &work.display().to_string(),
        "--store-dir",
        &work.join(format!("store-{policy}")).display().to_string(),
        "--out",
        &work.join(format!("out-{policy}")).display().to_string(),
        "--quiet",
        "--evict",
        "fadvise",
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
    let out = run_cv_in(work.path(), &["--strategy", "resized", "--epochs", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = work.path().join("out/runs.csv");
    let before = std::fs::read_to_string(&runs).unwrap();
    let store = small.join("store").display().to_string();
    for (codec, expect) in [
        ("none", "refused before writing"),
        ("gzip", "the disk filled up while writing"),
    ] {
        let out = prepbench(&[
            "run",
            "cv",
            "--strategy",
            "decoded",
            "--codec",
            codec,
            "--samples",
            SAMPLES,
            "--threads",
            "2",
            "--data-dir",
            &data_dir().display().to_string(),
            "--store-dir",
            &store,
            "--out",
            &work.path().join("out").display().to_string(),
            "--quiet",
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
