//! `prepbench store list` and `prepbench store remove`: the stores a store directory holds
//! (`ROOT/<workload>/<strategy>/<codec>-<shards>sh-<samples>n-<hash>`), what each holds and
//! whether it can still be used, and their removal. Only directories that carry prepbench's
//! store marker (or, from before markers, a store manifest) are listed or removed, and a store
//! another process is materializing is left alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use workloads::Codec;

use super::error::{io_error, StoreError};
use super::folder::{StoreManifest, FORMAT_VERSION, STORE_MANIFEST, STORE_MARKER};

/// Whether a store can be reused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Complete, written by this version: reused by a run with the same key.
    Complete,
    /// No `store.json`: a materialization that was interrupted, or is under way.
    Incomplete,
    /// Complete, but written by another prepbench version or store format: never reused.
    Stale,
    /// A `store.json` that does not parse.
    Damaged,
}

impl State {
    pub fn text(&self) -> &'static str {
        match self {
            State::Complete => "complete",
            State::Incomplete => "incomplete",
            State::Stale => "stale (other version)",
            State::Damaged => "damaged",
        }
    }
}

/// One store directory.
#[derive(Clone, Debug, Serialize)]
pub struct StoreEntry {
    pub path: PathBuf,
    pub workload: String,
    pub strategy: String,
    /// From the manifest when it has one, else from the directory's name; `None` when neither
    /// says.
    pub codec: Option<Codec>,
    pub shards: usize,
    pub samples: u64,
    /// Bytes of the files in the directory.
    pub bytes: u64,
    pub state: State,
    pub prepbench_version: Option<String>,
    /// When it was last written (its manifest, else the newest file); seconds since the epoch
    /// in JSON.
    #[serde(rename = "modified_unix_s", serialize_with = "unix_seconds")]
    pub modified: SystemTime,
}

