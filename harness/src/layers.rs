//! Checks the harness's architecture on its own source: every `crate::` path a file names must
//! point to its own folder or to one listed before it in [`LAYERS`] (so no import cycle between
//! folders can form), and a file over [`MAX_LINES`] lines must say at its top why it is long.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folders (and leaf files) from the bottom up: each may use only those before it.
const LAYERS: &[&[&str]] = &[
    &["markdown", "progress", "scratch", "units"],
    &["results"],
    &["store"],
    &["analysis"],
    &["measure"],
    &["plan"],
    &["cli"],
];

/// A file longer than this holds two concepts, unless its module doc says why not.
const MAX_LINES: usize = 600;
/// How a long file's module doc starts its reason.
const LONG_FILE_REASON: &str = "//! Long file:";

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

/// The top-level module a file of `src` belongs to (`measure` for `src/measure/cache.rs`).
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a file's code names through `crate::` (comments left out).
fn used_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn folders_depend_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let module = top_module(&src, &file);
        if matches!(module.as_str(), "lib" | "main" | "layers") {
            continue;
        }
        let own = layer_of(&module)
            .unwrap_or_else(|| panic!("{module} (from {}) is in no layer", file.display()));
        let text = std::fs::read_to_string(&file).unwrap();
        for used in used_modules(&text) {
            let Some(layer) = layer_of(&used) else {
                panic!(
                    "{} names crate::{used}, which is in no layer",
                    file.display()
                );
            };
            let same = used == module;
            let leaf = layer == 0 && own > 0;
            if !same && !leaf && layer >= own {
                wrong
                    .entry(file.strip_prefix(&src).unwrap().display().to_string())
                    .or_default()
                    .push(used);
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "files that use a folder at or above their own layer: {wrong:?}"
    );
}

#[test]
fn long_files_say_why() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let long: Vec<String> = rust_files(&src)
        .into_iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines = text.lines().count();
            (lines > MAX_LINES && !text.contains(LONG_FILE_REASON))
                .then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these, or say why at their top ({LONG_FILE_REASON} ...): {long:?}"
    );
}

#[test]
fn the_checks_can_fail() {
    assert_eq!(
        used_modules("use crate::plan::run;\n// crate::cli\nlet x = crate::store::X;"),
        ["plan", "store"]
    );
    assert!(layer_of("plan") > layer_of("measure"));
    assert_eq!(layer_of("nowhere"), None);
}
