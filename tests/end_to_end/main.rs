//! End-to-end tests: the `prepbench` binary on small generated datasets, checked through its
//! exit code, its stderr and the files it writes.

#[path = "../common/mod.rs"]
#[macro_use]
mod common;

mod bad_input;
mod compression;
mod corpus;
mod domains;
mod emulated;
mod loaders;
mod measurement;
mod python_steps;
mod runs;
mod store_reader;

pub use std::path::Path;
pub use std::process::{Command, Output};

pub use common::{
    data_dir, fails_naming, find_files, numpy_python, prepbench, prepbench_ok, run_json, stderr,
    Csv, SAMPLES,
};

/// `prepbench run cv` on the shared dataset with its store and results in `work`.
fn run_cv_in<S: AsRef<str>>(work: &Path, extra: &[S]) -> Output {
    let mut args = argv![
        "run cv --samples",
        SAMPLES,
        "--threads 2 --shards 4 --quiet --data-dir",
        data_dir().to_str().unwrap(),
        "--store-dir",
        work.join("store").to_str().unwrap(),
        "--out",
        work.join("out").to_str().unwrap()
    ];
    args.extend(extra.iter().map(|a| a.as_ref().to_string()));
    prepbench(&args)
}

/// `prepbench run cv` in a fresh working directory, which must succeed.
fn run_cv_ok<S: AsRef<str>>(extra: &[S]) -> tempfile::TempDir {
    let (out, work) = run_cv(extra);
    assert!(out.status.success(), "{}", stderr(&out));
    work
}

/// `prepbench run cv` in a fresh working directory.
fn run_cv<S: AsRef<str>>(extra: &[S]) -> (Output, tempfile::TempDir) {
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
