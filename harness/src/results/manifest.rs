//! `manifest.json`: what a results folder holds, by which build, on which machine: the workloads
//! as run (their YAML), every invocation (command line, places, eviction policy, run ids), the
//! sweep plans, the shard it is of a sharded sweep, and the calibration. Typed, read and written
//! here only; a manifest written on another machine is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::calibration::Calibration;
use super::ResultsError;
use crate::results::system::{self, Build, Filesystem, Machine};

/// One workload as run: its YAML and where it came from.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkloadEntry {
    pub name: String,
    pub origin: String,
    pub yaml_hash: String,
    pub yaml: String,
}

impl WorkloadEntry {
    /// The key the manifest files it under: `name@yaml_hash`.
    pub fn key(&self) -> String {
        format!("{}@{}", self.name, self.yaml_hash)
    }
}

/// The object-storage service a URL is read from (the AWS variables).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ObjectStorage {
    pub endpoint: Option<String>,
    pub region: Option<String>,
}

/// A folder's path, and its file system; for object storage, the service.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Place {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<Filesystem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_storage: Option<ObjectStorage>,
}

impl Place {
    /// The facts about `path` on this machine.
    pub fn of(path: &Path) -> Place {
        let text = path.display().to_string();
        if datasets::files::is_remote(path) {
            let var = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok());
            return Place {
                path: text,
                filesystem: None,
                object_storage: Some(ObjectStorage {
                    endpoint: var(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]),
                    region: var(&["AWS_REGION", "AWS_DEFAULT_REGION"]),
                }),
            };
        }
        Place {
            path: text,
            filesystem: system::filesystem_of(path),
            object_storage: None,
        }
    }
}

/// One invocation of prepbench that wrote into the folder.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct InvocationEntry {
    pub started_utc: String,
    pub command_line: Vec<String>,
    pub build: Build,
    /// The [`WorkloadEntry::key`] of the workload it ran.
    pub workload: String,
    pub data_dir: Place,
    /// The dataset's root (a folder, or an `s3://` URL); absent in folders from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Place>,
    pub store_dir: Place,
    pub can_drop_caches: bool,
    /// `auto`, `dropcaches` or `fadvise`.
    pub evict_policy: String,
    pub run_ids: Vec<String>,
    /// The shard it ran as, in a merged folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<usize>,
}

/// A workload's whole sweep plan: its fingerprint and cell count.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlanEntry {
    pub fingerprint: String,
    pub cells: usize,
}

/// One shard of a sweep run across hosts: cells `index` of `count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
    /// Where it came from: `--shard`, or the launcher variable.
    pub source: String,
}

impl Shard {
    pub fn new(index: usize, count: usize, source: &str) -> Result<Shard, String> {
        if count == 0 || index >= count {
            return Err(format!(
                "shard {index} of {count}: the index must be below the count (from {source})"
            ));
        }
        Ok(Shard {
            index,
            count,
            source: source.to_string(),
        })
    }

    /// The results folder of this shard under `out`.
    pub fn dir(&self, out: &Path) -> PathBuf {
        out.join(format!("shard-{}-of-{}", self.index, self.count))
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `I/N` with 0 <= I < N.
    fn from_str(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}`: a shard is I/N (e.g. 0/4)"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{i}` is not a shard index"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{n}` is not a shard count"))?;
        Shard::new(index, count, "--shard")
    }
}

/// A shard folder a merged folder was made from.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MergedFrom {
    pub dir: String,
    pub shard: Shard,
    pub machine: Option<Machine>,
}

/// A results folder's manifest.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    #[serde(default)]
    pub machine: Option<Machine>,
    #[serde(default)]
    pub build: Option<Build>,
    /// By [`WorkloadEntry::key`].
    #[serde(default)]
    pub workloads: BTreeMap<String, WorkloadEntry>,
    #[serde(default)]
    pub invocations: Vec<InvocationEntry>,
    /// By workload name (a dataset variant's `name@options`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plans: BTreeMap<String, PlanEntry>,
    /// The share of a sharded sweep this folder holds; `None`: all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// The shards a merged folder was made from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedFrom>,
}

/// The manifest's file name in a results folder.
pub const MANIFEST: &str = "manifest.json";

impl Manifest {
    /// A new manifest for this machine and build.
    pub fn new() -> Manifest {
        Manifest {
            machine: Some(system::machine()),
            build: Some(system::build()),
            ..Manifest::default()
        }
    }

