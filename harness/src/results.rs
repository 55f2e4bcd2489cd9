//! The results folder: `runs.csv`, one tidy row per run and epoch (appended as whole lines and
//! synced), and `manifest.json`, what was run, by which build, on which machine.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use thiserror::Error;

use crate::system::{self, Filesystem, Machine};

#[derive(Debug, Error)]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Conflict { path: String, message: String },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// One measured epoch of one run. Units are in the column names.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunRow {
    pub run_id: String,
    pub started_utc: String,
    pub workload: String,
    pub strategy: String,
    pub split: usize,
    pub codec: String,
    pub shards: usize,
    pub threads: usize,
    pub samples: u64,
    /// Repetition index of the same cell in a sweep (0 for `run`).
    pub trial: usize,
    pub epoch: u64,
    pub cache: String,
    pub seed: u64,
    pub offline_s: f64,
    pub offline_reused: bool,
    pub storage_bytes: u64,
    pub online_s: f64,
    pub throughput_sps: f64,
    pub read_bytes: u64,
    pub read_chars: u64,
    pub output_bytes: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub evict_method: String,
    pub residency_before_pct: f64,
    pub residency_after_pct: f64,
    /// False when a cold epoch's files were still resident after eviction.
    pub valid: bool,
    /// `pass`, `fail`, or `-` when not verified.
    pub verified: String,
    /// The storage profile the epoch was read under (`local`: the disk as it is).
    pub storage: String,
    /// The simulated training consumer (`32x100ms-sleep-p2`), or `-`.
    pub consumer: String,
    /// With a consumer: accelerator utilisation, data-stall share (both % of wall time), time
    /// to the first batch and the per-batch wait's median and 99th percentile.
    pub au_pct: Option<f64>,
    pub stall_pct: Option<f64>,
    pub first_batch_s: Option<f64>,
    pub batch_wait_p50_ms: Option<f64>,
    pub batch_wait_p99_ms: Option<f64>,
    /// Mean read rate of the data directory's device and CPU busy share over the epoch's system
    /// samples (`samples.csv`); absent when none were taken.
    pub device_read_mb_s: Option<f64>,
    pub cpu_busy_pct: Option<f64>,
    /// Samples this epoch did not deliver because they could not be read or processed
    /// (`on_error: skip`): left out of the store offline, or skipped online. errors.csv names
    /// them.
    pub skipped_samples: u64,
}

/// How [`RunRow::condition`] names an emulated storage profile and a simulated consumer.
pub const STORAGE_CONDITION: &str = "storage ";
pub const CONSUMER_CONDITION: &str = "consumer ";

impl RunRow {
    /// What the run was measured under besides its cell's settings: a storage profile other
    /// than `local` and a simulated consumer (`storage paper-ceph-hdd, consumer 32x100ms-...`);
    /// empty for plain runs. Reports keep each condition apart.
    pub fn condition(&self) -> String {
        let mut parts = Vec::new();
        if let Some(storage) = self.emulated_storage() {
            parts.push(format!("{STORAGE_CONDITION}{storage}"));
        }
        if let Some(consumer) = self.simulated_consumer() {
            parts.push(format!("{CONSUMER_CONDITION}{consumer}"));
        }
        parts.join(", ")
    }

    /// The emulated storage profile the run was read under; `None` for the local disk (and for
    /// folders from before the column).
    pub fn emulated_storage(&self) -> Option<&str> {
        (!matches!(self.storage.as_str(), "" | "-" | workloads::storage::LOCAL))
            .then_some(self.storage.as_str())
    }

    /// The simulated training consumer's label; `None` when the consumer only touched samples.
    pub fn simulated_consumer(&self) -> Option<&str> {
        (!matches!(self.consumer.as_str(), "" | "-")).then_some(self.consumer.as_str())
    }

    /// Column names, in order, as `runs.csv` writes them.
    pub fn columns() -> Vec<String> {
        COLUMNS.iter().map(|c| c.to_string()).collect()
    }

