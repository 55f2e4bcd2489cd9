//! `decode_audio`: decodes an MP3, FLAC, WAV or Ogg Vorbis file (symphonia, pure Rust) to PCM
//! [samples] (mono) or [samples, channels], int16 or float32, optionally mixed down to mono and
//! resampled; writes the rate to an int32 `sample_rate` field.
//!
//! int16 is x · 32768 rounded and clipped, so 16-bit FLAC and WAV come back bit-exact; the
//! paper's MP3 path scaled by 2^31 before the int16 cast, which is not reproduced. A stream that
//! ends before the length its header declares is an error (a truncated file), as is a file
//! longer than `max_seconds`.

use std::io::Cursor;

use serde::{Deserialize, Serialize};
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::errors::Error as AudioError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;

use super::pcm::f32_to_i16;
use super::resample::Resampler;
use crate::error::StepError;
use crate::op::{ParamDocs, StepFacts};
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PcmType {
    Int16,
    Float32,
}

impl crate::op::ParamKind for PcmType {
    const KIND: &'static str = "int16 | float32";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    Auto,
    Mp3,
    Flac,
    Wav,
    Ogg,
}

impl crate::op::ParamKind for Container {
    const KIND: &'static str = "auto | mp3 | flac | wav | ogg";
}

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the file
    #[serde(default = "super::default_data_field")]
    #[param(reads)]
    pub from: FieldName,
    /// PCM tensor to write: [samples] mono, else [samples, channels]
    #[serde(default = "super::default_audio_field")]
    #[param(writes)]
    pub to: FieldName,
    /// int16 is x * 32768 rounded and clipped
    #[serde(default = "default_dtype")]
    #[param(default = "int16")]
    pub dtype: PcmType,
    /// Mix all channels down to one (their mean).
    #[serde(default = "default_true")]
    #[param(default = "true")]
    pub mono: bool,
    /// Resample to this rate (band-limited); `None` keeps the file's rate.
    #[serde(default)]
    #[param(default = "the file's")]
    pub sample_rate: Option<u32>,
    /// Container hint; `auto` probes the bytes.
    #[serde(default = "default_container")]
    #[param(default = "auto")]
    pub format: Container,
    /// Refuse longer audio (decoding stops there).
    #[serde(default = "default_max_seconds")]
    #[param(default = "10800")]
    pub max_seconds: f64,
    /// Refuse audio that would decode to more float32 bytes than this many per input byte
    /// (beyond 16 MiB); decoding stops there.
    #[serde(default = "super::default_max_expansion")]
    #[param(default = "1024")]
    pub max_expansion: f64,
}

fn default_dtype() -> PcmType {
    PcmType::Int16
}
fn default_true() -> bool {
    true
}
fn default_container() -> Container {
    Container::Auto
}
fn default_max_seconds() -> f64 {
    3.0 * 3600.0
}

step_spec! { DecodeAudio, "decode_audio", "decode MP3 / FLAC / WAV / Ogg Vorbis bytes to PCM, int16 or float32, optionally mono and resampled", StepFacts { audio: true, also_writes: &[super::SAMPLE_RATE_FIELD], ..StepFacts::PURE } }

#[derive(Debug)]
pub struct DecodeAudio {
    params: Params,
    resamplers: super::Memo<(u32, u32), Resampler>,
}

/// Decoded interleaved float32 audio.
pub struct Decoded {
    pub rate: u32,
    pub channels: usize,
    pub samples: Vec<f32>,
}

fn describe(e: AudioError) -> String {
    match e {
        AudioError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "truncated audio: the stream ends inside a packet".to_string()
        }
        AudioError::Unsupported(what) => format!("unsupported or unrecognised audio: {what}"),
        other => format!("invalid audio: {other}"),
    }
}

