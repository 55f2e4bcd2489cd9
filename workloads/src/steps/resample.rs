//! `resample`: changes a mono PCM signal's sample rate with a band-limited polyphase
//! windowed-sinc filter (Kaiser window, per-phase unit DC gain). Also used by `decode_audio`.
//!
//! For a rate change by L/M (reduced), output sample n sits at input time t = n·M/L. Its value
//! is Σ x[j]·h(j − t) over the input samples within the filter's half-width, where h is a
//! low-pass sinc cut at `rolloff` x the lower of the two Nyquist frequencies, shaped by a Kaiser
//! window. The L distinct fractional offsets of t have their taps computed once at construction.

use serde::{Deserialize, Serialize};

use super::pcm::{f32_to_i16, pcm_into_f32, sample_rate_of};
use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

/// Zero crossings of the sinc on each side of the centre, in units of the cut-off period.
const ZERO_CROSSINGS: f64 = 24.0;
/// Kaiser beta: about 90 dB stop-band attenuation.
const KAISER_BETA: f64 = 9.0;
/// The pass band ends at this fraction of the lower Nyquist frequency.
const DEFAULT_ROLLOFF: f64 = 0.945;
/// Largest L of a reduced L/M ratio; beyond it the phase table would be unreasonably large.
const MAX_PHASES: u64 = 4096;

