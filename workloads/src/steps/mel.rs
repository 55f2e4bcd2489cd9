//! `mel`: projects a magnitude (or power) spectrogram [frames, bins] onto `bins` mel bands ->
//! [frames, mel_bins] float32. Two filterbanks:
//!
//! - `tf` (default, the paper's): `tf.signal.linear_to_mel_weight_matrix`. HTK mel scale
//!   (1127 ln(1 + f / 700)), triangles spaced evenly in mel between `lower_hz` (125) and
//!   `upper_hz` (3800), tf's defaults, evaluated at each FFT bin's mel value, no area
//!   normalisation; the DC bin gets no weight.
//! - `slaney`: `librosa.filters.mel`'s default. Slaney's mel scale (linear below 1 kHz,
//!   logarithmic above), triangles in Hz between `lower_hz` (0) and `upper_hz` (Nyquist), each
//!   scaled by 2 / its width in Hz so every band has the same area.
//!
//! The matrix is computed in float64 once per spectrogram size and applied band by band over
//! its non-zero range only.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Filterbank {
    Tf,
    Slaney,
}

impl crate::op::ParamKind for Filterbank {
    const KIND: &'static str = "tf | slaney";
}

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// float32 spectrogram [frames, fft_size / 2 + 1], replaced by [frames, bins]
    #[serde(default = "super::default_spectrogram_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// number of mel bands
    #[serde(default = "default_bins")]
    #[param(default = "80")]
    pub bins: usize,
    /// rate of the audio (checked against the sample's `sample_rate`)
    pub sample_rate: u32,
    /// lower edge of the lowest band
    #[serde(default)]
    #[param(default = "125 (tf), 0 (slaney)")]
    pub lower_hz: Option<f64>,
    /// upper edge of the highest band
    #[serde(default)]
    #[param(default = "3800 (tf), Nyquist (slaney)")]
    pub upper_hz: Option<f64>,
    /// tf.signal.linear_to_mel_weight_matrix or librosa.filters.mel
    #[serde(default = "default_filterbank")]
    #[param(default = "tf")]
    pub filterbank: Filterbank,
}

fn default_bins() -> usize {
    80
}
fn default_filterbank() -> Filterbank {
    Filterbank::Tf
}

step_spec! { Mel, "mel", "mel filterbank over a [frames, bins] spectrogram (tf.signal's, or librosa's Slaney)" }

/// HTK mel scale, as tf.signal uses it.
fn hz_to_mel_htk(hz: f64) -> f64 {
    1127.0 * (1.0 + hz / 700.0).ln()
}

const SLANEY_HZ_PER_MEL: f64 = 200.0 / 3.0;
const SLANEY_LOG_HZ: f64 = 1000.0;
const SLANEY_LOG_MEL: f64 = SLANEY_LOG_HZ / SLANEY_HZ_PER_MEL;

fn slaney_log_step() -> f64 {
    6.4f64.ln() / 27.0
}

fn hz_to_mel_slaney(hz: f64) -> f64 {
    if hz >= SLANEY_LOG_HZ {
        SLANEY_LOG_MEL + (hz / SLANEY_LOG_HZ).ln() / slaney_log_step()
    } else {
        hz / SLANEY_HZ_PER_MEL
    }
}

fn mel_to_hz_slaney(mel: f64) -> f64 {
    if mel >= SLANEY_LOG_MEL {
        SLANEY_LOG_HZ * (slaney_log_step() * (mel - SLANEY_LOG_MEL)).exp()
    } else {
        mel * SLANEY_HZ_PER_MEL
    }
}

/// `n` evenly spaced values from `a` to `b` inclusive (numpy.linspace).
fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![a],
        _ => (0..n)
            .map(|i| a + (b - a) * i as f64 / (n - 1) as f64)
            .collect(),
    }
}

