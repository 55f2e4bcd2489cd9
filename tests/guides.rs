//! The guides in `docs/` executed as written: their example workloads are cut out of the
//! Markdown by marker, validated, swept or run; the example step shown in the guide must be the
//! file in the tree. And `prepbench show`, which the guides use to look at samples.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};

use common::{data_dir, prepbench, prepbench_ok, run_json, stderr};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The fenced block after `<!-- guide:NAME -->` in a guide, without its fences.
fn block(guide: &str, name: &str) -> String {
    let text = std::fs::read_to_string(repo().join("docs").join(guide)).unwrap();
    let marker = format!("<!-- guide:{name} -->");
    let start = text
        .find(&marker)
        .unwrap_or_else(|| panic!("{guide} has no {marker}"));
    let after = &text[start + marker.len()..];
    let fence = after
        .find("```")
        .expect("a fenced block follows the marker");
    let body_start = fence + after[fence..].find('\n').unwrap() + 1;
    let body_len = after[body_start..]
        .find("\n```")
        .expect("the block is closed")
        + 1;
    after[body_start..body_start + body_len].to_string()
}

/// The guide's block `(guide, marker)` written to `dir/name` and validated (which must pass):
/// its path and `validate`'s output.
fn validated(
    dir: &Path,
    name: &str,
    (guide, marker): (&str, &str),
) -> (String, std::process::Output) {
    let yaml = write(dir, name, &block(guide, marker));
    let out = prepbench_ok(&["validate", &yaml]);
    (yaml, out)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_workload_guide_example_validates_sweeps_and_reports() {
    let work = tempfile::tempdir().unwrap();
    let (yaml, out) = validated(
        work.path(),
        "my-gray-cv.yaml",
        ("adding-a-workload.md", "example-workload"),
    );
    // The guide quotes this line.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "(workload `my-gray-cv`, 6 steps; strategies: unprocessed, concatenated, decoded, resized, greyscaled, pixel-centered)"
        ),
        "{stdout}"
    );
    let results = work.path().join("results");
    let dir = |name: &str| work.path().join(name).display().to_string();
    prepbench_ok(&argv![
        "sweep",
        &yaml,
        "--samples 12 --trials 1 --codecs none --data-dir",
        &dir("data"),
        "--store-dir",
        &dir("store"),
        "--out",
        &results.display().to_string(),
        "--evict fadvise --quiet"
    ]);
    prepbench_ok(&["report", &results.display().to_string(), "--quiet"]);
    let md = std::fs::read_to_string(results.join("report.md")).unwrap();
    assert!(
        md.contains("## my-gray-cv") && md.contains("| greyscaled |"),
        "{md}"
    );
}

#[test]
fn the_step_guide_shows_the_step_as_it_is_in_the_tree_and_its_workload_runs() {
    let shown = block("adding-a-step.md", "example-step");
    let file = std::fs::read_to_string(repo().join("workloads/src/steps/brightness.rs")).unwrap();
    assert_eq!(
        shown, file,
        "docs/adding-a-step.md shows brightness.rs as it is"
    );
    let work = tempfile::tempdir().unwrap();
    // Without the registry line this fails with the guide's documented error: unknown op
    // `brightness`.
    let (yaml, _) = validated(
        work.path(),
        "my-bright.yaml",
        ("adding-a-step.md", "example-step-workload"),
    );
    let line = block("adding-a-step.md", "registry-line");
    let registry = std::fs::read_to_string(repo().join("workloads/src/registry.rs")).unwrap();
    assert!(
        registry.contains(line.trim_end()),
        "the registry holds {line}"
    );

    let rows = run_json(work.path(), data_dir(), &yaml, &["--samples", "6"]);
    let strategies: Vec<&str> = rows
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(
        strategies.join(" "),
        "unprocessed concatenated decoded brightened resized"
    );
    assert!(rows.iter().all(|r| r["verified"] == "pass"), "{rows:?}");
    let list = prepbench(&["list", "steps"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains("brightness\n  multiply an image by a factor"),
        "{text}"
    );
}

/// Reads a `.npy` file's dtype descriptor, shape and data length.
fn npy(path: &Path) -> (String, Vec<usize>, usize) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    let descr = header.split("'descr': '").nth(1).unwrap();
    let descr = descr[..descr.find('\'').unwrap()].to_string();
    let shape = header.split("'shape': (").nth(1).unwrap();
    let shape: Vec<usize> = shape[..shape.find(')').unwrap()]
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect();
    (descr, shape, bytes.len() - 10 - len)
}

#[test]
fn show_writes_npy_and_pictures_and_lists_every_step() {
    let work = tempfile::tempdir().unwrap();
    let data = data_dir().display().to_string();
    let show = |args: &[&str]| {
        let mut all = vec!["show"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--data-dir", &data]);
        let out = prepbench(&all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let png = work.path().join("x.png");
    let resized_to = |path: &Path| {
        show(&[
            "cv",
            "--sample",
            "0",
            "--after",
            "resized",
            "--out",
            path.to_str().unwrap(),
        ])
    };
    resized_to(&png);
    let img = image::open(&png).unwrap().to_rgb8();
    assert_eq!(
        img.width().min(img.height()),
        256,
        "the shorter side is 256"
    );
    // A photo-like image: many distinct colours, not a flat or blank picture.
    let colours: std::collections::HashSet<[u8; 3]> = img.pixels().map(|p| p.0).collect();
    assert!(colours.len() > 1000, "{} colours", colours.len());

    let npy_path = work.path().join("x.npy");
    resized_to(&npy_path);
    let (descr, shape, data_len) = npy(&npy_path);
    assert_eq!(descr, "|u1");
    assert_eq!((shape.len(), shape[2]), (3, 3));
    assert_eq!(data_len, shape.iter().product::<usize>());
    assert_eq!(shape[0], img.height() as usize);
    let float = work.path().join("f.npy");
    show(&[
        "cv",
        "--after",
        "pixel-centered",
        "--out",
        &float.display().to_string(),
    ]);
    assert_eq!(npy(&float).0, "<f4");

    let list = show(&["cv", "--list"]);
    for needle in [
        "| (source) | unprocessed | path | text |",
        "| concatenated (read_file) | concatenated |",
        "|  |  | data | bytes | - |",
        "|  |  | image | tensor | uint8 |",
        "|  |  | image | tensor | float32 |",
        "| cropped (random_crop) | - (online only) |",
    ] {
        assert!(list.contains(needle), "{needle}: {list}");
    }

    // Boxes are drawn on a letterboxed detection sample: red pixels appear.
    let det = work.path().join("det");
    let boxes = work.path().join("y.png");
    prepbench_ok(&argv![
        "show detection --sample 0 --after letterbox --out",
        &boxes.display().to_string(),
        "--data-dir",
        &det.display().to_string()
    ]);
    let img = image::open(&boxes).unwrap().to_rgb8();
    assert_eq!((img.width(), img.height()), (640, 640));
    let red = img.pixels().filter(|p| p.0 == [255, 0, 0]).count();
    assert!(red > 100, "{red} box pixels");

    // Bad requests say what is wrong.
    let out = prepbench(&argv!["show cv --after blur --list --data-dir", &data]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no step `blur`"), "{}", stderr(&out));
}
