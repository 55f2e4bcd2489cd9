//! `stft`: short-time Fourier transform of mono PCM, as `tf.signal.stft` computes it: frames of
//! `frame_length` every `hop` samples, each multiplied by a periodic Hann window, zero-padded at
//! the end to `fft_size` and transformed with a real FFT (realfft; plans made once per thread).
//! Output [frames, fft_size / 2 + 1, 2] float32 (real, imaginary). int16 input is read as
//! x / 32768. With `center`, the signal is first padded by frame_length / 2 on both sides
//! (zeros or reflection), so frame t is centred on sample t · hop as in librosa; without it
//! (tf.signal), frames start at t · hop and a partial last frame is dropped.

use std::cell::RefCell;

use realfft::num_complex::Complex32;
use realfft::RealFftPlanner;
use serde::{Deserialize, Serialize};

use super::pcm::pcm_into_f32;
use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Window {
    /// tf.signal.hann_window(periodic=True), scipy's `hann` with `sym=False`, librosa's default.
    Hann,
    /// The symmetric Hann window (numpy.hanning).
    HannSymmetric,
    Rectangular,
}

impl crate::op::ParamKind for Window {
    const KIND: &'static str = "hann | hann-symmetric | rectangular";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Center {
    /// No padding (tf.signal.stft).
    None,
    /// Zero padding (librosa >= 0.10's default `pad_mode="constant"`).
    Zeros,
    /// Reflection padding without repeating the edge sample (numpy `reflect`).
    Reflect,
}

impl crate::op::ParamKind for Center {
    const KIND: &'static str = "none | zeros | reflect";
}

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// mono PCM [samples], int16 (read as x / 32768) or float32; removed
    #[serde(default = "super::default_audio_field")]
    #[param(reads)]
    pub from: FieldName,
    /// complex spectrogram to write, [frames, fft_size / 2 + 1, 2]
    #[serde(default = "super::default_spectrogram_field")]
    #[param(writes)]
    pub to: FieldName,
    /// window length in samples
    pub frame_length: usize,
    /// samples between frame starts
    pub hop: usize,
    /// Defaults to the smallest power of two >= frame_length, as in tf.signal.stft.
    #[serde(default)]
    #[param(default = "next power of two >= frame_length")]
    pub fft_size: Option<usize>,
    /// hann is periodic, as tf.signal and librosa use
    #[serde(default = "default_window")]
    #[param(default = "hann")]
    pub window: Window,
    /// pad frame_length / 2 on both sides first (librosa's centring)
    #[serde(default = "default_center")]
    #[param(default = "none")]
    pub center: Center,
}

fn default_window() -> Window {
    Window::Hann
}
fn default_center() -> Center {
    Center::None
}

step_spec! { Stft, "stft", "short-time Fourier transform of mono PCM (tf.signal.stft framing) to [frames, bins, 2] float32" }

#[derive(Debug)]
pub struct Stft {
    params: Params,
    fft_size: usize,
    window: Vec<f32>,
}

/// A worker thread's FFT planner (which caches plans per size) and buffers.
struct FftBuffers {
    planner: RealFftPlanner<f32>,
    input: Vec<f32>,
    spectrum: Vec<Complex32>,
    scratch: Vec<Complex32>,
}

thread_local! {
    /// One planner per worker thread: it caches the plan per FFT size, so a plan is made once
    /// per thread; the input, spectrum and scratch buffers are reused across samples.
    static FFT: RefCell<FftBuffers> = RefCell::new(FftBuffers {
        planner: RealFftPlanner::new(),
        input: Vec::new(),
        spectrum: Vec::new(),
        scratch: Vec::new(),
    });
}

/// The window of `length` samples.
pub fn window(kind: Window, length: usize) -> Vec<f32> {
    use std::f64::consts::PI;
    let hann = |denominator: f64| -> Vec<f32> {
        (0..length)
            .map(|n| (0.5 - 0.5 * (2.0 * PI * n as f64 / denominator).cos()) as f32)
            .collect()
    };
    match kind {
        Window::Hann => hann(length as f64),
        Window::HannSymmetric if length > 1 => hann((length - 1) as f64),
        Window::HannSymmetric | Window::Rectangular => vec![1.0; length],
    }
}

impl Stft {
    pub fn new(params: Params) -> Result<Stft, String> {
        if params.frame_length == 0 || params.hop == 0 {
            return Err("frame_length and hop must be positive".to_string());
        }
        if params.frame_length > 1 << 20 {
            return Err(format!(
                "frame_length {} is larger than 2^20",
                params.frame_length
            ));
        }
        let fft_size = params
            .fft_size
            .unwrap_or(params.frame_length.next_power_of_two());
        if fft_size < params.frame_length {
            return Err(format!(
                "fft_size {fft_size} is shorter than frame_length {}",
                params.frame_length
            ));
        }
        if fft_size > 1 << 20 {
            return Err(format!("fft_size {fft_size} is larger than 2^20"));
        }
        let window = window(params.window, params.frame_length);
        Ok(Stft {
            params,
            fft_size,
            window,
        })
    }

    pub fn bins(&self) -> usize {
        self.fft_size / 2 + 1
    }

    /// Number of frames for a signal of `len` samples (after centre padding, if any).
    pub fn frames(&self, len: usize) -> usize {
        let len = match self.params.center {
            Center::None => len,
            _ => len + 2 * (self.params.frame_length / 2),
        };
        if len < self.params.frame_length {
            0
        } else {
            1 + (len - self.params.frame_length) / self.params.hop
        }
    }