    fn values(&self) -> Vec<String> {
        let f = |v: f64| format!("{v:.6}");
        vec![
            self.run_id.clone(),
            self.started_utc.clone(),
            self.workload.clone(),
            self.strategy.clone(),
            self.split.to_string(),
            self.codec.clone(),
            self.shards.to_string(),
            self.threads.to_string(),
            self.samples.to_string(),
            self.trial.to_string(),
            self.epoch.to_string(),
            self.cache.clone(),
            self.seed.to_string(),
            f(self.offline_s),
            self.offline_reused.to_string(),
            self.storage_bytes.to_string(),
            f(self.online_s),
            format!("{:.3}", self.throughput_sps),
            self.read_bytes.to_string(),
            self.read_chars.to_string(),
            self.output_bytes.to_string(),
            f(self.cpu_user_s),
            f(self.cpu_sys_s),
            self.evict_method.clone(),
            format!("{:.2}", self.residency_before_pct),
            format!("{:.2}", self.residency_after_pct),
            self.valid.to_string(),
            self.verified.clone(),
            self.storage.clone(),
            self.consumer.clone(),
            opt(self.au_pct, 2),
            opt(self.stall_pct, 2),
            opt(self.first_batch_s, 6),
            opt(self.batch_wait_p50_ms, 3),
            opt(self.batch_wait_p99_ms, 3),
            opt(self.device_read_mb_s, 3),
            opt(self.cpu_busy_pct, 2),
            self.skipped_samples.to_string(),
        ]
    }
}

/// An optional figure at `digits` decimals, empty when absent.
fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.digits$}"))
}

/// Columns added after the first release (the last ones): a results folder written before them
/// still loads (they read as absent).
pub fn later_columns() -> &'static [&'static str] {
    &COLUMNS[FIRST_RELEASE_COLUMNS..]
}

/// How many columns runs.csv had in its first release.
const FIRST_RELEASE_COLUMNS: usize = 28;

const COLUMNS: [&str; 38] = [
    "run_id",
    "started_utc",
    "workload",
    "strategy",
    "split",
    "codec",
    "shards",
    "threads",
    "samples",
    "trial",
    "epoch",
    "cache",
    "seed",
    "offline_s",
    "offline_reused",
    "storage_bytes",
    "online_s",
    "throughput_sps",
    "read_bytes",
    "read_chars",
    "output_bytes",
    "cpu_user_s",
    "cpu_sys_s",
    "evict_method",
    "residency_before_pct",
    "residency_after_pct",
    "valid",
    "verified",
    "storage",
    "consumer",
    "au_pct",
    "stall_pct",
    "first_batch_s",
    "batch_wait_p50_ms",
    "batch_wait_p99_ms",
    "device_read_mb_s",
    "cpu_busy_pct",
    "skipped_samples",
];

/// Quotes a CSV field when it needs it (RFC 4180).
fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

pub fn csv_line(values: &[String]) -> String {
    let mut line = values
        .iter()
        .map(|v| csv_field(v))
        .collect::<Vec<_>>()
        .join(",");
    line.push('\n');
    line
}

/// Appends rows to `runs.csv`, writing the header when the file is new and refusing a file
/// whose header differs (another version's columns would be silently misaligned).
pub struct RunsCsv {
    path: PathBuf,
}

impl RunsCsv {
    pub fn open(dir: &Path) -> Result<RunsCsv, ResultsError> {
        let path = dir.join("runs.csv");
        let header = csv_line(&RunRow::columns());
        open_table(&path, &header)?;
        Ok(RunsCsv { path })
    }

    /// Appends the rows of one run in a single write, then syncs: a run is in the file whole
    /// or not at all.
    pub fn append(&self, rows: &[RunRow]) -> Result<(), ResultsError> {
        let text: String = rows.iter().map(|r| csv_line(&r.values())).collect();
        append_text(&self.path, &text)
    }

    /// The run ids already recorded.
    pub fn run_ids(&self) -> Result<std::collections::HashSet<String>, ResultsError> {
        let text = std::fs::read_to_string(&self.path).map_err(io_error(&self.path))?;
        Ok(text
            .lines()
            .skip(1)
            .filter_map(|l| l.split(',').next())
            .map(str::to_string)
            .collect())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Creates `path` with `header`, or checks an existing file's header and cuts a partial last
/// line (a crash mid-write) so that appends start on a line boundary.
pub fn open_table(path: &Path, header: &str) -> Result<(), ResultsError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    }
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_error(path)(e)),
    };
    if text.is_empty() {
        return append_text(path, header);
    }
    if !text.starts_with(header.as_bytes()) {
        return Err(ResultsError::Conflict {
            path: path.display().to_string(),
            message: "has other columns than this prepbench writes; use a new --out directory"
                .into(),
        });
    }
    if text.last() != Some(&b'\n') {
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_error(path))?;
        file.set_len(keep as u64).map_err(io_error(path))?;
        file.sync_data().map_err(io_error(path))?;
    }
    Ok(())
}

