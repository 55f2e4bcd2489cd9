//! The guides in `docs/` executed as written: their example workloads are cut out of the
//! Markdown by marker, validated, swept or run; the example step shown in the guide must be the
//! file in the tree. And `prepbench show`, which the guides use to look at samples.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{data_dir, photo_folder, prepbench, prepbench_ok, run_json, stderr};

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

/// The commands of a guide's block, one per line without the `prepbench` word, split into
/// words, with `(from, to)` replacements applied word by word.
fn commands(guide: &str, marker: &str, replace: &[(&str, &str)]) -> Vec<Vec<String>> {
    block(guide, marker)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("prepbench "))
        .map(|line| {
            line.split_whitespace()
                .map(|w| {
                    replace
                        .iter()
                        .find(|(from, _)| *from == w)
                        .map_or(w.to_string(), |(_, to)| to.to_string())
                })
                .collect()
        })
        .collect()
}

/// The README's "Your pipeline in five minutes" as written: its example files are the guide's
/// (one pipeline, shown in both), and its commands validate, sweep (at test scale), report and
/// recommend, the report leading with the recommendation.
#[test]
fn the_readme_quickstart_runs_as_written() {
    let readme = "../README.md";
    let quickstart = block(readme, "quickstart");
    let guide = "your-own-pipeline.md";
    let examples = repo().join("examples/my-photos");
    for (file, marker) in [("my_pipeline.py", "module"), ("my-photos.yaml", "workload")] {
        assert_eq!(
            std::fs::read_to_string(examples.join(file)).unwrap(),
            block(guide, marker),
            "examples/my-photos/{file} is the guide's {marker} block"
        );
    }
    assert!(quickstart.contains("cp examples/my-photos/*"));
    let words = std::fs::read_to_string(repo().join("README.md"))
        .unwrap()
        .split_whitespace()
        .count();
    assert!(words <= 1500, "README.md has {words} words");
    let Some(python) = common::numpy_python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    for file in ["my_pipeline.py", "my-photos.yaml"] {
        std::fs::copy(examples.join(file), work.path().join(file)).unwrap();
    }
    let photos = work.path().join("photos");
    photo_folder(&photos, 12);
    let (yaml, results) = (
        work.path().join("my-photos.yaml"),
        work.path().join("results"),
    );
    let (yaml, results) = (yaml.display().to_string(), results.display().to_string());
    let photos = photos.display().to_string();
    let replace = [
        ("my-photos.yaml", yaml.as_str()),
        ("~/my-photos", photos.as_str()),
        ("results", results.as_str()),
        ("100", "12"),
    ];
    let mut ran = Vec::new();
    for line in quickstart.lines() {
        let command = line.split(" #").next().unwrap_or(line).trim();
        let Some(rest) = command.strip_prefix("prepbench ") else {
            continue;
        };
        let mut args: Vec<String> = rest
            .split_whitespace()
            .map(|w| {
                replace
                    .iter()
                    .find(|(from, _)| *from == w)
                    .map_or(w.to_string(), |(_, to)| to.to_string())
            })
            .collect();
        if args[0] == "sweep" {
            // At test scale: fewer trials and epochs, no machine calibration, stores here.
            let store = work.path().join("store").display().to_string();
            args.extend(argv![
                "--trials 2 --epochs 1 --no-calibrate --evict fadvise --quiet --store-dir",
                &store
            ]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_prepbench"))
            .args(&args)
            .env("PREPBENCH_PYTHON", &python)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "prepbench {args:?}: {}", stderr(&out));
        ran.push(args[0].clone());
    }
    assert_eq!(ran, ["validate", "sweep", "report", "recommend"]);
    let md = std::fs::read_to_string(work.path().join("results/report.md")).unwrap();
    let first_section = md.find("\n## ").map(|i| &md[i..]).unwrap_or("");
    assert!(
        first_section.starts_with("\n## Recommendation: my-photos"),
        "{md}"
    );
    // The trade-off plot marks the strategy the recommendation names.
    let named = md
        .split("**Recommendation: `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("a recommendation");
    let plots = work.path().join("results/plots");
    let tradeoff = std::fs::read_dir(&plots)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-tradeoff.svg"))
        .expect("a trade-off plot");
    let svg = std::fs::read_to_string(tradeoff.path()).unwrap();
    assert!(
        svg.contains(&format!("recommended: {named}")) && svg.contains(r#"r="8" fill="none""#),
        "the trade-off plot does not mark `{named}`"
    );
}

#[test]
fn the_pipeline_guide_sweeps_a_python_pipeline_and_leads_with_the_recommendation() {
    let Some(python) = common::numpy_python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let guide = "your-own-pipeline.md";
    photo_folder(&work.path().join("my-photos"), 12);
    write(work.path(), "my_pipeline.py", &block(guide, "module"));
    let yaml = write(work.path(), "my-photos.yaml", &block(guide, "workload"));
    let checked = prepbench_ok(&["--python", &python, "validate", &yaml]);
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(
        stdout.contains("(workload `my-photos`, 5 steps; strategies: unprocessed, concatenated, decoded, resized, normalized)"),
        "{stdout}"
    );
    let results = work.path().join("results").display().to_string();
    let dir = work.path().display().to_string();
    let replace = [
        (".venv/bin/python", python.as_str()),
        ("my-photos.yaml", yaml.as_str()),
        (".", dir.as_str()),
        ("results", results.as_str()),
    ];
    let sweep = &commands(guide, "sweep", &replace)[0];
    let mut args = sweep.clone();
    // The guide's command at test scale: fewer samples and trials, no machine calibration.
    let store = work.path().join("store").display().to_string();
    args.extend(argv![
        "--samples 12 --trials 2 --epochs 1 --no-calibrate --evict fadvise --quiet --store-dir",
        &store
    ]);
    let swept = prepbench_ok(&args);
    assert!(!stderr(&swept).contains("error"), "{}", stderr(&swept));
    let runs = common::Csv::read(&work.path().join("results/runs.csv"));
    assert!(!runs.rows.is_empty());
    for row in &runs.rows {
        assert_eq!(runs.col(row, "samples"), "12");
        let verified = runs.col(row, "verified");
        assert!(verified == "pass" || verified.is_empty(), "{verified}");
    }
    assert!(runs.rows.iter().any(|r| runs.col(r, "verified") == "pass"));
    let stages = std::fs::read_to_string(work.path().join("results/stages.csv")).unwrap();
    assert!(
        stages.contains("transfer:cropped"),
        "Python transfer time is reported"
    );
    for command in commands(guide, "report", &replace) {
        let out = prepbench_ok(&command);
        if command[0] == "recommend" {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("**Recommendation: `"), "{text}");
        }
    }
    let md = std::fs::read_to_string(work.path().join("results/report.md")).unwrap();
    // The answer comes first, with its evidence; the paper is not mentioned.
    let first_section = md.find("\n## ").map(|i| &md[i..]).unwrap_or("");
    assert!(
        first_section.starts_with("\n## Recommendation: my-photos"),
        "{md}"
    );
    for needle in ["**Recommendation: `", "[95 % CI]", "Pareto"] {
        assert!(md.contains(needle), "no {needle:?} in {md}");
    }
    for absent in ["## Paper comparison", "Kendall", "the paper's"] {
        assert!(!md.contains(absent), "{absent:?} in {md}");
    }
    // The Python-API route, as written (at test scale), with the package from the tree and the
    // binary under test (`pip install .` builds the same binary with cargo).
    let script = block(guide, "python-api")
        .replace("samples=200", "samples=12")
        .replace(
            "trials=3, epochs=2, verify=True",
            &format!(
                "trials=2, epochs=1, verify=True, extra=[\"--no-calibrate\", \"--evict\", \
                 \"fadvise\", \"--store-dir\", {store:?}]"
            ),
        );
    assert!(
        script.contains("--no-calibrate"),
        "the guide's call changed: {script}"
    );
    write(work.path(), "sweep.py", &script);
    let ran = Command::new(&python)
        .arg("sweep.py")
        .current_dir(work.path())
        .env("PYTHONPATH", repo().join("python"))
        .env("PREPBENCH_BIN", env!("CARGO_BIN_EXE_prepbench"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "{said}{}", stderr(&ran));
    assert!(said.contains("recommended: "), "{said}");
    let runs = common::Csv::read(&work.path().join("results-api/runs.csv"));
    assert!(runs.rows.iter().any(|r| runs.col(r, "verified") == "pass"));
    assert!(work.path().join("results-api/my-photos.yaml").is_file());
    assert!(work.path().join("results-api/report.md").is_file());
    // Rows keyed by the CSV's columns, numbers as numbers.
    let typed = Command::new(&python)
        .args([
            "-c",
            "import prepbench as p; r = p._rows('results-api/runs.csv'); \
             assert isinstance(r, p.Rows) and isinstance(r[0]['samples'], int) \
             and isinstance(r[0]['throughput_sps'], float), r[0]",
        ])
        .current_dir(work.path())
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    assert!(typed.status.success(), "{}", stderr(&typed));
    read_the_store_from_a_training_loop(work.path(), &store);
}

/// The guide's last section as written: `store list` names the sweep's stores, and its
/// training script reads one with a DataLoader over `StoreDataset`, the store's online steps
/// run by `OnlineSteps`.
fn read_the_store_from_a_training_loop(work: &Path, store: &str) {
    let guide = "your-own-pipeline.md";
    let mut listed = commands(guide, "store-list", &[]).remove(0);
    let at = listed.iter().position(|w| w == "--store-dir").unwrap() + 1;
    listed[at] = store.to_string();
    let out = prepbench_ok(&listed);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| my-photos | resized |"), "{text}");
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let resized = std::fs::read_dir(Path::new(store).join("my-photos/resized"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("store.json").is_file())
        .expect("the sweep stored `resized`");
    write(work, "train.py", &block(guide, "train"));
    let ran = common::with_package(&mut Command::new(&python), &native)
        .arg("train.py")
        .arg(&resized)
        .current_dir(work)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "{said}{}", stderr(&ran));
    assert!(
        said.contains("12 samples of `resized`, online: normalized, cropped"),
        "{said}"
    );
    assert!(
        said.contains("last batch: images (12, 224, 224, 3), labels (12,)"),
        "{said}"
    );
}

/// The Python package names every kind of callable a worker can import, and refuses, saying
/// why, those it cannot; its packaging names the CLI and the package's folder.
#[test]
fn the_python_package_names_importable_callables_and_refuses_the_rest() {
    if !common::have_python3() {
        return;
    }
    let python = "python3";
    let work = tempfile::tempdir().unwrap();
    write(
        work.path(),
        "tf.py",
        "class Scale:\n    def __init__(self, k=2):\n        self.k = k\n    def __call__(self, x):\n        return x\n    def apply(self, x):\n        return x\n\nSCALE = Scale(3)\n\ndef f(x):\n    return x\n",
    );
    let check = r#"
import json, prepbench, tf

def named(step):
    return step.function, step.path

here = named(prepbench.Step("a", tf.f))[1]
assert named(prepbench.Step("a", tf.f)) == ("tf:f", here), named(prepbench.Step("a", tf.f))
assert named(prepbench.Step("b", tf.SCALE))[0] == "tf:SCALE"
assert named(prepbench.Step("c", tf.SCALE.apply))[0] == "tf:SCALE.apply"
made = prepbench.Step("d", tf.Scale, init={"k": 4})
assert made.function == "tf:Scale" and json.loads(made.yaml().split("params: ")[1])["init"] == {"k": 4}
assert named(prepbench.Step("e", json.dumps)) == ("json:dumps", None), "an installed module needs no path"
def refused(bad, why):
    try:
        prepbench.Step("x", bad)
    except prepbench.PrepbenchError as e:
        assert why in str(e), e
    else:
        raise AssertionError(f"{bad} was accepted")
def outer():
    def inner(x):
        return x
    return inner
refused(lambda x: x, "lambda")
refused(tf.Scale(5), "not a module-level name")
# An object bound in a module and here too (a loop variable) is named by the module's name,
# which its import binds; one whose name is bound again before the workload is written is
# refused rather than written as whatever that name then holds.
for alias in [tf.SCALE]:
    assert named(prepbench.Step("b", alias))[0] == "tf:SCALE"
tf.CURRENT = tf.Scale(1)
first = prepbench.Step("first", tf.CURRENT)
tf.CURRENT = tf.Scale(2)
try:
    prepbench.Pipeline("t", data=".", steps=[first]).yaml()
except prepbench.PrepbenchError as e:
    assert "step first" in str(e) and "tf:CURRENT" in str(e) and "now holds another" in str(e), e
else:
    raise AssertionError("a step whose name was bound again was written")
import builtins
builtins._ = tf.Scale(6)
refused(builtins._, "not a module-level name")
refused(outer(), "inside a function")
for constant in (5, None, True):
    refused(constant, "is not callable")
import pathlib, tempfile
with tempfile.TemporaryDirectory() as d:
    try:
        prepbench.Pipeline("t", data=d, steps=[("a", tf.f)]).sweep(d + "/res")
    except prepbench.PrepbenchError as e:
        assert "inside the dataset" in str(e) and not pathlib.Path(d, "res").exists(), e
    else:
        raise AssertionError("a results folder inside the dataset was accepted")
yaml = prepbench.Pipeline("t", data=".", steps=[("a", tf.f)]).yaml()
assert "op: read_file" in yaml and '"function": "tf:f"' in yaml, yaml
# Arguments a user gets wrong are refused in prepbench's words, never a raw TypeError or
# FileExistsError, and 0 samples is not taken for the default.
def refused_pipeline(why, **bad):
    arguments = dict(data=".", steps=[("a", tf.f)])
    arguments.update(bad)
    try:
        prepbench.Pipeline("t", **arguments)
    except prepbench.PrepbenchError as e:
        assert why in str(e), e
    else:
        raise AssertionError(f"{bad} was accepted")
refused_pipeline("samples=0", samples=0)
refused_pipeline("samples=-3", samples=-3)
refused_pipeline("samples=True", samples=True)
refused_pipeline("data=5", data=5)
refused_pipeline("glob=None", glob=None)
refused_pipeline("label='Parent'", label="Parent")
refused_pipeline("steps=", steps=tf.f)
refused_pipeline("step 'a'", steps=["a"])
with tempfile.TemporaryDirectory() as d:
    pathlib.Path(d, "file").write_text("mine")
    try:
        prepbench.Pipeline("t", data=".", steps=[("a", tf.f)]).sweep(d + "/file")
    except prepbench.PrepbenchError as e:
        assert "is a file, not a folder" in str(e), e
    else:
        raise AssertionError("a file as the results folder was accepted")
    try:
        prepbench.Pipeline("t", data=".", steps=[("a", tf.f)]).write(d + "/file/w.yaml")
    except prepbench.PrepbenchError as e:
        assert "w.yaml" in str(e), e
    assert pathlib.Path(d, "file").read_text() == "mine"
# The loader dimension from Python: loaders= and loader_options= reach the command line, and
# its errors name them as this API's arguments.
import os, stat
with tempfile.TemporaryDirectory() as d:
    fake = pathlib.Path(d, "fake-prepbench")
    fake.write_text('#!/bin/sh\necho "$@" > ' + d + '/args\n'
                    "echo 'error: --loader-options: no option x' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    os.environ["PREPBENCH_BIN"] = str(fake)
    try:
        prepbench.Pipeline("t", data=".", steps=[("a", tf.f)]).sweep(
            d + "/res", loaders=["native", "torch"], loader_options="batch_size=64",
            codecs=["none", "zstd"], storage="paper-ceph-hdd", store_dir=d + "/st")
    except prepbench.PrepbenchError as e:
        assert "loader_options=: no option" in str(e), e
    else:
        raise AssertionError("the fake command line's error was lost")
    args = pathlib.Path(d, "args").read_text()
    assert "--loaders native,torch --codecs none,zstd --storage paper-ceph-hdd " \
        "--loader-options batch_size=64" in args, args
    assert f"--store-dir {d}/st " in args, args
    # A store folder inside the dataset is refused before anything is written.
    pathlib.Path(d, "data").mkdir()
    try:
        prepbench.Pipeline("t", data=d + "/data", steps=[("a", tf.f)]).sweep(
            d + "/res2", store_dir=d + "/data/st")
    except prepbench.PrepbenchError as e:
        assert "store_dir=" in str(e) and "inside the dataset" in str(e), e
    else:
        raise AssertionError("a store folder inside the dataset was accepted")
    assert not pathlib.Path(d, "res2").exists() and not pathlib.Path(d, "data/st").exists()
    try:
        prepbench.Pipeline("t", data=".", steps=[("a", tf.f)]).recommend(
            d + "/res", memory_bytes="64GiB", dataset_samples=1000)
    except prepbench.PrepbenchError:
        pass
    else:
        raise AssertionError("the fake command line's error was lost")
    args = pathlib.Path(d, "args").read_text()
    assert args.startswith("--python ") and "recommend " in args, args
    assert "--memory-bytes 64GiB" in args and "--dataset-samples 1000" in args, args
    del os.environ["PREPBENCH_BIN"]
print("ok")
"#;
    let ran = Command::new(python)
        .args(["-c", check])
        .current_dir(work.path())
        .env(
            "PYTHONPATH",
            format!(
                "{}:{}",
                repo().join("python").display(),
                work.path().display()
            ),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(
        ran.status.success() && String::from_utf8_lossy(&ran.stdout).contains("ok"),
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        stderr(&ran)
    );
    // A worker importing a module that starts prepbench again is refused, not recursed into.
    let ran = Command::new(python)
        .args(["-c", "import prepbench, tf; prepbench.Pipeline('t', data='.', steps=[('a', tf.f)]).sweep('x')"])
        .current_dir(work.path())
        .env("PYTHONPATH", repo().join("python"))
        .env("PREPBENCH_WORKER", "1")
        .env("PREPBENCH_BIN", env!("CARGO_BIN_EXE_prepbench"))
        .output()
        .unwrap();
    assert!(stderr(&ran).contains("__name__"), "{}", stderr(&ran));
    assert!(!work.path().join("x").exists(), "nothing was written");
    // A script read from stdin names its file `<stdin>`, which no worker can import.
    let mut piped = Command::new(python)
        .arg("-")
        .current_dir(work.path())
        .env("PYTHONPATH", repo().join("python"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        piped.stdin.as_mut().unwrap(),
        b"import prepbench\ndef g(x):\n    return x\nprepbench.Step('a', g)\n",
    )
    .unwrap();
    let ran = piped.wait_with_output().unwrap();
    assert!(
        stderr(&ran).contains("interactive session"),
        "{}",
        stderr(&ran)
    );
    // The packaging: a maturin build of the native module (reader and CLI) with this folder.
    let pyproject = std::fs::read_to_string(repo().join("pyproject.toml")).unwrap();
    for needle in [
        "build-backend = \"maturin\"",
        "bindings = \"pyo3\"",
        "manifest-path = \"python/native/Cargo.toml\"",
        "module-name = \"prepbench._native\"",
        "prepbench = \"prepbench._cli:main\"",
        "python-source = \"python\"",
    ] {
        assert!(pyproject.contains(needle), "no {needle} in pyproject.toml");
    }
    assert!(repo().join("python/prepbench/__init__.py").is_file());
}

#[test]
fn the_dataset_kind_guide_quotes_the_tree_and_its_workload_runs() {
    let guide = "adding-a-dataset-kind.md";
    for (marker, file) in [
        ("kind", "datasets/src/webdataset.rs"),
        ("kinds-line", "datasets/src/registry.rs"),
    ] {
        let shown = block(guide, marker);
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(
            text.contains(shown.trim_end()),
            "docs/{guide} quotes {file} as it is not:\n{shown}"
        );
    }
    let work = tempfile::tempdir().unwrap();
    let (yaml, _) = validated(work.path(), "my-shards.yaml", (guide, "workload"));
    let dir = |name: &str| work.path().join(name).display().to_string();
    prepbench_ok(&argv![
        "run",
        &yaml,
        "--verify --samples 8 --epochs 1 --threads 2 --evict fadvise --quiet --data-dir",
        &dir("data"),
        "--store-dir",
        &dir("store"),
        "--out",
        &dir("out")
    ]);
    let runs = common::Csv::read(&work.path().join("out/runs.csv"));
    assert_eq!(runs.rows.len(), 4);
    assert!(runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"));
}
