//! End-to-end tests: the `prepbench` binary on small generated datasets, checked through its
//! exit code, its stderr and the files it writes.

#[path = "../common/mod.rs"]
#[macro_use]
mod common;

mod bad_input;
mod domains;
mod measurement;
mod runs;

pub use std::path::Path;
pub use std::process::{Command, Output};

pub use common::{data_dir, find_files, prepbench, run_json, stderr, Csv, SAMPLES};

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

/// Every file under `dir`, recursively.
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
