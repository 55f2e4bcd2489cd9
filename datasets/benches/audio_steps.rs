//! Benchmarks of the audio steps on clips of the datasets' typical lengths: a 2.3 s Common
//! Voice-style MP3 at 48 kHz and a 12 s LibriSpeech-style FLAC at 16 kHz (generated with the
//! datasets' own speech synthesizer and encoders). Measured: decode_audio, each spectrogram step,
//! and the whole `decoded` -> `spectrogram-encoded` online chain. Inputs are cloned outside the
//! timed region. Run: `cargo bench -p datasets -- --quick`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use datasets::audio::{encode_flac, encode_mp3};
use datasets::speech::{to_i16, utterance, Voice};
use workloads::rng::SeededRng;
use workloads::{Field, Sample, Step, StepContext, Workload};

const CTX: StepContext = StepContext {
    seed: 1,
    epoch: 0,
    step_index: 0,
    files: None,
};

fn speech(rate: u32, words: usize, lead: f32, tail: f32) -> Vec<i16> {
    let voice = Voice {
        f0_hz: 130.0,
        formant_scale: 1.0,
    };
    to_i16(&utterance(
        &mut SeededRng::new(5),
        rate,
        voice,
        words,
        lead,
        tail,
    ))
}

fn step<'w>(w: &'w Workload, name: &str) -> &'w dyn Step {
    w.step_named(name).unwrap()
}

fn bench(c: &mut Criterion, id: &str, steps: &[&dyn Step], input: &Sample) {
    c.bench_function(id, |b| {
        b.iter_batched(
            || input.clone(),
            |s| steps.iter().fold(s, |s, st| st.apply(s, &CTX).unwrap()),
            BatchSize::LargeInput,
        )
    });
}

fn audio_steps(c: &mut Criterion) {
    let mp3 = encode_mp3(
        &speech(48_000, 1, 0.9, 0.9),
        48_000,
        mp3lame_encoder::Bitrate::Kbps64,
    )
    .unwrap();
    let flac = encode_flac(&speech(16_000, 25, 0.3, 0.3), 16_000).unwrap();
    for (workload, file) in [("mp3", mp3), ("flac", flac)] {
        let w = workloads::load(workload).unwrap();
        let encoded = Sample::new(1).with("data", Field::Bytes(file));
        bench(
            c,
            &format!("decode_audio/{workload}"),
            &[step(&w, "decoded")],
            &encoded,
        );
        let mut sample = step(&w, "decoded").apply(encoded, &CTX).unwrap();
        eprintln!(
            "{workload}: {} samples of PCM",
            sample.tensor("audio").unwrap().shape()[0]
        );
        let chain = ["stft", "magnitude", "mel", "spectrogram-encoded"];
        bench(
            c,
            &format!("chain_decoded_online/{workload}"),
            &chain.map(|n| step(&w, n)),
            &sample,
        );
        for name in chain {
            bench(c, &format!("{name}/{workload}"), &[step(&w, name)], &sample);
            sample = step(&w, name).apply(sample, &CTX).unwrap();
        }
    }
}

criterion_group!(benches, audio_steps);
criterion_main!(benches);
