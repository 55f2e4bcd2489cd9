//! Loaders beside prepbench's own engine: a PyTorch DataLoader (`--loader torch`) runs a
//! files-kind pipeline of Pillow/NumPy/torchvision steps under the same protocol, its outputs
//! verified against native fully-online processing; runs record the loader, `compare` pairs
//! across it, `recommend` names a worker count; torchvision values cross a chain as they are;
//! a step a loader cannot run is refused before anything runs.

use super::*;

const MODULE: &str = r#"
import io
import random

import numpy as np
from PIL import Image


def decode(data):
    # A PIL Image, as torchvision's transforms take it: it crosses to the next step as it is.
    return Image.open(io.BytesIO(data)).convert("RGB")


def resize(image):
    if isinstance(image, np.ndarray):  # stored between the steps: an array
        image = Image.fromarray(image)
    return image.resize((48, 40), Image.BILINEAR)


def mark(image):
    # Writes into its input, as `x -= mean` does, and fails if an input it wrote into comes
    # back (a cache that served a sample this step changed in an earlier epoch).
    array = image if isinstance(image, np.ndarray) else np.array(image)
    flat = array.reshape(-1)
    if flat[:3].tolist() == [7, 77, 177]:
        raise ValueError("an input this step wrote into came back")
    flat[:3] = [7, 77, 177]
    return array


def grey_or_rgb(sample, sample_id, epoch):
    # A greyscale array (2 dimensions) for odd samples, RGB (3) for even ones, as a decode
    # that leaves out `.convert("RGB")` gives.
    array = np.asarray(Image.open(io.BytesIO(sample["data"])).convert("L"))
    if sample_id % 2 == 0:
        array = np.stack([array] * 3, axis=-1)
    return {"data": array, "label": sample["label"]}


def extra_but_one(sample, sample_id, epoch):
    # A field every sample but one has: a batch's samples then differ in their fields.
    fields = {"data": np.frombuffer(sample["data"][:64], np.uint8), "label": sample["label"]}
    if sample_id != 5:
        fields["extra"] = np.zeros(3, np.float32)
    return fields


def crop(image):
    array = np.asarray(image)
    top = random.randint(0, array.shape[0] - 32)
    left = random.randint(0, array.shape[1] - 32)
    return np.ascontiguousarray(array[top:top + 32, left:left + 32])
"#;

/// torchvision's `Compose`, v1 and v2 where it has them, in a module of their own: the steps of
/// `pipe.py` import NumPy and Pillow alone, as a user's decode and crop would, and do not
/// import torchvision (about a second in each native run's two step workers).
const VISION: &str = r#"
import torchvision.transforms as T

COMPOSE = T.Compose([T.Resize((40, 48)), T.CenterCrop(32), T.PILToTensor()])

try:  # torchvision 0.15 and later
    import torchvision.transforms.v2 as T2

    COMPOSE_V2 = T2.Compose([T2.Resize((40, 48)), T2.CenterCrop(32), T2.PILToTensor()])
except ImportError:
    COMPOSE_V2 = None
"#;

/// A photo folder of 12 JPEGs in two classes, `pipe.py`, `vision.py` and the workload
/// `name.yaml` whose steps after reading are `steps` (YAML list items).
fn setup(work: &Path, name: &str, steps: &str) -> std::path::PathBuf {
    let photos = work.join("photos");
    if !photos.exists() {
        common::photo_folder(&photos, 12);
    }
    std::fs::write(work.join("pipe.py"), MODULE).unwrap();
    std::fs::write(work.join("vision.py"), VISION).unwrap();
    let yaml = format!(
        "name: {name}\ndataset:\n  kind: files\n  path: {}\n  options: {{glob: \"**/*.JPEG\", \
         label: parent}}\n  samples: 12\nsteps:\n  - name: concatenated\n    op: read_file\n{steps}",
        photos.display()
    );
    let path = work.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    path
}

const STEPS: &str = "  - name: decoded\n    op: python\n    params: {function: \"pipe:decode\", from: data}\n  - name: resized\n    op: python\n    params: {function: \"pipe:resize\", from: data}\n  - name: cropped\n    op: python\n    random: true\n    params: {function: \"pipe:crop\", from: data}\n";

