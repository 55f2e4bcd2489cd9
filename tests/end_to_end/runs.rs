//! `prepbench run` end to end: every strategy of a workload, stores reused across codecs, the
//! lists, the application cache, the simulated consumer, and results that round-trip.

use super::*;

#[test]
fn every_cv_strategy_runs_verifies_and_records_honest_metrics() {
    let work = run_cv_ok(&argv!["--verify --epochs 2 --evict fadvise"]);
    let csv = Csv::read(&work.path().join("out/runs.csv"));
    let strategies: Vec<String> = csv
        .rows
        .iter()
        .filter(|r| csv.col(r, "epoch") == "0")
        .map(|r| csv.col(r, "strategy"))
        .collect();
    assert_eq!(
        strategies.join(" "),
        "unprocessed concatenated decoded resized pixel-centered"
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
    // The allocator set-up the numbers were taken under (glibc's, tuned, unless the
    // environment set it).
    let allocator = manifest["build"]["allocator"].as_str().unwrap();
    if cfg!(target_env = "gnu") && !harness::results::system::malloc_set_by_user() {
        assert!(
            allocator.starts_with("glibc malloc: buffers up to 32 MiB from the heap"),
            "{allocator}"
        );
    } else {
        assert!(!allocator.is_empty());
    }
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
        let (out, work) = run_cv(&argv![
            "--strategy decoded,pixel-centered --codec",
            codec,
            "--verify --epochs 1 --evict fadvise --json"
        ]);
        assert!(out.status.success(), "{codec}: {}", stderr(&out));
        // A few samples read in hundredths of a second: said to be no figure to compare.
        assert!(
            stderr(&out).contains("2 of 2 epochs lasted under 1 s"),
            "{}",
            stderr(&out)
        );
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
            &argv![
                "--strategy decoded --codec",
                codec,
                "--json --epochs 1 --evict fadvise"
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

#[test]
fn the_application_cache_serves_later_epochs_or_says_it_does_not_fit() {
    let work = run_cv_ok(&argv!["--strategy resized --cache app --epochs 3 --verify"]);
    let runs = Csv::read(&work.path().join("out").join("runs.csv"));
    let caches: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "cache")).collect();
    assert_eq!(caches, ["app-fill", "app", "app"]);
    assert!(runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"));
    for row in &runs.rows[1..] {
        assert_eq!(runs.num(row, "samples"), SAMPLES.parse::<f64>().unwrap());
    }

    let (out, work) = run_cv(&argv![
        "--strategy resized --cache app --epochs 2 --app-cache-mb 1"
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

    let (out, _work) = run_cv(&argv!["--strategy unprocessed --cache app"]);
    fails_naming(&out, &["stores none"]);
}

/// The `deserialize` seconds of each epoch of the run in `out`, in epoch order.
fn deserialize_seconds(out: &Path) -> Vec<f64> {
    let stages = Csv::read(&out.join("stages.csv"));
    let rows = stages.rows.iter();
    rows.filter(|r| stages.col(r, "stage") == "deserialize")
        .map(|r| stages.num(r, "seconds"))
        .collect()
}

#[test]
fn the_application_cache_hands_on_what_it_holds_where_no_online_step_follows() {
    // The synthetic arrays' `decoded` is read only: its cached samples go to the consumer as
    // the cache holds them, as tf.data's `cache()` hands on its tensors, and verify as read.
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let (data, stores) = (work.path().join("data"), work.path().join("store"));
    let args = argv![
        "run synthetic-reading --strategy decoded --cache app --epochs 3 --verify --samples 40",
        "--quiet --data-dir",
        data.to_str().unwrap(),
        "--store-dir",
        stores.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let run = prepbench(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let runs = Csv::read(&out.join("runs.csv"));
    assert!(runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"));
    let served = deserialize_seconds(&out);
    assert_eq!(served.len(), 3, "{served:?}");
    assert!(served[0] > 0.0 && served[1..] == [0.0, 0.0], "{served:?}");
    // Where online steps follow (CV `resized`: centre and crop), each is cloned out of the
    // cache for them to consume, and that copy is timed.
    let work = run_cv_ok(&argv!["--strategy resized --cache app --epochs 2"]);
    let cloned = deserialize_seconds(&work.path().join("out"));
    assert!(cloned.len() == 2 && cloned[1] > 0.0, "{cloned:?}");
}

/// Runs that measure different things never pool in one cell: another definition of a
/// workload's name is refused before anything is written, and runs of another size are kept
/// out of the cell and named where its figures are read.
#[test]
fn another_definition_is_refused_and_another_size_kept_apart() {
    let work = run_cv_ok(&argv!["--strategy resized"]);
    let runs = work.path().join("out/runs.csv");
    let before = std::fs::read(&runs).unwrap();
    let changed = work.path().join("cv.yaml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads/defs/cv.yaml"),
    )
    .unwrap();
    assert!(text.contains("height: 224"));
    std::fs::write(&changed, text.replace("height: 224", "height: 200")).unwrap();
    let args = argv![
        "run",
        changed.to_str().unwrap(),
        "--strategy resized --samples",
        SAMPLES,
        "--threads 2 --shards 4 --quiet --data-dir",
        data_dir().to_str().unwrap(),
        "--store-dir",
        work.path().join("store").to_str().unwrap(),
        "--out",
        work.path().join("out").to_str().unwrap()
    ];
    fails_naming(
        &prepbench(&args),
        &[
            "holds runs of workload `cv`",
            "other steps",
            "another --out",
        ],
    );
    assert_eq!(std::fs::read(&runs).unwrap(), before);

    // Another sample count into the same folder: recorded, but the older size is left out of
    // the cell, and recommend says so.
    let args = argv![
        "run cv --strategy resized --samples 12 --threads 2 --shards 4 --quiet --data-dir",
        data_dir().to_str().unwrap(),
        "--store-dir",
        work.path().join("store").to_str().unwrap(),
        "--out",
        work.path().join("out").to_str().unwrap()
    ];
    let out = prepbench(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec = prepbench(&argv![
        "recommend",
        work.path().join("out").to_str().unwrap()
    ]);
    let text = String::from_utf8_lossy(&rec.stdout);
    assert!(text.contains("left out"), "{text}");
    assert!(
        text.contains("where the cell's latest runs read 12"),
        "{text}"
    );
    assert!(text.contains("epochs of 12 samples"), "{text}");
}

/// Nothing prepbench writes lands in a dataset: not a report's folder, not a picture of a
/// sample, not a run's results, in the dataset the runs read or in any generated one.
#[test]
fn reports_pictures_and_results_are_refused_inside_a_dataset() {
    let work = run_cv_ok(&argv!["--strategy resized"]);
    let dataset = data_dir().join("imagenet-seed0");
    assert!(dataset.join(datasets::MARKER).is_file());
    let before = walk(&dataset).len();
    let out = work.path().join("out");
    let inside = dataset.join("train").join("report-here");
    fails_naming(
        &prepbench(&argv![
            "report",
            out.to_str().unwrap(),
            "--out",
            inside.to_str().unwrap()
        ]),
        &["inside the dataset", "report folder"],
    );
    fails_naming(
        &prepbench(&argv![
            "show cv --after resized --data-dir",
            data_dir().to_str().unwrap(),
            "--out",
            dataset.join("x.png").to_str().unwrap()
        ]),
        &["--out", "inside the dataset"],
    );
    // Another workload's generated dataset (it has the marker) is a dataset too.
    let ran = prepbench(&argv![
        "run cv --strategy resized --samples",
        SAMPLES,
        "--quiet --data-dir",
        work.path().join("other-data").to_str().unwrap(),
        "--store-dir",
        work.path().join("store").to_str().unwrap(),
        "--out",
        inside.to_str().unwrap()
    ]);
    fails_naming(&ran, &["the results directory", "inside the dataset"]);
    assert_eq!(
        walk(&dataset).len(),
        before,
        "nothing was written into the dataset"
    );
}

#[test]
fn a_simulated_consumer_reports_utilisation_beside_its_null_io_control() {
    let work = run_cv_ok(&argv![
        "--strategy resized --consumer batch=32,compute=100ms"
    ]);
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
    prepbench_ok(&["report", &dir.display().to_string(), "--quiet"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md.split("### Simulated training").nth(1).expect("section");
    assert!(section.contains("| resized | cold | 0 |"), "{section}");

    let (out, _work) = run_cv(&argv!["--strategy resized --consumer batch=32"]);
    fails_naming(&out, &["compute=TIME"]);
}

/// A workload named with a comma, a quote and a newline: runs.csv quotes it, and `report`,
/// `recommend` and the typed reader read it back whole.
#[test]
fn a_workload_name_with_a_comma_a_quote_and_a_newline_is_written_and_read_back() {
    let work = tempfile::tempdir().unwrap();
    let yaml = workloads::BUILTIN
        .iter()
        .find(|(name, _)| *name == "cv")
        .unwrap()
        .1;
    let odd = "my, \"odd\"\nworkload";
    let renamed: String = yaml
        .lines()
        .map(|l| {
            if l.starts_with("name:") {
                "name: \"my, \\\"odd\\\"\\nworkload\"".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let file = work.path().join("odd.yaml");
    std::fs::write(&file, renamed).unwrap();
    let out = work.path().join("out");
    prepbench_ok(&argv![
        "run",
        &file.display().to_string(),
        "--strategy unprocessed,resized --epochs 2 --samples",
        SAMPLES,
        "--evict fadvise --data-dir",
        &data_dir().display().to_string(),
        "--store-dir",
        &work.path().join("store").display().to_string(),
        "--out",
        &out.display().to_string(),
        "--quiet"
    ]);
    let runs = Csv::read(&out.join("runs.csv"));
    assert_eq!(runs.rows.len(), 4);
    assert!(runs.rows.iter().all(|r| runs.col(r, "workload") == odd));
    prepbench_ok(&["report", &out.display().to_string()]);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.matches("\"my, \"\"odd\"\"\nworkload\"").count(), 4);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("my, \"odd\""), "{md}");
    prepbench_ok(&["recommend", &out.display().to_string()]);
}

/// `run WORKLOAD --verify` of a workload whose strategies are unprocessed, concatenated,
/// decoded and resized, into `work/out`: every strategy recorded with `samples` samples.
fn every_split_verified(work: &Path, workload: &Path, extra: &[&str], samples: f64) {
    let mut args = common::run_in(
        work,
        workload,
        "--verify --epochs 1 --threads 2 --quiet --evict fadvise",
    );
    args.extend(extra.iter().map(|a| a.to_string()));
    let out = prepbench_ok(&args);
    assert!(!stderr(&out).contains("error"), "{}", stderr(&out));
    let runs = Csv::read(&work.join("out/runs.csv"));
    assert_eq!(
        runs.rows.len(),
        4,
        "unprocessed, concatenated, decoded, resized"
    );
    for row in &runs.rows {
        assert_eq!(runs.num(row, "samples"), samples);
    }
}

/// `--min-epoch-s` on a folder of your own files: stores cycle over the folder, `unprocessed`
/// reads what the folder holds (it cannot cycle and is never added to), and `recommend`
/// plans for the folder's size with offline time per sample processed.
#[test]
fn epochs_sized_by_time_on_your_own_folder_read_what_it_holds() {
    let work = tempfile::tempdir().unwrap();
    let mine = work.path().join("mine");
    let jpegs: Vec<_> = walk(data_dir())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "JPEG"))
        .collect();
    for (i, jpeg) in jpegs.iter().take(8).enumerate() {
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::copy(jpeg, mine.join(format!("{i}.JPEG"))).unwrap();
    }
    let yaml = format!(
        "name: mine\ndataset:\n  kind: files\n  path: {}\n  samples: 8\nsteps:\n  - name: \
         concatenated\n    op: read_file\n  - name: decoded\n    op: decode_jpeg\n  - name: \
         resized\n    op: resize_shorter\n    params: {{size: 64}}\n",
        mine.display()
    );
    let w = work.path().join("mine.yaml");
    std::fs::write(&w, yaml).unwrap();
    let before = walk(&mine);
    let out = work.path().join("out");
    prepbench_ok(&argv![
        "sweep",
        w.to_str().unwrap(),
        "--strategies unprocessed,resized --samples 8 --min-epoch-s 0.3 --trials 2 --threads 2 --quiet --evict fadvise --store-dir",
        work.path().join("store").to_str().unwrap(),
        "--out",
        out.to_str().unwrap()
    ]);
    assert_eq!(walk(&mine), before, "the folder is never added to");
    let runs = Csv::read(&out.join("runs.csv"));
    let samples = |strategy: &str| -> Vec<f64> {
        runs.rows
            .iter()
            .filter(|r| runs.col(r, "strategy") == strategy)
            .map(|r| runs.num(r, "samples") / runs.num(r, "passes"))
            .collect()
    };
    assert!(
        samples("unprocessed").iter().all(|n| *n == 8.0),
        "{:?}",
        samples("unprocessed")
    );
    let stored = samples("resized");
    assert!(
        stored.iter().all(|n| *n > 8.0),
        "the store cycles: {stored:?}"
    );
    let rec = prepbench_ok(&["recommend", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&rec.stdout);
    assert!(
        text.contains("epochs of 8 samples (the dataset as `unprocessed` read it"),
        "{text}"
    );
    // Eight files read in milliseconds: the raw figure is always a hint, said as what it is.
    assert!(
        text.contains("`unprocessed` reads the dataset's 8 samples as they are")
            && text.contains("never your own folder"),
        "{text}"
    );
    // Offline time per sample processed: the cycled store processed the 8 items once (later
    // cycles write the same outputs again), so the plan for 8 samples carries its measured
    // offline time, not 8 / records of it.
    let offline = Csv::read(&out.join("offline.csv"));
    let measured: Vec<f64> = offline
        .rows
        .iter()
        .map(|r| offline.num(r, "offline_s"))
        .collect();
    let mean = measured.iter().sum::<f64>() / measured.len() as f64;
    let ranked = prepbench_ok(&["recommend", out.to_str().unwrap(), "--csv"]);
    let path = work.path().join("ranked.csv");
    std::fs::write(&path, &ranked.stdout).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let resized = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f[at("strategy")] == "resized")
        .unwrap();
    let planned: f64 = resized[at("offline_s")].parse().unwrap();
    assert!(
        (planned - mean).abs() <= 1e-6 * mean.max(1e-9),
        "{planned} against {mean} measured"
    );
}

#[test]
fn a_folder_of_your_own_files_is_read_as_image_folder_and_every_split_verifies() {
    let work = tempfile::tempdir().unwrap();
    let mine = work.path().join("my photos");
    // Someone's folder: two classes of JPEGs under their own names, a stray note, a hidden file.
    let jpegs: Vec<_> = walk(data_dir())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "JPEG"))
        .collect();
    for (i, jpeg) in jpegs.iter().take(6).enumerate() {
        let class = if i % 2 == 0 { "cats" } else { "dogs" };
        let to = mine.join(class).join(format!("IMG_{}.JPEG", 10 - i));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(jpeg, &to).unwrap();
    }
    std::fs::write(mine.join("README.txt"), "my notes").unwrap();
    std::fs::write(mine.join("cats/.DS_Store"), "x").unwrap();
    let yaml = format!(
        "name: my-photos\npaper: cv\ndataset:\n  kind: files\n  path: {}\n  samples: 6\n  options: {{glob: \
         \"**/*.JPEG\", label: parent}}\nsteps:\n  - name: concatenated\n    op: read_file\n  \
         - name: decoded\n    op: decode_jpeg\n  - name: resized\n    op: resize_shorter\n    \
         params: {{size: 64}}\n",
        mine.display()
    );
    let w = work.path().join("mine.yaml");
    std::fs::write(&w, yaml).unwrap();
    prepbench_ok(&["validate", w.to_str().unwrap()]);
    let before: Vec<_> = walk(&mine);
    every_split_verified(work.path(), &w, &[], 6.0);
    // The folder is read, never written into.
    assert_eq!(walk(&mine), before);
    // A `paper:` key copied onto another pipeline and other data compares nothing with the
    // paper: the report leads with the recommendation for this workload.
    prepbench_ok(&[
        "report",
        work.path().join("out").to_str().unwrap(),
        "--quiet",
    ]);
    let md = std::fs::read_to_string(work.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Recommendation: my-photos"), "{md}");
    for absent in [
        "## Paper comparison",
        "paper GB",
        "Kendall",
        "Reproduces the paper",
    ] {
        assert!(!md.contains(absent), "{absent:?} in {md}");
    }
    // The same folder through --dataset, on a workload that names none: the same samples.
    let plain = w.to_str().unwrap().replace("mine.yaml", "plain.yaml");
    let text = std::fs::read_to_string(&w).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("path:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&plain, without).unwrap();
    prepbench_ok(&argv![
        "run",
        &plain,
        "--strategy resized --epochs 1 --quiet --evict fadvise --dataset",
        mine.to_str().unwrap(),
        "--store-dir",
        work.path().join("store").to_str().unwrap(),
        "--out",
        work.path().join("out2").to_str().unwrap()
    ]);
    let runs = Csv::read(&work.path().join("out2/runs.csv"));
    assert_eq!(runs.num(&runs.rows[0], "samples"), 6.0);
    let manifest = std::fs::read_to_string(work.path().join("out2/manifest.json")).unwrap();
    assert!(
        manifest.contains("my photos"),
        "the manifest names the dataset read"
    );
    // The first sample's label comes from its class folder.
    let listed = prepbench_ok(&["show", w.to_str().unwrap(), "--list", "--sample", "1"]);
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(text.contains("label"), "{text}");
    // Without a path, `files` has nothing to read, and says so before doing anything.
    let bare = work.path().join("bare.yaml");
    std::fs::write(
        &bare,
        "name: bare\ndataset: {kind: files}\nsteps:\n  - name: concatenated\n    op: read_file\n",
    )
    .unwrap();
    fails_naming(
        &prepbench(&["validate", bare.to_str().unwrap()]),
        &["bare.yaml:2", "dataset.path", "no generator"],
    );
}

/// WebDataset shards: generated ones read back sample by sample through every split with
/// `--verify`, the span read as one range; a folder of the user's own shards is read as it is.
#[test]
fn webdataset_shards_are_read_by_key_through_every_strategy() {
    let work = tempfile::tempdir().unwrap();
    let yaml = "name: wds\ndataset:\n  kind: webdataset\n  samples: 12\nsteps:\n  - name: \
                concatenated\n    op: read_webdataset\n    params: {keep: jpg, label: cls}\n  - \
                name: decoded\n    op: decode_jpeg\n    params: {from: jpg}\n  - name: resized\n    \
                op: resize_shorter\n    params: {size: 32}\n";
    let w = work.path().join("wds.yaml");
    std::fs::write(&w, yaml).unwrap();
    prepbench_ok(&["validate", w.to_str().unwrap()]);
    let data = work.path().join("data");
    every_split_verified(
        work.path(),
        &w,
        &["--data-dir", data.to_str().unwrap()],
        12.0,
    );
    // One shard of 100 samples was generated; the first 12 are read.
    let shards = find_files(&data, "shard-000000.tar");
    assert_eq!(shards.len(), 1);
    // The same shard as the user's own data, beside a stray file and a second, partial shard
    // made by cutting the first at a member boundary.
    let mine = work.path().join("my shards");
    std::fs::create_dir_all(mine.join("train")).unwrap();
    std::fs::copy(&shards[0], mine.join("train/a.tar")).unwrap();
    std::fs::write(mine.join("train/notes.md"), "not a shard").unwrap();
    let shown = prepbench_ok(&argv![
        "show",
        w.to_str().unwrap(),
        "--list --sample 3 --dataset",
        mine.to_str().unwrap()
    ]);
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(text.contains("| jpg |") && text.contains("label"), "{text}");
    // A shard cut short is refused naming it, before anything is measured.
    let bytes = std::fs::read(mine.join("train/a.tar")).unwrap();
    std::fs::write(mine.join("train/b.tar"), &bytes[..bytes.len() / 2 + 100]).unwrap();
    fails_naming(
        &prepbench(&argv![
            "run",
            w.to_str().unwrap(),
            "--epochs 1 --quiet --dataset",
            mine.to_str().unwrap(),
            "--store-dir",
            work.path().join("store").to_str().unwrap(),
            "--out",
            work.path().join("out2").to_str().unwrap()
        ]),
        &["b.tar"],
    );
    let runs = work.path().join("out2/runs.csv");
    assert!(
        !runs.exists() || Csv::read(&runs).rows.is_empty(),
        "nothing was measured"
    );
}
