//! The adversarial corpus: what a careless or hostile user hands prepbench, across workload
//! YAML, every layout reader, stores, command-line values, results files and process faults.
//! Every case runs the real binary in its own folder, which holds a complete results folder
//! from an earlier run (and, where the case needs one, a generated dataset), and checks:
//! - the exit code;
//! - that stderr names the file or value and says what is wrong, and shows no panic;
//! - that it finished within a minute (no hang);
//! - that nothing already written was changed or lost: every file of the earlier results
//!   folder, and of the dataset, is byte for byte what it was.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::*;

/// A dataset a case starts from: none, or a generated one of a kind (copied into the case).
#[derive(Clone, Copy, PartialEq)]
enum Data {
    None,
    Kind(&'static str, usize),
}

struct Case {
    name: &'static str,
    data: Data,
    /// Files written into the case folder before the command (relative paths; the dataset of
    /// kind K lies in `data/K-seed0`).
    files: Vec<(String, Vec<u8>)>,
    /// The command; `{d}` is the case folder.
    args: String,
    code: i32,
    /// What stderr must say, each a piece of the file or value and of what is wrong.
    needles: Vec<&'static str>,
    /// What stdout must say (a preview, a table).
    says: Vec<&'static str>,
}

fn case(name: &'static str, args: impl Into<String>, code: i32, needles: &[&'static str]) -> Case {
    Case {
        name,
        data: Data::None,
        files: Vec::new(),
        args: args.into(),
        code,
        needles: needles.to_vec(),
        says: Vec::new(),
    }
}

impl Case {
    fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Case {
        self.files.push((path.into(), bytes.into()));
        self
    }

    /// A store folder of cv `decoded` with prepbench's marker, a manifest that does not
    /// parse, and a file prepbench did not write.
    fn damaged_store(self) -> Case {
        let store = "store/cv/decoded/none-2sh-4n-0123456789";
        self.file(format!("{store}/.prepbench-store"), "")
            .file(format!("{store}/store.json"), "garbage{")
            .file(format!("{store}/notes.txt"), "mine")
    }

    fn data(mut self, kind: &'static str, samples: usize) -> Case {
        self.data = Data::Kind(kind, samples);
        self
    }

    fn says(mut self, needle: &'static str) -> Case {
        self.says.push(needle);
        self
    }
}

/// A workload YAML of imagenet JPEGs with `steps` and `extra` top-level keys.
fn cv_yaml(steps: &str, extra: &str) -> String {
    format!(
        "name: w\ndataset:\n  kind: imagenet\n  samples: 4\nsteps:\n{steps}\n{extra}sweep:\n  \
         strategies: [unprocessed, concatenated]\n  threads: [1]\n  trials: 1\n  epochs: 1\n  \
         shards: 2\n"
    )
}

const READ: &str = "  - name: concatenated\n    op: read_file";
const DECODE: &str =
    "  - name: concatenated\n    op: read_file\n  - name: decoded\n    op: decode_jpeg";

/// A results folder made by a real run, once per process; each case starts with a copy.
fn earlier_results() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let work = common::process_dir("corpus-results-");
        let out = run_cv_in(
            work.path(),
            &argv!["--strategy resized --epochs 1 --evict fadvise"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        work
    })
    .path()
}