/// The stack (package -> version) the manifest in `out` records for `loader`, from the one
/// invocation that ran it; no other records one (native runs have none).
fn loader_stack(out: &Path, loader: &str) -> serde_json::Value {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let stacks: Vec<&serde_json::Value> = manifest["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.get("loaders"))
        .collect();
    assert_eq!(stacks.len(), 1, "{manifest}");
    assert_eq!(stacks[0].as_object().unwrap().len(), 1, "{manifest}");
    stacks[0][loader].clone()
}

/// `prepbench` with the interpreter `python` and the Python package from the tree.
fn prepbench_in(python: &str, native: &Path, args: &[String]) -> Output {
    common::with_package(&mut Command::new(env!("CARGO_BIN_EXE_prepbench")), native)
        .arg("--python")
        .arg(python)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_torch_loader_runs_beside_native_verified_paired_and_answers_num_workers() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let yaml = setup(work.path(), "photos", STEPS);
    let out = work.path().join("results");
    let swept = prepbench_in(
        &python,
        &native,
        &argv![
            "sweep",
            yaml.to_str().unwrap(),
            "--loaders native,torch --verify --strategies unprocessed,concatenated,resized",
            "--threads 1,2 --trials 2 --epochs 1 --no-calibrate --evict fadvise --quiet",
            "--store-dir",
            work.path().join("stores").to_str().unwrap(),
            "--out",
            out.to_str().unwrap()
        ],
    );
    assert!(swept.status.success(), "{}", stderr(&swept));
    let runs = Csv::read(&out.join("runs.csv"));
    let torch: Vec<&Vec<String>> = runs
        .rows
        .iter()
        .filter(|r| runs.col(r, "loader") == "torch")
        .collect();
    // 3 strategies x 2 thread counts x 2 trials under each loader.
    assert_eq!(torch.len(), 12, "{:?}", runs.rows);
    assert_eq!(runs.rows.len(), 24);
    for row in &torch {
        assert_eq!(runs.col(row, "verified"), "pass", "{row:?}");
        assert!(
            runs.col(row, "loader_options").contains("batch=32"),
            "{row:?}"
        );
        assert_eq!(runs.col(row, "samples"), "12", "{row:?}");
        // The CPU of the loader's processes is counted: user and system together, since a
        // 65 ms epoch of 12 samples can fall within one 10 ms tick of user time (seen: 0.0 user,
        // 0.033 s system).
        let cpu = |c: &str| runs.col(row, c).parse::<f64>().unwrap();
        assert!(cpu("cpu_user_s") + cpu("cpu_sys_s") > 0.0, "{row:?}");
    }
    // What the loader ran on, as its process said: torch's version and the interpreter's.
    let stack = loader_stack(&out, "torch");
    assert!(
        stack["torch"].is_string() && stack["python"].is_string(),
        "{stack}"
    );
    // Paired across the loader, cell by cell.
    let compared = prepbench_ok(&argv![
        "compare",
        out.to_str().unwrap(),
        out.to_str().unwrap(),
        "--across loader --values native,torch"
    ]);
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(text.contains("6 pairs"), "{text}");
    assert!(text.contains("native → torch"), "{text}");
    // A worker count for each loader's recommendation.
    let recommended = prepbench_ok(&argv!["recommend", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&recommended.stdout);
    assert!(text.contains("loader torch"), "{text}");
    assert!(
        text.contains("**Workers:**") && text.contains("num_workers = "),
        "{text}"
    );
    assert!(text.contains("threads = "), "{text}");
}

/// A step that logs, per call, its process, epoch, sample and a seeded draw, after spending
/// 40 ms of CPU: what a worker did, and that its CPU is counted.
const TAGGED: &str = r#"
import os, random, time

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.log")


def tag(image, epoch, sample_id):
    began = time.process_time()
    while time.process_time() - began < 0.04:
        pass
    with open(LOG, "a") as f:
        f.write(f"{os.getpid()} {epoch} {sample_id} {random.getrandbits(32)}\n")
    return image
"#;

/// The torch loader process's CPU counts a child while it lives (found through the children
/// files and, as on a kernel without them, through every process's parent) and once reaped.
const LIVE_CPU: &str = r#"
import os, signal, time
from prepbench import _loader

def cpu():
    usage = _loader._usage()
    return usage["user_s"] + usage["sys_s"]


before = cpu()
child = os.fork()
if child == 0:
    began = time.process_time()
    while time.process_time() - began < 0.3:
        pass
    time.sleep(60)
    os._exit(0)
assert _loader._live_descendants(os.getpid()) == [child] == _loader._descendants_by_parent(os.getpid())
deadline = time.monotonic() + 30
while cpu() - before < 0.25 and time.monotonic() < deadline:
    time.sleep(0.05)
alive = cpu() - before
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
reaped = cpu() - before
assert alive >= 0.25 and reaped >= 0.25 and _loader._live_descendants(os.getpid()) == [], (alive, reaped)
print("ok")
"#;

/// With `persistent=true` the torch loader keeps one DataLoader for a run, as a training job
/// that keeps its workers: the same worker processes serve every epoch, each epoch's number
/// reaches them (their seeded draws are native processing's, epoch by epoch), and their CPU
/// is counted while they live. Without it, each epoch starts workers of its own.
#[test]
fn persistent_workers_serve_every_epoch_of_a_run_with_its_epoch_and_their_cpu() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let yaml = setup(
        work.path(),
        "tagged",
        &format!("{}  - name: tagged\n    op: python\n    random: true\n    params: {{function: \"tagged:tag\", from: data}}\n", &STEPS[..STEPS.find("  - name: cropped").unwrap()]),
    );
    std::fs::write(work.path().join("tagged.py"), TAGGED).unwrap();
    let log = work.path().join("calls.log");
    // (pid, epoch, sample, draw) of every call a run made, the log emptied for the next.
    let run = |loader: &str, options: &str, out: &str| {
        let mut args = argv![
            "run",
            yaml.to_str().unwrap(),
            "--loader",
            loader,
            "--strategy concatenated --epochs 3 --threads 2 --evict fadvise --quiet",
            "--store-dir",
            work.path().join("stores").to_str().unwrap(),
            "--out",
            work.path().join(out).to_str().unwrap()
        ];
        if !options.is_empty() {
            args.extend(["--loader-options".into(), options.into()]);
        }
        let ran = prepbench_in(&python, &native, &args);
        assert!(ran.status.success(), "{}", stderr(&ran));
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        let mut calls: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect())
            .collect();
        calls.sort_by_key(|c| (c[1], c[2]));
        calls
    };
    let kept = run("torch", "batch=2,persistent=true", "kept");
    let fresh = run("torch", "batch=2", "fresh");
    let native_calls = run("native", "", "native");
    // The epochs each worker process served: a run measured beside heavy foreign load is
    // measured once more, by workers of its own.
    let served = |calls: &[Vec<u64>]| {
        let mut by_pid = std::collections::BTreeMap::<u64, std::collections::BTreeSet<u64>>::new();
        for call in calls {
            by_pid.entry(call[0]).or_default().insert(call[1]);
        }
        by_pid.into_values().collect::<Vec<_>>()
    };
    let every: std::collections::BTreeSet<u64> = [0, 1, 2].into();
    assert!(
        served(&kept).iter().all(|epochs| *epochs == every),
        "each worker serves the run's 3 epochs: {kept:?}"
    );
    assert!(
        served(&fresh).iter().all(|epochs| epochs.len() == 1),
        "workers of an epoch's own: {fresh:?}"
    );
    // Every epoch's draws are native processing's, as many times as the run was measured.
    let drawn = |calls: &[Vec<u64>]| {
        let mut drawn: Vec<_> = calls.iter().map(|c| c[1..].to_vec()).collect();
        drawn.dedup();
        drawn
    };
    for calls in [&kept, &fresh] {
        assert!(calls.len() == 36 || calls.len() == 72, "{calls:?}");
        assert_eq!(drawn(calls), drawn(&native_calls), "epochs 0-2 as natively");
    }
    assert_eq!(drawn(&native_calls).len(), 36);
    // 12 samples x 40 ms of the workers' CPU in every epoch, the first (workers started) and
    // the later ones (workers alive when it ends) alike.
    let runs = Csv::read(&work.path().join("kept/runs.csv"));
    assert_eq!(runs.rows.len(), 3);
    let counted = common::with_package(&mut Command::new(&python), &native)
        .args(["-c", LIVE_CPU])
        .output()
        .unwrap();
    assert!(counted.status.success(), "{}", stderr(&counted));
    for row in &runs.rows {
        let cpu = |c: &str| runs.col(row, c).parse::<f64>().unwrap();
        assert!(cpu("cpu_user_s") + cpu("cpu_sys_s") >= 0.4, "{row:?}");
    }
}

