//! End-to-end tests of sweeps (interrupted with SIGKILL and resumed), reports, recommendations
//! and comparisons, on a small generated dataset.

#[macro_use]
mod common;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{data_dir, prepbench, prepbench_ok, stderr, Csv, SAMPLES};

fn sweep_args(out: &Path, store: &Path) -> Vec<String> {
    argv![
        "sweep cv --samples",
        SAMPLES,
        "--trials 2 --threads 1,2 --codecs none,gzip --epochs 2 --shards 2 --evict fadvise",
        "--quiet --data-dir",
        data_dir().to_str().unwrap(),
        "--store-dir",
        store.to_str().unwrap(),
        "--out",
        out.to_str().unwrap()
    ]
}

/// (run_id, epoch) of every row, and whether every line is whole.
fn rows(out: &Path) -> (Vec<(String, String)>, bool) {
    let text = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let header_fields = text.lines().next().unwrap().split(',').count();
    let whole = text.ends_with('\n') && text.lines().all(|l| l.split(',').count() == header_fields);
    let epoch = text
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|c| c == "epoch")
        .unwrap();
    let keys = text.lines().skip(1).map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        (f[0].to_string(), f[epoch].to_string())
    });
    (keys.collect(), whole)
}

fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_sweep_killed_midway_resumes_to_the_same_rows_without_duplicates() {
    let work = tempfile::tempdir().unwrap();
    // The uninterrupted reference.
    let (full, store) = (work.path().join("full"), work.path().join("store"));
    prepbench_ok(&sweep_args(&full, &store));
    let (expected, whole) = rows(&full);
    // unprocessed: 2 threads x 2 trials; 4 stored strategies x 2 codecs x 2 threads x 2 trials;
    // 2 epochs each.
    assert_eq!(expected.len(), (4 + 32) * 2);
    assert!(whole);

    // The same sweep with its own store, killed with SIGKILL five times (once some runs are
    // recorded, then at random moments: generation is shared, but materialization, online
    // runs and appends are all hit), then run again to the end.
    let killed = work.path().join("killed");
    let store = work.path().join("store-killed");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_prepbench"))
            .args(sweep_args(&killed, &store))
            .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
            .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
            .spawn()
            .unwrap()
    };
    let mut child = spawn();
    let start = Instant::now();
    while line_count(&killed.join("runs.csv")) < 9 && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = line_count(&killed.join("runs.csv")) - 1;
    assert!(
        partial < expected.len(),
        "the sweep finished before it could be killed"
    );
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    let mut state = seed | 1;
    let mut delays = Vec::new();
    for _ in 0..4 {
        // xorshift: a delay of 0 to 1.5 s.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let delay = Duration::from_millis(state % 1500);
        delays.push(delay);
        let mut child = spawn();
        std::thread::sleep(delay);
        let _ = child.kill();
        child.wait().unwrap();
        let (_, whole) = rows(&killed);
        assert!(
            whole,
            "only whole lines after a kill at {delay:?} (seed {seed})"
        );
    }
    eprintln!("killed after {delays:?}");
    prepbench_ok(&sweep_args(&killed, &store));
    let (resumed, whole) = rows(&killed);
    assert!(whole, "only whole lines");
    for table in ["samples.csv", "stages.csv", "offline.csv"] {
        let text = std::fs::read_to_string(killed.join(table)).unwrap();
        assert!(text.ends_with('\n'), "{table} ends on a whole line");
    }
    assert_eq!(resumed.len(), expected.len());
    let unique: HashSet<_> = resumed.iter().collect();
    assert_eq!(unique.len(), resumed.len(), "no duplicated run and epoch");
    assert_eq!(
        unique,
        expected.iter().collect::<HashSet<_>>(),
        "the same runs as the uninterrupted sweep"
    );
    // A third call has nothing left to do.
    prepbench_ok(&sweep_args(&killed, &store));
    assert_eq!(rows(&killed).0.len(), expected.len());

    // Offline time split into processing and writing, CPU per sample, for every store.
    let offline = Csv::read(&full.join("offline.csv"));
    for row in &offline.rows {
        if offline.col(row, "offline_reused") == "false" {
            let num = |name: &str| offline.num(row, name);
            assert!(
                num("processing_s") > 0.0 && num("writing_s") > 0.0,
                "{row:?}"
            );
            assert!(num("cpu_s_per_sample") > 0.0, "{row:?}");
        }
    }

    // The report of a complete sweep: tables, paper figures, findings, Kendall tau, plots.
    let dir = full.display().to_string();
    prepbench_ok(&["report", &dir, "--quiet"]);
    let md = std::fs::read_to_string(full.join("report.md")).unwrap();
    for needle in [
        "### Strategies",
        "### Compression",
        "### Caching",
        "### Thread scaling",
        "| resized |",
        "1789 -> 1808",
        "Kendall tau",
        "## Paper comparison",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    for n in 1..=6 {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("### Finding {n}: ")))
            .unwrap_or_else(|| panic!("finding {n} missing"));
        assert!(
            [
                "reproduced",
                "not reproduced",
                "contradicted",
                "not testable here"
            ]
            .iter()
            .any(|v| line.contains(&format!(": {v}"))),
            "{line}"
        );
    }
    // Its sub-claims each carry a verdict; these epochs (tens of milliseconds) are under the
    // floor, so they say so instead of judging.
    assert!(md.contains("- **1a** "), "{md}");
    assert!(md.contains("under the 1 s floor"), "{md}");
    let summary = std::fs::read_to_string(full.join("summary.csv")).unwrap();
    // 18 settings (2 unprocessed + 4 strategies x 2 codecs x 2 threads) x 2 epochs; trials
    // are aggregated into their cell.
    assert_eq!(summary.lines().count(), 1 + 18 * 2, "a row per cell");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(full.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["findings"].as_array().unwrap().len(), 6);
    for plot in [
        "cv-tradeoff.svg",
        "cv-threads.svg",
        "cv-codecs.svg",
        "cv-cache.svg",
    ] {
        let svg = std::fs::read_to_string(full.join("plots").join(plot)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("samples/s"),
            "{plot}"
        );
    }

    // Recommendation and comparison read the same folders.
    let out = prepbench_ok(&argv!["recommend", &dir, "--epochs 3 --weights 1,0,1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("**Recommendation: `") && text.contains("Pareto"),
        "{text}"
    );
    let out = prepbench_ok(&["compare", &dir, &killed.display().to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let every = text.split("## Every pair").nth(1).unwrap_or_default();
    assert_eq!(every.matches("| cv |").count(), 36, "{text}");
    // Epochs of tens of milliseconds are shown, not judged.
    assert!(
        text.contains("epochs too short") && !text.contains("**faster**"),
        "{text}"
    );
    // One sweep against itself across threads (2 against 1), as JSON and as CSV, with a plot.
    let plot = full.join("threads-ratio.svg");
    let out = prepbench_ok(&argv![
        "compare",
        &dir,
        &dir,
        "--across threads --values 1,2 --json --plot",
        plot.to_str().unwrap()
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let changes = json["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 18, "one pair per setting but threads");
    for c in changes {
        assert_eq!(
            (c["a_value"].as_str(), c["b_value"].as_str()),
            (Some("1"), Some("2"))
        );
        assert!(c["ratio"].as_f64().unwrap() > 0.0);
        if let Some(lo) = c["ci95_lo"].as_f64() {
            assert!(lo > 0.0, "{c}");
        }
    }
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("across threads (1 → 2)") && svg.matches("<circle").count() >= 18);
    let out = prepbench_ok(&argv![
        "compare",
        &dir,
        &dir,
        "--across codec --values none,gzip --csv"
    ]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.starts_with("workload,storage,consumer,strategy,codec,"),
        "{csv}"
    );
    assert_eq!(
        csv.lines().count(),
        1 + 16,
        "4 stored strategies x 2 threads x 2 epochs"
    );
    // What cannot pair says why, and how to pair it.
    let out = prepbench(&["compare", &dir, &dir, "--across", "threads"]);
    assert!(
        !out.status.success() && stderr(&out).contains("--values A_VALUE,B_VALUE"),
        "{}",
        stderr(&out)
    );
    let out = prepbench(&argv![
        "compare",
        &dir,
        &dir,
        "--across codec --values none,zstd"
    ]);
    assert!(
        stderr(&out).contains("has no cells with codec zstd:3; it has gzip:6, none"),
        "{}",
        stderr(&out)
    );

    // The stores the sweeps left: listed, and removed only as asked.
    let store = store.to_str().unwrap();
    let listed = |store: &str| -> Vec<serde_json::Value> {
        let out = prepbench_ok(&["store", "list", "--store-dir", store, "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let complete = |stores: &[serde_json::Value], strategy: &str| {
        stores
            .iter()
            .filter(|s| s["state"] == "complete" && s["strategy"] == strategy)
            .count()
    };
    let before = listed(store);
    assert_eq!(complete(&before, "resized"), 2, "none and gzip: {before:?}");
    assert!(before.iter().all(|s| s["bytes"].as_u64().unwrap() > 0));
    let out = prepbench(&["store", "remove", "--store-dir", store]);
    assert!(
        !out.status.success() && stderr(&out).contains("say which stores to remove"),
        "{}",
        stderr(&out)
    );
    let out = prepbench_ok(&argv![
        "store remove --strategy resized --dry-run --store-dir",
        store
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Would remove these 2 stores"));
    assert_eq!(
        listed(store).len(),
        before.len(),
        "a dry run removes nothing"
    );
    prepbench_ok(&argv!["store remove --strategy resized --store-dir", store]);
    let after = listed(store);
    assert_eq!(complete(&after, "resized"), 0);
    assert_eq!(after.len(), before.len() - 2, "only what was asked");
}

#[test]
fn bad_results_folders_are_clear_errors() {
    let work = tempfile::tempdir().unwrap();
    let out = prepbench(&["report", &work.path().display().to_string()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("holds no prepbench results"),
        "{}",
        stderr(&out)
    );
    std::fs::write(work.path().join("runs.csv"), "run_id,workload\nx,cv\n").unwrap();
    let out = prepbench(&["recommend", &work.path().display().to_string()]);
    assert!(
        !out.status.success() && stderr(&out).contains("no column"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_sweep_calibrates_reports_its_roofline_and_whatif_predicts_from_it() {
    let work = tempfile::tempdir().unwrap();
    let (out, store) = (work.path().join("out"), work.path().join("store"));
    let (out_s, store_s) = (out.display().to_string(), store.display().to_string());
    let data = data_dir().display().to_string();
    prepbench_ok(&argv!["sweep cv --samples", SAMPLES, "--strategies unprocessed,resized,pixel-centered --trials 1 --threads 1,2 --epochs 1 --cache cold,warm --shards 2 --data-dir", &data, "--store-dir", &store_s, "--out", &out_s, "--evict fadvise --quiet"]);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let cal = &manifest["calibration"];
    // Every calibration's samples: each of its passes reads the sweep's samples.
    let per_pass: u64 = SAMPLES.parse().unwrap();
    assert!(
        cal["machine"]["seq_read_mb_s"].as_f64().unwrap() > 0.0,
        "{cal}"
    );
    for strategy in ["unprocessed", "resized", "pixel-centered"] {
        let s = &cal["strategies"][format!("cv/{strategy}/none")];
        assert!(
            s["bytes_per_sample"].as_f64().unwrap() > 0.0,
            "{strategy}: {s}"
        );
        let steps: f64 = s["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_f64().unwrap())
            .sum();
        assert!(steps > 0.0, "{strategy}: online steps cost CPU time: {s}");
        // Its warm pass repeats until the calibration has lasted half a second: costs per
        // sample come from every pass, bytes per sample from one. One pass is enough only
        // where it lasted that long (40 JPEGs decoded on a machine busy with other tests).
        let samples = s["samples"].as_u64().unwrap();
        let per_sample = ["read_s", "decompress_s", "deserialize_s"]
            .iter()
            .map(|k| s[k].as_f64().unwrap())
            .sum::<f64>()
            + steps;
        let lasted = per_sample * samples as f64 + s["epoch_s"].as_f64().unwrap();
        assert!(
            samples.is_multiple_of(per_pass) && (samples > per_pass || lasted >= 0.45),
            "{strategy}: {s}"
        );
        assert_eq!(
            s["passes"].as_u64(),
            Some(samples / per_pass),
            "{strategy}: {s}"
        );
    }
    let runs = Csv::read(&out.join("runs.csv"));
    let resized = runs
        .rows
        .iter()
        .find(|r| runs.col(r, "strategy") == "resized")
        .unwrap();
    let stored = runs.num(resized, "storage_bytes");
    let per_sample = cal["strategies"]["cv/resized/none"]["bytes_per_sample"]
        .as_f64()
        .unwrap();
    assert!(
        (per_sample * per_pass as f64 / stored - 1.0).abs() < 1e-6,
        "{per_sample} B a sample, a store of {stored} B"
    );
    // Decoding JPEG online costs more per sample than cropping a stored, centred image.
    let steps_of = |k: &str| -> f64 {
        cal["strategies"][k]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_f64().unwrap())
            .sum()
    };
    assert!(steps_of("cv/unprocessed/none") > steps_of("cv/pixel-centered/none"));

    prepbench_ok(&["report", &out_s, "--quiet"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### Roofline"), "{md}");
    assert!(md.contains("## Prediction model"), "{md}");
    // 3 strategies x 2 threads x 2 caches = 12 cells, less the 3 one-thread warm cells run as
    // the calibration was: 9 configurations, each of epochs far under a second (40 samples),
    // so all are shown in the roofline table and none is validated against.
    assert!(
        md.contains("9 configurations with epochs under 1 s are left out"),
        "{md}"
    );
    assert!(md.contains("| resized |"), "{md}");
    assert!(out.join("plots/cv-roofline.svg").exists());

    let paper = prepbench_ok(&["whatif", &out_s, "--profile", "paper"]);
    let text = String::from_utf8_lossy(&paper.stdout);
    assert!(text.contains("Recommended: **"), "{text}");
    assert!(text.contains("Paper's measured ranking"), "{text}");
    assert!(text.contains("| read MB/s \\ cores |"), "{text}");
    // Much slower storage and more cores: the storage bound binds somewhere.
    let slow = prepbench_ok(&argv!["whatif", &out_s, "--cores 16 --read-mbps 5"]);
    assert!(String::from_utf8_lossy(&slow.stdout).contains("| storage |"));
    // The default codec named gives the recommendation; a codec not swept is refused, naming
    // those that were (`zstd` is read as `zstd:3`).
    let none = prepbench_ok(&argv!["whatif", &out_s, "--codec none"]);
    assert!(String::from_utf8_lossy(&none.stdout).contains("Recommended: **"));
    let zstd = prepbench(&argv!["whatif", &out_s, "--codec zstd"]);
    assert!(!zstd.status.success());
    assert!(
        stderr(&zstd).contains("calibrated no strategy with codec `zstd:3`; it has: none"),
        "{}",
        stderr(&zstd)
    );

    // A folder swept without calibration says what to run.
    let bare = work.path().join("bare");
    prepbench_ok(&argv![
        "sweep cv --samples",
        SAMPLES,
        "--strategies resized --trials 1 --threads 1 --epochs 1 --shards 2 --data-dir",
        &data,
        "--store-dir",
        &store_s,
        "--out",
        &bare.display().to_string(),
        "--no-calibrate --quiet"
    ]);
    let missing = prepbench(&["whatif", &bare.display().to_string()]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("has no calibration: run `prepbench calibrate"),
        "{}",
        stderr(&missing)
    );
    // ... which `prepbench calibrate` then adds.
    let calibrate = prepbench_ok(&argv![
        "calibrate cv --samples",
        SAMPLES,
        "--strategies resized --shards 2 --data-dir",
        &data,
        "--store-dir",
        &store_s,
        "--out",
        &bare.display().to_string()
    ]);
    assert!(String::from_utf8_lossy(&calibrate.stdout).contains("cv/resized/none"));
    prepbench_ok(&["whatif", &bare.display().to_string()]);
}