/// The mel weight matrix [spectrogram_bins, mel_bins] (row-major, tf's layout), in float64.
pub fn weight_matrix(
    filterbank: Filterbank,
    mel_bins: usize,
    spectrogram_bins: usize,
    sample_rate: u32,
    lower_hz: f64,
    upper_hz: f64,
) -> Result<Vec<f64>, String> {
    let nyquist = sample_rate as f64 / 2.0;
    if mel_bins == 0 || spectrogram_bins < 2 {
        return Err(format!(
            "need at least one mel band and two spectrogram bins (got {mel_bins}, {spectrogram_bins})"
        ));
    }
    if !(lower_hz >= 0.0 && lower_hz < upper_hz && upper_hz <= nyquist) {
        return Err(format!(
            "band edges must satisfy 0 <= lower_hz < upper_hz <= {nyquist} (Nyquist at \
             {sample_rate} Hz); got {} and {}",
            crate::number::Num(lower_hz),
            crate::number::Num(upper_hz)
        ));
    }
    let bin_hz = linspace(0.0, nyquist, spectrogram_bins);
    let mut matrix = vec![0f64; spectrogram_bins * mel_bins];
    match filterbank {
        Filterbank::Tf => {
            let edges = linspace(
                hz_to_mel_htk(lower_hz),
                hz_to_mel_htk(upper_hz),
                mel_bins + 2,
            );
            // Bin 0 (DC) is left at zero, as tf does.
            for (k, hz) in bin_hz.iter().enumerate().skip(1) {
                let mel = hz_to_mel_htk(*hz);
                for m in 0..mel_bins {
                    let (lo, centre, hi) = (edges[m], edges[m + 1], edges[m + 2]);
                    let rising = (mel - lo) / (centre - lo);
                    let falling = (hi - mel) / (hi - centre);
                    matrix[k * mel_bins + m] = rising.min(falling).max(0.0);
                }
            }
        }
        Filterbank::Slaney => {
            let edges: Vec<f64> = linspace(
                hz_to_mel_slaney(lower_hz),
                hz_to_mel_slaney(upper_hz),
                mel_bins + 2,
            )
            .into_iter()
            .map(mel_to_hz_slaney)
            .collect();
            for m in 0..mel_bins {
                let (lo, centre, hi) = (edges[m], edges[m + 1], edges[m + 2]);
                let area = 2.0 / (hi - lo);
                for (k, hz) in bin_hz.iter().enumerate() {
                    let rising = (hz - lo) / (centre - lo);
                    let falling = (hi - hz) / (hi - centre);
                    matrix[k * mel_bins + m] = rising.min(falling).max(0.0) * area;
                }
            }
        }
    }
    Ok(matrix)
}

/// One mel band: its weights over spectrogram bins `start..start + weights.len()`.
#[derive(Debug)]
struct Band {
    start: usize,
    weights: Vec<f32>,
}

#[derive(Debug)]
struct Bank {
    bands: Vec<Band>,
}

#[derive(Debug)]
pub struct Mel {
    params: Params,
    lower_hz: f64,
    upper_hz: f64,
    /// Filterbanks by spectrogram size, built on first use.
    banks: super::Memo<usize, Bank>,
}

impl Mel {
    pub fn new(params: Params) -> Result<Mel, String> {
        let (lower_hz, upper_hz) = match params.filterbank {
            Filterbank::Tf => (
                params.lower_hz.unwrap_or(125.0),
                params.upper_hz.unwrap_or(3800.0),
            ),
            Filterbank::Slaney => (
                params.lower_hz.unwrap_or(0.0),
                params.upper_hz.unwrap_or(params.sample_rate as f64 / 2.0),
            ),
        };
        // Validates the edges now, so a bad workload fails at load time.
        weight_matrix(
            params.filterbank,
            params.bins,
            2,
            params.sample_rate,
            lower_hz,
            upper_hz,
        )?;
        Ok(Mel {
            params,
            lower_hz,
            upper_hz,
            banks: Default::default(),
        })
    }

    fn bank(&self, spectrogram_bins: usize) -> Result<Arc<Bank>, StepError> {
        self.banks
            .get_or_build(spectrogram_bins, || self.build_bank(spectrogram_bins))
    }

    fn build_bank(&self, spectrogram_bins: usize) -> Result<Bank, StepError> {
        let mels = self.params.bins;
        let matrix = weight_matrix(
            self.params.filterbank,
            mels,
            spectrogram_bins,
            self.params.sample_rate,
            self.lower_hz,
            self.upper_hz,
        )
        .map_err(StepError::new)?;
        let bands = (0..mels)
            .map(|m| {
                let column: Vec<f32> = (0..spectrogram_bins)
                    .map(|k| matrix[k * mels + m] as f32)
                    .collect();
                let first = column.iter().position(|w| *w != 0.0);
                let last = column.iter().rposition(|w| *w != 0.0);
                match (first, last) {
                    (Some(a), Some(b)) => Band {
                        start: a,
                        weights: column[a..=b].to_vec(),
                    },
                    _ => Band {
                        start: 0,
                        weights: Vec::new(),
                    },
                }
            })
            .collect();
        Ok(Bank { bands })
    }
}