/// A torchvision `Compose` as one step and its transforms as steps give the same samples
/// (PIL Images crossing between them as they are), natively and under the torch loader.
#[test]
fn torchvision_transforms_work_as_one_step_and_as_steps_under_every_loader() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let decode =
        "  - name: decoded\n    op: python\n    params: {function: \"pipe:decode\", from: data}\n";
    let one = setup(
        work.path(),
        "one",
        &format!("{decode}  - name: composed\n    op: python\n    params: {{function: \"vision:COMPOSE\", from: data}}\n"),
    );
    let steps = setup(
        work.path(),
        "steps",
        &format!(
            "{decode}  - name: resized\n    op: python\n    params: {{function: \"torchvision.transforms:Resize\", from: data, init: [[40, 48]]}}\n  - name: centred\n    op: python\n    params: {{function: \"torchvision.transforms:CenterCrop\", from: data, init: [32]}}\n  - name: tensor\n    op: python\n    params: {{function: \"torchvision.transforms:PILToTensor\", from: data, init: []}}\n"
        ),
    );
    // torchvision's v2 transforms where the interpreter has them (0.15 and later).
    let has_v2 = common::with_package(&mut Command::new(&python), &native)
        .args(["-c", "import torchvision.transforms.v2"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut yamls = vec![one.clone(), steps.clone()];
    if has_v2 {
        yamls.push(setup(
            work.path(),
            "two",
            &format!("{decode}  - name: composed\n    op: python\n    params: {{function: \"vision:COMPOSE_V2\", from: data}}\n"),
        ));
    } else {
        eprintln!(
            "torchvision in {python} has no transforms.v2 (before 0.15): v2's Compose not run"
        );
    }
    let mut shown = Vec::new();
    for yaml in &yamls {
        let dir = work.path().join(format!("show-{}", shown.len()));
        let out = prepbench_in(
            &python,
            &native,
            &argv![
                "show",
                yaml.to_str().unwrap(),
                "--sample 3 --out",
                dir.to_str().unwrap()
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        shown.push(std::fs::read(dir.join("data.npy")).unwrap());
    }
    for (i, other) in shown.iter().enumerate().skip(1) {
        assert_eq!(
            &shown[0],
            other,
            "{} and the Compose as one step differ",
            yamls[i].display()
        );
    }
    // The second with the loader's options set: recorded, and the same samples.
    let options = ["batch=32", "batch=4,prefetch=3,persistent=true", "batch=8"];
    for (yaml, options) in yamls.iter().zip(options) {
        let out = prepbench_in(
            &python,
            &native,
            &argv![
                "run",
                yaml.to_str().unwrap(),
                "--loader-options",
                options,
                "--loader torch --strategy unprocessed,concatenated --verify --epochs 1",
                "--threads 2 --evict fadvise --quiet --store-dir",
                work.path().join("stores").to_str().unwrap(),
                "--out",
                work.path().join("out").to_str().unwrap()
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    assert!(
        runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"),
        "{:?}",
        runs.rows
    );
    for row in &runs.rows {
        let expected = match runs.col(row, "workload").as_str() {
            "steps" => "batch=4 prefetch=3 pin=false persistent=true",
            "two" => "batch=8 prefetch=default pin=false persistent=false",
            _ => "batch=32 prefetch=default pin=false persistent=false",
        };
        assert_eq!(runs.col(row, "loader_options"), expected, "{row:?}");
    }
}

/// A damaged store under the torch loader, read as prepbench's own reader reads it: each
/// worker streams its shards, a record that fails its checksum is stepped over, one the shard
/// cannot be read past leaves the rest unread, an error after a compressed shard's last record
/// loses no sample; the same rows in errors.csv, the same counts and the same error as native,
/// for uncompressed and GZIP stores.
#[test]
fn a_damaged_store_is_read_under_torch_as_natively() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let yaml = setup(work.path(), "photos", STEPS);
    let stores = work.path().join("stores");
    let run_as = |loader: &str, codec: &str, on_error: &str, out: &str, layout: &str| {
        let mut args = argv![
            "run",
            yaml.to_str().unwrap(),
            "--loader",
            loader,
            "--codec",
            codec,
            "--on-error",
            on_error,
            "--threads 2 --epochs 1 --evict fadvise --quiet",
            "--store-dir",
            stores.to_str().unwrap(),
            "--out",
            work.path().join(out).to_str().unwrap()
        ];
        args.extend(layout.split_whitespace().map(String::from));
        prepbench_in(&python, &native, &args)
    };
    let run = |loader: &str, codec: &str, on_error: &str, out: &str| {
        run_as(
            loader,
            codec,
            on_error,
            out,
            "--strategy resized --shards 4",
        )
    };
    // errors.csv's rows without their run, and (samples, skipped) of the run.
    let read = |out: &str| {
        let errors = Csv::read(&work.path().join(out).join("errors.csv"));
        let rows: Vec<Vec<String>> = errors
            .rows
            .iter()
            .map(|r| {
                ["sample", "file", "stage", "count", "message"]
                    .iter()
                    .map(|c| errors.col(r, c))
                    .collect()
            })
            .collect();
        let runs = Csv::read(&work.path().join(out).join("runs.csv"));
        let row = &runs.rows[0];
        let counts = (runs.num(row, "samples"), runs.num(row, "skipped_samples"));
        (rows, counts)
    };
    let mut seen = Vec::new();
    for codec in ["none", "gzip"] {
        // The store, made once by a clean run.
        let made = run("native", codec, "fail", &format!("made-{codec}"));
        assert!(made.status.success(), "{}", stderr(&made));
        let shard = find_files(&stores, "shard-00001-of-00004.tfrecord")
            .into_iter()
            .chain(find_files(&stores, "shard-00001-of-00004.tfrecord.gz"))
            .find(|p| {
                p.to_string_lossy()
                    .contains(if codec == "gzip" { "/gzip" } else { "/none" })
            })
            .unwrap();
        let clean = std::fs::read(&shard).unwrap();
        // The last record's length (an uncompressed shard's frames walked: 8 bytes of length,
        // 4 of its checksum, the payload, 4 of its checksum).
        let mut last = 0;
        let mut at = 0;
        while codec == "none" && at + 12 <= clean.len() {
            last = at;
            let len = u64::from_le_bytes(clean[at..at + 8].try_into().unwrap()) as usize;
            at += 16 + len;
        }
        let mut damages = vec![("middle", clean.len() / 2), ("length", 2)];
        if codec == "none" {
            damages.push(("last", last + 2));
        }
        for (damage, at) in damages {
            let mut bytes = clean.clone();
            bytes[at] ^= 0x04;
            std::fs::write(&shard, &bytes).unwrap();
            let case = format!("{codec}-{damage}");
            let mut both = Vec::new();
            for loader in ["native", "torch"] {
                let out = format!("{loader}-{case}");
                let skipped = run(loader, codec, "skip", &out);
                assert!(skipped.status.success(), "{case}: {}", stderr(&skipped));
                // And stopped by it (one damage a codec: each run starts a loader).
                let mut error = String::new();
                if damage == "length" {
                    let failed = run(loader, codec, "fail", &format!("{out}-fail"));
                    assert!(
                        !failed.status.success(),
                        "{case} under {loader} did not fail"
                    );
                    error = stderr(&failed)
                        .lines()
                        .find(|l| l.starts_with("error:"))
                        .unwrap_or_default()
                        .to_string();
                    assert!(error.contains("shard-00001-of-00004"), "{case}: {error}");
                }
                both.push((read(&out), error));
            }
            assert_eq!(both[0], both[1], "{case}: native, then torch");
            let ((rows, (delivered, skipped)), _) = &both[0];
            assert_eq!(delivered + skipped, 12.0, "{case}: {rows:?}");
            seen.extend(
                rows.iter()
                    .map(|r| (r[3] == "0", r[4].starts_with("unreadable"))),
            );
        }
        std::fs::write(&shard, &clean).unwrap();
    }
    // Every kind met: an error stepped over, one that leaves the rest of its shard unread, and
    // one after a compressed shard's last record.
    assert!(seen.iter().any(|&(zero, _)| zero), "{seen:?}");
    assert!(seen.iter().any(|&(_, rest)| rest), "{seen:?}");

    // A shard with restarts (12 decoded photographs in one shard, several MB of stream),
    // damaged past its first restart where reading cannot step past it (GZIP: its deflate
    // stream; uncompressed: a record's header): both loaders go on at the next restart, the
    // records in between counted unread, those after it read.
    let layout = "--strategy decoded --shards 1";
    for (codec, file) in [
        ("gzip", "shard-00000-of-00001.tfrecord.gz"),
        ("none", "shard-00000-of-00001.tfrecord"),
    ] {
        let made = run_as(
            "native",
            codec,
            "fail",
            &format!("made-decoded-{codec}"),
            layout,
        );
        assert!(made.status.success(), "{}", stderr(&made));
        let shard = find_files(&stores, file)
            .into_iter()
            .find(|p| p.to_string_lossy().contains(&format!("/decoded/{codec}")))
            .unwrap();
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(shard.with_file_name("store.json")).unwrap())
                .unwrap();
        let restarts = manifest["shards"][0]["restarts"]
            .as_array()
            .unwrap()
            .clone();
        assert!(restarts.len() >= 3, "{codec}: {restarts:?}");
        let at = |i: usize, k: usize| restarts[i][k].as_u64().unwrap() as usize;
        let clean = std::fs::read(&shard).unwrap();
        let mut bytes = clean.clone();
        let damaged = match codec {
            "none" => at(0, 1),
            _ => (at(0, 1) + at(1, 1)) / 2,
        };
        for b in &mut bytes[damaged..damaged + 8] {
            *b ^= 0x5a;
        }
        std::fs::write(&shard, &bytes).unwrap();
        let mut both = Vec::new();
        for loader in ["native", "torch"] {
            let out = format!("{loader}-resumed-{codec}");
            let skipped = run_as(loader, codec, "skip", &out, layout);
            assert!(skipped.status.success(), "{loader}: {}", stderr(&skipped));
            both.push(read(&out));
        }
        assert_eq!(both[0], both[1], "{codec}: native, then torch");
        let (rows, (delivered, skipped)) = &both[0];
        assert_eq!(delivered + skipped, 12.0, "{codec}: {rows:?}");
        // Reading went on at a restart after the damaged stretch: no more than that stretch,
        // and the record before it, is lost, and what it lost is named with the restart.
        assert!(*skipped >= 1.0, "{codec}: {rows:?}");
        assert!(
            *delivered >= (12 - (at(1, 0) - at(0, 0)) - 1) as f64,
            "{codec}: {rows:?}"
        );
        if let Some(unread) = rows.iter().find(|r| r[4].contains("restart")) {
            let went_on: usize = unread[4].rsplit(' ').next().unwrap().parse().unwrap();
            assert!((1..restarts.len()).any(|i| at(i, 0) == went_on), "{rows:?}");
        }
        std::fs::write(&shard, &clean).unwrap();
    }
}

/// Checks, in the package's own code, that the PyTorch forms of the paper's CV chain stay within
/// the bounds `--verify` allows of native processing while a crop of another epoch and one a
/// pixel off do not, and that the ops it implements are those prepbench lets run under torch.
const BOUNDS_CHECK: &str = r#"
import glob, json, sys
import numpy as np
from prepbench import native
from prepbench._loader import Chain
from prepbench.store import _fields
from prepbench import _torch_steps as ts

ops, stores, root = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
assert list(ts.OPS) == ops, (ts.OPS, ops)
spec = json.load(open(glob.glob(f"{stores}/cv/*/*/store.json")[0]))["spec"]
n = native()
online = n.Online(json.dumps(spec), 0, 0, root, 8)
modules = set(sys.modules)
chain = Chain(n, online)
assert chain.bounds is not None
# What the ops call is imported when the chain is made (in the loader's main process, before
# the DataLoader forks its workers), not on a worker's first sample inside the timed epoch.
made = set(sys.modules)
assert {"torchvision.io", "torchvision.transforms.functional"} <= made - modules, made - modules
differ = other_epoch = shifted = 0
for i in range(8):
    def output(epoch):
        payload, sample_id, layout = online.read(i, epoch)
        fields = dict(_fields(payload, sample_id, layout))
        assert chain.run(fields, online.seeds(epoch, sample_id), sample_id, epoch) is None
        return fields
    got = output(0)
    payload, _, layout = online.reference(i, 0)
    expected = dict(_fields(payload, i, layout))
    assert ts.within(got, expected, chain.bounds) is None, ts.within(got, expected, chain.bounds)
    differ += not np.array_equal(got["image"], expected["image"])
    other_epoch += ts.within(output(1), expected, chain.bounds) is not None
    off = dict(expected, image=np.roll(expected["image"], 1, axis=1))
    shifted += ts.within(off, expected, chain.bounds) is not None
# The forms differ from native (an exact check would fail), and the bounds still catch a crop
# in the wrong place.
assert differ >= 6 and other_epoch >= 7 and shifted == 8, (differ, other_epoch, shifted)
late = sorted(m for m in set(sys.modules) - made if m.split(".")[0] in ("torch", "torchvision", "PIL", "numpy"))
assert not late, f"imported on the first sample: {late}"
# A PNG under a JPEG's name (ImageNet's n02105855_2933.JPEG) decodes to its RGB pixels, alpha
# dropped, in the torchvision form as natively.
import io
from PIL import Image
rgba = np.random.default_rng(0).integers(0, 256, (7, 9, 4), dtype=np.uint8)
buf = io.BytesIO()
Image.fromarray(rgba).save(buf, format="PNG")
step = next(k for k, s in enumerate(spec["steps"]) if s["op"] == "decode_jpeg")
payload, _, layout = online.apply(step, 0, 0, [("data", "bytes", None, [], buf.getvalue())])
assert np.array_equal(_fields(payload, 0, layout)["image"], rgba[..., :3])
torch_form = ts.DecodeJpeg({"from": "data", "to": "image"})
assert np.array_equal(np.asarray(torch_form(buf.getvalue())), rgba[..., :3])
# A CMYK JPEG (ImageNet holds 22), which torchvision's decoder refused before 0.19, decodes in
# the torch form to the pixels prepbench's decoder gives, within a level (Pillow's IDCT and
# zune-jpeg's round apart on noise); cut short, it is still refused.
buf = io.BytesIO()
Image.fromarray(rgba[..., :3]).convert("CMYK").save(buf, format="JPEG", quality=95)
payload, _, layout = online.apply(step, 0, 0, [("data", "bytes", None, [], buf.getvalue())])
ours = _fields(payload, 0, layout)["image"].astype(int)
assert np.abs(np.asarray(torch_form(buf.getvalue())).astype(int) - ours).max() <= 1
try:
    torch_form(buf.getvalue()[:200])
except RuntimeError:
    pass
else:
    raise AssertionError("a truncated CMYK JPEG decoded")
print("ok")
"#;

/// The paper's CV chain, prepbench's own steps, under the torch loader as a PyTorch user writes
/// it (torchvision's decoder and resize): every strategy verified against native processing
/// within the bounds its ops state, and those bounds tight enough to catch a misplaced crop.
#[test]
fn the_papers_cv_chain_runs_under_torch_in_torchvision_and_verifies() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let stores = work.path().join("stores");
    let sweep = |strategies: &str, threads: &str| {
        prepbench_in(
            &python,
            &native,
            &argv![
                "sweep cv --loaders native,torch --verify --samples 40 --strategies",
                strategies,
                "--threads",
                threads,
                "--trials 1 --epochs 1 --no-calibrate --evict fadvise --quiet --data-dir",
                data_dir().to_str().unwrap(),
                "--store-dir",
                stores.to_str().unwrap(),
                "--out",
                work.path().join("out").to_str().unwrap()
            ],
        )
    };
    let out = sweep("unprocessed,resized,pixel-centered", "2");
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    let torch: Vec<_> = runs
        .rows
        .iter()
        .filter(|r| runs.col(r, "loader") == "torch")
        .collect();
    assert_eq!(torch.len(), 3, "{:?}", runs.rows);
    assert!(
        torch.iter().all(|r| runs.col(r, "verified") == "pass"),
        "{torch:?}"
    );
    // Resumed with another thread count: the new runs carry the verdicts the folder recorded
    // (raw files under torch as well as stores), not an empty `verified`.
    let resumed = sweep("unprocessed,resized", "1,2");
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    let one_thread: Vec<_> = runs
        .rows
        .iter()
        .filter(|r| runs.col(r, "loader") == "torch" && runs.col(r, "threads") == "1")
        .collect();
    assert_eq!(one_thread.len(), 2, "{:?}", runs.rows);
    assert!(
        one_thread.iter().all(|r| runs.col(r, "verified") == "pass"),
        "{one_thread:?}"
    );
    let ops = harness::measure::online::torch::steps::OPS.join(",");
    let checked = common::with_package(&mut Command::new(&python), &native)
        .args(["-c", BOUNDS_CHECK, &ops])
        .arg(&stores)
        .arg(data_dir().join("imagenet-seed0"))
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", stderr(&checked));
}

/// A reference step with no PyTorch form (detection's letterbox resize with its boxes) is
/// refused under the torch loader before any store or result is written, naming the step and
/// the loader.
#[test]
fn a_step_a_loader_cannot_run_is_refused_before_anything_runs() {
    let work = tempfile::tempdir().unwrap();
    let out = prepbench(&argv![
        "run detection --loader torch --strategy unprocessed --samples 8 --data-dir",
        data_dir().to_str().unwrap(),
        "--store-dir",
        work.path().join("stores").to_str().unwrap(),
        "--out",
        work.path().join("out").to_str().unwrap()
    ]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("step `letterboxed` (op resize_longer_pad)") && said.contains("torch loader"),
        "{said}"
    );
    assert!(!work.path().join("stores").exists() && !work.path().join("out").exists());
    let out = prepbench(&argv!["run cv --loader tf-datum --strategy resized"]);
    assert!(
        stderr(&out).contains("no loader `tf-datum`; loaders: native, torch, tf-data"),
        "{}",
        stderr(&out)
    );
}

/// A loader whose interpreter cannot run it is refused before anything runs, naming the
/// interpreter and what stopped it, never run natively instead: its framework missing (the
/// steps' virtualenv has neither PyTorch nor TensorFlow), an interpreter that ends saying why,
/// one that ends saying nothing, one that answers what prepbench does not speak, one that is
/// not there, and one that never answers (ended at the start limit). No store and no result
/// is written.
#[test]
fn a_loader_its_interpreter_cannot_run_is_refused_naming_the_interpreter_and_why() {
    let (Some(native), Some(steps)) = (common::native_module(), common::numpy_python()) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = work.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    };
    let missing = work.path().join("missing/python").display().to_string();
    let cases = [
        (
            "torch",
            steps.clone(),
            "needs PyTorch",
            "No module named 'torch'",
        ),
        (
            "tf-data",
            steps,
            "needs TensorFlow",
            "No module named 'tensorflow'",
        ),
        (
            "torch",
            script("says", "echo 'fatal: a broken install' >&2; exit 3"),
            "needs PyTorch",
            "(fatal: a broken install)",
        ),
        (
            "tf-data",
            script("silent", "exit 3"),
            "TensorFlow",
            "said nothing",
        ),
        (
            "torch",
            script("chatty", "read line; echo hello"),
            "PyTorch",
            r#"it answered "hello", not a check's answer"#,
        ),
        ("torch", missing, "cannot start", "No such file"),
    ];
    let (stores, results) = (work.path().join("stores"), work.path().join("out"));
    for (loader, python, needs, why) in cases {
        let out = prepbench_in(
            &python,
            &native,
            &argv![
                "run cv --loader",
                loader,
                "--strategy resized --samples 4 --quiet --data-dir",
                data_dir().to_str().unwrap(),
                "--store-dir",
                stores.to_str().unwrap(),
                "--out",
                results.to_str().unwrap()
            ],
        );
        let said = stderr(&out);
        assert!(!out.status.success(), "{loader} under {python}: {said}");
        for needle in [&format!("the {loader} loader"), &python, needs, why] {
            assert!(
                said.contains(needle),
                "{loader} under {python}: {needle} in {said}"
            );
        }
        assert!(
            !stores.exists() && !results.exists(),
            "{loader} under {python}"
        );
    }
    // One that never answers (a wrapper that never starts Python) is ended at the limit
    // Python steps' interpreters have, and named, not waited for.
    let stuck = script("stuck", "sleep 600");
    let started = std::time::Instant::now();
    let out = common::with_package(&mut Command::new(env!("CARGO_BIN_EXE_prepbench")), &native)
        .env("PREPBENCH_PYTHON_START_S", "3")
        .args(["--python", &stuck])
        .args(argv![
            "run cv --loader tf-data --strategy resized --samples 4 --quiet"
        ])
        .args(["--data-dir", data_dir().to_str().unwrap()])
        .args(["--store-dir", stores.to_str().unwrap()])
        .args(["--out", results.to_str().unwrap()])
        .output()
        .unwrap();
    common::fails_naming(
        &out,
        &["the tf-data loader", &stuck, "did not answer within 3 s"],
    );
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert!(!stores.exists() && !results.exists());
}

/// `--on-error skip` under the torch loader: the sample a step fails on is skipped and named,
/// the others delivered; without it the run fails naming the step, the sample and its file.
#[test]
fn the_torch_loader_skips_or_fails_on_a_bad_sample_as_native_does() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let yaml = setup(work.path(), "photos", STEPS);
    // One file that is not a JPEG: its decode step fails.
    std::fs::write(work.path().join("photos/cats/IMG_9999.JPEG"), b"not a jpeg").unwrap();
    let run = |extra: &str| {
        prepbench_in(
            &python,
            &native,
            &argv![
                "run",
                yaml.to_str().unwrap(),
                "--loader torch --strategy unprocessed --samples 13 --epochs 1 --threads 2",
                "--evict fadvise --quiet --store-dir",
                work.path().join("stores").to_str().unwrap(),
                "--out",
                work.path().join("out").to_str().unwrap(),
                extra
            ],
        )
    };
    let failed = run("--on-error=fail");
    assert!(!failed.status.success());
    let said = stderr(&failed);
    assert!(
        said.contains("step `decoded`") && said.contains("IMG_9999.JPEG"),
        "{said}"
    );
    let skipped = run("--on-error=skip");
    assert!(skipped.status.success(), "{}", stderr(&skipped));
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    let row = runs.rows.last().unwrap();
    assert_eq!(runs.col(row, "skipped_samples"), "1", "{row:?}");
    assert_eq!(runs.col(row, "loader"), "torch");
    let errors = std::fs::read_to_string(work.path().join("out/errors.csv")).unwrap();
    assert!(
        errors.contains("IMG_9999.JPEG") && errors.contains("decoded"),
        "{errors}"
    );
}

/// Checks, in the package's own code, that the TensorFlow port of prepbench's generator draws
/// what the native one draws, and that the ops it implements are those prepbench lets run
/// under tf-data.
const TF_CHECK: &str = r#"
import random, sys
from prepbench import native
from prepbench import _tf_steps as ts

assert list(ts.OPS) == sys.argv[1].split(","), (ts.OPS, sys.argv[1])
n = native()
random.seed(7)
for _ in range(40):
    parts = [random.getrandbits(64), random.getrandbits(40), random.getrandbits(8), 3]
    a, b = n.Rng.from_parts(parts), ts.Rng(parts)
    for bound in (1, 2, 33, 1000, 2**31 + 7, 2**32 - 1):
        assert a.index(bound) == int(b.index(bound).numpy()), (parts, bound)
    assert a.unit() == float(b.unit().numpy()), parts
# The draws a random form looks up per epoch (one table of every id's first two) are the
# generator's, and a crop's corner and a flip from them are what `index` and `unit` give.
import numpy as np
import tensorflow as tf
seed, epoch, step = random.getrandbits(64), 5, 4
table = ts.draw_table(seed, epoch, step, 300)
image = tf.reshape(tf.range(260 * 300 * 3), [260, 300, 3])
crop = ts.make("random_crop", {"height": 224, "width": 200, "field": "image"}, step)
crop.ids = 300
flip = ts.make("random_hflip", {"p": 0.5, "field": "image"}, step)
flip.ids = 300
for sid in range(0, 300, 7):
    a = n.Rng.from_parts([seed, sid, epoch, step])
    assert [a.next_u64() for _ in range(2)] == [int(x) for x in table[sid]], sid
    a = n.Rng.from_parts([seed, sid, epoch, step])
    top, left = a.index(260 - 224 + 1), a.index(300 - 200 + 1)
    fields = {"image": image}
    crop(fields, (seed, tf.constant(sid, tf.uint64), epoch))
    assert (fields["image"].numpy() == image.numpy()[top:top + 224, left:left + 200]).all(), sid
    flipped = n.Rng.from_parts([seed, sid, epoch, step]).unit() < 0.5
    fields = {"image": image}
    flip(fields, (seed, tf.constant(sid, tf.uint64), epoch))
    want = image.numpy()[:, ::-1] if flipped else image.numpy()
    assert (fields["image"].numpy() == want).all(), sid
# In a map, the forms' checks (one `Assert` for the map's function) fail the element, saying
# which: an image too small to crop, a record that is not prepbench's.
def fails(fn, value, says):
    try:
        list(tf.data.Dataset.from_tensors(value).map(ts.checked(fn)))
    except tf.errors.InvalidArgumentError as e:
        assert ts.explain(e.message) == says, e.message
    else:
        raise AssertionError(f"no error: {says}")
def crop_of(image):
    fields = {"image": image}
    crop(fields, (seed, tf.constant(3, tf.uint64), epoch))
    return fields["image"]
assert crop_of(image).shape == (224, 200, 3)
fails(crop_of, tf.zeros([100, 300, 3], tf.int32), "random_crop: cannot crop 224x200: image too small")
# Beyond the draw table (its 300 ids), a crop says so, and no other check failed.
def crop_beyond(image):
    fields = {"image": image}
    crop(fields, (seed, tf.constant(300, tf.uint64), epoch))
    return fields["image"]
fails(crop_beyond, image, "random_crop: a sample id beyond the draw table (report this)")
assert ts.explain("some other error") == "some other error"
import struct
def record(magic):
    head = magic + struct.pack("<IQ", 1, 9)
    field = struct.pack("<BBBBIQQ", 1, 1, 1, 1, 0, 3, 3) + b"x".ljust(8, b"\0")
    return head + field + b"abc".ljust(8, b"\0")
parse = ts.parser(ts.schema(record(b"PBS1")))
sid, fields = ts.checked(parse)(tf.constant(record(b"PBS1")))
assert int(sid) == 9 and fields["x"].numpy().tobytes() == b"abc", (sid, fields)
fails(parse, record(b"PBSX"), "not a prepbench record")
# A PNG under a JPEG's name decodes under `tf.io.decode_jpeg` to its RGB pixels, alpha dropped,
# as prepbench's decode_jpeg decodes it.
import io
from PIL import Image
rgba = np.random.default_rng(0).integers(0, 256, (7, 9, 4), dtype=np.uint8)
buf = io.BytesIO()
Image.fromarray(rgba).save(buf, format="PNG")
fields = {"data": tf.constant(buf.getvalue())}
ts.make("decode_jpeg", {"from": "data", "to": "image"}, 1)(fields, None)
assert (fields["image"].numpy() == rgba[..., :3]).all()
print("ok")
"#;

/// The paper's CV chain under the tf-data loader, as the paper's stack ran it (TFRecordDataset
/// over the store's shards, TensorFlow's decode and resize in one parallel map): every
/// strategy and TFRecord codec verified against native processing; its generator draws what
/// prepbench's draws; a codec TFRecord does not know is refused before anything runs; your
/// Python steps run through `tf.numpy_function`, verified exactly.
#[test]
fn the_papers_cv_chain_runs_under_tf_data_in_tensorflow_and_verifies() {
    let Some(native) = common::native_module() else {
        return;
    };
    let Some(python) = common::tf_python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let places = |name: &str| {
        vec![
            "--data-dir".to_string(),
            data_dir().display().to_string(),
            "--store-dir".to_string(),
            work.path().join("stores").display().to_string(),
            "--out".to_string(),
            work.path().join(name).display().to_string(),
        ]
    };
    let mut args = argv![
        "sweep cv --loaders native,tf-data --verify --strategies unprocessed,resized,pixel-centered",
        "--codecs none,gzip --samples 40 --threads 2 --trials 1 --epochs 1 --no-calibrate",
        "--evict fadvise --quiet"
    ];
    args.extend(places("out"));
    // Its maps are not converted by autograph, which writes a source file into the temporary
    // folder for every function it converts: nothing is left there.
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = common::with_package(&mut Command::new(env!("CARGO_BIN_EXE_prepbench")), &native)
        .env("TMPDIR", &tmp)
        .arg("--python")
        .arg(&python)
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let left = common::entries(&tmp);
    assert!(
        left.is_empty(),
        "the tf-data loader left {left:?} in its temporary folder"
    );
    let runs = Csv::read(&work.path().join("out/runs.csv"));
    let tf: Vec<_> = runs
        .rows
        .iter()
        .filter(|r| runs.col(r, "loader") == "tf-data")
        .collect();
    // unprocessed once, the two stored strategies under each codec.
    assert_eq!(tf.len(), 5, "{:?}", runs.rows);
    assert!(
        tf.iter().all(|r| runs.col(r, "verified") == "pass"),
        "{tf:?}"
    );
    let stack = loader_stack(&work.path().join("out"), "tf-data");
    assert!(
        stack["tensorflow"].is_string() && stack["numpy"].is_string(),
        "{stack}"
    );
    let ops = harness::measure::online::tfdata::steps::OPS.join(",");
    let checked = common::with_package(&mut Command::new(&python), &native)
        .args(["-c", TF_CHECK, &ops])
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", stderr(&checked));

    // A damaged record in a GZIP shard stops the run, named as prepbench's reader names it
    // (TFRecordDataset says "corrupted record at BYTE" without its file).
    let shard = find_files(
        &work.path().join("stores"),
        "shard-00003-of-00016.tfrecord.gz",
    )
    .into_iter()
    .find(|p| p.to_string_lossy().contains("/resized/gzip"))
    .unwrap();
    let clean = std::fs::read(&shard).unwrap();
    let mut bytes = clean.clone();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&shard, &bytes).unwrap();
    let mut args = argv![
        "run cv --loader tf-data --strategy resized --codec gzip --samples 40 --threads 2",
        "--epochs 1 --evict fadvise --quiet"
    ];
    args.extend(places("damaged"));
    let out = prepbench_in(&python, &native, &args);
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    let named = format!("prepbench's reader finds corrupt shard {}", shard.display());
    assert!(said.contains(&named), "{said}");
    std::fs::write(&shard, &clean).unwrap();
    // So is a raw file its steps fail on (TensorFlow's decode_jpeg names no file): the one
    // that fails when the items are run one at a time.
    let photos = work.path().join("bad-photos");
    prepbench_ok(&argv![
        "generate imagenet --samples 6 --quiet --out",
        photos.to_str().unwrap()
    ]);
    let mut jpegs: Vec<_> = walk(&photos)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "JPEG"))
        .collect();
    jpegs.sort();
    let victim = &jpegs[2];
    let bytes = std::fs::read(victim).unwrap();
    std::fs::write(victim, &bytes[..bytes.len() / 3]).unwrap();
    let mut args = argv![
        "run cv --loader tf-data --strategy unprocessed --samples 6 --threads 2 --epochs 1",
        "--evict fadvise --quiet --dataset",
        photos.to_str().unwrap()
    ];
    args.extend(places("bad-photos-out"));
    let out = prepbench_in(&python, &native, &args);
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    let first = said
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_default();
    assert!(
        first.contains(&format!("{}, fails when run alone", victim.display())),
        "{said}"
    );

    // The synthetic arrays (finding 5's): `.npy` files parsed in TensorFlow's string ops and
    // `decode_raw`, at the smallest and largest sample sizes, verified exactly.
    let mut args = argv![
        "sweep synthetic-reading --loaders tf-data --verify --variants 2 --dataset-mb 3",
        "--threads 2 --trials 1 --epochs 1 --no-calibrate --evict fadvise --quiet"
    ];
    args.extend(places("npy"));
    let out = prepbench_in(&python, &native, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&work.path().join("npy/runs.csv"));
    // Two sizes, `unprocessed` (decode_npy under tf-data) and `decoded` each.
    assert_eq!(runs.rows.len(), 4, "{:?}", runs.rows);
    assert!(
        runs.rows
            .iter()
            .all(|r| runs.col(r, "verified") == "pass" && runs.col(r, "loader") == "tf-data"),
        "{:?}",
        runs.rows
    );

    // The application cache as tf.data's `.cache()` of the parsed records: the process that
    // filled it serves the run's next epochs from memory (nothing read), each epoch's random
    // crop drawn anew and verified; a limit the samples pass leaves them uncached, named.
    for (name, limit, served) in [("app", "512", "app"), ("miss", "1", "app-miss")] {
        let mut args = argv![
            "sweep cv --loaders tf-data --verify --strategies pixel-centered --cache app",
            "--samples 40 --threads 2 --trials 1 --epochs 3 --no-calibrate --evict fadvise",
            "--app-cache-mb",
            limit
        ];
        args.extend(places(name));
        let out = prepbench_in(&python, &native, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let runs = Csv::read(&work.path().join(format!("{name}/runs.csv")));
        let caches: Vec<String> = runs.rows.iter().map(|r| runs.col(r, "cache")).collect();
        assert_eq!(caches, ["app-fill", served, served], "{:?}", runs.rows);
        assert!(
            runs.rows
                .iter()
                .all(|r| runs.col(r, "verified") == "pass" && runs.col(r, "samples") == "40"),
            "{:?}",
            runs.rows
        );
        if served == "app" {
            let read: Vec<String> = runs
                .rows
                .iter()
                .map(|r| runs.col(r, "read_bytes"))
                .collect();
            assert_eq!(&read[1..], ["0", "0"], "{read:?}");
        } else {
            assert!(
                stderr(&out).contains("do not fit the application cache"),
                "{}",
                stderr(&out)
            );
        }
    }

    let mut args = argv!["sweep cv --loaders tf-data --codecs zstd --strategies resized"];
    args.extend(places("zstd"));
    let out = prepbench_in(&python, &native, &args);
    let said = stderr(&out);
    assert!(!out.status.success() && said.contains("not zstd"), "{said}");
    assert!(!work.path().join("zstd").exists());

    // Your Python steps (Pillow and NumPy) through tf.numpy_function, every strategy verified
    // exactly against native processing, a random one drawing what it draws natively.
    let yaml = setup(work.path(), "photos", STEPS);
    std::fs::write(work.path().join("pipe.py"), TF_MODULE).unwrap();
    let mut args = argv![
        "sweep",
        yaml.to_str().unwrap(),
        "--loaders native,tf-data --verify --threads 2 --trials 1 --epochs 1 --no-calibrate",
        "--evict fadvise --quiet"
    ];
    args.extend(places("python"));
    let out = prepbench_in(&python, &native, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&work.path().join("python/runs.csv"));
    let tf: Vec<_> = runs
        .rows
        .iter()
        .filter(|r| runs.col(r, "loader") == "tf-data")
        .collect();
    assert_eq!(tf.len(), 4, "{:?}", runs.rows);
    assert!(
        tf.iter().all(|r| runs.col(r, "verified") == "pass"),
        "{tf:?}"
    );
    // One loader process served the workload's runs and their verification, one after
    // another (TensorFlow imported once), and ended with the command.
    let pids = std::fs::read_to_string(work.path().join("tf-pids.txt")).unwrap();
    let pids: std::collections::BTreeSet<&str> = pids.lines().collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let pid = pids.first().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "{pid} outlived the command"
    );
}

