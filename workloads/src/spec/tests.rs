//! Reading workload files: every error a file can hold names the file and the line; and the
//! spec's own queries.

use crate::error::WorkloadError;
use crate::options::Codec;
use crate::spec::{
    check_name, check_yaml_shape, path_component, Origin, WorkloadSpec, MAX_YAML_BYTES,
};

fn spec(yaml: &str, file: &str) -> Result<WorkloadSpec, WorkloadError> {
    WorkloadSpec::from_yaml(yaml, Origin::file(file, None))
}

#[test]
fn yaml_too_deep_or_too_large_is_refused_at_once_with_its_line() {
    let deep = format!(
        "name: x\nsteps: {}{}\n",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    let err = spec(&deep, "deep.yaml").unwrap_err().to_string();
    assert!(
        err.contains("deep.yaml:2") && err.contains("nested more than"),
        "{err}"
    );
    let big = format!("name: x\ndescription: \"{}\"\n", "a".repeat(MAX_YAML_BYTES));
    let err = spec(&big, "big.yaml").unwrap_err().to_string();
    assert!(err.contains("more than the"), "{err}");
    // Brackets in quotes and comments, and apostrophes in plain text, do not count.
    let text = format!(
        "a: \"{}\"\nb: '{}' # {}\nc: the paper's [[x]]\n",
        "[".repeat(100),
        "{".repeat(100),
        "[".repeat(100)
    );
    check_yaml_shape(&text).unwrap();
    for builtin in crate::BUILTIN {
        check_yaml_shape(builtin.1).unwrap();
    }
}

#[test]
fn names_that_could_be_paths_are_refused_and_folder_names_are_safe() {
    for bad in [
        "", "  ", "\t", "../x", "/abs", "a/b", "a\\b", ".hidden", "..", "nul\0",
    ] {
        assert!(check_name("step", bad).is_err(), "{bad:?} passed");
    }
    for good in [
        "cv",
        "pixel-centered",
        "my, \"odd\"\nworkload",
        "café",
        "v1.2",
    ] {
        check_name("workload", good).unwrap();
    }
    assert!(check_name("step", &"x".repeat(101)).is_err());
    for (name, folder) in [
        ("../../etc", "_._.._etc"),
        ("/abs", "_abs"),
        ("", "_"),
        (
            "synthetic-reading@mb_per_sample=0.01",
            "synthetic-reading@mb_per_sample=0.01",
        ),
        ("a b\n", "a_b_"),
    ] {
        assert_eq!(path_component(name), folder, "{name:?}");
    }
}

/// A small valid workload, shared with the built workload's tests.
pub(crate) const GOOD: &str = "\
name: tiny
dataset:
  kind: imagenet
  samples: 10
steps:
  - name: concatenated
    op: read_file
  - name: decoded
    op: decode_jpeg
  - name: resized
    op: resize_shorter
    params: {size: 32}
  - name: cropped
    op: random_crop
    params: {height: 8, width: 8}
sweep:
  threads: [1, 2]
  codecs: [none, zstd:5]
";

#[test]
fn storage_profiles_are_defined_named_and_checked() {
    let w = spec(GOOD, "w.yaml").unwrap();
    assert_eq!(w.sweep.storage, vec!["local".to_string()]);
    let yaml = format!(
        "{GOOD}  storage: [local, nfs, paper-ceph-hdd]\nstorage_profiles:\n  nfs:\n    description: our filer\n    stream_mb_s: 120\n    latency_ms: 0.5\n"
    );
    let w = spec(&yaml, "w.yaml").unwrap();
    let nfs = w.storage_profile("nfs").unwrap();
    assert_eq!((nfs.name.as_str(), nfs.stream_mb_s), ("nfs", Some(120.0)));
    assert_eq!(nfs.request_kb, 4.0);
    assert_eq!(
        w.storage_profile("paper-ceph-hdd").unwrap().iops,
        Some(9853.0)
    );
    // An unknown profile in the sweep names the known ones and the line.
    let (line, message) = err(&format!("{GOOD}  storage: [ceph]\n"));
    assert!(
        line.is_some() && message.contains("paper-ceph-hdd"),
        "{message}"
    );
    // A bad figure names the profile and the figure; an unknown key is refused.
    let (_, message) = err(&format!("{GOOD}storage_profiles:\n  slow:\n    iops: -3\n"));
    assert!(
        message.contains("`slow`") && message.contains("iops"),
        "{message}"
    );
    let (_, message) = err(&format!(
        "{GOOD}storage_profiles:\n  slow:\n    bandwidth: 3\n"
    ));
    assert!(message.contains("bandwidth"), "{message}");
}

#[test]
fn a_spec_with_storage_profiles_reads_back_as_it_was_written() {
    // As a loader's process reads the spec it is given (JSON): the profiles' names with them.
    let yaml = format!("{GOOD}  storage: [slow]\nstorage_profiles:\n  slow: {{stream_mb_s: 2}}\n");
    let w = spec(&yaml, "w.yaml").unwrap();
    let json = serde_json::to_string(&w).unwrap();
    let back: WorkloadSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, w);
    assert_eq!(back.storage_profile("slow").unwrap().name, "slow");
    // A name written in the file is the key's, whatever it says.
    let renamed = format!("{GOOD}storage_profiles:\n  slow: {{name: fast, stream_mb_s: 2}}\n");
    let w = spec(&renamed, "w.yaml").unwrap();
    assert_eq!(w.storage_profile("slow").unwrap().name, "slow");
}

