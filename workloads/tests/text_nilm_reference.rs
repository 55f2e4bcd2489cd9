//! The NLP and NILM steps against independent references (fixtures written by
//! `scripts/make_text_nilm_fixtures.py`): OpenAI's tiktoken for `bpe_encode`, h5py and NumPy for
//! `read_cream_hour` -> `window` -> `nilm_features`.

mod common;

use std::path::PathBuf;

use workloads::{Field, Sample, StepContext, TensorData, Workload};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn token_ids_are_tiktokens() {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("text/tokens.json")).unwrap()).unwrap();
    let cases = json["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<i32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i32)
            .collect();
        assert_eq!(
            workloads::steps::bpe_encode::encode(text),
            expected,
            "text starting {:?}",
            text.chars().take(40).collect::<String>()
        );
    }
}

/// Runs a workload's steps from the start on `sample`, collecting every output.
fn run(workload: &Workload, sample: Sample) -> Vec<Sample> {
    let mut current = vec![sample];
    for (i, def) in workload.steps.iter().enumerate() {
        let ctx = StepContext {
            seed: 0,
            epoch: 0,
            step_index: i,
            files: None,
        };
        let mut next = Vec::new();
        for s in current {
            def.step.apply_many(s, &ctx, &mut next).unwrap();
        }
        current = next;
    }
    current
}

#[test]
fn nilm_features_match_numpy_on_an_h5py_file() {
    let workload = workloads::load("nilm").unwrap();
    // The reference workload minus its read_file step, fed the fixture's bytes.
    let mut spec = workload.spec.clone();
    spec.steps.retain(|s| s.op != "read_file");
    let without_read = Workload::build(spec).unwrap();
    assert_eq!(without_read.steps.len(), workload.steps.len() - 1);
    let bytes = std::fs::read(fixture("nilm/window.hdf5")).unwrap();
    let out = run(
        &without_read,
        Sample::new(0).with("data", Field::Bytes(bytes.clone())),
    );
    assert_eq!(out.len(), 1, "ten seconds make one window");
    let features = out[0].tensor("features").unwrap();
    assert_eq!(features.shape(), &[3, 500]);
    let TensorData::F64(ours) = features.data() else {
        panic!("features are float64")
    };
    let (shape, reference) = common::npy(&fixture("nilm/window.features.npy"));
    assert_eq!(shape, vec![3, 500]);
    for (row, name) in ["active power", "RMS current", "cumulative RMS deviation"]
        .iter()
        .enumerate()
    {
        let (a, b) = (
            &ours[row * 500..(row + 1) * 500],
            &reference[row * 500..(row + 1) * 500],
        );
        let scale = b.iter().fold(0f64, |m, v| m.max(v.abs()));
        let err = a.iter().zip(b).fold(0f64, |m, (x, y)| m.max((x - y).abs())) / scale;
        assert!(err < 1e-9, "{name}: relative difference {err:e}");
    }
    // The fixture's offset drifts, so removing each channel's mean instead of the paper's
    // per-period offsets gives other features: the reference tells the two apart.
    let mut by_mean = without_read.spec.clone();
    for step in by_mean
        .steps
        .iter_mut()
        .filter(|s| s.op == "read_cream_hour")
    {
        step.params["offsets"] = "mean".into();
    }
    let by_mean = Workload::build(by_mean).unwrap();
    let out = run(&by_mean, Sample::new(0).with("data", Field::Bytes(bytes)));
    let TensorData::F64(other) = out[0].tensor("features").unwrap().data() else {
        panic!("features are float64")
    };
    let power = |f: &[f64]| f[..500].iter().sum::<f64>();
    let differs = (power(other) - power(ours)).abs() / power(ours).abs();
    assert!(differs > 1e-6, "the offset methods agree to {differs:e}");
}

#[test]
fn broken_hdf5_files_are_clear_errors() {
    let bytes = std::fs::read(fixture("nilm/window.hdf5")).unwrap();
    // Garbage and truncation: errors, never panics.
    for broken in [
        bytes[..bytes.len() / 2].to_vec(),
        b"not hdf5".to_vec(),
        Vec::new(),
    ] {
        assert!(
            workloads::steps::read_cream_hour::parse_recording(broken, Default::default()).is_err()
        );
    }
    let no_current = std::fs::read(fixture("nilm/no-current.hdf5")).unwrap();
    let err = workloads::steps::read_cream_hour::parse_recording(no_current, Default::default())
        .unwrap_err();
    assert!(err.contains("dataset `current`"), "{err}");
}
