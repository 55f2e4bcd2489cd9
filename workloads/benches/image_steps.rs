//! Per-step benchmarks of the image steps on realistic sizes (ImageNet-like 500x375, Cube++
//! 2601x1733, COCO-like 640x480), and the online chain of the `decoded` strategy (resize ->
//! pixel-center -> crop) to compare with the sum of its steps. Inputs are cloned outside the
//! timed region. Run: `cargo bench -p workloads -- --quick`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder};
use workloads::rng::SeededRng;
use workloads::{Field, Sample, Step, StepContext, Tensor, TensorData, Workload};

const CTX: StepContext = StepContext {
    seed: 1,
    epoch: 0,
    step_index: 0,
    files: None,
};

/// A photo-like RGB8 frame: smooth gradients with texture and noise.
fn pixels(w: usize, h: usize) -> Vec<u8> {
    let mut rng = SeededRng::new(7);
    let mut out = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let base = (
                (x * 255 / w) as f32,
                (y * 255 / h) as f32,
                (((x + y) * 97) % 256) as f32,
            );
            let n = (rng.unit_f64() as f32 - 0.5) * 40.0;
            out.extend(
                [base.0 + n, base.1 - n, 0.5 * base.2 + n].map(|v| v.clamp(0.0, 255.0) as u8),
            );
        }
    }
    out
}

fn jpeg(w: usize, h: usize) -> Vec<u8> {
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, 90)
        .encode(&pixels(w, h), w as u32, h as u32, ExtendedColorType::Rgb8)
        .unwrap();
    out
}

fn png16(w: usize, h: usize) -> Vec<u8> {
    let wide: Vec<u8> = pixels(w, h)
        .iter()
        .flat_map(|&v| (v as u16 * 257).to_ne_bytes())
        .collect();
    let mut out = Vec::new();
    PngEncoder::new(&mut out)
        .write_image(&wide, w as u32, h as u32, ExtendedColorType::Rgb16)
        .unwrap();
    out
}

fn image_sample(w: usize, h: usize) -> Sample {
    Sample::new(3).with(
        "image",
        Field::Tensor(Tensor::new(vec![h, w, 3], TensorData::U8(pixels(w, h))).unwrap()),
    )
}

/// The steps of a reference workload by name.
fn steps(workload: &str) -> Workload {
    workloads::load(workload).unwrap()
}

fn step<'w>(w: &'w Workload, name: &str) -> &'w dyn Step {
    w.step_named(name).unwrap()
}

/// Benchmarks `step` on clones of `input`.
fn bench(c: &mut Criterion, id: &str, step: &dyn Step, input: &Sample) {
    c.bench_function(id, |b| {
        b.iter_batched(
            || input.clone(),
            |s| step.apply(s, &CTX).unwrap(),
            BatchSize::LargeInput,
        )
    });
}

fn image_steps(c: &mut Criterion) {
    let (cv, cv2png, grey, det) = (
        steps("cv"),
        steps("cv2-png"),
        steps("cv-greyscale-before"),
        steps("detection"),
    );
    for (label, w, h) in [("imagenet", 500, 375), ("cubepp", 2601, 1733)] {
        let encoded = Sample::new(3).with("data", Field::Bytes(jpeg(w, h)));
        bench(
            c,
            &format!("decode_jpeg/{label}"),
            step(&cv, "decoded"),
            &encoded,
        );
        let decoded = image_sample(w, h);
        bench(
            c,
            &format!("resize_shorter_256/{label}"),
            step(&cv, "resized"),
            &decoded,
        );
        bench(
            c,
            &format!("grayscale/{label}"),
            step(&grey, "greyscaled"),
            &decoded,
        );
    }
    bench(
        c,
        "decode_png16/cubepp",
        step(&cv2png, "decoded"),
        &Sample::new(3).with("data", Field::Bytes(png16(2601, 1733))),
    );
    let resized = step(&cv, "resized")
        .apply(image_sample(500, 375), &CTX)
        .unwrap();
    bench(
        c,
        "pixel_center/imagenet",
        step(&cv, "pixel-centered"),
        &resized,
    );
    let centred = step(&cv, "pixel-centered")
        .apply(resized.clone(), &CTX)
        .unwrap();
    bench(
        c,
        "random_crop_224/imagenet",
        step(&cv, "cropped"),
        &centred,
    );
    let coco = image_sample(640, 480).with(
        "boxes",
        Field::Tensor(Tensor::new(vec![7, 4], TensorData::F32(vec![10.0; 28])).unwrap()),
    );
    bench(
        c,
        "resize_longer_pad_640/coco",
        step(&det, "letterboxed"),
        &coco,
    );
    let letterboxed = step(&det, "letterboxed").apply(coco, &CTX).unwrap();
    bench(
        c,
        "normalize/coco",
        step(&det, "pixel-centered"),
        &letterboxed,
    );

    // The `decoded` strategy's online chain, to compare with the sum of its three steps above.
    let decoded = image_sample(500, 375);
    let chain: Vec<&dyn Step> = ["resized", "pixel-centered", "cropped"]
        .iter()
        .map(|n| step(&cv, n))
        .collect();
    c.bench_function("chain_decoded_online/imagenet", |b| {
        b.iter_batched(
            || decoded.clone(),
            |s| chain.iter().fold(s, |s, st| st.apply(s, &CTX).unwrap()),
            BatchSize::LargeInput,
        )
    });
}

/// JPEG decoding of real photographs (`PREPBENCH_PHOTOS`, a folder of .jpg files, such as the
/// one `python3 scripts/fetch_photos.py` prints), baseline and progressive apart: the direct
/// zune-jpeg decode against the same decoder through `image`. Skipped without the variable.
fn photos(c: &mut Criterion) {
    use workloads::steps::decode_jpeg::{decode_rgb8, decode_rgb8_via_image};
    let Ok(dir) = std::env::var("PREPBENCH_PHOTOS") else {
        eprintln!("decode_jpeg/photos: skipped (set PREPBENCH_PHOTOS to a folder of .jpg files)");
        return;
    };
    let mut files: Vec<(bool, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("PREPBENCH_PHOTOS is a folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("jpg")))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            // SOF2 (0xFFC2): progressive.
            (bytes.windows(2).any(|w| w == [0xFF, 0xC2]), bytes)
        })
        .collect();
    files.sort_by_key(|f| f.1.len());
    for progressive in [false, true] {
        let set: Vec<&Vec<u8>> = files
            .iter()
            .filter(|f| f.0 == progressive)
            .map(|f| &f.1)
            .collect();
        if set.is_empty() {
            continue;
        }
        let kind = if progressive {
            "progressive"
        } else {
            "baseline"
        };
        let mut group = c.benchmark_group(format!("decode_jpeg/photos-{kind}-{}", set.len()));
        group.sample_size(10);
        group.bench_function("direct", |b| {
            b.iter(|| {
                for f in &set {
                    decode_rgb8(f, u64::MAX, 1e9).unwrap();
                }
            })
        });
        group.bench_function("via-image", |b| {
            b.iter(|| {
                for f in &set {
                    decode_rgb8_via_image(f, u64::MAX, 1e9).unwrap();
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, image_steps, photos);
criterion_main!(benches);
