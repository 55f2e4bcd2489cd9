//! A results folder as a whole: its tables open for appending ([`Tables`]), and everything it
//! holds loaded at once ([`Recorded`]).

use std::path::{Path, PathBuf};

use crate::results::error::ResultsError;
use crate::results::lock;
use crate::results::manifest::Manifest;
use crate::results::rows::{ErrorRow, OfflineRow, RunRow, SampleRow, StageRow};
use crate::results::table::{self, Table};

/// The tables' file names.
pub const RUNS: &str = "runs.csv";
pub const OFFLINE: &str = "offline.csv";
pub const STAGES: &str = "stages.csv";
pub const SAMPLES: &str = "samples.csv";
pub const ERRORS: &str = "errors.csv";
/// Written by `run --ranks` only.
pub const RANKS: &str = "ranks.csv";
/// Every table a results folder may hold.
pub const TABLES: [&str; 6] = [RUNS, OFFLINE, STAGES, SAMPLES, ERRORS, RANKS];

/// The tables of a results folder, open for appending. Within a run, stages, samples and
/// errors are appended before its rows in runs.csv, so a run interrupted in between is redone
/// (readers keep the last lines of a run id).
pub struct Tables {
    pub runs: Table<RunRow>,
    pub offline: Table<OfflineRow>,
    pub stages: Table<StageRow>,
    pub samples: Table<SampleRow>,
    pub errors: Table<ErrorRow>,
    /// The folder's lock, held while the tables are open: one writer at a time.
    _lock: lock::Lock,
}

impl Tables {
    /// Opens (creating them when new) the tables of `dir`, after taking its lock (refused
    /// while another process writes the folder).
    pub fn open(dir: &Path) -> Result<Tables, ResultsError> {
        let lock = lock::folder(dir)?;
        Ok(Tables {
            _lock: lock,
            runs: Table::open(dir.join(RUNS))?,
            offline: Table::open(dir.join(OFFLINE))?,
            stages: Table::open(dir.join(STAGES))?,
            samples: Table::open(dir.join(SAMPLES))?,
            errors: Table::open(dir.join(ERRORS))?,
        })
    }

    /// The run ids runs.csv holds: runs recorded whole.
    pub fn run_ids(&self) -> Result<std::collections::HashSet<String>, ResultsError> {
        Ok(self.runs.read()?.into_iter().map(|r| r.run_id).collect())
    }
}

/// Everything a results folder holds.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub dir: PathBuf,
    pub runs: Vec<RunRow>,
    /// Empty for folders of `prepbench run` (their offline times are in runs.csv).
    pub offline: Vec<OfflineRow>,
    pub stages: Vec<StageRow>,
    pub samples: Vec<SampleRow>,
    pub errors: Vec<ErrorRow>,
    /// Default when the folder has none.
    pub manifest: Manifest,
}

/// The rows of `dir/name`; none when the folder has no such file.
fn optional<R: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Vec<R>, ResultsError> {
    let path = dir.join(name);
    if path.exists() {
        table::read_rows(&path)
    } else {
        Ok(Vec::new())
    }
}

impl Recorded {
    /// Loads `dir`. Only runs.csv is required.
    pub fn load(dir: &Path) -> Result<Recorded, ResultsError> {
        let runs_path = dir.join(RUNS);
        if !runs_path.exists() {
            return Err(ResultsError::invalid(
                dir,
                "holds no prepbench results (no runs.csv)".into(),
            ));
        }
        Ok(Recorded {
            dir: dir.to_path_buf(),
            runs: table::read_rows(&runs_path)?,
            offline: optional(dir, OFFLINE)?,
            stages: optional(dir, STAGES)?,
            samples: optional(dir, SAMPLES)?,
            errors: optional(dir, ERRORS)?,
            manifest: Manifest::read(dir)?.unwrap_or_default(),
        })
    }
}

/// The committed reference results folders (those under `results/reference/` holding a
/// manifest: the others there are tables of scripts, such as the scale table); at least one.
#[cfg(test)]
pub(crate) fn reference_folders() -> Vec<std::path::PathBuf> {
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/reference");
    let folders: Vec<_> = std::fs::read_dir(reference)
        .unwrap()
        .flatten()
        .map(|d| d.path())
        .filter(|p| p.join(crate::results::manifest::MANIFEST).is_file())
        .collect();
    assert!(!folders.is_empty(), "no reference results folder");
    folders
}

/// A copy of the folder `from` (a committed results folder, say) at `to`, every file in it.
#[cfg(test)]
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (path, target) = (entry.path(), to.join(entry.file_name()));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::labels::CacheState;

    #[test]
    fn committed_reference_folders_load_typed() {
        for dir in reference_folders() {
            let recorded = Recorded::load(&dir).unwrap();
            assert!(!recorded.runs.is_empty());
            assert!(!recorded.stages.is_empty());
            assert!(recorded.runs.iter().any(|r| r.cache == CacheState::Warm));
        }
    }

    #[test]
    fn a_run_row_round_trips_with_odd_names_and_empty_cells() {
        let dir = tempfile::tempdir().unwrap();
        let tables = Tables::open(dir.path()).unwrap();
        let row = RunRow {
            run_id: "r1".into(),
            workload: "my, \"odd\"\nworkload".into(),
            codec: "zstd:3".parse().unwrap(),
            cache: CacheState::NullIo,
            consumer: Some("batch=8,compute=5ms".parse().unwrap()),
            throughput_sps: 1234.5678,
            au_pct: Some(97.25),
            ..RunRow::default()
        };
        tables.runs.append(std::slice::from_ref(&row)).unwrap();
        let text = std::fs::read_to_string(tables.runs.path()).unwrap();
        assert!(text.contains(",1234.568,"), "{text}");
        assert!(
            !text.contains(",-,"),
            "missing values are empty cells: {text}"
        );
        let back = Recorded::load(dir.path()).unwrap().runs;
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].workload, row.workload);
        assert_eq!(back[0].codec, row.codec);
        assert_eq!(back[0].consumer, row.consumer);
        assert_eq!(back[0].cache, CacheState::NullIo);
        assert_eq!(back[0].verified, None);
        assert_eq!(
            Tables::open(dir.path()).unwrap().run_ids().unwrap().len(),
            1
        );
    }
}
