//! The features beyond one machine, against the real things on loopback, from one prepbench
//! built with `--features mpi,s3` into its own target directory, kept outside the clone across
//! runs (`s3` alone where MPI cannot be installed; the default build has neither):
//!
//! - multi-rank reading under a real `mpirun` (Open MPI from the distribution's packages): a
//!   prepbench built with `--features mpi` runs `run --ranks` on two ranks, each reading its
//!   partition at once after a barrier (needs libopenmpi-dev and libclang, installed when
//!   running as root);
//! - stores in S3-compatible object storage: a prepbench built with `--features s3`
//!   materializes a strategy to a moto server (from PyPI, in a shared virtual environment)
//!   on 127.0.0.1 and reads it back with `--verify`; `generate` uploads a dataset there, and a
//!   workload whose `dataset.path` is that `s3://` URL runs on it.
//!
//! Without what they need, the tests say why they are skipped.

#[macro_use]
mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::{data_dir, stderr, Csv, SAMPLES};

/// prepbench built once for every test here, with MPI when this machine has (or can install)
/// an MPI library and libclang, and with object storage.
struct FeatureBuild {
    binary: PathBuf,
    /// Whether the build has MPI, or why not.
    mpi: Result<(), String>,
}

/// The shared feature build (`--features mpi,s3`, or `s3` alone where MPI cannot be had), or
/// why there is none. One build instead of one per feature: the harness compiles once.
fn feature_build() -> Result<&'static FeatureBuild, String> {
    static BUILD: OnceLock<Result<FeatureBuild, String>> = OnceLock::new();
    BUILD
        .get_or_init(|| {
            let mpi = if !common::runs("mpicc") || clang_missing() {
                common::apt_install(&["libopenmpi-dev", "libclang-dev"])
            } else {
                Ok(())
            };
            let features = if mpi.is_ok() { "mpi,s3" } else { "s3" };
            Ok(FeatureBuild {
                binary: build_with(features)?,
                mpi,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The binary of the shared feature build with MPI, or why there is none.
fn mpi_binary() -> Result<PathBuf, String> {
    let build = feature_build()?;
    build.mpi.clone()?;
    Ok(build.binary.clone())
}

/// The binary of the shared feature build (it always has object storage), or why there is none.
fn s3_binary() -> Result<PathBuf, String> {
    Ok(feature_build()?.binary.clone())
}

/// prepbench built with `features` into the shared feature build's target directory, or why it
/// cannot be.
fn build_with(features: &str) -> Result<PathBuf, String> {
    // Outside the clone, with the shared virtual environments: its dependencies (aws-lc-sys's
    // C, tokio, reqwest, the MPI bindings) build once per machine, not once per clean clone
    // (from a clean clone and an empty cache these tests took 7.7 minutes, most of it this
    // build).
    // Cargo's lock on the folder queues two checkouts testing at once.
    let target = common::shared_root()?.join("feature-build");
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
            features,
        ])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        // Our own code not compiling is a failure, not a missing environment.
        assert!(
            !why.contains("could not compile `harness`")
                && !why.contains("could not compile `workloads`"),
            "prepbench does not build with --features {features}:\n{why}"
        );
        return Err(format!("building with --features {features} failed: {why}"));
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
    let mpirun = or_skip!(common::mpirun());
    let binary = or_skip!(mpi_binary());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let ranks = Command::new(mpirun)
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
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

/// A moto S3 server on 127.0.0.1, stopped on drop.
struct Moto {
    child: std::process::Child,
    port: u16,
    python: PathBuf,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// The virtual environment with moto, made once per test process (tests starting at once
    /// would otherwise make it over each other, and all but one skip).
    fn venv() -> Result<&'static PathBuf, String> {
        static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
        VENV.get_or_init(|| common::shared_venv("moto", "moto.server", &["moto[server]"]))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Starts moto's server (installed once) on a free port.
    fn start() -> Result<Moto, String> {
        let venv = Moto::venv()?;
        let python = venv.join("bin").join("python");
        let server = venv.join("bin").join("moto_server");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("starting moto_server: {e}"))?;
        let moto = Moto {
            child,
            port,
            python,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if std::time::Instant::now() > deadline {
                return Err("moto_server did not listen within 30 s".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Ok(moto)
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The standard AWS variables pointing at this server.
    fn env(&self) -> [(&'static str, String); 4] {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// Runs a Python script in the server's virtual environment; it must succeed.
    fn python(&self, script: &str) {
        let out = Command::new(&self.python)
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }

    /// Writes an object (unsigned, as `bucket`).
    fn put(&self, key: &str, body: &str) {
        let script = format!(
            "import urllib.request as u\n\
             u.urlopen(u.Request('{}/{key}', data=b'{body}', method='PUT'), timeout=10)\n",
            self.endpoint()
        );
        self.python(&script);
    }

    /// Creates a bucket (with the standard library's HTTP client: moto checks no signature).
    fn bucket(&self, name: &str) {
        // Retried: the server may accept connections before it answers requests.
        let script = format!(
            "import time, urllib.request as u\n\
             for attempt in range(60):\n    \
                 try:\n        \
                     u.urlopen(u.Request('{}/{name}', method='PUT'), timeout=10); break\n    \
                 except OSError:\n        \
                     if attempt == 59: raise\n        \
                     time.sleep(0.5)\n",
            self.endpoint()
        );
        self.python(&script);
    }
}

/// The feature build's `run cv --strategy <strategy>` against `moto`, reading the tests'
/// dataset and keeping its stores in the bucket `bench` (ranged GETs of 50 KB, 3 at once).
fn in_bucket(binary: &std::path::Path, moto: &Moto, strategy: &str) -> Command {
    let mut command = Command::new(binary);
    command
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
        .envs(moto.env())
        .args(["run", "cv", "--strategy", strategy, "--samples", SAMPLES])
        .arg("--data-dir")
        .arg(data_dir())
        .args([
            "--store-dir",
            "s3://bench/stores?range_mb=0.05&concurrency=3",
        ]);
    command
}

/// The JSON row a `run --json` printed last.
fn last_row(out: &std::process::Output) -> serde_json::Value {
    let printed = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(printed.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {printed}"))
}

#[test]
fn a_store_in_s3_is_written_read_back_verified_and_reused() {
    let moto = or_skip!(Moto::start());
    let binary = or_skip!(s3_binary());
    moto.bucket("bench");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let run = |extra: &[&str]| {
        in_bucket(&binary, &moto, "resized")
            .args([
                "--threads",
                "2",
                "--epochs",
                "1",
                "--shards",
                "4",
                "--json",
                "--quiet",
            ])
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let first = run(&["--verify", "--codec", "gzip"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let row = last_row(&first);
    assert_eq!(row["verified"], "pass", "{row}");
    assert_eq!(row["offline_reused"], false);
    assert_eq!(row["evict_method"], "remote");
    assert!(row["throughput_sps"].as_f64().unwrap() > 0.0);
    assert!(row["storage_bytes"].as_u64().unwrap() > 0);
    // The same store is found in the bucket and reused.
    let again = run(&["--codec", "gzip"]);
    assert!(again.status.success(), "{}", stderr(&again));
    let row = last_row(&again);
    assert_eq!(row["offline_reused"], true, "{row}");
    // No page cache to warm in object storage.
    let warm = run(&["--cache", "warm"]);
    assert!(!warm.status.success());
    assert!(
        stderr(&warm).contains("no page cache to warm"),
        "{}",
        stderr(&warm)
    );

    // A shard damaged in the bucket: the reader goes on at the next restart with ranged GETs
    // from there, as it does from a local file, and names the object.
    let decoded = |out: &str| {
        in_bucket(&binary, &moto, "decoded")
            .args(["--threads", "1", "--epochs", "1", "--shards", "1"])
            .args(["--codec", "gzip", "--on-error", "skip", "--json", "--quiet"])
            .arg("--out")
            .arg(work.path().join(out))
            .output()
            .unwrap()
    };
    let made = decoded("made");
    assert!(made.status.success(), "{}", stderr(&made));
    // The first bytes of the shard's second stretch (a deflate block's header after a full
    // flush): damage no reader steps past.
    let script = format!(
        "import json, boto3\n\
         s3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='test',\n\
                           aws_secret_access_key='test', region_name='us-east-1')\n\
         keys = [o['Key'] for o in s3.list_objects_v2(Bucket='bench')['Contents']]\n\
         key = next(k for k in keys if '/decoded/' in k and k.endswith('.tfrecord.gz'))\n\
         get = lambda k: s3.get_object(Bucket='bench', Key=k)['Body'].read()\n\
         r = json.loads(get(key.rsplit('/', 1)[0] + '/store.json'))['shards'][0]['restarts']\n\
         body = bytearray(get(key))\n\
         at = r[0][1]\n\
         body[at:at + 64] = bytes(b ^ 0x5a for b in body[at:at + 64])\n\
         s3.put_object(Bucket='bench', Key=key, Body=bytes(body))\n\
         print(json.dumps(r))\n",
        moto.endpoint()
    );
    let out = Command::new(&moto.python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let restarts: Vec<[u64; 3]> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(restarts.len() >= 2, "{restarts:?}");
    let damaged = decoded("damaged");
    assert!(damaged.status.success(), "{}", stderr(&damaged));
    let row = last_row(&damaged);
    assert_eq!(row["offline_reused"], true, "{row}");
    let (delivered, skipped) = (
        row["samples"].as_u64().unwrap(),
        row["skipped_samples"].as_u64().unwrap(),
    );
    assert_eq!(
        delivered + skipped,
        SAMPLES.parse::<u64>().unwrap(),
        "{row}"
    );
    assert!(skipped >= 1, "{row}");
    let errors = std::fs::read_to_string(work.path().join("damaged").join("errors.csv")).unwrap();
    assert!(errors.contains("restart"), "{errors}");
    assert!(errors.contains("s3://bench/stores/"), "{errors}");
    // No more than the damaged stretch and the record before it is lost: the records after
    // it were read from the next restart on.
    let stretch = restarts[1][0] - restarts[0][0];
    assert!(
        delivered + stretch + 1 >= SAMPLES.parse::<u64>().unwrap(),
        "{row}\n{errors}"
    );
}

#[test]
fn a_dataset_in_s3_is_uploaded_listed_read_and_verified() {
    let moto = or_skip!(Moto::start());
    let binary = or_skip!(s3_binary());
    moto.bucket("sets");
    let work = tempfile::tempdir().unwrap();
    let s3 = |args: &[&str]| {
        Command::new(&binary)
            .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
            .args(args)
            .envs(moto.env())
            .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
            .output()
            .unwrap()
    };
    let url = "s3://sets/imagenet";
    let generate = ["generate", "imagenet", "--samples", SAMPLES, "--out", url];
    let made = s3(&[&generate[..], &["--quiet"]].concat());
    assert!(made.status.success(), "{}", stderr(&made));
    let lines = String::from_utf8_lossy(&made.stdout).into_owned();
    assert!(lines.contains("MB per sample generated"), "{lines}");
    // Uploaded again, nothing changes: the prefix holds this generation already.
    let again = s3(&[&generate[..], &["--quiet"]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(String::from_utf8_lossy(&again.stdout), lines);

    // The reference CV workload with its dataset in the bucket.
    let yaml = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../workloads/defs/cv.yaml"),
    )
    .unwrap()
    .replace(
        "  kind: imagenet\n",
        &format!("  kind: imagenet\n  path: {url}?range_mb=0.03&concurrency=2\n"),
    );
    assert!(yaml.contains("path: s3://"));
    let workload = work.path().join("cv-s3.yaml");
    std::fs::write(&workload, yaml).unwrap();
    let (out, store) = (work.path().join("out"), work.path().join("store"));
    let run = |extra: &[&str]| {
        s3(&[
            &[
                "run",
                workload.to_str().unwrap(),
                "--strategy",
                "unprocessed,resized",
                "--threads",
                "2",
                "--epochs",
                "1",
                "--shards",
                "2",
                "--json",
                "--quiet",
                "--store-dir",
                store.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ][..],
            extra,
        ]
        .concat())
    };
    let ran = run(&["--samples", SAMPLES, "--verify"]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&ran.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        assert_eq!(row["verified"], "pass", "{row}");
        assert!(row["throughput_sps"].as_f64().unwrap() > 0.0, "{row}");
        assert_eq!(row["samples"].as_u64(), Some(SAMPLES.parse().unwrap()));
    }
    // The raw files are read from the bucket: no page cache to drop, every byte as listed there,
    // the same bytes as the local generation of the same dataset.
    let raw = &rows[0];
    assert_eq!(raw["strategy"], "unprocessed");
    assert_eq!(raw["evict_method"], "remote", "{raw}");
    let local_bytes = jpeg_bytes(&data_dir().join("imagenet-seed0"));
    assert_eq!(raw["storage_bytes"].as_u64(), Some(local_bytes), "{raw}");
    // The store made from it is local, and cold there.
    assert_ne!(rows[1]["evict_method"], "remote", "{}", rows[1]);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let dataset = &manifest["invocations"][0]["dataset"];
    assert_eq!(dataset["path"], url, "{dataset}");
    assert_eq!(dataset["object_storage"]["endpoint"], moto.endpoint());
    // The report says which runs read from object storage.
    let report = s3(&["report", out.to_str().unwrap()]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("Read from object storage") && md.contains("cv/unprocessed;"),
        "{md}"
    );

    // More samples than the bucket holds: an error saying how to upload them.
    let short = run(&["--samples", "100"]);
    assert!(!short.status.success());
    assert!(
        stderr(&short).contains("holds 40 samples")
            && stderr(&short).contains("prepbench generate"),
        "{}",
        stderr(&short)
    );
    // No page cache to warm, no storage emulation over a bucket.
    for (flag, value, says) in [
        ("--cache", "warm", "no page cache to warm"),
        ("--storage", "paper-ceph-hdd", "use --storage local"),
    ] {
        let refused = run(&["--samples", SAMPLES, flag, value]);
        assert!(!refused.status.success());
        assert!(stderr(&refused).contains(says), "{}", stderr(&refused));
    }
    // A prefix holding anything else is not written into.
    moto.put("sets/mine/notes.txt", "my own data");
    let refused = s3(&[
        "generate",
        "imagenet",
        "--samples",
        "2",
        "--out",
        "s3://sets/mine",
    ]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("not generated by prepbench"),
        "{}",
        stderr(&refused)
    );
}

/// Bytes of the JPEGs under a generated ImageNet-layout folder.
fn jpeg_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            total += jpeg_bytes(&path);
        } else if path.extension().is_some_and(|e| e == "JPEG") {
            total += entry.metadata().unwrap().len();
        }
    }
    total
}