/// `prepbench run` of the workload `w` under `loader` with `flags`, verified, on 2 threads,
/// its stores in `work/stores` and its results in `work/out`.
fn run_verified(
    python: &str,
    native: &Path,
    (w, loader, flags): (&Path, &str, &str),
    work: &Path,
    out: &str,
) -> Output {
    let mut args = argv!["run", w.to_str().unwrap(), "--loader", loader];
    args.extend(flags.split_whitespace().map(String::from));
    args.extend(argv![
        "--verify --threads 2 --evict fadvise --quiet --store-dir",
        work.join("stores").to_str().unwrap(),
        "--out",
        work.join(out).to_str().unwrap()
    ]);
    prepbench_in(python, native, &args)
}

/// A step that writes into its input (`x -= mean`) never changes what an application cache
/// serves: natively each epoch's steps get the cached sample's bytes afresh; under tf-data,
/// whose `tf.numpy_function` hands a step the memory of the tensor `.cache()` keeps (in a
/// training job, such a step would change the cached data every epoch, silently), the step is
/// handed it read-only and fails, named with the cause and the fix. Without the cache the same
/// step runs and verifies under tf-data: its input is the record parsed afresh.
#[test]
fn a_step_that_writes_into_its_input_never_changes_what_a_cache_serves() {
    let Some((native, python)) = common::native_module().zip(common::tf_python()) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let w = setup(
        work.path(),
        "marks",
        "  - name: decoded\n    op: python\n    params: {function: \"pipe:decode\", from: data}\n  - name: marked\n    op: python\n    params: {function: \"pipe:mark\", from: data}\n",
    );
    let run = |loader: &str, cache: &str, out: &str| {
        let flags = format!("--cache {cache} --strategy decoded --epochs 3");
        run_verified(&python, &native, (&w, loader, &flags), work.path(), out)
    };
    for (loader, cache) in [("native", "app"), ("tf-data", "cold")] {
        let out = run(loader, cache, loader);
        assert!(out.status.success(), "{loader}: {}", stderr(&out));
        let runs = Csv::read(&work.path().join(format!("{loader}/runs.csv")));
        assert_eq!(runs.rows.len(), 3, "{:?}", runs.rows);
        assert!(
            runs.rows.iter().all(|r| runs.col(r, "verified") == "pass"),
            "{:?}",
            runs.rows
        );
    }
    let said = fails_naming(
        &run("tf-data", "app", "tf-app"),
        &[
            "step `marked` failed on sample",
            "read-only",
            "tf.data's .cache() keeps",
            "x = x.copy()",
        ],
    );
    assert!(!said.contains("came back"), "{said}");
}