    /// `dir/manifest.json`; `None` when the folder has none.
    pub fn read(dir: &Path) -> Result<Option<Manifest>, ResultsError> {
        let path = dir.join(MANIFEST);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
                ResultsError::invalid(
                    &path,
                    format!("unreadable manifest ({e}); move it away or use a new --out directory"),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ResultsError::io(&path)(e)),
        }
    }

    /// Replaces `dir/manifest.json` with this one atomically.
    pub fn write(&self, dir: &Path) -> Result<(), ResultsError> {
        let text = serde_json::to_vec_pretty(self).expect("a manifest serializes");
        Ok(datasets::write_atomically(&dir.join(MANIFEST), &text)?)
    }

    /// Reads `dir`'s manifest (or starts one), lets `change` edit it, and writes it back.
    /// Refuses a manifest written on another machine: one folder, one machine.
    pub fn update(
        dir: &Path,
        change: impl FnOnce(&mut Manifest),
    ) -> Result<Manifest, ResultsError> {
        let mut manifest = Manifest::read(dir)?.unwrap_or_else(Manifest::new);
        let here = system::machine();
        match &manifest.machine {
            Some(recorded) if *recorded != here => {
                return Err(ResultsError::Conflict {
                    path: dir.join(MANIFEST).display().to_string(),
                    message: format!(
                        "holds results from another machine ({}, {} cores); use a new --out \
                         directory per machine",
                        recorded.hostname, recorded.logical_cores
                    ),
                })
            }
            Some(_) => {}
            None => manifest.machine = Some(here),
        }
        change(&mut manifest);
        manifest.write(dir)?;
        Ok(manifest)
    }

    /// Adds an invocation and its workload.
    pub fn record_invocation(&mut self, workload: WorkloadEntry, invocation: InvocationEntry) {
        let key = workload.key();
        self.workloads.insert(key.clone(), workload);
        self.invocations.push(InvocationEntry {
            workload: key,
            ..invocation
        });
    }

    /// Merges a calibration in: its machine replaces the recorded one, its strategies are added.
    pub fn record_calibration(&mut self, calibration: Calibration) {
        self.calibration
            .get_or_insert_with(Calibration::default)
            .merge(calibration);
    }

    /// The YAML recorded for the workload named `name` (any of its versions).
    pub fn workload_yaml<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.workloads
            .values()
            .filter(move |w| w.name == name)
            .map(|w| w.yaml.as_str())
    }

    /// The calibration, when it has the machine and at least one strategy.
    pub fn complete_calibration(&self) -> Option<&Calibration> {
        self.calibration
            .as_ref()
            .filter(|c| c.machine.is_some() && !c.strategies.is_empty())
    }
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

    fn invocation(dir: &Path, id: &str) -> InvocationEntry {
        InvocationEntry {
            started_utc: utc_now(),
            command_line: vec!["prepbench".into(), "run".into()],
            build: system::build(),
            data_dir: Place::of(dir),
            dataset: Some(Place::of(Path::new("s3://bucket/imagenet"))),
            store_dir: Place::of(dir),
            evict_policy: "auto".into(),
            run_ids: vec![id.into()],
            ..InvocationEntry::default()
        }
    }

    #[test]
    fn manifest_accumulates_invocations_and_refuses_other_machines() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkloadEntry {
            name: "cv".into(),
            origin: "builtin".into(),
            yaml: "name: cv".into(),
            yaml_hash: "abc".into(),
        };
        for id in ["r1", "r2"] {
            Manifest::update(dir.path(), |m| {
                m.record_invocation(w.clone(), invocation(dir.path(), id))
            })
            .unwrap();
        }
        let m = Manifest::read(dir.path()).unwrap().unwrap();
        assert_eq!(m.invocations.len(), 2);
        assert_eq!(m.invocations[1].workload, "cv@abc");
        assert_eq!(m.workloads["cv@abc"].yaml, "name: cv");
        assert!(!m.machine.as_ref().unwrap().cpu_model.is_empty());
        let dataset = m.invocations[0].dataset.as_ref().unwrap();
        assert_eq!(dataset.path, "s3://bucket/imagenet");
        assert!(dataset.object_storage.is_some());
        assert!(m.invocations[0].data_dir.filesystem.is_some());
        let mut other = m.clone();
        other.machine.as_mut().unwrap().hostname = "elsewhere".into();
        other.write(dir.path()).unwrap();
        let err = Manifest::update(dir.path(), |_| {}).unwrap_err();
        assert!(err.to_string().contains("another machine"), "{err}");
    }

    #[test]
    fn committed_reference_manifests_load() {
        let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/reference");
        for dir in std::fs::read_dir(reference).unwrap().flatten() {
            let m = Manifest::read(&dir.path()).unwrap().unwrap();
            assert!(!m.invocations.is_empty(), "{}", dir.path().display());
            assert!(m.complete_calibration().is_some());
        }
    }

    #[test]
    fn utc_timestamps_are_well_formed() {
        let t = utc_now();
        assert_eq!(t.len(), 20);
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }
}
