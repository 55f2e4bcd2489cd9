//! The audio steps against independent references (fixtures written by
//! `scripts/make_audio_fixtures.py`): libsndfile's decoders (libFLAC, mpg123, libvorbis) for
//! `decode_audio`, tf.signal for `stft`, `magnitude`, `mel` and `log` as the paper's pipelines
//! ran them, and librosa for the Slaney filterbank and centred framing.

mod common;

use std::path::PathBuf;

use workloads::steps::decode_audio::{self, Container};
use workloads::steps::mel::{weight_matrix, Filterbank};
use workloads::{Field, Sample, StepContext, Tensor, TensorData};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/audio")
        .join(name)
}

fn npy(name: &str) -> (Vec<usize>, Vec<f64>) {
    common::npy(&fixture(name))
}

fn decode(name: &str) -> decode_audio::Decoded {
    let bytes = std::fs::read(fixture(name)).unwrap();
    decode_audio::decode(bytes, Container::Auto, 60.0, 1024.0).unwrap()
}

/// Builds a workload's steps from YAML and runs them in order.
fn chain(steps_yaml: &str, sample: Sample) -> Sample {
    let yaml = format!(
        "name: t\ndataset: {{kind: synthetic}}\nsteps:\n{steps_yaml}\nsweep: {{strategies: [unprocessed]}}\n"
    );
    let workload = workloads::Workload::from_yaml(&yaml, "test.yaml").unwrap();
    workload
        .steps
        .iter()
        .enumerate()
        .fold(sample, |s, (i, step)| {
            let ctx = StepContext {
                seed: 0,
                epoch: 0,
                step_index: i,
                files: None,
            };
            step.step.apply(s, &ctx).unwrap()
        })
}

fn f32s(sample: &Sample, field: &str) -> (Vec<usize>, Vec<f32>) {
    let t = sample.tensor(field).unwrap();
    let TensorData::F32(v) = t.data() else {
        panic!("{field} is {}", t.dtype())
    };
    (t.shape().to_vec(), v.clone())
}

fn pcm_sample(name: &str, rate: i32) -> Sample {
    let (shape, values) = npy(name);
    let pcm: Vec<i16> = values.iter().map(|v| *v as i16).collect();
    Sample::new(0)
        .with(
            "audio",
            Field::Tensor(Tensor::new(shape, TensorData::I16(pcm)).unwrap()),
        )
        .with("sample_rate", Field::Tensor(Tensor::scalar_i32(rate)))
}

fn max_abs_diff(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - y).abs())
        .fold(0.0, f64::max)
}

/// ||a - b|| / ||b||.
fn relative_rms(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let err: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - y).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| y * y).sum();
    (err / norm).sqrt()
}

#[test]
fn flac_decodes_like_libflac_to_the_bit() {
    let decoded = decode("clip16k.flac");
    assert_eq!((decoded.rate, decoded.channels), (16_000, 1));
    let (_, reference) = npy("clip16k.flac.i16.npy");
    assert_eq!(decoded.samples.len(), reference.len());
    for (i, (ours, theirs)) in decoded.samples.iter().zip(&reference).enumerate() {
        let ours = (*ours as f64 * 32768.0).round();
        assert!(
            (ours - theirs).abs() <= 1.0,
            "sample {i}: {ours} vs {theirs}"
        );
    }
}

#[test]
fn mp3_decodes_like_mpg123() {
    let decoded = decode("clip48k.mp3");
    assert_eq!((decoded.rate, decoded.channels), (48_000, 1));
    let (_, reference) = npy("clip48k.mp3.f32.npy");
    assert_eq!(decoded.samples.len(), reference.len(), "gapless length");
    let err = relative_rms(&decoded.samples, &reference);
    eprintln!("mp3: relative RMS difference to mpg123 {err:e}");
    assert!(err < 1e-4, "relative RMS error {err:e}");
}

#[test]
fn vorbis_decodes_like_libvorbis() {
    let decoded = decode("clip44k-stereo.ogg");
    assert_eq!((decoded.rate, decoded.channels), (44_100, 2));
    let (shape, reference) = npy("clip44k-stereo.ogg.f32.npy");
    assert_eq!(shape[1], 2);
    assert_eq!(decoded.samples.len(), reference.len());
    let err = relative_rms(&decoded.samples, &reference);
    eprintln!("vorbis: relative RMS difference to libvorbis {err:e}");
    assert!(err < 1e-4, "relative RMS error {err:e}");
}