fn err(yaml: &str) -> (Option<usize>, String) {
    match spec(yaml, "w.yaml").unwrap_err() {
        WorkloadError::Invalid {
            file,
            line,
            message,
        } => {
            assert_eq!(file, "w.yaml");
            (line, message)
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn strategies_stop_before_the_first_random_step() {
    let w = spec(GOOD, "w.yaml").unwrap();
    let names: Vec<String> = w.strategies().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["unprocessed", "concatenated", "decoded", "resized"]);
    assert_eq!(w.strategy("decoded").unwrap().split, 2);
    assert_eq!(w.sweep.codecs, vec![Codec::None, Codec::Zstd { level: 5 }]);
    assert!(w.steps[3].random);
    let e = w.strategy("cropped").unwrap_err();
    assert!(
        e.contains("random step `cropped`") && e.contains("allowed strategies: unprocessed"),
        "{e}"
    );
    assert!(w
        .strategy("nope")
        .unwrap_err()
        .contains("has no strategy `nope`"));
}

#[test]
fn unknown_top_level_key_names_key_and_line() {
    let (line, msg) = err(&GOOD.replace("sweep:", "sweeep:"));
    assert_eq!(line, Some(16));
    assert!(
        msg.contains("unknown field `sweeep`") && msg.contains("expected one of"),
        "{msg}"
    );
}

#[test]
fn unknown_param_names_param_line_and_allowed_values() {
    let (line, msg) = err(&GOOD.replace("{size: 32}", "{sise: 32}"));
    assert_eq!(line, Some(12), "the line of the parameter, not of its step");
    assert!(msg.contains("sise") && msg.contains("size"), "{msg}");
}

#[test]
fn unknown_op_lists_known_ops() {
    let (line, msg) = err(&GOOD.replace("op: decode_jpeg", "op: decode_jpg"));
    assert_eq!(line, Some(8), "the line of the step");
    assert!(
        msg.contains("unknown op `decode_jpg`") && msg.contains("decode_jpeg"),
        "{msg}"
    );
}

#[test]
fn bad_param_type_and_missing_param_are_errors() {
    let (line, msg) = err(&GOOD.replace("{size: 32}", "{size: big}"));
    assert_eq!(line, Some(12));
    assert!(msg.contains("invalid type"), "{msg}");
    let (_, msg) = err(&GOOD.replace("    params: {size: 32}\n", ""));
    assert!(
        msg.contains("missing field `size`") && msg.contains("step `resized`"),
        "{msg}"
    );
}

#[test]
fn split_after_a_random_step_is_refused_with_its_line() {
    let (line, msg) =
        err(&GOOD.replace("  codecs:", "  strategies: [decoded, cropped]\n  codecs:"));
    assert_eq!(line, Some(18));
    assert!(msg.contains("random step `cropped`"), "{msg}");
}

#[test]
fn duplicate_names_bad_codecs_and_random_false_are_errors() {
    let (_, msg) = err(&GOOD.replace("name: resized", "name: decoded"));
    assert!(msg.contains("used twice"), "{msg}");
    let (line, msg) = err(&GOOD.replace("zstd:5", "brotli"));
    assert_eq!(line, Some(18));
    assert!(msg.contains("unknown codec"), "{msg}");
    let (_, msg) = err(&GOOD.replace("op: random_crop", "op: random_crop\n    random: false"));
    assert!(msg.contains("always runs online"), "{msg}");
    let (_, msg) = err(&GOOD.replace("threads: [1, 2]", "threads: [0]"));
    assert!(msg.contains("sweep.threads"), "{msg}");
}

#[test]
fn field_names_are_checked_when_loading() {
    let long = "x".repeat(256);
    let (_, msg) = err(&GOOD.replace("{size: 32}", &format!("{{size: 32, field: {long}}}")));
    assert!(msg.contains("1 to 255 bytes"), "{msg}");
    let (_, msg) = err(&GOOD.replace("{size: 32}", "{size: 32, field: ''}"));
    assert!(msg.contains("1 to 255 bytes"), "{msg}");
}

#[test]
fn params_before_op_still_validate() {
    let yaml = GOOD.replace(
        "    op: resize_shorter\n    params: {size: 32}",
        "    params: {size: 32}\n    op: resize_shorter",
    );
    spec(&yaml, "w.yaml").unwrap();
    let (_, msg) = err(&yaml.replace("{size: 32}", "{size: 32, x: 1}"));
    assert!(
        msg.contains("unknown field `x`") && msg.contains("step `resized`"),
        "{msg}"
    );
}

#[test]
fn errors_inside_parameters_point_at_the_key_and_say_it_once() {
    let yaml = "name: w\ndataset: {kind: imagenet}\nsteps:\n  - name: concatenated\n    \
                op: read_file\n  - name: decoded\n    op: decode_jpeg\n    params:\n      \
                max_pixels: 10\n      max_pixel: 5\n";
    let e = spec(yaml, "w.yaml").unwrap_err().to_string();
    assert!(e.starts_with("w.yaml:10: "), "{e}");
    assert_eq!(e.matches("steps[1].params").count(), 1, "{e}");
    assert!(!e.contains(" at line "), "{e}");
    // A wrong type inside parameters: the location once, at the key.
    let typed = yaml
        .replace("max_pixel: 5\n", "")
        .replace("max_pixels: 10", "max_pixels: many");
    let e = spec(&typed, "w.yaml").unwrap_err().to_string();
    assert_eq!(e.matches("steps[1]").count(), 1, "{e}");
    assert!(
        e.contains("steps[1].params.max_pixels: invalid type"),
        "{e}"
    );
    let two = yaml.replace(
        "    op: decode_jpeg\n",
        "    op: decode_jpeg\n    op: decode_png\n",
    );
    let e = spec(&two, "w.yaml").unwrap_err().to_string();
    assert!(e.contains("`op` is given twice"), "{e}");
}

/// A spec is plain data: it goes to JSON and back unchanged, and its identity comes from its
/// canonical form (parameters typed, defaults filled in), not from how the file is written.
#[test]
fn specs_round_trip_and_their_identity_is_their_canonical_form() {
    let a = spec(GOOD, "w.yaml").unwrap();
    let json = serde_json::to_string(&a).unwrap();
    let back: WorkloadSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
    assert_eq!(back.identity(), a.identity());
    // Defaults filled in: `size: 32` reads as every parameter of resize_shorter.
    let resized = &a.steps[2].params;
    assert_eq!(resized["size"], 32);
    assert_eq!(resized["antialias"], serde_json::Value::Bool(true));
    // Comments, key order, flow style, an explicit default and another file name: same identity.
    let rewritten = GOOD
        .replace("{size: 32}", "\n      antialias: true\n      size: 32 # px")
        .replace("name: tiny\n", "# my workload\nname: tiny\n");
    let b = spec(&rewritten, "elsewhere/w.yaml").unwrap();
    assert_eq!(b.identity(), a.identity());
    // What changes a run changes it.
    let c = spec(&GOOD.replace("size: 32", "size: 33"), "w.yaml").unwrap();
    assert_ne!(c.identity(), a.identity());
    let d = a.clone().with_dataset("/photos".into());
    assert_ne!(d.identity(), a.identity());
    let variant = crate::Variant::new([("seed".to_string(), "3".to_string())].into());
    let e = a.variant(&variant);
    assert_ne!(e.identity(), a.identity());
    assert_eq!(e.label(), "tiny@seed=3");
    assert_eq!(e.dataset.options["seed"], "3");
}
