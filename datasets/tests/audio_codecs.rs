//! The generated audio decodes with an independent decoder (symphonia) to exactly what was
//! encoded: FLAC bit for bit, MP3 with the right length and rate thanks to the LAME tag.

use std::io::Cursor;

use datasets::audio::{encode_flac, encode_mp3};
use datasets::speech::{to_i16, utterance, Voice};
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use workloads::rng::SeededRng;

/// Decodes a whole file: (sample rate, mono samples as f32).
fn decode(bytes: Vec<u8>, extension: &str) -> (u32, Vec<f32>) {
    let mss = MediaSourceStream::new(Box::new(Cursor::new(bytes)), Default::default());
    let mut hint = Hint::new();
    hint.with_extension(extension);
    let mut format = symphonia::default::get_probe()
        .probe(
            &hint,
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .expect("probe");
    let track = format
        .default_track(TrackType::Audio)
        .expect("audio track")
        .clone();
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .expect("audio parameters")
        .clone();
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .expect("decoder");
    let (mut rate, mut samples) = (0, Vec::new());
    while let Some(packet) = format.next_packet().expect("packet") {
        if packet.track_id != track.id {
            continue;
        }
        let buffer = decoder.decode(&packet).expect("decode");
        rate = buffer.spec().rate();
        let mut chunk: Vec<f32> = Vec::new();
        buffer.copy_to_vec_interleaved(&mut chunk);
        samples.extend(chunk);
    }
    (rate, samples)
}

fn speech(rate: u32) -> Vec<i16> {
    to_i16(&utterance(
        &mut SeededRng::new(9),
        rate,
        Voice {
            f0_hz: 120.0,
            formant_scale: 1.0,
        },
        3,
        0.4,
        0.4,
    ))
}

#[test]
fn flac_decodes_bit_exactly() {
    let pcm = speech(16_000);
    let (rate, decoded) = decode(encode_flac(&pcm, 16_000).unwrap(), "flac");
    assert_eq!(rate, 16_000);
    assert_eq!(decoded.len(), pcm.len());
    for (a, b) in pcm.iter().zip(&decoded) {
        assert_eq!(*a, (b * 32768.0).round() as i16);
    }
}

#[test]
fn mp3_decodes_to_the_same_length_and_close_content() {
    let pcm = speech(48_000);
    let (rate, decoded) = decode(
        encode_mp3(&pcm, 48_000, mp3lame_encoder::Bitrate::Kbps64).unwrap(),
        "mp3",
    );
    assert_eq!(rate, 48_000);
    assert_eq!(
        decoded.len(),
        pcm.len(),
        "the LAME tag trims delay and padding"
    );
    // Lossy, but the waveform is there: correlation with the input is high.
    let x: Vec<f32> = pcm.iter().map(|&v| v as f32 / 32768.0).collect();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f32>();
    let r = dot(&x, &decoded) / (dot(&x, &x).sqrt() * dot(&decoded, &decoded).sqrt());
    assert!(r > 0.9, "correlation {r}");
}

#[test]
fn a_flac_of_silence_that_would_decode_a_thousandfold_is_refused() {
    use workloads::steps::decode_audio::{decode, Container};
    // Ten minutes of digital silence: constant subframes of a few bytes per 4096 samples.
    let flac = encode_flac(&vec![0i16; 48_000 * 600], 48_000).unwrap();
    let output = 48_000u64 * 600 * 4;
    assert!(output / flac.len() as u64 > 1024, "{} bytes", flac.len());
    let err = decode(flac.clone(), Container::Auto, 10_800.0, 1024.0)
        .err()
        .unwrap();
    assert!(err.contains("header declares 28800000 samples"), "{err}");
    assert!(err.contains("max_expansion 1024"), "{err}");
    // Without the declared length, decoding stops once it passes the budget.
    let mut unknown = flac.clone();
    unknown[21] &= 0xf0;
    unknown[22..26].fill(0);
    let err = decode(unknown, Container::Auto, 10_800.0, 1024.0)
        .err()
        .unwrap();
    assert!(
        err.contains("decoding stopped") && err.contains("max_expansion"),
        "{err}"
    );
    // Raised, the budget lets the same file through.
    let ok = decode(flac, Container::Auto, 10_800.0, 1e6).unwrap();
    assert_eq!(ok.samples.len(), 48_000 * 600);
}
