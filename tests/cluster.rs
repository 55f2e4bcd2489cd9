//! Multi-rank reading under a real `mpirun` (Open MPI from the distribution's packages): a
//! prepbench built with `--features mpi` runs `run --ranks` on two ranks, each reading its
//! partition at once after a barrier. The feature build is made here, in its own target
//! directory (it needs libopenmpi-dev and libclang, installed when running as root); without
//! them the test says why it is skipped.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{data_dir, stderr, Csv, SAMPLES};

/// prepbench built with `--features mpi`, or why it cannot be.
fn mpi_build() -> Result<PathBuf, String> {
    if !common::runs("mpicc") || clang_missing() {
        common::apt_install(&["libopenmpi-dev", "libclang-dev"])?;
    }
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mpi-build");
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "harness",
            "--features",
            "mpi",
        ])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building with --features mpi failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(target.join("release").join("prepbench"))
}

/// Whether libclang (which rsmpi's bindings generator loads) is missing.
fn clang_missing() -> bool {
    !std::fs::read_dir("/usr/lib")
        .map(|d| {
            d.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("llvm-")
                    && e.path().join("lib").join("libclang.so").exists()
            })
        })
        .unwrap_or(false)
}

#[test]
fn two_ranks_read_their_partitions_at_once() {
    let mpirun = match common::mpirun() {
        Ok(m) => m,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let binary = match mpi_build() {
        Ok(b) => b,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let ranks = Command::new(mpirun)
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(&binary)
        .args([
            "run",
            "cv",
            "--strategy",
            "unprocessed,resized",
            "--samples",
            SAMPLES,
        ])
        .args([
            "--threads",
            "1",
            "--epochs",
            "2",
            "--shards",
            "4",
            "--ranks",
            "--evict",
            "fadvise",
        ])
        .arg("--data-dir")
        .arg(data_dir())
        .arg("--store-dir")
        .arg(work.path().join("store"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(ranks.status.success(), "{}", stderr(&ranks));
    let printed = String::from_utf8_lossy(&ranks.stdout);
    assert!(printed.contains("samples/s in all"), "{printed}");
    let csv = Csv::read(&out.join("ranks.csv"));
    // 2 strategies x 2 epochs x (2 ranks + the aggregate).
    assert_eq!(csv.rows.len(), 12, "{:?}", csv.rows);
    for strategy in ["unprocessed", "resized"] {
        for epoch in ["0", "1"] {
            let rows: Vec<&Vec<String>> = csv
                .rows
                .iter()
                .filter(|r| csv.col(r, "strategy") == strategy && csv.col(r, "epoch") == epoch)
                .collect();
            let per_rank: Vec<&&Vec<String>> = rows
                .iter()
                .filter(|r| csv.col(r, "rank") != "all")
                .collect();
            let all = rows.iter().find(|r| csv.col(r, "rank") == "all").unwrap();
            assert_eq!(per_rank.len(), 2);
            // The partitions cover the samples once.
            let samples: f64 = per_rank.iter().map(|r| csv.num(r, "samples")).sum();
            assert_eq!(
                samples,
                SAMPLES.parse::<f64>().unwrap(),
                "{strategy} e{epoch}"
            );
            assert!(per_rank.iter().all(|r| csv.num(r, "samples") > 0.0));
            // The aggregate is every sample over the slowest rank's time.
            let slowest = per_rank
                .iter()
                .map(|r| csv.num(r, "online_s"))
                .fold(0.0, f64::max);
            let expected = samples / slowest;
            assert!((csv.num(all, "throughput_sps") / expected - 1.0).abs() < 1e-3);
            assert!(csv.num(all, "straggler_spread_pct") >= 0.0);
        }
    }
}