/// Decodes a whole file to interleaved float32, at most `max_seconds` long and at most
/// `max_expansion` times its size in bytes (see [`super::check_expansion`]).
pub fn decode(
    bytes: Vec<u8>,
    container: Container,
    max_seconds: f64,
    max_expansion: f64,
) -> Result<Decoded, String> {
    let input = bytes.len();
    let expansion = |frames: u64, channels: usize, what: &str| {
        let output = frames
            .saturating_mul(channels.max(1) as u64)
            .saturating_mul(4);
        super::check_expansion(what, input, output, max_expansion).map_err(|e| e.message)
    };
    let mss = MediaSourceStream::new(Box::new(Cursor::new(bytes)), Default::default());
    let mut hint = Hint::new();
    match container {
        Container::Auto => {}
        Container::Mp3 => {
            hint.with_extension("mp3");
        }
        Container::Flac => {
            hint.with_extension("flac");
        }
        Container::Wav => {
            hint.with_extension("wav");
        }
        Container::Ogg => {
            hint.with_extension("ogg");
        }
    }
    let mut format = symphonia::default::get_probe()
        .probe(
            &hint,
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(describe)?;
    let track = format
        .default_track(TrackType::Audio)
        .ok_or("no audio track")?
        .clone();
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or("the audio track has no codec parameters")?
        .clone();
    let declared = track.num_frames;
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(describe)?;
    let mut rate = params.sample_rate.unwrap_or(0);
    let mut channels = params.channels.as_ref().map(|c| c.count()).unwrap_or(0);
    let limit = |rate: u32| (max_seconds * rate as f64) as u64;
    if let (Some(n), true) = (declared, rate > 0) {
        if n > limit(rate) {
            return Err(format!(
                "audio of {:.1} s exceeds max_seconds {max_seconds}",
                n as f64 / rate as f64
            ));
        }
    }
    if let Some(n) = declared {
        expansion(
            n,
            channels,
            &format!("audio whose header declares {n} samples of {channels} channels"),
        )?;
    }
    let mut samples: Vec<f32> = Vec::new();
    let mut chunk: Vec<f32> = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(describe(e)),
        };
        if packet.track_id != track.id {
            continue;
        }
        let buffer = decoder.decode(&packet).map_err(describe)?;
        rate = buffer.spec().rate();
        channels = buffer.spec().channels().count();
        buffer.copy_to_vec_interleaved(&mut chunk);
        samples.extend_from_slice(&chunk);
        if channels > 0 && (samples.len() / channels) as u64 > limit(rate) {
            return Err(format!(
                "audio exceeds max_seconds {max_seconds} (decoding stopped)"
            ));
        }
        expansion(samples.len() as u64, 1, "audio (decoding stopped)")?;
    }
    if rate == 0 || channels == 0 {
        return Err("the stream has no sample rate or channel layout".to_string());
    }
    let frames = (samples.len() / channels) as u64;
    if let Some(n) = declared {
        if frames < n {
            return Err(format!(
                "truncated audio: decoded {frames} of the {n} samples the header declares"
            ));
        }
    }
    if frames == 0 {
        return Err("the stream holds no audio".to_string());
    }
    Ok(Decoded {
        rate,
        channels,
        samples,
    })
}

impl DecodeAudio {
    pub fn new(params: Params) -> Result<DecodeAudio, String> {
        if params.max_seconds.is_nan() || params.max_seconds <= 0.0 {
            return Err(format!(
                "max_seconds must be positive, got {}",
                crate::number::Num(params.max_seconds)
            ));
        }
        super::check_max_expansion(params.max_expansion)?;
        if params.sample_rate == Some(0) {
            return Err("sample_rate must be positive".to_string());
        }
        Ok(DecodeAudio {
            params,
            resamplers: Default::default(),
        })
    }

    fn resampler(&self, from: u32, to: u32) -> Result<std::sync::Arc<Resampler>, StepError> {
        self.resamplers.get_or_build((from, to), || {
            Resampler::new(from, to).map_err(StepError::new)
        })
    }
}