    /// The signal with centre padding applied.
    fn padded(&self, signal: Vec<f32>) -> Result<Vec<f32>, StepError> {
        let pad = self.params.frame_length / 2;
        match self.params.center {
            Center::None => Ok(signal),
            Center::Zeros => {
                let mut out = vec![0.0; signal.len() + 2 * pad];
                out[pad..pad + signal.len()].copy_from_slice(&signal);
                Ok(out)
            }
            Center::Reflect => {
                if signal.len() <= pad {
                    return Err(StepError::new(format!(
                        "reflection padding of {pad} needs more than {pad} samples, got {}",
                        signal.len()
                    )));
                }
                let n = signal.len();
                let mut out = Vec::with_capacity(n + 2 * pad);
                out.extend((1..=pad).rev().map(|i| signal[i]));
                out.extend_from_slice(&signal);
                out.extend((1..=pad).map(|i| signal[n - 1 - i]));
                Ok(out)
            }
        }
    }

    /// The complex STFT of `signal`, interleaved (re, im), frame after frame.
    /// The frame count and the spectrogram of `signal`, in a sample that holds `held` bytes
    /// besides it (the sample's budget bounds both together).
    pub fn transform(&self, signal: Vec<f32>, held: usize) -> Result<(usize, Vec<f32>), StepError> {
        let signal = self.padded(signal)?;
        let (frame_length, hop, bins) = (self.params.frame_length, self.params.hop, self.bins());
        let frames = if signal.len() < frame_length {
            0
        } else {
            1 + (signal.len() - frame_length) / hop
        };
        let n = super::budget::reserve(
            &self.params.to,
            held + signal.len() * 4,
            &[frames, bins, 2],
            4,
        )?;
        let mut out = vec![0f32; n];
        FFT.with(|cell| {
            let FftBuffers {
                planner,
                input,
                spectrum,
                scratch,
            } = &mut *cell.borrow_mut();
            let fft = planner.plan_fft_forward(self.fft_size);
            input.resize(self.fft_size, 0.0);
            spectrum.resize(bins, Complex32::default());
            scratch.resize(fft.get_scratch_len(), Complex32::default());
            for (f, dst) in out.chunks_exact_mut(bins * 2).enumerate() {
                let frame = &signal[f * hop..f * hop + frame_length];
                for ((x, s), w) in input.iter_mut().zip(frame).zip(&self.window) {
                    *x = s * w;
                }
                input[frame_length..].fill(0.0);
                fft.process_with_scratch(input, spectrum, scratch)
                    .map_err(|e| StepError::new(format!("FFT failed: {e}")))?;
                for (pair, c) in dst.chunks_exact_mut(2).zip(spectrum.iter()) {
                    pair[0] = c.re;
                    pair[1] = c.im;
                }
            }
            Ok::<(), StepError>(())
        })?;
        Ok((frames, out))
    }
}

impl Step for Stft {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let tensor = sample.take_tensor(&self.params.from)?;
        let signal = pcm_into_f32(tensor, &self.params.from)?;
        let (frames, out) = self.transform(signal, sample.size_bytes())?;
        sample.set_tensor(
            &self.params.to,
            vec![frames, self.bins(), 2],
            TensorData::F32(out),
        )?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stft(yaml: &str) -> Stft {
        let params: Params = serde_yaml_ng::from_str(yaml).unwrap();
        Stft::new(params).unwrap()
    }

    #[test]
    fn periodic_hann_matches_its_definition() {
        let w = window(Window::Hann, 4);
        assert_eq!(w, vec![0.0, 0.5, 1.0, 0.5]);
        let s = window(Window::HannSymmetric, 5);
        assert!((s[4] - 0.0).abs() < 1e-7 && (s[2] - 1.0).abs() < 1e-7);
    }

    #[test]
    fn frame_counts_follow_tf_and_librosa() {
        let tf = stft("{frame_length: 960, hop: 480}");
        assert_eq!(tf.bins(), 513);
        assert_eq!(tf.frames(48_000), 99);
        assert_eq!(tf.frames(959), 0);
        let centred = stft("{frame_length: 320, hop: 160, fft_size: 1024, center: reflect}");
        // librosa: 1 + len // hop.
        assert_eq!(centred.frames(16_000), 101);
        assert_eq!(centred.frames(16_159), 101);
    }

    #[test]
    fn a_bin_centred_tone_peaks_in_its_bin_against_a_direct_dft() {
        let s = stft("{frame_length: 64, hop: 32}");
        let signal: Vec<f32> = (0..256)
            .map(|n| (2.0 * std::f32::consts::PI * 5.0 * n as f32 / 64.0).cos())
            .collect();
        let (frames, out) = s.transform(signal.clone(), 0).unwrap();
        assert_eq!(frames, 7);
        let w = window(Window::Hann, 64);
        for k in 0..33 {
            let (mut re, mut im) = (0f64, 0f64);
            for n in 0..64 {
                let x = (signal[32 + n] * w[n]) as f64;
                let a = -2.0 * std::f64::consts::PI * (k * n) as f64 / 64.0;
                re += x * a.cos();
                im += x * a.sin();
            }
            let got = &out[(33 + k) * 2..(33 + k) * 2 + 2];
            assert!((got[0] as f64 - re).abs() < 1e-4 && (got[1] as f64 - im).abs() < 1e-4);
        }
        let magnitude = |k: usize| out[(33 + k) * 2].hypot(out[(33 + k) * 2 + 1]);
        assert!((magnitude(5) - 16.0).abs() < 1e-3);
    }

    #[test]
    fn reflection_padding_mirrors_without_repeating_the_edge() {
        let s = stft("{frame_length: 4, hop: 1, center: reflect}");
        let padded = s.padded(vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(padded, vec![3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]);
        assert!(s.padded(vec![1.0, 2.0]).is_err());
    }
}
