//! A dataset directory of fuzzed files through every layout reader, then each listed sample
//! through its reference workload's steps: a source or an error naming a file, samples or
//! errors, never a panic, a hang or an allocation beyond the budgets.
//!
//! Input: one byte picks the kind; then files as [name byte][length u32 LE][bytes], the name
//! byte picking one of the paths that kind's layout reads (its index files and media).
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use workloads::StepContext;

/// A pipeline for the kinds no reference workload reads: WebDataset samples to pixels.
const WEBDATASET_WORKLOAD: &str = "name: wds\ndataset: {kind: webdataset}\nsteps:\n  - name: read\n    op: read_webdataset\n    params: {label: cls}\n  - name: decoded\n    op: decode_jpeg\n    params: {from: jpg}\n  - name: resized\n    op: resize_shorter\n    params: {size: 32}\n";
/// A folder of files as images.
const FILES_WORKLOAD: &str = "name: mine\ndataset: {kind: files, path: x}\nsteps:\n  - name: read\n    op: read_file\n  - name: decoded\n    op: decode_jpeg\n";

/// A dataset kind, the paths its layout reads, and the reference workload that reads it (a
/// name, or the YAML of one).
const KINDS: &[(&str, &[&str], &str)] = &[
    (
        "imagenet",
        &[
            "train/n01000000/n01000000_0.JPEG",
            "train/n01000000/n01000000_1.JPEG",
            "train/n01001009/n01001009_0.JPEG",
            "train/n01001009/caf\u{e9}_\u{6771}1.JPEG",
        ],
        "cv",
    ),
    ("cubepp-png", &["PNG/1.png", "PNG/2.png", "JPG/1.jpg"], "cv2-png"),
    ("cubepp-jpg", &["JPG/1.jpg", "JPG/2.jpg", "PNG/1.png"], "cv2-jpg"),
    (
        "coco",
        &[
            "annotations/instances_train2017.json",
            "train2017/000000000001.jpg",
            "train2017/000000000002.jpg",
        ],
        "detection",
    ),
    ("openwebtext", &["0.txt", "1.txt", "urlsf_subset00-1_data"], "nlp"),
    (
        "commonvoice",
        &[
            "train.tsv",
            "clips/common_voice_en_20000000.mp3",
            "clips/common_voice_en_20000001.mp3",
        ],
        "mp3",
    ),
    (
        "librispeech",
        &[
            "100/1000/100-1000.trans.txt",
            "100/1000/100-1000-0000.flac",
            "100/1000/100-1000-0001.flac",
        ],
        "flac",
    ),
    (
        "cream",
        &["2018-08-23/X8_2018-08-23T00-00-00.hdf5", "2018-08-23/X8_2018-08-23T01-00-00.hdf5"],
        "nilm",
    ),
    ("synthetic", &["0.npy", "1.npy", "10.npy"], "synthetic-processing"),
    ("webdataset", &["shard-000000.tar", "train/b.tar", "notes.txt"], WEBDATASET_WORKLOAD),
    ("files", &["cats/1.jpg", "dogs/sub/2.jpg", ".hidden/3.jpg"], FILES_WORKLOAD),
];

const MARKER: &str = ".prepbench-dataset.json";

fn scratch() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("prepbench-fuzz-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, mut rest)) = data.split_first() else {
        return;
    };
    let (kind_name, paths, workload_name) = KINDS[which as usize % KINDS.len()];
    let root = scratch().join("root");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    while rest.len() >= 5 {
        let pick = rest[0] as usize % (paths.len() + 1);
        let len = u32::from_le_bytes(rest[1..5].try_into().unwrap()) as usize;
        rest = &rest[5..];
        let len = len.min(rest.len());
        let (bytes, tail) = rest.split_at(len);
        rest = tail;
        let path = root.join(paths.get(pick).copied().unwrap_or(MARKER));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let kind = datasets::find_kind(kind_name).unwrap();
    let Ok(source) = kind.open_local(&root) else {
        return;
    };
    let workload = if workload_name.contains('\n') {
        workloads::Workload::from_yaml(workload_name, "fuzz").unwrap()
    } else {
        workloads::load(workload_name).unwrap()
    };
    let ctx = StepContext {
        files: Some(source.files.as_read()),
        ..StepContext::FIRST
    };
    for id in 0..source.len().min(8) {
        let mut samples = vec![source.sample(id)];
        for def in &workload.steps {
            let mut next = Vec::new();
            for sample in samples {
                let ctx = StepContext { step_index: next.len(), ..ctx };
                if def.step.apply_many(sample, &ctx, &mut next).is_err() {
                    break;
                }
            }
            next.truncate(16);
            samples = next;
        }
    }
});