/// Samples whose fields differ in rank (a greyscale array beside RGB ones), or in which fields
/// they have, run natively and under torch (a batch that PyTorch's collation cannot stack, or
/// whose samples' fields differ, reaches the loop as a list); under tf-data, which
/// fixes each element's dtypes and ranks from the first sample, the run fails naming the step,
/// the sample and what differs, not with TensorFlow's own error, which names neither.
#[test]
fn samples_that_differ_in_rank_fail_under_tf_data_naming_the_step_and_the_sample() {
    let Some((native, python)) = common::native_module().zip(common::tf_python()) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let w = setup(
        work.path(),
        "ranks",
        "  - name: decoded\n    op: python\n    params: {function: \"pipe:grey_or_rgb\"}\n",
    );
    let fields = setup(
        work.path(),
        "fields",
        "  - name: decoded\n    op: python\n    params: {function: \"pipe:extra_but_one\"}\n",
    );
    let run_of = |w: &Path, loader: &str, python: &str| {
        let flags = "--strategy concatenated --epochs 1";
        run_verified(python, &native, (w, loader, flags), work.path(), loader)
    };
    let run = |loader: &str, python: &str| run_of(&w, loader, python);
    let out = run("native", &python);
    assert!(out.status.success(), "{}", stderr(&out));
    if let Some(torch) = common::torch_python() {
        for w in [&w, &fields] {
            let out = run_of(w, "torch", &torch);
            assert!(out.status.success(), "{}: {}", w.display(), stderr(&out));
        }
    }
    let said = fails_naming(
        &run("tf-data", &python),
        &[
            "step `decoded` failed on sample ",
            "gave `data` as uint8 of 2 dimensions, the first sample as uint8 of 3",
            "tf.data fixes each element's fields, dtypes and ranks",
        ],
    );
    assert!(!said.contains("function_node"), "{said}");
}