#[test]
fn tf_mel_matrices_match() {
    for (rate, name) in [
        (48_000, "mel.tf.48000.f64.npy"),
        (16_000, "mel.tf.16000.f64.npy"),
    ] {
        let (shape, reference) = npy(name);
        let ours = weight_matrix(Filterbank::Tf, 80, 513, rate, 125.0, 3800.0).unwrap();
        let rows = shape[0];
        let err = ours[..rows * 80]
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!("{name}: max difference {err:e}");
        assert!(err < 1e-6, "{name}: max difference {err:e}");
        // The rows the fixture leaves out are zero in tf's matrix; they must be here too.
        assert!(ours[rows * 80..].iter().all(|w| *w == 0.0), "{name}");
    }
}

#[test]
fn slaney_mel_matrix_matches_librosa() {
    let (shape, reference) = npy("mel.slaney.16000.npy");
    assert_eq!(shape, vec![80, 513]);
    let ours = weight_matrix(Filterbank::Slaney, 80, 513, 16_000, 0.0, 8000.0).unwrap();
    let err = (0..80)
        .flat_map(|m| (0..513).map(move |k| (m, k)))
        .map(|(m, k)| (ours[k * 80 + m] as f32 as f64 - reference[m * 513 + k]).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-6, "max difference {err:e}");
}

const MP3_CHAIN: &str = "
  - {name: s, op: stft, params: {frame_length: 960, hop: 480, fft_size: 1024}}
  - {name: m, op: magnitude}
  - {name: mel, op: mel, params: {bins: 80, sample_rate: 48000}}
  - {name: l, op: log, params: {offset: 1.0e-8}}";

const FLAC_CHAIN: &str = "
  - {name: s, op: stft, params: {frame_length: 320, hop: 160, fft_size: 1024}}
  - {name: m, op: magnitude}
  - {name: mel, op: mel, params: {bins: 80, sample_rate: 16000}}
  - {name: l, op: log, params: {offset: 1.0e-8}}";

#[test]
fn spectrogram_chain_matches_tf_signal() {
    for (clip, pcm, rate, steps) in [
        ("clip48k", "clip48k.pcm.i16.npy", 48_000, MP3_CHAIN),
        ("clip16k", "clip16k.flac.i16.npy", 16_000, FLAC_CHAIN),
    ] {
        // Magnitude after the first two steps.
        let two: String = steps.lines().take(3).collect::<Vec<_>>().join("\n");
        let magnitude = chain(&two, pcm_sample(pcm, rate));
        let (shape, ours) = f32s(&magnitude, "spectrogram");
        let (tf_shape, reference) = npy(&format!("{clip}.tf.magnitude.npy"));
        assert_eq!(shape, tf_shape, "{clip}");
        let peak = reference.iter().cloned().fold(0.0, f64::max);
        let err = max_abs_diff(&ours, &reference);
        assert!(
            err < 1e-5 * peak,
            "{clip} magnitude: max difference {err:e} (peak {peak})"
        );

        let logmel = chain(steps, pcm_sample(pcm, rate));
        let (shape, ours) = f32s(&logmel, "spectrogram");
        let (tf_shape, reference) = npy(&format!("{clip}.tf.logmel.npy"));
        assert_eq!(shape, tf_shape, "{clip}");
        assert_eq!(shape[1], 80);
        let err = max_abs_diff(&ours, &reference);
        eprintln!("{clip}: log-mel max difference to tf.signal {err:e}");
        assert!(err < 1e-3, "{clip} log-mel: max difference {err:e}");
    }
}

#[test]
fn centred_stft_matches_librosa() {
    let (_, pcm) = npy("clip16k.flac.i16.npy");
    let head: Vec<i16> = pcm[..8000].iter().map(|v| *v as i16).collect();
    let sample = Sample::new(0).with(
        "audio",
        Field::Tensor(Tensor::new(vec![8000], TensorData::I16(head)).unwrap()),
    );
    let out = chain(
        "
  - {name: s, op: stft, params: {frame_length: 320, hop: 160, fft_size: 1024, center: reflect}}
  - {name: m, op: magnitude}",
        sample,
    );
    let (shape, ours) = f32s(&out, "spectrogram");
    // librosa's layout is [bins, frames].
    let (lib_shape, reference) = npy("clip16k.librosa.reflect.magnitude.npy");
    assert_eq!(shape, vec![lib_shape[1], lib_shape[0]]);
    let (frames, bins) = (shape[0], shape[1]);
    let peak = reference.iter().cloned().fold(0.0, f64::max);
    let mut err: f64 = 0.0;
    for f in 0..frames {
        for k in 0..bins {
            err = err.max((ours[f * bins + k] as f64 - reference[k * frames + f]).abs());
        }
    }
    assert!(err < 1e-5 * peak, "max difference {err:e} (peak {peak})");
}