/// One `write` in append mode, then fsync: a crash leaves whole lines only.
pub fn append_text(path: &Path, text: &str) -> Result<(), ResultsError> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io_error(path))?;
    file.write_all(text.as_bytes()).map_err(io_error(path))?;
    file.sync_data().map_err(io_error(path))
}

/// An append-only CSV file of a results folder, created or checked once when opened; each
/// append is whole lines in one write and an fsync.
pub struct CsvTable {
    path: PathBuf,
}

impl CsvTable {
    pub fn open(path: PathBuf, columns: &[&str]) -> Result<CsvTable, ResultsError> {
        open_table(&path, &csv_header(columns))?;
        Ok(CsvTable { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&self, rows: &[Vec<String>]) -> Result<(), ResultsError> {
        if rows.is_empty() {
            return Ok(());
        }
        let text: String = rows.iter().map(|r| csv_line(r)).collect();
        append_text(&self.path, &text)
    }
}

/// `stages.csv`: written before a run's rows in runs.csv, so a run interrupted in between is
/// redone, and readers keep the last lines of a run id.
pub fn stages_table(out: &Path) -> Result<CsvTable, ResultsError> {
    CsvTable::open(out.join("stages.csv"), &crate::attribution::STAGE_COLUMNS)
}

/// `samples.csv`: system samples of offline and online phases.
pub fn samples_table(out: &Path) -> Result<CsvTable, ResultsError> {
    CsvTable::open(out.join("samples.csv"), &crate::sampler::SAMPLE_COLUMNS)
}

/// Columns of `errors.csv`: samples left out under `on_error: skip`.
pub const ERROR_COLUMNS: [&str; 8] = [
    "run_id", "epoch", "phase", "sample", "file", "stage", "count", "message",
];

/// `errors.csv`: per run, the samples skipped offline (epoch `-`) and in each online epoch.
pub fn errors_table(out: &Path) -> Result<CsvTable, ResultsError> {
    CsvTable::open(out.join("errors.csv"), &ERROR_COLUMNS)
}

/// `errors.csv` lines of skipped samples.
pub fn error_rows(
    run_id: &str,
    epoch: Option<u64>,
    phase: &str,
    skipped: &[crate::pipeline::Skipped],
) -> Vec<Vec<String>> {
    skipped
        .iter()
        .map(|s| {
            vec![
                run_id.to_string(),
                epoch.map_or_else(|| "-".to_string(), |e| e.to_string()),
                phase.to_string(),
                s.sample.clone(),
                s.file.clone(),
                s.stage.clone(),
                s.count.to_string(),
                s.message.clone(),
            ]
        })
        .collect()
}

pub fn csv_header(columns: &[&str]) -> String {
    csv_line(&columns.iter().map(|c| c.to_string()).collect::<Vec<_>>())
}

/// What the manifest records about one workload as run.
pub struct WorkloadRecord<'a> {
    pub name: &'a str,
    pub origin: &'a str,
    pub yaml: &'a str,
    pub yaml_hash: String,
}

/// What the manifest records about one invocation.
pub struct Invocation<'a> {
    pub started_utc: String,
    pub command_line: Vec<String>,
    pub run_ids: Vec<String>,
    pub data_dir: &'a Path,
    /// The dataset's root (a folder, or an `s3://` URL).
    pub dataset: &'a Path,
    pub store_dir: &'a Path,
    /// The eviction policy asked for (the manifest records it, and whether caches can be
    /// dropped on this machine).
    pub evict: crate::cache::EvictPolicy,
}

/// A folder's path and file system; for object storage, the service the AWS variables name.
fn dir_facts(path: &Path) -> Value {
    if crate::store::remote::is_remote(path) {
        let var = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok());
        return json!({
            "path": path.display().to_string(),
            "object_storage": {
                "endpoint": var(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]),
                "region": var(&["AWS_REGION", "AWS_DEFAULT_REGION"]),
            },
        });
    }
    let fs: Option<Filesystem> = system::filesystem_of(path);
    json!({ "path": path.display().to_string(), "filesystem": fs })
}

