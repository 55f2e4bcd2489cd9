//! `resize_shorter` with `antialias: false` against TensorFlow's `tf.image.resize` followed by
//! `tf.cast(uint8)`, the paper's resize (fixtures written by
//! `scripts/make_tf_resize_fixtures.py`): every pixel within 1 level. The antialiased default
//! (Pillow's) is not: the fixtures tell the two apart.

mod common;

use std::path::PathBuf;

use workloads::{Sample, StepContext, TensorData, Workload};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tf_resize")
        .join(name)
}

/// The image resized by a one-step workload with `params`, and TensorFlow's output.
fn resized(name: &str, params: &str) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let (shape, input) = common::npy(&fixture(&format!("{name}.input.npy")));
    let (tf_shape, reference) = common::npy(&fixture(&format!("{name}.tf.npy")));
    let yaml = format!(
        "name: resize-only\ndataset: {{kind: imagenet}}\nsteps:\n  - name: resized\n    op: resize_shorter\n    params: {params}\n"
    );
    let workload = Workload::from_yaml(&yaml, "resize-only.yaml").unwrap();
    let pixels: Vec<u8> = input.iter().map(|&v| v as u8).collect();
    let sample = Sample::new(0).with_tensor("image", shape.clone(), TensorData::U8(pixels));
    let out = workload.steps[0]
        .step
        .apply(sample, &StepContext::FIRST)
        .unwrap();
    let tensor = out.tensor("image").unwrap();
    assert_eq!(tensor.shape(), tf_shape.as_slice(), "{name}: output size");
    let TensorData::U8(ours) = tensor.data() else {
        panic!("uint8 out")
    };
    (
        tf_shape,
        ours.iter().map(|&v| v as f64).collect(),
        reference,
    )
}

fn max_difference(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

#[test]
fn plain_bilinear_matches_tensorflow_within_one_level() {
    for name in ["wide", "odd", "tall", "small"] {
        let (_, ours, tf) = resized(name, "{size: 64, antialias: false}");
        let worst = max_difference(&ours, &tf);
        let exact = ours.iter().zip(&tf).filter(|(a, b)| a == b).count();
        assert!(worst <= 1.0, "{name}: a pixel differs by {worst} levels");
        // Float rounding may move a truncation by one level, rarely.
        assert!(
            exact as f64 >= 0.99 * ours.len() as f64,
            "{name}: only {exact} of {} pixels equal",
            ours.len()
        );
    }
}

#[test]
fn the_antialiased_default_is_not_tensorflows_resize() {
    // On the 3x reduction the widened filter averages far more pixels than four.
    let (_, ours, tf) = resized("wide", "{size: 64}");
    assert!(max_difference(&ours, &tf) > 8.0);
}