fn unix_seconds<S: serde::Serializer>(time: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(
        time.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}

/// Whether `dir` is a store prepbench made.
fn is_store(dir: &Path) -> bool {
    dir.join(STORE_MARKER).is_file() || dir.join(STORE_MANIFEST).is_file()
}

fn subdirectories(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        // Symbolic links are not followed: a store directory is prepbench's own.
        if entry.file_type().map_err(io_error(dir))?.is_dir() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// `codec`, shards and samples from a store directory's name (`gzip6-16sh-300n-<hash>`).
fn parse_name(name: &str) -> Option<(Option<Codec>, usize, u64)> {
    let parts: Vec<&str> = name.rsplitn(4, '-').collect();
    let [_hash, samples, shards, codec] = parts.as_slice() else {
        return None;
    };
    Some((
        Codec::from_folder_name(codec),
        shards.strip_suffix("sh")?.parse().ok()?,
        samples.strip_suffix('n')?.parse().ok()?,
    ))
}

fn entry(dir: &Path, workload: &str, strategy: &str) -> Result<StoreEntry, StoreError> {
    let mut bytes = 0;
    let mut newest = SystemTime::UNIX_EPOCH;
    for file in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let file = file.map_err(io_error(dir))?;
        let meta = file.metadata().map_err(io_error(&file.path()))?;
        if meta.is_file() {
            bytes += meta.len();
            if let Ok(m) = meta.modified() {
                newest = newest.max(m);
            }
        }
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (mut codec, mut shards, mut samples) = parse_name(&name).unwrap_or_default();
    // Labelled by its manifest where it has one; by its folders only when it has none.
    let (mut workload, mut strategy) = (workload.to_string(), strategy.to_string());
    let manifest_path = dir.join(STORE_MANIFEST);
    let (state, version) = match std::fs::read_to_string(&manifest_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (State::Incomplete, None),
        Err(e) => return Err(io_error(&manifest_path)(e)),
        // Read as a run reads it: what a run refuses as damaged is listed so.
        Ok(text) => {
            match StoreManifest::parse(text.as_bytes(), &manifest_path.display().to_string()) {
                Err(_) => (State::Damaged, None),
                Ok(m) => {
                    workload.clone_from(&m.workload);
                    strategy.clone_from(&m.strategy);
                    codec = Some(m.codec);
                    shards = m.shards.len();
                    samples = m.samples;
                    let current = m.format == FORMAT_VERSION
                        && m.prepbench_version == env!("CARGO_PKG_VERSION");
                    (
                        if current {
                            State::Complete
                        } else {
                            State::Stale
                        },
                        Some(m.prepbench_version),
                    )
                }
            }
        }
    };
    let modified = std::fs::metadata(&manifest_path)
        .and_then(|m| m.modified())
        .unwrap_or(newest);
    Ok(StoreEntry {
        path: dir.to_path_buf(),
        workload,
        strategy,
        codec,
        shards,
        samples,
        bytes,
        state,
        prepbench_version: version,
        modified,
    })
}

/// Every store under `root`, by workload, strategy and name. A root that does not exist holds
/// none; one that is not a directory is an error.
pub fn list(root: &Path) -> Result<Vec<StoreEntry>, StoreError> {
    if !root.exists() {
        return Ok(Vec::new());
    }
    if !root.is_dir() {
        return Err(StoreError::Invalid {
            path: root.display().to_string(),
            message: "is not a directory (give the --store-dir that runs used)".into(),
        });
    }
    let mut out = Vec::new();
    for workload_dir in subdirectories(root)? {
        for strategy_dir in subdirectories(&workload_dir)? {
            for dir in subdirectories(&strategy_dir)? {
                if !is_store(&dir) {
                    continue;
                }
                let name = |p: &Path| {
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                };
                out.push(entry(&dir, &name(&workload_dir), &name(&strategy_dir))?);
            }
        }
    }
    Ok(out)
}

/// Which stores `store remove` removes: every condition given must hold.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub workload: Option<String>,
    pub strategy: Option<String>,
    /// Last written at least this long ago.
    pub older_than: Option<Duration>,
    pub incomplete: bool,
    pub stale: bool,
    /// Every store (with no other condition).
    pub all: bool,
}

impl Selection {
    /// Whether anything was asked for: removing every store takes `--all`.
    pub fn is_empty(&self) -> bool {
        self.workload.is_none()
            && self.strategy.is_none()
            && self.older_than.is_none()
            && !self.incomplete
            && !self.stale
            && !self.all
    }

    pub fn selects(&self, e: &StoreEntry, now: SystemTime) -> bool {
        let old = |d: &Duration| now.duration_since(e.modified).is_ok_and(|age| age >= *d);
        self.workload.as_ref().is_none_or(|w| *w == e.workload)
            && self.strategy.as_ref().is_none_or(|s| *s == e.strategy)
            && self.older_than.as_ref().is_none_or(old)
            && (!self.incomplete || e.state == State::Incomplete)
            && (!self.stale || matches!(e.state, State::Stale | State::Damaged))
    }
}

/// Why [`remove`] would refuse `entry`, if it would (a file prepbench did not write, a folder
/// that is not a store's): what a dry run says instead of promising to remove it.
pub fn refusal(entry: &StoreEntry) -> Option<String> {
    if super::lock_path(&entry.path).is_none() {
        return Some(format!("{}: not a store directory", entry.path.display()));
    }
    super::clearable(&entry.path).err().map(|e| e.to_string())
}

/// Removes one store directory: its files (only those a store holds) and then the directory,
/// and its strategy and workload directories when that leaves them empty. A store another
/// process is materializing (its lock held) is refused.
pub fn remove(entry: &StoreEntry, root: &Path) -> anyhow::Result<()> {
    use crate::results::lock::{take, Busy};
    let dir = &entry.path;
    let Some(lock_path) = super::lock_path(dir) else {
        anyhow::bail!("{}: not a store directory", dir.display());
    };
    let lock = take(
        &lock_path,
        &format!("the store {}", dir.display()),
        Busy::Refuse,
        &|_| {},
    )?;
    super::clear(dir)?;
    std::fs::remove_dir(dir).map_err(io_error(dir))?;
    drop(lock);
    // Empty parents up to (not including) the root go too.
    let mut parent = dir.parent();
    while let Some(p) = parent {
        if p == root || !p.starts_with(root) {
            break;
        }
        if std::fs::remove_dir(p).is_err() {
            break; // not empty
        }
        parent = p.parent();
    }
    Ok(())
}

/// Why `dir`, which holds no store manifest, is not a store, pointing to the stores below it
/// when it holds some (a strategy's folder holds its stores one level down: naming it, as a
/// user does, said only "not a store").
pub(super) fn not_a_store(dir: &Path) -> StoreError {
    let name = "name the folder of one materialized strategy, as `prepbench store list` prints it";
    let invalid = |message: String| StoreError::Invalid {
        path: dir.display().to_string(),
        message,
    };
    if !dir.is_dir() {
        let what = if dir.exists() {
            "not a folder"
        } else {
            "no such folder"
        };
        return invalid(format!("{what}: {name}"));
    }
    let held = stores_below(dir);
    invalid(match held.as_slice() {
        [] => format!("not a complete prepbench store (no {STORE_MANIFEST}): {name}"),
        [one] => format!(
            "not a store itself (no {STORE_MANIFEST}); it holds one, {}: name that folder",
            one.display()
        ),
        [first, second, ..] => {
            let at_least = if held.len() >= MAX_LISTED {
                "at least "
            } else {
                ""
            };
            format!(
                "not a store itself (no {STORE_MANIFEST}); it holds {at_least}{} stores, {} and \
                 {} among them: name one (`prepbench store list --store-dir` on the store \
                 directory lists them all)",
                held.len(),
                first.display(),
                second.display()
            )
        }
    })
}

/// At most this many stores are looked for below a folder that is not one.
const MAX_LISTED: usize = 100;

/// The folders holding a store manifest (complete stores) up to three levels below `dir` (a
/// store directory's layout), in path order: links are not followed, and at most
/// [`MAX_LISTED`] are found, so a folder such as `/` is not walked whole.
fn stores_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![dir.to_path_buf()];
    'levels: for _ in 0..3 {
        let mut next = Vec::new();
        for sub in level
            .iter()
            .flat_map(|f| subdirectories(f).unwrap_or_default())
        {
            if sub.join(STORE_MANIFEST).is_file() {
                found.push(sub);
            } else if next.len() < 10 * MAX_LISTED {
                next.push(sub);
            }
            if found.len() >= MAX_LISTED {
                break 'levels;
            }
        }
        level = next;
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(root: &Path, workload: &str, strategy: &str, name: &str, complete: bool) -> PathBuf {
        let dir = root.join(workload).join(strategy).join(name);
        crate::store::create(&dir).unwrap();
        std::fs::write(dir.join("shard-00000-of-00001.tfrecord"), vec![0u8; 1000]).unwrap();
        if complete {
            let key = crate::store::StoreKey {
                workload: workload.into(),
                strategy: strategy.into(),
                split: 1,
                codec: workloads::Codec::None,
                shards: 1,
                samples: 10,
                source_fingerprint: "s".into(),
                prefix_fingerprint: "p".into(),
            };
            let manifest = key.manifest(Vec::new(), 1.0, 0.0, 0.0);
            crate::store::complete(&dir, &manifest).unwrap();
        }
        dir
    }

    #[test]
    fn lists_only_stores_and_removes_what_is_selected() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        store(r, "cv", "decoded", "none-1sh-10n-aaaa", true);
        store(r, "cv", "resized", "gzip6-16sh-300n-bbbb", false);
        let other = store(r, "nlp", "decoded", "none-1sh-10n-cccc", true);
        // Not a store: no marker, no manifest.
        std::fs::create_dir_all(r.join("cv/decoded/mine")).unwrap();
        std::fs::write(r.join("cv/decoded/mine/notes.txt"), "keep").unwrap();
        let all = list(r).unwrap();
        assert_eq!(all.len(), 3);
        let incomplete = all.iter().find(|e| e.strategy == "resized").unwrap();
        assert_eq!(incomplete.state, State::Incomplete);
        assert_eq!(
            (incomplete.codec, incomplete.shards, incomplete.samples),
            (Some(Codec::Gzip { level: 6 }), 16, 300),
            "read from the name without a manifest"
        );
        assert!(all.iter().all(|e| e.bytes >= 1000));
        let complete = all
            .iter()
            .find(|e| e.workload == "cv" && e.strategy == "decoded");
        assert_eq!(complete.unwrap().state, State::Complete);

        let now = SystemTime::now();
        let sel = Selection {
            incomplete: true,
            ..Selection::default()
        };
        let chosen: Vec<&StoreEntry> = all.iter().filter(|e| sel.selects(e, now)).collect();
        assert_eq!(chosen.len(), 1);
        remove(chosen[0], r).unwrap();
        assert!(!r.join("cv/resized").exists(), "emptied parents go too");
        let sel = Selection {
            workload: Some("nlp".into()),
            older_than: Some(Duration::from_secs(3600)),
            ..Selection::default()
        };
        assert!(
            !list(r).unwrap().iter().any(|e| sel.selects(e, now)),
            "written just now: not older than an hour"
        );
        let sel = Selection {
            workload: Some("nlp".into()),
            ..Selection::default()
        };
        for e in list(r).unwrap().iter().filter(|e| sel.selects(e, now)) {
            remove(e, r).unwrap();
        }
        assert!(!other.exists() && !r.join("nlp").exists());
        // What is not a store stays, and so does the store beside it.
        assert!(r.join("cv/decoded/mine/notes.txt").is_file());
        assert_eq!(list(r).unwrap().len(), 1);
        assert!(Selection::default().is_empty());
    }

    /// A store is labelled by its manifest, not by the folders above it (`--store-dir` one
    /// level too high, or a store moved), and what removal would refuse is known beforehand.
    #[test]
    fn stores_are_labelled_by_their_manifest_and_refusals_are_foreseen() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let dir = store(r, "cv", "decoded", "none-1sh-10n-aaaa", true);
        let moved = r.join("elsewhere/by-hand/none-1sh-10n-aaaa");
        std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
        std::fs::rename(&dir, &moved).unwrap();
        let all = list(r).unwrap();
        assert_eq!(
            (all[0].workload.as_str(), all[0].strategy.as_str()),
            ("cv", "decoded")
        );
        assert_eq!(refusal(&all[0]), None);
        std::fs::write(moved.join("notes.txt"), "mine").unwrap();
        let why = refusal(&all[0]).expect("a foreign file is refused");
        assert!(why.contains("notes.txt"), "{why}");
        assert!(remove(&all[0], r).is_err());
        assert!(moved.join("notes.txt").is_file());
    }

    /// A manifest a run would refuse (more records than its shard can hold) is listed as
    /// damaged, so that `store remove --stale` finds it.
    #[test]
    fn a_manifest_a_run_refuses_is_listed_as_damaged() {
        let root = tempfile::tempdir().unwrap();
        let dir = store(root.path(), "cv", "decoded", "none-1sh-10n-aaaa", true);
        let path = dir.join(STORE_MANIFEST);
        let mut manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut listed = |records: u64| {
            manifest["shards"] = serde_json::json!([{
                "file": "shard-00000-of-00001.tfrecord", "bytes": 1000, "records": records
            }]);
            std::fs::write(&path, manifest.to_string()).unwrap();
            list(root.path()).unwrap()
        };
        // 62 records of 16 bytes fit its 1000; 2^63 do not.
        assert_eq!(listed(62)[0].state, State::Complete);
        let all = listed(1 << 63);
        assert_eq!(all[0].state, State::Damaged);
        let stale = Selection {
            stale: true,
            ..Selection::default()
        };
        assert!(stale.selects(&all[0], SystemTime::now()));
    }
}