/// The paper's audio chains, and NILM's, under each loader in Python, as its users
/// write them: under
/// tf-data as the paper's stack ran them (MP3 and FLAC decoded by tensorflow-io, the rate read
/// from the file's header in string ops, then `tf.signal.stft`, magnitude,
/// `linear_to_mel_weight_matrix`, log), under torch with soundfile, `torch.fft` framed as
/// tf.signal frames and tf.signal's filterbank; NILM's hour parsed by h5py and cut into
/// windows, its per-period features in float64 tensor arithmetic, under both;
/// every split point verified against native
/// processing within the bounds the forms carry (log-mel compared as mel energies); and those
/// bounds are not loose: a log-mel 0.1 % off in energy fails them. NLP's extraction and BPE
/// run per record in Python (through `tf.numpy_function` under tf-data), its embedding by
/// `tf.gather` or torch's embedding, every strategy verified exactly.
#[test]
fn the_papers_audio_and_nilm_chains_run_under_tf_data_and_verify() {
    let (Some(native), Some(python)) = (common::native_module(), common::tf_python()) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    paper_chains_verify(work.path(), &native, "tf-data", &python);
    let checked = common::with_package(&mut Command::new(&python), &native)
        .args(["-c", EXP_CHECK])
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", stderr(&checked));
}

