//! Fidelity against Pillow, the library users' loaders decode and resize with: golden outputs
//! written by scripts/make_pillow_fixtures.py for a few generated images.

use std::path::PathBuf;

use workloads::steps::decode_jpeg::decode_rgb8;
use workloads::steps::grayscale::{Grayscale, Params as GreyParams};
use workloads::steps::resize_shorter::{Filter, Params as ResizeParams, ResizeShorter};
use workloads::{Field, Sample, Step, StepContext, Tensor, TensorData};

const CTX: StepContext = StepContext {
    seed: 0,
    epoch: 0,
    step_index: 0,
    files: None,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pillow")
        .join(name)
}

/// A golden PNG as a tensor [h, w, c].
fn golden(name: &str) -> Tensor {
    let image = image::open(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (w, h) = (image.width() as usize, image.height() as usize);
    match image {
        image::DynamicImage::ImageLuma8(g) => {
            Tensor::new(vec![h, w, 1], TensorData::U8(g.into_raw())).unwrap()
        }
        other => Tensor::new(vec![h, w, 3], TensorData::U8(other.into_rgb8().into_raw())).unwrap(),
    }
}

fn pixels(t: &Tensor) -> &[u8] {
    match t.data() {
        TensorData::U8(v) => v,
        other => panic!("expected uint8, got {}", other.dtype()),
    }
}

fn run(step: &dyn Step, image: Tensor) -> Tensor {
    let out = step
        .apply(Sample::new(0).with("image", Field::Tensor(image)), &CTX)
        .unwrap();
    out.tensor("image").unwrap().clone()
}

const IMAGES: [usize; 3] = [0, 1, 2];

#[test]
fn jpeg_decoding_is_within_the_tolerance_of_pillow() {
    for i in IMAGES {
        let ours = decode_rgb8(
            &std::fs::read(fixture(&format!("{i}.jpg"))).unwrap(),
            u64::MAX,
            f64::MAX,
        )
        .unwrap();
        let theirs = golden(&format!("{i}.decoded.png"));
        assert_eq!(ours.shape(), theirs.shape());
        let mut diffs: Vec<u8> = pixels(&ours)
            .iter()
            .zip(pixels(&theirs))
            .map(|(a, b)| a.abs_diff(*b))
            .collect();
        let mean = diffs.iter().map(|&d| d as f64).sum::<f64>() / diffs.len() as f64;
        diffs.sort_unstable();
        let p99 = diffs[diffs.len() * 99 / 100];
        eprintln!(
            "JPEG decode vs Pillow, image {i}: mean abs diff {mean:.3}, p99 {p99}, max {}",
            diffs[diffs.len() - 1]
        );
        assert!(
            mean <= 1.0 && p99 <= 4,
            "image {i}: mean {mean:.3}, p99 {p99}"
        );
    }
}

#[test]
fn bilinear_resizing_matches_pillow_within_one_level() {
    let step = ResizeShorter::new(ResizeParams {
        field: "image".into(),
        size: 64,
        filter: Filter::Bilinear,
        antialias: true,
        boxes: None,
    })
    .unwrap();
    for i in IMAGES {
        let ours = run(&step, golden(&format!("{i}.decoded.png")));
        let theirs = golden(&format!("{i}.resized64.png"));
        assert_eq!(ours.shape(), theirs.shape(), "image {i}");
        let worst = pixels(&ours)
            .iter()
            .zip(pixels(&theirs))
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        eprintln!("bilinear resize vs Pillow, image {i}: max abs diff {worst}");
        assert!(worst <= 1, "image {i}: a pixel differs by {worst}");
    }
}

#[test]
fn greyscale_is_exactly_pillows() {
    let step = Grayscale::new(GreyParams {
        field: "image".into(),
    })
    .unwrap();
    for i in IMAGES {
        let ours = run(&step, golden(&format!("{i}.decoded.png")));
        assert_eq!(
            pixels(&ours),
            pixels(&golden(&format!("{i}.grey.png"))),
            "image {i}"
        );
    }
}