impl Step for DecodeAudio {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let bytes = sample.take_bytes(&self.params.from)?;
        let decoded = decode(
            bytes,
            self.params.format,
            self.params.max_seconds,
            self.params.max_expansion,
        )
        .map_err(StepError::new)?;
        let Decoded {
            mut rate,
            mut channels,
            mut samples,
        } = decoded;
        if self.params.mono && channels > 1 {
            let scale = 1.0 / channels as f32;
            samples = samples
                .chunks_exact(channels)
                .map(|frame| frame.iter().sum::<f32>() * scale)
                .collect();
            channels = 1;
        }
        if let Some(to) = self.params.sample_rate.filter(|&to| to != rate) {
            let resampler = self.resampler(rate, to)?;
            samples = if channels == 1 {
                resampler.process(&samples)
            } else {
                let planes: Vec<Vec<f32>> = (0..channels)
                    .map(|c| {
                        let plane: Vec<f32> =
                            samples.iter().skip(c).step_by(channels).copied().collect();
                        resampler.process(&plane)
                    })
                    .collect();
                let frames = planes[0].len();
                (0..frames * channels)
                    .map(|i| planes[i % channels][i / channels])
                    .collect()
            };
            rate = to;
        }
        let frames = samples.len() / channels;
        let shape = if channels == 1 {
            vec![frames]
        } else {
            vec![frames, channels]
        };
        let data = match self.params.dtype {
            PcmType::Int16 => TensorData::I16(f32_to_i16(&samples)),
            PcmType::Float32 => TensorData::F32(samples),
        };
        sample.set_tensor(&self.params.to, shape, data)?;
        sample.set(
            super::SAMPLE_RATE_FIELD,
            Field::Tensor(Tensor::scalar_i32(rate as i32)),
        );
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16-bit PCM WAV file of `channels` interleaved channels.
    fn wav(samples: &[i16], rate: u32, channels: u16) -> Vec<u8> {
        let data_len = (samples.len() * 2) as u32;
        let mut out = Vec::new();
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36 + data_len).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&channels.to_le_bytes());
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * channels as u32 * 2).to_le_bytes());
        out.extend_from_slice(&(channels * 2).to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data_len.to_le_bytes());
        for s in samples {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out
    }

    const CTX: StepContext = StepContext::FIRST;

    fn step(yaml: &str) -> Box<dyn Step> {
        let params: Params = serde_yaml_ng::from_str(yaml).unwrap();
        Box::new(DecodeAudio::new(params).unwrap())
    }

    fn run(step: &dyn Step, bytes: Vec<u8>) -> Result<Sample, StepError> {
        step.apply(Sample::new(0).with("data", Field::Bytes(bytes)), &CTX)
    }

    #[test]
    fn wav_round_trips_bit_exactly_and_mixes_down() {
        let pcm: Vec<i16> = (0..4000)
            .map(|i| ((i * 37) % 65536 - 32768) as i16)
            .collect();
        let out = run(&*step("{}"), wav(&pcm, 8000, 1)).unwrap();
        assert_eq!(out.tensor("audio").unwrap().data(), &TensorData::I16(pcm));
        assert_eq!(
            out.tensor("sample_rate").unwrap().data(),
            &TensorData::I32(vec![8000])
        );

        let stereo: Vec<i16> = (0..2000)
            .flat_map(|i| [i as i16, -(i as i16) + 100])
            .collect();
        let mono = run(&*step("{}"), wav(&stereo, 8000, 2)).unwrap();
        let TensorData::I16(m) = mono.tensor("audio").unwrap().data() else {
            panic!()
        };
        assert!(m.iter().all(|&v| v == 50));
        let kept = run(
            &*step("{mono: false, dtype: float32}"),
            wav(&stereo, 8000, 2),
        )
        .unwrap();
        assert_eq!(kept.tensor("audio").unwrap().shape(), &[2000, 2]);
    }

    #[test]
    fn resamples_when_asked() {
        let pcm: Vec<i16> = (0..16000)
            .map(|i| (8000.0 * (i as f64 * 0.05).sin()) as i16)
            .collect();
        let out = run(&*step("{sample_rate: 8000}"), wav(&pcm, 16000, 1)).unwrap();
        assert_eq!(out.tensor("audio").unwrap().shape(), &[8000]);
        assert_eq!(
            out.tensor("sample_rate").unwrap().data(),
            &TensorData::I32(vec![8000])
        );
    }

    #[test]
    fn garbage_truncated_and_overlong_input_are_errors() {
        let s = step("{}");
        assert!(run(&*s, b"not audio at all, just text".repeat(20))
            .unwrap_err()
            .message
            .contains("audio"));
        assert!(run(&*s, Vec::new()).is_err());
        let pcm = vec![1000i16; 8000];
        let whole = wav(&pcm, 8000, 1);
        assert!(run(&*s, whole[..whole.len() / 2].to_vec()).is_err());
        let short = step("{max_seconds: 0.5}");
        assert!(run(&*short, whole)
            .unwrap_err()
            .message
            .contains("max_seconds"));
    }
}