/// A tf-data process serves a sweep's runs one after another (what the first run left frozen
/// out of the garbage collector's sight) and a run's epochs from one dataset where no step
/// depends on the epoch (MP3's are not random): every epoch of every run, cold and warm,
/// reads and gives the whole store, and every run verifies.
#[test]
fn a_tf_data_process_serves_every_epoch_and_run_of_a_sweep_whole() {
    let (Some(native), Some(python)) = (common::native_module(), common::tf_python()) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("out");
    let args = argv![
        "sweep mp3 --loaders tf-data --strategies unprocessed,decoded --samples 12",
        "--threads 2 --trials 3 --epochs 3 --no-calibrate --evict fadvise",
        "--verify --quiet --data-dir",
        work.path().join("data").to_str().unwrap(),
        "--store-dir",
        work.path().join("stores").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap()
    ];
    let out = prepbench_in(&python, &native, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = Csv::read(&out_dir.join("runs.csv"));
    assert_eq!(runs.rows.len(), 2 * 3 * 3, "{:?}", runs.rows);
    for strategy in ["unprocessed", "decoded"] {
        let rows: Vec<_> = (runs.rows.iter())
            .filter(|r| runs.col(r, "strategy") == strategy)
            .collect();
        let read: Vec<(String, String)> = (rows.iter())
            .map(|r| (runs.col(r, "samples"), runs.col(r, "output_bytes")))
            .collect();
        assert!(
            read[0].0 == "12" && read.iter().all(|x| *x == read[0]),
            "{strategy}: {read:?}"
        );
        assert!(
            rows.iter().all(|r| runs.col(r, "verified") == "pass"),
            "{strategy}: {rows:?}"
        );
    }
}

/// The chains of the test above under torch (a test of its own, so that the two loaders'
/// sweeps run side by side).
#[test]
fn the_papers_audio_and_nilm_chains_run_under_torch_and_verify() {
    let Some((native, python)) = common::torch_with_package() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    paper_chains_verify(work.path(), &native, "torch", &python);
}

/// Sweeps MP3, FLAC, NILM and NLP under `loader` beside native with --verify: every audio form
/// runs from the raw files; from exact PCM (`decoded`) and the mel energies the bounds are
/// float rounding; NILM's windows (360 of an hour, `window` a fan-out step) are traced to
/// their hour's native processing, from the raw HDF5 files (h5py; windows by `flat_map` under
/// tf-data, by an IterableDataset over hours under torch) and from the stored windows.
fn paper_chains_verify(work: &Path, native: &Path, loader: &str, python: &str) {
    let cases = [
        ("mp3", "unprocessed,decoded,mel"),
        ("flac", "unprocessed,decoded"),
        ("nilm", "unprocessed,decoded,aggregated"),
        // HTML extraction and BPE per record in Python (prepbench's own code), the embedding
        // looked up in the native table: every strategy verified exactly.
        (
            "nlp",
            "unprocessed,concatenated,decoded,bpe-encoded,embedded",
        ),
    ];
    for (workload, strategies) in cases {
        let out_dir = work.join(format!("{workload}-{loader}"));
        // NILM's samples are windows: two hours (each its own item, the second's windows ids
        // past 1 << 24), so a reference of the first item's for every window cannot pass.
        let samples = if workload == "nilm" { "720" } else { "10" };
        let args = argv![
            "sweep",
            workload,
            "--loaders",
            format!("native,{loader}"),
            "--strategies",
            strategies,
            "--samples",
            samples,
            "--threads 2 --trials 1 --epochs 1 --no-calibrate --evict fadvise",
            "--verify --quiet --data-dir",
            work.join("data").to_str().unwrap(),
            "--store-dir",
            work.join("stores").to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap()
        ];
        let out = prepbench_in(python, native, &args);
        assert!(
            out.status.success(),
            "{workload} {loader}: {}",
            stderr(&out)
        );
        let runs = Csv::read(&out_dir.join("runs.csv"));
        let theirs: Vec<_> = runs
            .rows
            .iter()
            .filter(|r| runs.col(r, "loader") == loader)
            .collect();
        assert_eq!(
            theirs.len(),
            strategies.split(',').count(),
            "{workload} {loader}: {:?}",
            runs.rows
        );
        assert!(
            theirs.iter().all(|r| runs.col(r, "verified") == "pass"),
            "{workload} {loader}: {theirs:?}"
        );
    }
}

/// A log field is compared as exp(value): within the bounds when its energies are, not when
/// they are 0.1 % off (where the log's own difference, 0.001, would look small).
const EXP_CHECK: &str = r#"
import numpy as np
from prepbench._forms import within
rng = np.random.default_rng(3)
energy = rng.uniform(0.0, 50.0, (40, 80)).astype(np.float32)
log = np.log(energy + 1e-8).astype(np.float32)
off = np.log(energy * 1.001 + 1e-8).astype(np.float32)
bounds = (0.01, 0.002)
assert within({"s": log}, {"s": log}, bounds, {"s"}) is None
assert within({"s": off}, {"s": log}, bounds, {"s"}) is not None
assert within({"s": off}, {"s": log}, bounds) is None  # as logs it would pass
print("ok")
"#;

/// The steps of [`STEPS`] without torchvision (the tf-data loader's interpreter has none).
const TF_MODULE: &str = r#"
import io
import os
import random
import sys

import numpy as np
from PIL import Image


def decode(data):
    if "tensorflow" in sys.modules:  # the tf-data loader's process, not a native worker
        with open(os.path.join(os.path.dirname(__file__), "tf-pids.txt"), "a") as f:
            f.write(f"{os.getpid()}\n")
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def resize(image):
    return np.asarray(Image.fromarray(image).resize((48, 40), Image.BILINEAR))


def crop(image):
    top = random.randint(0, image.shape[0] - 32)
    left = random.randint(0, image.shape[1] - 32)
    return np.ascontiguousarray(image[top:top + 32, left:left + 32])
"#;

/// `reproduce --loaders` with a loader whose framework the interpreter lacks stops before
/// anything is written, naming what is missing: never a fallback to prepbench's engine.
#[test]
fn reproduce_under_a_loader_that_cannot_run_here_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let at = |name: &str| work.path().join(name).display().to_string();
    let out = common::prepbench(&[
        "reproduce",
        "--loaders",
        "native,tf-data",
        "--python",
        "/bin/false",
        "--out",
        &at("out"),
        "--data-dir",
        &at("data"),
        "--store-dir",
        &at("store"),
        "--quiet",
    ]);
    common::fails_naming(&out, &["--loaders tf-data", "TensorFlow"]);
    for left in ["out", "data", "store"] {
        assert!(!work.path().join(left).exists(), "{left} was written");
    }
}

