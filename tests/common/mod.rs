//! Helpers shared by the end-to-end tests: running the binary, a generated dataset shared per
//! test process, reading the CSV files it writes.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub const SAMPLES: &str = "40";

pub fn prepbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prepbench"))
        .args(args)
        .output()
        .expect("prepbench runs")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One generated ImageNet-style dataset shared by the tests (generated once per process).
pub fn data_dir() -> &'static Path {
    static DATA: OnceLock<tempfile::TempDir> = OnceLock::new();
    DATA.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = prepbench(&[
            "generate",
            "imagenet",
            "--samples",
            SAMPLES,
            "--out",
            &dir.path().join("imagenet-seed0").display().to_string(),
            "--quiet",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        dir
    })
    .path()
}

pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub fn read(path: &Path) -> Csv {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text
            .lines()
            .map(|l| l.split(',').map(String::from).collect::<Vec<_>>());
        Csv {
            header: lines.next().unwrap(),
            rows: lines.collect(),
        }
    }

    pub fn col(&self, row: &[String], name: &str) -> String {
        let i = self
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        row[i].clone()
    }

    pub fn num(&self, row: &[String], name: &str) -> f64 {
        self.col(row, name).parse().unwrap()
    }
}

pub fn find_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find_files(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}
