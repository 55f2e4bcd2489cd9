//! Every reference workload by domain (images, detection, audio, time series, text, synthetic),
//! verified against fully-online processing, and the shards read by an independent reader.

use super::*;

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
        let work = run_cv_ok(&argv![
            "--strategy resized --codec",
            codec,
            "--epochs 1 --evict fadvise"
        ]);
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
            strategies.join(" "),
            "unprocessed concatenated decoded stft magnitude mel spectrogram-encoded"
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
        &argv!["--samples 360 --strategy unprocessed,aggregated"],
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
        strategies.join(" "),
        "unprocessed concatenated decoded bpe-encoded embedded"
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
    let out = prepbench(&argv![
        "run nlp --strategy unprocessed --samples 6 --evict fadvise --quiet --data-dir",
        &work.path().join("data").display().to_string(),
        "--store-dir",
        &work.path().join("store").display().to_string(),
        "--out",
        &work.path().join("bad").display().to_string()
    ]);
    fails_naming(&out, &["2.txt", "not valid UTF-8", "step `decoded`"]);
}

#[test]
fn synthetic_sizes_are_swept_as_variants_and_judge_finding_5() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    prepbench_ok(&argv!["sweep synthetic-reading --dataset-mb 0.3 --threads 1 --trials 1 --epochs 1 --shards 2 --evict fadvise --quiet --data-dir", &work.path().join("data").display().to_string(), "--store-dir", &work.path().join("store").display().to_string(), "--out", &out.display().to_string()]);
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
    prepbench_ok(&["report", &out.display().to_string(), "--quiet"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## synthetic-reading\n"), "{md}");
    assert!(md.contains("| mb_per_sample=20.48 | 1 |"), "{md}");
    // Finding 5 is judged on the materialized records, smallest size against largest; epochs
    // this short are not judged, and say so.
    let five = &md[md.find("### Finding 5").unwrap()..];
    assert!(
        five.contains("synthetic-reading/decoded: 20.48 MB over 0.01 MB samples, MB/s"),
        "{five}"
    );
    assert!(five.contains("under the 1 s floor"), "{five}");
}