/// Epochs sized per loader: stores sized for prepbench's engine are read in part under a
/// slower loader (tf.data, a DataLoader), the first shards (raw files: the first items) its
/// epochs need, timed once and recorded; the rows say what was read (`storage_bytes`,
/// `samples`) with the store's layout (`shards`), the part verifies, and a resumed sweep reads
/// the same part without timing it again.
#[test]
fn a_slower_loader_reads_the_part_of_a_store_its_epochs_need_verified_and_resumed() {
    let Some(native) = common::native_module() else {
        return;
    };
    let mut interpreters = Vec::new();
    if let Some(python) = common::tf_python() {
        interpreters.push(("tf-data", python));
    }
    if let Some((_, python)) = common::torch_with_package() {
        interpreters.push(("torch", python));
    }
    let work = tempfile::tempdir().unwrap();
    for (loader, python) in &interpreters {
        let out_dir = work.path().join(loader);
        // 24 MB, at least 2,400 raw items (the sizing grows them where the calibration
        // predicts prepbench's engine faster): a part wherever the loader reads under 8,000 raw
        // items a second. At 3 MB a host whose sizing kept 490 items, where tf.data read 2,030
        // a second, needed all of them (a 0.2 s floor with the part's margin: 609 items).
        let sweep = |trials: &str| {
            let args = argv![
                "sweep synthetic-reading --variants 1 --dataset-mb 24 --loaders",
                format!("native,{loader}"),
                "--strategies unprocessed,decoded --min-epoch-s 0.2 --threads 2 --epochs 1",
                "--trials",
                trials,
                "--verify --evict fadvise --data-dir",
                work.path().join("data").to_str().unwrap(),
                "--store-dir",
                work.path().join("stores").to_str().unwrap(),
                "--out",
                out_dir.to_str().unwrap()
            ];
            prepbench_in(python, &native, &args)
        };
        let out = sweep("1");
        assert!(out.status.success(), "{loader}: {}", stderr(&out));
        // A part of the store: its first shards, at most half (the count is timed), as many
        // for each of the two threads' parallel reads.
        let said = stderr(&out);
        let part = said
            .split(&format!("decoded (none) under {loader} reads "))
            .nth(1)
            .and_then(|rest| rest.split(" of 16 shards").next())
            .and_then(|n| n.parse::<usize>().ok());
        assert!(
            part.is_some_and(|n| (2..=8).contains(&n) && n % 2 == 0),
            "{loader}: {said}"
        );
        // Its probe read the whole store for the part's span and stopped there: fewer records
        // than the store holds (read whole, it would have lasted the store's epoch).
        let probed: Vec<f64> = said
            .split(&format!("decoded under {loader} read "))
            .nth(1)
            .and_then(|rest| rest.split(" records in ").next())
            .map(|counts| {
                counts
                    .split(" of its ")
                    .filter_map(|n| n.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            probed.len() == 2 && probed[0] > 0.0 && probed[0] < probed[1],
            "{loader}: {said}"
        );
        let runs = Csv::read(&out_dir.join("runs.csv"));
        let row = |loader: &str, strategy: &str| {
            let found: Vec<_> = (runs.rows.iter())
                .filter(|r| runs.col(r, "loader") == loader && runs.col(r, "strategy") == strategy)
                .collect();
            assert_eq!(found.len(), 1, "{loader} {strategy}: {:?}", runs.rows);
            found[0].clone()
        };
        let number = |r: &Vec<String>, column: &str| runs.col(r, column).parse::<f64>().unwrap();
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("manifest.json")).unwrap())
                .unwrap();
        let sizing = &manifest["sizing"]["synthetic-reading@mb_per_sample=0.01"];
        for strategy in ["unprocessed", "decoded"] {
            let (ours, theirs) = (row("native", strategy), row(loader, strategy));
            assert_eq!(runs.col(&theirs, "verified"), "pass", "{loader} {strategy}");
            assert_eq!(runs.col(&theirs, "shards"), runs.col(&ours, "shards"));
            // A part, smaller than the whole store the native rows read (raw files: than the
            // dataset, of which prepbench's engine reads a part of its own, predicted from the
            // calibration); how much smaller is the timed count, not a fixed ratio of two
            // measured speeds.
            let whole = match strategy {
                "unprocessed" => sizing["source_items"].as_f64().unwrap(),
                _ => number(&ours, "samples"),
            };
            assert!(
                number(&theirs, "samples") < whole,
                "{loader} {strategy}: {theirs:?} against {whole} ({ours:?})"
            );
        }
        // The stored part is at most its first shards (of 16 of nearly equal size).
        let shards = part.unwrap() as f64;
        let (ours, theirs) = (row("native", "decoded"), row(loader, "decoded"));
        assert!(
            number(&theirs, "storage_bytes")
                <= number(&ours, "storage_bytes") * (shards + 1.0) / 16.0,
            "{loader}: {shards} shards, {theirs:?} against {ours:?}"
        );
        let parts = &sizing["loader_parts"];
        let recorded = &parts[format!("{loader}:decoded/none")];
        // A number where the part reads its shards whole; with the records of each it reads
        // where it stops within them, as the progress said.
        let each = said
            .split(&format!("decoded (none) under {loader} reads "))
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .and_then(|line| line.split_once(", the first "))
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|k| k.parse::<u64>().ok());
        match each {
            None => assert_eq!(recorded.as_u64(), part.map(|n| n as u64), "{manifest}"),
            Some(k) => {
                assert_eq!(recorded["shards"].as_u64(), part.map(|n| n as u64));
                assert_eq!(
                    recorded["records_per_shard"].as_u64(),
                    Some(k),
                    "{manifest}"
                );
            }
        }

        // Resumed with a second trial: the same part, not timed again.
        let resumed = sweep("2");
        assert!(resumed.status.success(), "{loader}: {}", stderr(&resumed));
        assert!(
            !stderr(&resumed).contains("to size its epochs"),
            "{}",
            stderr(&resumed)
        );
        let runs = Csv::read(&out_dir.join("runs.csv"));
        let bytes: Vec<String> = (runs.rows.iter())
            .filter(|r| runs.col(r, "loader") == *loader && runs.col(r, "strategy") == "decoded")
            .map(|r| runs.col(r, "storage_bytes"))
            .collect();
        assert!(bytes.len() == 2 && bytes[0] == bytes[1], "{bytes:?}");
    }
}