/// Reads `dir/manifest.json`, or starts one for this machine and build; refuses a manifest
/// written on another machine.
fn open_manifest(dir: &Path) -> Result<(PathBuf, Value), ResultsError> {
    let path = dir.join("manifest.json");
    let machine: Machine = system::machine();
    let manifest: Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| ResultsError::Conflict {
            path: path.display().to_string(),
            message: format!(
                "unreadable manifest ({e}); move it away or use a new --out directory"
            ),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({
            "machine": machine,
            "build": system::build(),
            "workloads": {},
            "invocations": [],
        }),
        Err(e) => return Err(io_error(&path)(e)),
    };
    let recorded: Option<Machine> = manifest
        .get("machine")
        .and_then(|m| serde_json::from_value(m.clone()).ok());
    if let Some(recorded) = recorded {
        if recorded != machine {
            return Err(ResultsError::Conflict {
                path: path.display().to_string(),
                message: format!(
                    "holds results from another machine ({}, {} cores); use a new --out directory per machine",
                    recorded.hostname, recorded.logical_cores
                ),
            });
        }
    }
    Ok((path, manifest))
}

/// The tables of a results folder: rows appended run by run (merged shard by shard).
pub const TABLES: [&str; 5] = [
    "runs.csv",
    "offline.csv",
    "stages.csv",
    "samples.csv",
    "errors.csv",
];

/// Replaces `path` with `manifest` atomically.
pub(crate) fn write_manifest(
    dir: &Path,
    path: &Path,
    manifest: &Value,
) -> Result<(), ResultsError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let tmp = dir.join(".manifest.json.tmp");
    let text = serde_json::to_string_pretty(manifest).expect("manifest serializes");
    std::fs::write(&tmp, text).map_err(io_error(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_error(path))
}

/// Adds an invocation (and its workload) to `dir/manifest.json`, creating it on first use.
/// Refuses a folder whose manifest was written on another machine.
pub fn record_invocation(
    dir: &Path,
    workload: &WorkloadRecord,
    invocation: &Invocation,
) -> Result<(), ResultsError> {
    let (path, mut manifest) = open_manifest(dir)?;
    let key = format!("{}@{}", workload.name, workload.yaml_hash);
    manifest["workloads"][&key] = json!({
        "name": workload.name,
        "origin": workload.origin,
        "yaml_hash": workload.yaml_hash,
        "yaml": workload.yaml,
    });
    let entry = json!({
        "started_utc": invocation.started_utc,
        "command_line": invocation.command_line,
        "build": system::build(),
        "workload": key,
        "data_dir": dir_facts(invocation.data_dir),
        "dataset": dir_facts(invocation.dataset),
        "store_dir": dir_facts(invocation.store_dir),
        "can_drop_caches": crate::cache::can_drop_caches(),
        "evict_policy": format!("{:?}", invocation.evict).to_lowercase(),
        "run_ids": invocation.run_ids,
    });
    match manifest
        .get_mut("invocations")
        .and_then(Value::as_array_mut)
    {
        Some(list) => list.push(entry),
        None => manifest["invocations"] = json!([entry]),
    }
    write_manifest(dir, &path, &manifest)
}

/// Records under `plans` the fingerprint and cell count of a workload's whole sweep plan,
/// and under `shard` which share of it this folder holds (`None`: all of it).
pub fn record_plan(
    dir: &Path,
    workload: &str,
    fingerprint: &str,
    cells: usize,
    shard: Option<&crate::shard::Shard>,
) -> Result<(), ResultsError> {
    let (path, mut manifest) = open_manifest(dir)?;
    manifest["plans"][workload] = json!({ "fingerprint": fingerprint, "cells": cells });
    if let Some(shard) = shard {
        manifest["shard"] = json!(shard);
    }
    write_manifest(dir, &path, &manifest)
}