fn small_sweep(out: &Path, store: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = argv![
        "sweep cv --samples",
        SAMPLES,
        "--strategies unprocessed,resized,pixel-centered --codecs none,gzip --trials 1",
        "--threads 1,2 --epochs 1 --shards 2 --no-calibrate --quiet --data-dir",
        data_dir().to_str().unwrap(),
        "--store-dir",
        store.to_str().unwrap(),
        "--out",
        out.to_str().unwrap()
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_ids(out: &Path) -> std::collections::BTreeSet<String> {
    rows(out).0.into_iter().map(|(id, _)| id).collect()
}

#[test]
fn sharded_sweeps_merge_into_the_cells_of_one_unsharded_sweep() {
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    let whole = work.path().join("whole");
    let run = |args: Vec<String>, env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_prepbench"));
        c.args(&args)
            .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
            .env("PREPBENCH_HEAVY_LOAD_PCT", "1000");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    };
    run(small_sweep(&whole, &store, &[]), &[]);
    let expected = run_ids(&whole);
    assert_eq!(
        expected.len(),
        10,
        "unprocessed 2 + two stored strategies x 2 codecs x 2"
    );

    // Shard 0 from --shard, shard 1 from Open MPI's variables (as under mpirun).
    let sharded = work.path().join("sharded");
    run(small_sweep(&sharded, &store, &["--shard", "0/2"]), &[]);
    run(
        small_sweep(&sharded, &store, &[]),
        &[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")],
    );
    let (a, b) = (
        run_ids(&sharded.join("shard-0-of-2")),
        run_ids(&sharded.join("shard-1-of-2")),
    );
    assert!(!a.is_empty() && !b.is_empty(), "both shards have cells");
    assert!(a.is_disjoint(&b), "each cell has one owner");

    let refused = |dirs: &[&Path], out: &str, expected: &str| {
        let mut args: Vec<String> = vec!["merge".into()];
        args.extend(dirs.iter().map(|d| d.display().to_string()));
        args.extend([
            "--out".to_string(),
            work.path().join(out).display().to_string(),
        ]);
        let merge = prepbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(!merge.status.success(), "{args:?}");
        assert!(stderr(&merge).contains(expected), "{}", stderr(&merge));
    };
    // One shard alone does not merge.
    refused(
        &[&sharded.join("shard-0-of-2")],
        "lone",
        "1 of the 2 shards missing: 1;",
    );
    // A shard of another configuration does not either.
    let other = work.path().join("other");
    let mut args = small_sweep(&other, &store, &["--shard", "1/2"]);
    let i = args.iter().position(|a| a == "none,gzip").unwrap();
    args[i] = "none".into();
    run(args, &[]);
    refused(
        &[&sharded.join("shard-0-of-2"), &other.join("shard-1-of-2")],
        "mixed",
        "not shards of one sweep",
    );

    prepbench_ok(&["merge", &sharded.display().to_string(), "--quiet"]);
    assert_eq!(
        run_ids(&sharded),
        expected,
        "the merged cells are the unsharded sweep's"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sharded.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["merged_from"].as_array().unwrap().len(), 2);
    assert!(manifest.get("shard").is_none());
    prepbench_ok(&["report", &sharded.display().to_string(), "--quiet"]);
    // Merging again into a folder with results is refused.
    let again = prepbench(&["merge", &sharded.display().to_string()]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("already holds results"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn mpirun_with_two_ranks_then_merge_gives_the_unsharded_cells() {
    let mpirun = or_skip!(common::mpirun());
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    let whole = work.path().join("whole");
    let d = work.path().join("d");
    let unsharded = prepbench(
        &small_sweep(&whole, &store, &[])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(unsharded.status.success(), "{}", stderr(&unsharded));
    // Both ranks start at once and share the data and store directories, as on a cluster's
    // shared filesystem.
    let ranks = Command::new(mpirun)
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(env!("CARGO_BIN_EXE_prepbench"))
        .args(small_sweep(&d, &store, &[]))
        .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
        .output()
        .unwrap();
    assert!(ranks.status.success(), "{}", stderr(&ranks));
    assert!(d.join("shard-0-of-2").exists() && d.join("shard-1-of-2").exists());
    prepbench_ok(&["merge", &d.display().to_string(), "--quiet"]);
    assert_eq!(run_ids(&d), run_ids(&whole));
}

/// Epochs sized by time: a cold epoch by its store's size, an epoch served from a cache (the
/// page cache, or the application cache) by repeating its passes over the store until it lasts
/// the floor; `samples` counts every pass.
#[test]
fn cached_epochs_repeat_their_passes_until_they_last_the_floor() {
    let work = tempfile::tempdir().unwrap();
    let (out, store) = (work.path().join("out"), work.path().join("store"));
    let sweep = |settings: &str| {
        let mut args = argv![
            "sweep cv --samples",
            SAMPLES,
            "--strategies resized --trials 1 --threads 1 --shards 2 --evict fadvise",
            "--min-epoch-s 0.5 --quiet --data-dir",
            data_dir().to_str().unwrap(),
            "--store-dir",
            store.to_str().unwrap(),
            "--out",
            out.to_str().unwrap()
        ];
        args.extend(settings.split_whitespace().map(String::from));
        prepbench_ok(&args);
    };
    sweep("--epochs 2 --cache cold,app");
    let runs = Csv::read(&out.join("runs.csv"));
    assert_eq!(runs.rows.len(), 4, "{:?}", runs.rows);
    for run in &runs.rows {
        let (cache, passes) = (runs.col(run, "cache"), runs.num(run, "passes"));
        if cache == "cold" || cache == "app-fill" {
            assert_eq!(passes, 1.0, "{run:?}");
            continue;
        }
        assert!(passes >= 1.0, "{run:?}");
        assert!(runs.num(run, "online_s") >= 0.5, "{run:?}");
        let first = runs
            .rows
            .iter()
            .find(|r| {
                runs.col(r, "run_id") == runs.col(run, "run_id") && runs.col(r, "epoch") == "0"
            })
            .unwrap();
        assert_eq!(
            runs.num(run, "samples"),
            passes * runs.num(first, "samples"),
            "{run:?}"
        );
    }
    // A sweep of the workload under emulated storage sizes its store for that storage, under
    // its own key: the local sweep's sizing, which the local views plan by, stays as it was.
    let sizing = |out: &std::path::Path| {
        let text = std::fs::read_to_string(out.join("manifest.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["sizing"].clone()
    };
    let local = sizing(&out);
    sweep("--epochs 1 --cache cold --storage paper-ceph-hdd");
    let both = sizing(&out);
    assert_eq!(both["cv"], local["cv"], "{both}");
    let emulated = &both["cv [storage paper-ceph-hdd]"];
    assert!(
        emulated["stores"]["resized/none"].as_u64().unwrap() > 0,
        "{both}"
    );
    assert_eq!(both.as_object().unwrap().len(), 2, "{both}");
}