impl Step for Mel {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        if let Some(rate) = super::pcm::sample_rate_of(&sample)? {
            if rate != self.params.sample_rate {
                return Err(StepError::new(format!(
                    "the audio is {rate} Hz but mel's sample_rate is {} Hz",
                    self.params.sample_rate
                )));
            }
        }
        let field = &self.params.field;
        let (shape, data) = sample.take_tensor(field)?.into_parts();
        let (TensorData::F32(spectrogram), &[frames, bins]) = (&data, shape.as_slice()) else {
            return Err(StepError::new(format!(
                "field `{field}` is {} {shape:?}, expected a float32 spectrogram [frames, bins] \
                 (apply `magnitude` to the stft first)",
                data.dtype()
            )));
        };
        let bank = self.bank(bins)?;
        let mels = self.params.bins;
        let held = sample.size_bytes() + spectrogram.len() * 4;
        let mut out = vec![0f32; super::budget::reserve(field, held, &[frames, mels], 4)?];
        for (row, dst) in spectrogram
            .chunks_exact(bins)
            .zip(out.chunks_exact_mut(mels))
        {
            for (band, value) in bank.bands.iter().zip(dst.iter_mut()) {
                *value = row[band.start..band.start + band.weights.len()]
                    .iter()
                    .zip(&band.weights)
                    .map(|(x, w)| x * w)
                    .sum();
            }
        }
        sample.set_tensor(field, vec![frames, mels], TensorData::F32(out))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{Field, Tensor};

    #[test]
    fn scales_round_trip_and_match_known_points() {
        assert!((hz_to_mel_htk(700.0) - 1127.0 * 2f64.ln()).abs() < 1e-9);
        assert!((hz_to_mel_slaney(1000.0) - 15.0).abs() < 1e-12);
        for hz in [0.0, 300.0, 999.0, 1000.0, 4000.0, 22050.0] {
            assert!((mel_to_hz_slaney(hz_to_mel_slaney(hz)) - hz).abs() < 1e-6);
        }
    }

    #[test]
    fn triangles_peak_at_one_and_the_dc_bin_is_empty() {
        let m = weight_matrix(Filterbank::Tf, 80, 513, 16_000, 20.0, 4000.0).unwrap();
        assert!(m[..80].iter().all(|w| *w == 0.0));
        assert!(m.iter().all(|w| (0.0..=1.0).contains(w)));
        // Above 4 kHz nothing is weighted.
        assert!(m[(4000 * 512 / 8000 + 1) * 80..].iter().all(|w| *w == 0.0));
        let slaney = weight_matrix(Filterbank::Slaney, 40, 257, 16_000, 0.0, 8000.0).unwrap();
        assert!(slaney.iter().all(|w| *w >= 0.0));
    }

    #[test]
    fn bad_edges_are_refused_at_load_time() {
        let params = |upper: f64| Params {
            field: "spectrogram".into(),
            bins: 80,
            sample_rate: 16_000,
            lower_hz: None,
            upper_hz: Some(upper),
            filterbank: Filterbank::Tf,
        };
        assert!(Mel::new(params(9000.0)).unwrap_err().contains("Nyquist"));
        assert!(Mel::new(params(8000.0)).is_ok());
    }

    #[test]
    fn wrong_sample_rate_is_an_error() {
        let mel = Mel::new(Params {
            field: "spectrogram".into(),
            bins: 4,
            sample_rate: 16_000,
            lower_hz: None,
            upper_hz: None,
            filterbank: Filterbank::Tf,
        })
        .unwrap();
        let sample = Sample::new(0)
            .with_tensor("spectrogram", vec![1, 5], TensorData::F32(vec![1.0; 5]))
            .with("sample_rate", Field::Tensor(Tensor::scalar_i32(48_000)));
        let ctx = StepContext::default();
        assert!(mel
            .apply(sample, &ctx)
            .unwrap_err()
            .message
            .contains("48000"));
    }
}