/// Merges a calibration into `dir/manifest.json` (its machine replaces the recorded one; its
/// strategies are added), creating the manifest on first use.
pub fn record_calibration(
    dir: &Path,
    calibration: &crate::calibrate::Calibration,
) -> Result<(), ResultsError> {
    let (path, mut manifest) = open_manifest(dir)?;
    let mut merged = crate::calibrate::Calibration::from_manifest(&manifest).unwrap_or_default();
    merged.merge(calibration.clone());
    manifest["calibration"] = serde_json::to_value(&merged).expect("calibration serializes");
    write_manifest(dir, &path, &manifest)
}

/// UTC time as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, H. Hinnant's algorithm).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str) -> RunRow {
        RunRow {
            run_id: id.into(),
            strategy: "a,\"b\"".into(),
            ..RunRow::default()
        }
    }

    #[test]
    fn header_matches_row_fields_and_rows_append_whole() {
        let dir = tempfile::tempdir().unwrap();
        let csv = RunsCsv::open(dir.path()).unwrap();
        csv.append(&[row("r1")]).unwrap();
        let csv = RunsCsv::open(dir.path()).unwrap();
        csv.append(&[row("r2")]).unwrap();
        let text = std::fs::read_to_string(csv.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "one header, two rows");
        assert_eq!(lines[0].split(',').count(), RunRow::columns().len());
        assert_eq!(RunRow::default().values().len(), RunRow::columns().len());
        assert!(
            lines[1].starts_with("r1,") && lines[1].contains("\"a,\"\"b\"\"\""),
            "{}",
            lines[1]
        );
        // The serialized struct has exactly the CSV columns.
        let Value::Object(map) = serde_json::to_value(RunRow::default()).unwrap() else {
            panic!()
        };
        let mut a: Vec<String> = map.keys().cloned().collect();
        let mut b = RunRow::columns();
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    #[test]
    fn a_partial_last_line_is_cut_and_run_ids_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let csv = RunsCsv::open(dir.path()).unwrap();
        csv.append(&[row("r1"), row("r1")]).unwrap();
        let mut text = std::fs::read_to_string(csv.path()).unwrap();
        let whole = text.clone();
        text.push_str("r2,2026-01-01T00:00:00Z,cv,res");
        std::fs::write(csv.path(), &text).unwrap();
        let csv = RunsCsv::open(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(csv.path()).unwrap(), whole);
        let ids = csv.run_ids().unwrap();
        assert_eq!(ids.len(), 1);
        assert!(ids.contains("r1"));
    }

    #[test]
    fn a_foreign_runs_csv_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        let err = RunsCsv::open(dir.path()).err().unwrap();
        assert!(err.to_string().contains("other columns"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n1,2\n");
    }

    #[test]
    fn manifest_accumulates_invocations_and_refuses_other_machines() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkloadRecord {
            name: "cv",
            origin: "builtin",
            yaml: "name: cv",
            yaml_hash: "abc".into(),
        };
        let inv = |id: &str| Invocation {
            started_utc: utc_now(),
            command_line: vec!["prepbench".into(), "run".into()],
            run_ids: vec![id.into()],
            data_dir: dir.path(),
            dataset: std::path::Path::new("s3://bucket/imagenet"),
            store_dir: dir.path(),
            evict: crate::cache::EvictPolicy::Auto,
        };
        record_invocation(dir.path(), &w, &inv("r1")).unwrap();
        record_invocation(dir.path(), &w, &inv("r2")).unwrap();
        let path = dir.path().join("manifest.json");
        let m: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(m["invocations"].as_array().unwrap().len(), 2);
        assert_eq!(m["workloads"]["cv@abc"]["yaml"], "name: cv");
        assert!(m["machine"]["cpu_model"].is_string());
        let dataset = &m["invocations"][0]["dataset"];
        assert_eq!(dataset["path"], "s3://bucket/imagenet");
        assert!(dataset["object_storage"].is_object(), "{dataset}");
        assert!(m["invocations"][0]["data_dir"]["filesystem"].is_object());
        let mut other = m.clone();
        other["machine"]["hostname"] = json!("elsewhere");
        std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
        let err = record_invocation(dir.path(), &w, &inv("r3")).unwrap_err();
        assert!(err.to_string().contains("another machine"), "{err}");
    }

    #[test]
    fn utc_timestamps_are_well_formed() {
        let t = utc_now();
        assert_eq!(t.len(), 20);
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }
}