/// A polyphase resampler from one rate to another, built once and shared by threads.
#[derive(Debug)]
pub struct Resampler {
    from: u32,
    to: u32,
    up: usize,
    down: usize,
    /// Taps before the base input index: output n uses x[base - before ..= base + after].
    before: usize,
    taps: usize,
    /// `up` rows of `taps` coefficients, row p for fractional offset p / up.
    table: Vec<f32>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Modified Bessel function of the first kind, order 0 (power series; converges fast here).
fn bessel_i0(x: f64) -> f64 {
    let (mut sum, mut term, half) = (1.0, 1.0, x / 2.0);
    for k in 1..64 {
        term *= (half / k as f64) * (half / k as f64);
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

/// The longest filter a resampler builds (taps per phase).
const MAX_TAPS: usize = 1 << 16;

impl Resampler {
    pub fn new(from: u32, to: u32) -> Result<Resampler, String> {
        Resampler::with_rolloff(from, to, DEFAULT_ROLLOFF)
    }

    pub fn with_rolloff(from: u32, to: u32, rolloff: f64) -> Result<Resampler, String> {
        if from == 0 || to == 0 {
            return Err(format!(
                "sample rates must be positive (got {from} -> {to})"
            ));
        }
        if !(rolloff > 0.0 && rolloff <= 1.0) {
            return Err(format!(
                "rolloff must be in (0, 1], got {}",
                crate::number::Num(rolloff)
            ));
        }
        let g = gcd(from as u64, to as u64);
        let (up, down) = (to as u64 / g, from as u64 / g);
        if up > MAX_PHASES {
            return Err(format!(
                "{from} Hz -> {to} Hz needs {up} filter phases (more than {MAX_PHASES}); \
                 choose rates with a larger common divisor"
            ));
        }
        // Cut-off in cycles per input sample, and the filter's half-width in input samples.
        let cutoff = 0.5 * rolloff * (up as f64 / down as f64).min(1.0);
        let half_width = ZERO_CROSSINGS / (2.0 * cutoff);
        // A tiny roll-off or a huge down-sampling ratio asks for a filter longer than any
        // recording: refused before its table is allocated.
        if !(half_width.is_finite() && half_width * 2.0 + 1.0 <= MAX_TAPS as f64) {
            return Err(format!(
                "{from} Hz -> {to} Hz at rolloff {rolloff} needs a filter of more than \
                 {MAX_TAPS} taps; choose closer rates or a larger rolloff"
            ));
        }
        let before = half_width.floor() as usize;
        let taps = before + half_width.ceil() as usize + 1;
        let norm = bessel_i0(KAISER_BETA);
        let mut table = vec![0f32; up as usize * taps];
        for (p, row) in table.chunks_exact_mut(taps).enumerate() {
            let frac = p as f64 / up as f64;
            let mut coefficients: Vec<f64> = (0..taps)
                .map(|k| {
                    let t = k as f64 - before as f64 - frac;
                    if t.abs() > half_width {
                        return 0.0;
                    }
                    let r = t / half_width;
                    let window = bessel_i0(KAISER_BETA * (1.0 - r * r).max(0.0).sqrt()) / norm;
                    let x = 2.0 * cutoff * t;
                    let sinc = if x == 0.0 {
                        1.0
                    } else {
                        (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
                    };
                    2.0 * cutoff * sinc * window
                })
                .collect();
            let sum: f64 = coefficients.iter().sum();
            coefficients.iter_mut().for_each(|c| *c /= sum);
            for (dst, c) in row.iter_mut().zip(&coefficients) {
                *dst = *c as f32;
            }
        }
        Ok(Resampler {
            from,
            to,
            up: up as usize,
            down: down as usize,
            before,
            taps,
            table,
        })
    }

    pub fn rates(&self) -> (u32, u32) {
        (self.from, self.to)
    }

    /// Output length for `n` input samples: ceil(n · to / from); `usize::MAX` where that
    /// overflows (no budget allows it).
    pub fn output_len(&self, n: usize) -> usize {
        n.checked_mul(self.up)
            .map_or(usize::MAX, |m| m.div_ceil(self.down))
    }

    /// Resamples one channel; samples outside the signal are taken as zero.
    pub fn process(&self, input: &[f32]) -> Vec<f32> {
        if self.up == self.down {
            return input.to_vec();
        }
        let len = self.output_len(input.len());
        let mut out = Vec::with_capacity(len);
        for n in 0..len {
            let position = n * self.down;
            let (base, phase) = (position / self.up, position % self.up);
            let row = &self.table[phase * self.taps..(phase + 1) * self.taps];
            let start = base as isize - self.before as isize;
            let (lo, hi) = (
                start.max(0) as usize,
                ((start + self.taps as isize) as usize).min(input.len()),
            );
            let skip = (lo as isize - start) as usize;
            let acc: f32 = if lo < hi {
                input[lo..hi]
                    .iter()
                    .zip(&row[skip..])
                    .map(|(x, h)| x * h)
                    .sum()
            } else {
                0.0
            };
            out.push(acc);
        }
        out
    }
}

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// mono PCM tensor [samples], int16 or float32 (kept)
    #[serde(default = "super::default_audio_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// Rate of the input when the sample has no `sample_rate` field.
    #[serde(default)]
    #[param(default = "the sample's `sample_rate`")]
    pub from_rate: Option<u32>,
    /// output rate in Hz; written to `sample_rate`
    pub to_rate: u32,
    /// pass band edge as a fraction of the lower Nyquist frequency
    #[serde(default = "default_rolloff")]
    #[param(default = "0.945")]
    pub rolloff: f64,
}

fn default_rolloff() -> f64 {
    DEFAULT_ROLLOFF
}

step_spec! { Resample, "resample", "band-limited resampling of mono PCM (polyphase windowed sinc, ~90 dB stop band)", crate::op::StepFacts { also_writes: &[super::SAMPLE_RATE_FIELD], ..crate::op::StepFacts::PURE } }

#[derive(Debug)]
pub struct Resample {
    params: Params,
    /// Resamplers by input rate, built on first use.
    cache: super::Memo<u32, Resampler>,
}

impl Resample {
    pub fn new(params: Params) -> Result<Resample, String> {
        let step = Resample {
            params,
            cache: Default::default(),
        };
        // Builds the declared rate's filter now (and checks the rates and roll-off, so a bad
        // workload fails when it loads); other input rates are built on first use.
        let from = step.params.from_rate.unwrap_or(step.params.to_rate);
        step.resampler(from).map_err(|e| e.message)?;
        Ok(step)
    }

    fn resampler(&self, from: u32) -> Result<std::sync::Arc<Resampler>, StepError> {
        self.cache.get_or_build(from, || {
            Resampler::with_rolloff(from, self.params.to_rate, self.params.rolloff)
                .map_err(StepError::new)
        })
    }
}

impl Step for Resample {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let from = match (sample_rate_of(&sample)?, self.params.from_rate) {
            (Some(r), Some(p)) if r != p => {
                return Err(StepError::new(format!(
                    "sample_rate is {r} Hz but from_rate says {p} Hz"
                )))
            }
            (Some(r), _) | (None, Some(r)) => r,
            (None, None) => {
                return Err(StepError::new(
                    "no `sample_rate` field and no from_rate parameter",
                ))
            }
        };
        let tensor = sample.take_tensor(field)?;
        let dtype = tensor.dtype();
        let input = pcm_into_f32(tensor, field)?;
        let resampler = self.resampler(from)?;
        let held = sample.size_bytes() + input.len() * 4;
        super::budget::reserve(field, held, &[resampler.output_len(input.len())], 4)?;
        let out = resampler.process(&input);
        let data = match dtype {
            crate::DType::I16 => TensorData::I16(f32_to_i16(&out)),
            _ => TensorData::F32(out),
        };
        let len = data.len();
        sample.set(field, Field::Tensor(Tensor::new(vec![len], data)?));
        sample.set(
            super::SAMPLE_RATE_FIELD,
            Field::Tensor(Tensor::scalar_i32(self.params.to_rate as i32)),
        );
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(rate: u32, hz: f64, seconds: f64) -> Vec<f32> {
        let n = (rate as f64 * seconds) as usize;
        (0..n)
            .map(|i| {
                (0.5 * (2.0 * std::f64::consts::PI * hz * i as f64 / rate as f64).sin()) as f32
            })
            .collect()
    }

    /// RMS over the middle half (away from the zero-padded edges).
    fn middle_rms(x: &[f32]) -> f64 {
        let m = &x[x.len() / 4..3 * x.len() / 4];
        (m.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / m.len() as f64).sqrt()
    }

    #[test]
    fn pass_band_tones_keep_their_shape() {
        for (from, to, hz) in [
            (44_100, 16_000, 1000.0),
            (48_000, 16_000, 6000.0),
            (16_000, 48_000, 3000.0),
            (22_050, 16_000, 440.0),
        ] {
            let r = Resampler::new(from, to).unwrap();
            let out = r.process(&tone(from, hz, 0.5));
            assert_eq!(out.len(), r.output_len((from / 2) as usize));
            let expected = tone(to, hz, 0.5);
            let middle = out.len() / 4..3 * out.len() / 4;
            let err = out[middle.clone()]
                .iter()
                .zip(&expected[middle])
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(err < 2e-3, "{from}->{to} {hz} Hz: max error {err}");
        }
    }

    #[test]
    fn stop_band_tones_are_removed() {
        // 10 kHz cannot exist at 16 kHz; without filtering it would alias to 6 kHz.
        let r = Resampler::new(48_000, 16_000).unwrap();
        let out = r.process(&tone(48_000, 10_000.0, 0.5));
        let ratio = middle_rms(&out) / (0.5 / 2f64.sqrt());
        assert!(20.0 * ratio.log10() < -80.0, "attenuation {ratio}");
    }

    #[test]
    fn same_rate_is_identity_and_bad_rates_are_refused() {
        let r = Resampler::new(16_000, 16_000).unwrap();
        let x = tone(16_000, 100.0, 0.01);
        assert_eq!(r.process(&x), x);
        assert!(Resampler::new(0, 16_000).is_err());
        assert!(Resampler::new(44_100, 44_099).is_err());
    }
}