/// A generated dataset of `kind` with `samples` samples, once per process.
fn generated(kind: &'static str, samples: usize) -> PathBuf {
    static DIRS: OnceLock<std::sync::Mutex<BTreeMap<String, tempfile::TempDir>>> = OnceLock::new();
    let dirs = DIRS.get_or_init(Default::default);
    let mut dirs = dirs.lock().unwrap();
    let key = format!("{kind}-{samples}");
    let dir = dirs.entry(key).or_insert_with(|| {
        let dir = common::process_dir("corpus-data-");
        prepbench_ok(&argv![
            "generate",
            kind,
            "--samples",
            &samples.to_string(),
            "--quiet --out",
            dir.path().join("d").to_str().unwrap()
        ]);
        dir
    });
    dir.path().join("d")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every regular file under `dir` with its bytes (the lock file aside, which a writer
/// refreshes).
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut found = BTreeMap::new();
    if !dir.exists() {
        return found;
    }
    for path in walk(dir) {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_file() && !path.ends_with(".prepbench.lock") {
            found.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    found
}

/// Runs `args` in `dir` with a one-minute limit: the output, or a failure naming the hang.
fn run_within_a_minute(dir: &Path, args: &[String]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prepbench"))
        .args(args)
        .current_dir(dir)
        .env("PREPBENCH_CACHE_DIR", common::calibration_cache())
        .env("PREPBENCH_HEAVY_LOAD_PCT", "1000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("`{}` hung: {}", args.join(" "), stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs one case; returns what went wrong, if anything.
fn check(case: &Case) -> Option<String> {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    copy_tree(&earlier_results().join("out"), &d.join("out"));
    if let Data::Kind(kind, samples) = case.data {
        copy_tree(
            &generated(kind, samples),
            &d.join(format!("data/{kind}-seed0")),
        );
    }
    for (path, bytes) in &case.files {
        let path = d.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    prepare_special(case.name, d);
    let before = (contents(&d.join("out")), contents(&d.join("data")));
    let args: Vec<String> = case
        .args
        .split_whitespace()
        .map(|a| a.replace("{d}", d.to_str().unwrap()))
        .collect();
    let out = run_within_a_minute(d, &args);
    let err = stderr(&out);
    let mut wrong = Vec::new();
    if out.status.code() != Some(case.code) {
        wrong.push(format!(
            "exit {:?}, expected {}",
            out.status.code(),
            case.code
        ));
    }
    for needle in &case.needles {
        let needle = needle.replace("{d}", d.to_str().unwrap());
        if !err.contains(&needle) {
            wrong.push(format!("no {needle:?}"));
        }
    }
    let said = String::from_utf8_lossy(&out.stdout);
    for needle in &case.says {
        if !said.contains(needle) {
            wrong.push(format!("stdout has no {needle:?}"));
        }
    }
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
        wrong.push("a panic".into());
    }
    // Nothing already written is changed or lost (a successful run may add files).
    let after = (contents(&d.join("out")), contents(&d.join("data")));
    for (was, now) in [(&before.0, &after.0), (&before.1, &after.1)] {
        for (path, bytes) in was {
            if now.get(path) != Some(bytes) {
                wrong.push(format!("{} changed or lost", path.display()));
            }
        }
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "{}: {}\n    stderr: {}",
            case.name,
            wrong.join("; "),
            err.trim()
        )
    })
}

/// Set-up a case cannot say as file contents: FIFOs, links, locks held.
fn prepare_special(name: &str, d: &Path) {
    let fifo = |path: &Path| {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    };
    match name {
        "workload file is a FIFO" => fifo(&d.join("w.yaml")),
        "sample file is a FIFO" => {
            fifo(&d.join("data/imagenet-seed0/train/n01000000/n01000000_9.JPEG"))
        }
        "sample file links to /dev/zero" => std::os::unix::fs::symlink(
            "/dev/zero",
            d.join("data/imagenet-seed0/train/n01000000/n01000000_9.JPEG"),
        )
        .unwrap(),
        "hardware profile is a FIFO" => fifo(&d.join("hw.yaml")),
        "runs.csv is a FIFO" => {
            std::fs::create_dir_all(d.join("fifo-out")).unwrap();
            fifo(&d.join("fifo-out/runs.csv"))
        }
        "a sample file name that is not UTF-8" => {
            use std::os::unix::ffi::OsStrExt;
            let class = d.join("data/imagenet-seed0/train/n01000000");
            let odd = std::ffi::OsStr::from_bytes(b"n01000000_\xff.JPEG");
            std::fs::rename(class.join("n01000000_0.JPEG"), class.join(odd)).unwrap()
        }
        "compare with a folder without runs" => {
            let runs = std::fs::read_to_string(d.join("out/runs.csv")).unwrap();
            std::fs::create_dir_all(d.join("empty")).unwrap();
            let header = runs.lines().next().unwrap();
            std::fs::write(d.join("empty/runs.csv"), format!("{header}\n")).unwrap()
        }
        "results folder reached through a link into the dataset" => {
            std::os::unix::fs::symlink(d.join("data/imagenet-seed0/train"), d.join("link")).unwrap()
        }
        _ => {}
    }
}

/// A JPEG whose frame header claims 13000 x 13000 pixels (under max_pixels).
pub fn jpeg_bomb() -> Vec<u8> {
    let img = image::RgbImage::from_fn(64, 64, |x, y| image::Rgb([x as u8, y as u8, 9]));
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
        .encode_image(&img)
        .unwrap();
    let sof = bytes.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    bytes[sof + 5..sof + 9].copy_from_slice(&[0x32, 0xc8, 0x32, 0xc8]);
    bytes
}

fn cases() -> Vec<Case> {
    let validate = "validate {d}/w.yaml";
    let run_w = "run {d}/w.yaml --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/out";
    let run_cv = "run cv --samples 4 --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/out";
    let deep = "a: ".to_string() + &"[".repeat(200_000);
    vec![
        // Workload YAML: validate says what run would fail on, with the file and line.
        case("unknown dataset kind", validate, 1, &["w.yaml:3", "unknown dataset kind `imagenett`"])
            .file("w.yaml", cv_yaml(READ, "").replace("kind: imagenet", "kind: imagenett")),
        case("unknown generator option", validate, 1, &["w.yaml:5", "no option `colour`"])
            .file("w.yaml", cv_yaml(READ, "").replace("  samples: 4\n", "  samples: 4\n  options: {colour: blue}\n")),
        case("a step with two op keys", validate, 1, &["w.yaml", "`op` is given twice"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n    op: decode_png"), "")),
        case("an unknown op", validate, 1, &["w.yaml", "unknown op `decode_jpg`"])
            .file("w.yaml", cv_yaml(&DECODE.replace("decode_jpeg", "decode_jpg"), "")),
        case("an unknown step key", validate, 1, &["w.yaml", "unknown field `parms`"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n    parms: {{}}"), "")),
        case("a step reading a field nothing makes", validate, 1, &["w.yaml:8", "reads field `nothing_here`"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n    params: {{from: nothing_here}}"), "")),
        case("a misspelt parameter on its own line", validate, 1, &["w.yaml:12:", "unknown field `max_pixel`"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n    params:\n      max_pixels: 10\n      max_pixel: 5"), "")),
        case("an unknown parameter", validate, 1, &["w.yaml:10:", "max_pixel"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n    params: {{max_pixel: 5}}"), "")),
        case("a step without a name", validate, 1, &["w.yaml", "missing field `name`"])
            .file("w.yaml", cv_yaml("  - op: read_file", "")),
        case("no steps", validate, 1, &["w.yaml", "at least one step"])
            .file("w.yaml", cv_yaml("  []", "").replace("steps:\n  []", "steps: []")),
        case("a step name with a slash", validate, 1, &["w.yaml", "a/b"])
            .file("w.yaml", cv_yaml(&READ.replace("concatenated", "a/b"), "")),
        case("an absolute workload name", validate, 1, &["w.yaml:1", "/etc/x"])
            .file("w.yaml", cv_yaml(READ, "").replace("name: w", "name: /etc/x")),
        case("a step named ..", validate, 1, &["w.yaml", "\"..\"", "starts with `.`"])
            .file("w.yaml", cv_yaml(&READ.replace("concatenated", ".."), "")),
        case("a step name used twice", validate, 1, &["w.yaml", "used twice"])
            .file("w.yaml", cv_yaml(&format!("{READ}\n{READ}"), "")),
        case("YAML nested 200,000 deep", validate, 1, &["w.yaml:1", "nested"])
            .file("w.yaml", deep),
        case("a YAML file over 1 MiB", validate, 1, &["w.yaml", "more than the 1048576"])
            .file("w.yaml", "# padding\n".repeat(120_000)),
        case("a workload that is not UTF-8", validate, 1, &["w.yaml", "not UTF-8"])
            .file("w.yaml", b"name: \xff\xfe\n".to_vec()),
        case("a YAML syntax error", validate, 1, &["w.yaml:6"])
            .file("w.yaml", cv_yaml(READ, "").replace("steps:\n", "steps:\n\t- bad\n")),
        case("a list instead of a workload", validate, 1, &["w.yaml", "invalid type"])
            .file("w.yaml", "- 1\n- 2\n"),
        case("an empty workload file", validate, 1, &["w.yaml"]).file("w.yaml", ""),
        case("a workload path that is a folder", "validate {d}/out", 1, &["{d}/out", "directory"]),
        case("a workload file that does not exist", "validate {d}/nope.yaml", 1, &["nope.yaml", "No such file"]),
        case("workload file is a FIFO", validate, 1, &["w.yaml", "a FIFO"]),
        case("a storage latency of 1e300 ms", validate, 1, &["w.yaml", "latency_ms must be a number from 0 to"])
            .file("w.yaml", cv_yaml(READ, "storage_profiles:\n  slow: {latency_ms: 1e300}\n")),
        case("a storage stream rate of 1e-300 MB/s", validate, 1, &["w.yaml", "stream_mb_s must be a number from 0.001"])
            .file("w.yaml", cv_yaml(READ, "storage_profiles:\n  slow: {stream_mb_s: 1.0e-300}\n")),
        case("negative IOPS", validate, 1, &["w.yaml", "iops must be a number"])
            .file("w.yaml", cv_yaml(READ, "storage_profiles:\n  slow: {iops: -1}\n")),
        case("zero trials", validate, 1, &["w.yaml", "trials"])
            .file("w.yaml", cv_yaml(READ, "").replace("trials: 1", "trials: 0")),
        case("random: false on a random op", validate, 1, &["w.yaml", "random"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n  - name: flipped\n    op: random_hflip\n    random: false"), "")),
        case("max_expansion of zero", validate, 1, &["w.yaml", "max_expansion must be"])
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n    params: {{max_expansion: 0}}"), "")),
        case("an STFT frame longer than 2^20", validate, 1, &["w.yaml", "larger than 2^20"])
            .file("w.yaml", cv_yaml(&format!("{READ}\n  - name: s\n    op: stft\n    params: {{frame_length: 18446744073709551615, hop: 1}}"), "")),
        case("a resampler that needs an endless filter", validate, 1, &["w.yaml", "taps"])
            .file("w.yaml", cv_yaml(&format!("{READ}\n  - name: r\n    op: resample\n    params: {{to_rate: 2, from_rate: 4000000000}}"), "")),
        case("NILM periods that overflow", validate, 1, &["w.yaml", "period x periods"])
            .file("w.yaml", cv_yaml(&format!("{READ}\n  - name: f\n    op: nilm_features\n    params: {{period: 4294967296, periods: 4294967296}}"), "")),
        // Command-line values: refused with the allowed range, before anything runs.
        case("--epochs 0", format!("{run_cv} --epochs 0"), 2, &["--epochs", "from 1 to"]),
        case("--shards 0", format!("{run_cv} --shards 0"), 2, &["--shards", "from 1 to"]),
        case("--threads 0", format!("{run_cv} --threads 0"), 2, &["--threads", "from 1 to"]),
        case("--trials 100000000", "sweep cv --trials 100000000 --out {d}/o", 2, &["--trials", "from 1 to 10000"]),
        case("--shard 1/2^64-1", "sweep cv --shard 1/18446744073709551615 --out {d}/o", 2, &["18446744073709551615", "from 1 to 100000"]),
        case("--consumer compute=1e20s", format!("{run_cv} --consumer compute=1e20s"), 2, &["1e20s", "from 0 to 3600 s"]),
        case("--consumer batch=0", format!("{run_cv} --consumer compute=1ms,batch=0"), 2, &["batch", "from 1 to"]),
        case("whatif --read-mbps inf", "whatif {d}/out --read-mbps inf", 2, &["--read-mbps", "inf"]),
        case("whatif --latency-ms -1", "whatif {d}/out --latency-ms=-1", 2, &["--latency-ms"]),
        case("--dataset-mb NaN", "sweep synthetic-reading --dataset-mb NaN --out {d}/o", 2, &["--dataset-mb", "NaN"]),
        case("--app-cache-mb -5", format!("{run_cv} --app-cache-mb=-5"), 2, &["--app-cache-mb"]),
        case("an unknown codec", format!("{run_cv} --codec zstd:99"), 2, &["zstd:99"]),
        case("an unknown cache mode", format!("{run_cv} --cache lukewarm"), 2, &["lukewarm"]),
        case("an unknown strategy", format!("{run_cv} --strategy rezised"), 1, &["rezised"]),
        case("show --sample 999999", "show cv --sample 999999 --list --data-dir {d}/data", 1, &["--sample 999999", "from 0 to 999"]),
        case("--shards above the samples", format!("{run_cv} --shards 4096"), 1, &["--shards 4096", "4 samples", "from 1 to 4"]),
        case("a hardware profile with 0 cores", "whatif {d}/out --profile {d}/hw.yaml", 1, &["hw.yaml", "cores must be"])
            .file("hw.yaml", "name: x\ncores: 0\nstorage: {}\n"),
        case("a hardware profile 1e300 times faster", "whatif {d}/out --profile {d}/hw.yaml", 1, &["hw.yaml", "cpu_speed must be"])
            .file("hw.yaml", "name: x\ncores: 4\ncpu_speed: 1e300\nstorage: {}\n"),
        case("hardware profile is a FIFO", "whatif {d}/out --profile {d}/hw.yaml", 1, &["hw.yaml", "a FIFO"]),
        // Layout readers and media: named, never a panic or a hang.
        case("sample file is a FIFO", run_cv.replace("{d}/out", "{d}/out2"), 0, &[]).data("imagenet", 4),
        case("sample file links to /dev/zero", run_cv.replace("{d}/out", "{d}/out2"), 0, &[]).data("imagenet", 4),
        case("a pad_truncate length of 1e12", run_w, 1, &["imagenet-seed0", "step `padded`", "4 GiB"])
            .data("imagenet", 4)
            .file("w.yaml", cv_yaml(&format!("{DECODE}\n  - name: padded\n    op: pad_truncate\n    params: {{field: image, length: 1000000000000}}"), "")
                .replace("[unprocessed, concatenated]", "[unprocessed]")),
        case("a truncated JPEG", format!("{run_cv} --strategy decoded"), 1, &["n01000000_0.JPEG", "step `decoded`"])
            .data("imagenet", 4)
            .file("data/imagenet-seed0/train/n01000000/n01000000_0.JPEG", vec![0xff, 0xd8, 0xff]),
        case("a JPEG claiming 13000x13000", format!("{run_cv} --strategy decoded"), 1, &["n01000000_0.JPEG", "max_expansion"])
            .data("imagenet", 4)
            .file("data/imagenet-seed0/train/n01000000/n01000000_0.JPEG", jpeg_bomb()),
        case("COCO annotations that are not JSON",
            "run detection --samples 3 --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/out", 1,
            &["instances_train2017.json"])
            .data("coco", 3)
            .file("data/coco-seed0/annotations/instances_train2017.json", "{\"images\": [1, 2"),
        case("a LibriSpeech transcript with a bad line",
            "run flac --samples 2 --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/out", 1,
            &["100-1000-0000.flac", "no transcript line", ".trans.txt"])
            .data("librispeech", 2)
            .file("data/librispeech-seed0/100/1000/100-1000.trans.txt", "no-id-here\n"),
        case("a truncated FLAC",
            "run flac --samples 2 --quiet --evict fadvise --strategy decoded --data-dir {d}/data --store-dir {d}/store --out {d}/out", 1,
            &["100-1000-0000.flac"])
            .data("librispeech", 2)
            .file("data/librispeech-seed0/100/1000/100-1000-0000.flac", b"fLaC\0\0\0\x22".to_vec()),
        case("a Common Voice index without its columns",
            "run mp3 --samples 2 --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/out", 1,
            &["train.tsv"])
            .data("commonvoice", 2)
            .file("data/commonvoice-seed0/train.tsv", "nothing\tuseful\n"),
        case("an OpenWebText page that is not UTF-8",
            "run nlp --samples 2 --quiet --evict fadvise --strategy decoded --data-dir {d}/data --store-dir {d}/store --out {d}/out", 1,
            &["0.txt", "UTF-8"])
            .data("openwebtext", 2)
            .file("data/openwebtext-seed0/0.txt", b"<p>\xff\xfe</p>".to_vec()),
        // Places: nothing written where it does not belong.
        case("results folder inside the dataset", "run cv --samples 4 --quiet --data-dir {d}/data --store-dir {d}/store --out {d}/data/imagenet-seed0/res", 1,
            &["inside the dataset"])
            .data("imagenet", 4),
        case("results folder reached through a link into the dataset",
            "run cv --samples 4 --quiet --data-dir {d}/data --store-dir {d}/store --out {d}/link/../res", 1,
            &["inside the dataset"])
            .data("imagenet", 4),
        case("store inside the dataset", "run cv --samples 4 --quiet --data-dir {d}/data --store-dir {d}/data/imagenet-seed0 --out {d}/out", 1,
            &["inside the dataset"])
            .data("imagenet", 4),
        case("a results folder that is a file", "run cv --samples 4 --quiet --data-dir {d}/data --store-dir {d}/store --out {d}/f", 1, &["{d}/f", "is a file, not a folder"])
            .data("imagenet", 4)
            .file("f", "not a folder"),
        // Results files: named, nothing dropped silently, nothing lost.
        case("runs.csv with other columns", "run cv --samples 4 --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/other", 1, &["other/runs.csv", "other columns"])
            .data("imagenet", 4)
            .file("other/runs.csv", "a,b\n1,2\n"),
        case("runs.csv is a FIFO", "report {d}/fifo-out", 1, &["runs.csv", "a FIFO"]),
        case("report of a folder that does not exist", "report {d}/nowhere", 1, &["nowhere"]),
        case("compare against a missing folder", "compare {d}/out {d}/nowhere", 1, &["nowhere"]),
        case("merge without shards", "merge {d}/out --out {d}/merged", 1, &["{d}/out"]),
    ]
    .into_iter()
    .chain(third_round())
    .collect()
}

/// The third round's classes (issue 42): names as bytes, lines of what is wrong, files where
/// folders are named, values that a check let through, previews that promised what the real
/// command refused.
fn third_round() -> Vec<Case> {
    let validate = "validate {d}/w.yaml";
    let run_w = "run {d}/w.yaml --quiet --evict fadvise --data-dir {d}/data --store-dir {d}/store --out {d}/out2";
    let files = |options: &str| {
        format!(
            "name: mine\ndataset:\n  kind: files\n  path: imagenet-seed0\n  options: {options}\n\
             steps:\n  - name: concatenated\n    op: read_file\n  - name: decoded\n    op: \
             decode_jpeg\n"
        )
    };
    // A comment naming what is wrong comes first: the error is on the line that is.
    let twice = "name: w\n# decoded twice below, and on_error too\ndataset:\n  kind: imagenet\n  \
                 samples: 4\nsteps:\n  - name: decoded\n    op: read_file\n  # decoded again\n  \
                 - name: decoded\n    op: decode_jpeg\n";
    let bad_on_error =
        "name: w\n# on_error: what to do\ndataset:\n  kind: imagenet\n  samples: 4\n\
                        on_error: sometimes\nsteps:\n  - name: concatenated\n    op: read_file\n";
    vec![
        case("a sample file name that is not UTF-8", run_w, 0, &[])
            .data("imagenet", 4)
            .file("w.yaml", files("{glob: \"**/*.JPEG\"}")),
        case(
            "report --out a folder holding the user's module",
            "report {d}/out --out {d}/code",
            1,
            &["{d}/code", "pipe.py", "not prepbench's"],
        )
        .file("code/pipe.py", "def f(x):\n    return x\n"),
        case(
            "show --out a folder holding the user's module",
            "show cv --sample 0 --data-dir {d}/data --out {d}/code",
            1,
            &["{d}/code", "pipe.py", "not prepbench's"],
        )
        .data("imagenet", 4)
        .file("code/pipe.py", "def f(x):\n    return x\n"),
        case(
            "a max_expansion of 1e-300, quoted as given",
            validate,
            1,
            &["w.yaml", "got 1e-300"],
        )
        .file(
            "w.yaml",
            cv_yaml(
                &format!("{DECODE}\n    params: {{max_expansion: 1.0e-300}}"),
                "",
            ),
        ),
        case(
            "a files glob that does not compile",
            validate,
            1,
            &["w.yaml:5", "glob=[", "not a glob"],
        )
        .file("w.yaml", files("{glob: \"[\"}")),
        case(
            "a files label that is not none or parent",
            validate,
            1,
            &["w.yaml:5", "label=Parent", "none, parent"],
        )
        .file("w.yaml", files("{label: Parent}")),
        case(
            "a step name used twice after a comment naming it",
            validate,
            1,
            &["w.yaml:10:", "used twice"],
        )
        .file("w.yaml", twice),
        case(
            "a bad on_error after a comment naming it",
            validate,
            1,
            &["w.yaml:6:", "on_error", "fail, skip"],
        )
        .file("w.yaml", bad_on_error),
        case(
            "report --out names a file",
            "report {d}/out --out {d}/f",
            1,
            &["{d}/f", "is a file, not a folder"],
        )
        .file("f", "mine"),
        case(
            "show --out names a file",
            "show cv --sample 0 --data-dir {d}/data --out {d}/f",
            1,
            &["{d}/f", "is a file, not a folder"],
        )
        .data("imagenet", 4)
        .file("f", "mine"),
        case(
            "generate --out names a file",
            "generate imagenet --samples 2 --out {d}/f",
            1,
            &["{d}/f", "is a file, not a folder"],
        )
        .file("f", "mine"),
        case(
            "compare with a folder without runs",
            "compare {d}/out {d}/empty",
            1,
            &["{d}/empty", "no valid run"],
        ),
        case(
            "recommend --epochs 0",
            "recommend {d}/out --epochs 0",
            2,
            &["--epochs", "0"],
        ),
        case(
            "recommend --dataset-samples 2^64-1",
            "recommend {d}/out --dataset-samples 18446744073709551615",
            2,
            &["--dataset-samples", "18446744073709551615"],
        ),
        case(
            "recommend --weights 1e308 each",
            "recommend {d}/out --weights 1e308,1e308,1e308",
            2,
            &["1e308", "from 0.000001 to 1000000"],
        ),
        case(
            "recommend --weights 1e-300",
            "recommend {d}/out --weights 1e-300,1,1",
            2,
            &["1e-300", "each 0 or from"],
        ),
        case(
            "--dataset-mb 1e-300",
            "sweep synthetic-reading --dataset-mb 1e-300 --out {d}/o",
            2,
            &["--dataset-mb", "from 0.001"],
        ),
        case(
            "a store remove preview of a store holding a foreign file",
            "store remove --all --dry-run --store-dir {d}/store",
            0,
            &[],
        )
        .damaged_store()
        .says("Would refuse 1 stores")
        .says("notes.txt")
        .says("Would remove these 0 stores"),
        case(
            "a store listed with a damaged manifest",
            "store list --store-dir {d}/store",
            0,
            &[],
        )
        .damaged_store()
        .says("damaged"),
    ]
}

#[test]
fn every_adversarial_case_fails_cleanly_and_loses_nothing() {
    let cases = cases();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
