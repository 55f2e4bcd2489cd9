//! Speech-like audio for generated audio datasets, by a source-filter model: a glottal pulse
//! train (falling intonation, jitter, spectral tilt) through three formant resonators gliding
//! between vowel targets, fricative noise bursts and stop closures for consonants, pauses
//! between words and a noise floor. Codecs and spectrograms treat it as they treat speech:
//! harmonics under moving formants, silences, and broadband noise.

use workloads::rng::SeededRng;

/// Average formant frequencies (F1, F2, F3 in Hz) of ten English vowels (Peterson and Barney,
/// J. Acoust. Soc. Am. 24, 1952; adult male averages).
const VOWELS: [[f32; 3]; 10] = [
    [270.0, 2290.0, 3010.0],
    [390.0, 1990.0, 2550.0],
    [530.0, 1840.0, 2480.0],
    [660.0, 1720.0, 2410.0],
    [730.0, 1090.0, 2440.0],
    [570.0, 840.0, 2410.0],
    [440.0, 1020.0, 2240.0],
    [300.0, 870.0, 2240.0],
    [640.0, 1190.0, 2390.0],
    [490.0, 1350.0, 1690.0],
];
const BANDWIDTHS: [f32; 3] = [70.0, 100.0, 140.0];

/// A speaker: pitch range and vocal-tract scale (shorter tracts raise every formant).
#[derive(Clone, Copy, Debug)]
pub struct Voice {
    pub f0_hz: f32,
    pub formant_scale: f32,
}

impl Voice {
    pub fn random(rng: &mut SeededRng) -> Voice {
        if rng.below(2) == 0 {
            Voice {
                f0_hz: rng.range_f64(95.0, 135.0) as f32,
                formant_scale: rng.range_f64(0.95, 1.05) as f32,
            }
        } else {
            Voice {
                f0_hz: rng.range_f64(175.0, 235.0) as f32,
                formant_scale: rng.range_f64(1.12, 1.22) as f32,
            }
        }
    }
}

/// A two-pole resonator (Klatt, J. Acoust. Soc. Am. 67, 1980) whose frequency can move.
#[derive(Clone, Copy, Default)]
struct Resonator {
    y1: f32,
    y2: f32,
}

impl Resonator {
    fn step(&mut self, x: f32, freq: f32, bw: f32, rate: f32) -> f32 {
        let t = 1.0 / rate;
        let c = -(-2.0 * std::f32::consts::PI * bw * t).exp();
        let b = 2.0
            * (-std::f32::consts::PI * bw * t).exp()
            * (2.0 * std::f32::consts::PI * freq * t).cos();
        let a = 1.0 - b - c;
        let y = a * x + b * self.y1 + c * self.y2;
        self.y2 = self.y1;
        self.y1 = y;
        y
    }
}

/// Streams samples of the utterance being built.
struct Synth<'a> {
    rng: &'a mut SeededRng,
    rate: f32,
    voice: Voice,
    out: Vec<f32>,
    formants: [f32; 3],
    resonators: [Resonator; 3],
    phase: f32,
    tilt: f32,
    noise_floor: f32,
}

impl Synth<'_> {
    fn noise(&mut self) -> f32 {
        (self.rng.unit_f64() as f32 - 0.5) * 2.0
    }

    /// Appends `segment` scaled to RMS `target`, over the noise floor.
    fn push_scaled(&mut self, segment: Vec<f32>, target: f32) {
        let rms = (segment.iter().map(|v| v * v).sum::<f32>() / segment.len().max(1) as f32)
            .sqrt()
            .max(1e-9);
        for v in segment {
            let floor = self.noise() * self.noise_floor;
            self.out.push(v * target / rms + floor);
        }
    }

    fn silence(&mut self, seconds: f32) {
        for _ in 0..(seconds * self.rate) as usize {
            let n = self.noise() * self.noise_floor;
            self.out.push(n);
        }
    }

    /// A voiced segment gliding to `target` formants, with pitch `f0` at its start and end.
    fn vowel(&mut self, seconds: f32, target: [f32; 3], f0: (f32, f32), loudness: f32) {
        let n = (seconds * self.rate) as usize;
        let mut segment = Vec::with_capacity(n);
        let start = self.formants;
        let target = target.map(|f| f * self.voice.formant_scale);
        for i in 0..n {
            let progress = i as f32 / n.max(1) as f32;
            let glide = (progress / 0.3).min(1.0);
            for k in 0..3 {
                self.formants[k] = start[k] + (target[k] - start[k]) * glide;
            }
            let pitch = f0.0 + (f0.1 - f0.0) * progress;
            let jitter = 1.0 + 0.01 * self.noise();
            self.phase += pitch * jitter / self.rate;
            let pulse = if self.phase >= 1.0 {
                self.phase -= 1.0;
                1.0
            } else {
                0.0
            };
            // Glottal spectral tilt: a one-pole low-pass on the pulse train, plus breathiness.
            self.tilt = 0.97 * self.tilt + pulse;
            let mut x = self.tilt + 0.02 * self.noise();
            let nyquist_guard = self.rate * 0.45;
            for ((r, f), bw) in self
                .resonators
                .iter_mut()
                .zip(self.formants)
                .zip(BANDWIDTHS)
            {
                x = r.step(x, f.min(nyquist_guard), bw, self.rate);
            }
            let envelope = (progress / 0.1)
                .min(1.0)
                .min((1.0 - progress) / 0.15)
                .clamp(0.0, 1.0);
            segment.push(x * envelope);
        }
        self.push_scaled(segment, 0.1 * loudness);
    }

    /// A fricative: high-passed noise shaped by a resonance between 2.5 and 6 kHz, about 15 dB
    /// below a vowel.
    fn fricative(&mut self, seconds: f32) {
        let n = (seconds * self.rate) as usize;
        let centre = (self.rng.range_f64(2500.0, 6000.0) as f32).min(self.rate * 0.45);
        let mut r = Resonator::default();
        let mut previous = 0.0;
        let mut segment = Vec::with_capacity(n);
        for i in 0..n {
            let progress = i as f32 / n.max(1) as f32;
            let envelope = (progress / 0.2)
                .min(1.0)
                .min((1.0 - progress) / 0.2)
                .clamp(0.0, 1.0);
            let x = self.noise();
            let y = r.step(x - previous, centre, 900.0, self.rate);
            previous = x;
            segment.push(y * envelope);
        }
        self.push_scaled(segment, 0.018);
    }
}

/// `words` words of 1 to 3 syllables, with `lead` and `tail` seconds of silence around them.
pub fn utterance(
    rng: &mut SeededRng,
    rate: u32,
    voice: Voice,
    words: usize,
    lead: f32,
    tail: f32,
) -> Vec<f32> {
    let noise_floor = rng.range_f64(0.0005, 0.003) as f32;
    let mut synth = Synth {
        rng,
        rate: rate as f32,
        voice,
        out: Vec::new(),
        formants: VOWELS[4],
        resonators: Default::default(),
        phase: 0.0,
        tilt: 0.0,
        noise_floor,
    };
    synth.silence(lead);
    let syllables_total: usize = 1.max(words * 2);
    let mut spoken = 0usize;
    for w in 0..words {
        if w > 0 {
            let pause = synth.rng.range_f64(0.03, 0.25) as f32;
            synth.silence(pause);
        }
        for _ in 0..1 + synth.rng.below(3) {
            match synth.rng.below(5) {
                0 | 1 => {
                    let d = synth.rng.range_f64(0.04, 0.11) as f32;
                    synth.fricative(d);
                }
                2 => {
                    let d = synth.rng.range_f64(0.02, 0.05) as f32;
                    synth.silence(d); // stop closure, then its burst
                    synth.fricative(0.012);
                }
                _ => {}
            }
            // Declination: pitch falls over the utterance, with a rise or fall per syllable.
            let progress = (spoken as f32 / syllables_total as f32).min(1.0);
            let base = voice.f0_hz * (1.1 - 0.25 * progress);
            let swing = synth.rng.range_f64(-0.12, 0.12) as f32;
            let vowel = VOWELS[synth.rng.below(VOWELS.len() as u64) as usize];
            let (d, loud) = (
                synth.rng.range_f64(0.08, 0.22) as f32,
                synth.rng.range_f64(0.5, 1.0) as f32,
            );
            synth.vowel(d, vowel, (base, base * (1.0 + swing)), loud);
            spoken += 1;
        }
    }
    synth.silence(tail);
    // Normalise to a peak of 0.7 of full scale.
    let peak = synth
        .out
        .iter()
        .fold(0.0f32, |m, v| m.max(v.abs()))
        .max(1e-6);
    synth.out.iter().map(|v| v * 0.7 / peak).collect()
}

/// Converts to 16-bit PCM.
pub fn to_i16(samples: &[f32]) -> Vec<i16> {
    samples
        .iter()
        .map(|v| (v.clamp(-1.0, 1.0) * 32767.0).round() as i16)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utterances_have_silence_voicing_and_are_deterministic() {
        let voice = Voice {
            f0_hz: 120.0,
            formant_scale: 1.0,
        };
        let a = utterance(&mut SeededRng::new(3), 16_000, voice, 4, 0.3, 0.3);
        let b = utterance(&mut SeededRng::new(3), 16_000, voice, 4, 0.3, 0.3);
        assert_eq!(a, b);
        let rms = |s: &[f32]| (s.iter().map(|v| v * v).sum::<f32>() / s.len() as f32).sqrt();
        let lead = &a[..4_000];
        let whole = rms(&a);
        assert!(
            rms(lead) < whole * 0.1,
            "leading silence is quiet: {} vs {whole}",
            rms(lead)
        );
        assert!(a.iter().all(|v| v.abs() <= 0.7 + 1e-6));
        // Voiced speech is periodic: the normalised autocorrelation peaks near the pitch period
        // (f0 120 Hz with declination: 120 to 160 samples at 16 kHz); white noise has none.
        fn periodicity(x: &[f32]) -> f32 {
            let energy = x.iter().map(|v| v * v).sum::<f32>();
            (100..170)
                .map(|lag| x.iter().zip(&x[lag..]).map(|(p, q)| p * q).sum::<f32>() / energy)
                .fold(f32::MIN, f32::max)
        }
        let mut rng = SeededRng::new(5);
        let noise: Vec<f32> = (0..a.len()).map(|_| rng.unit_f64() as f32 - 0.5).collect();
        let (speech, white) = (periodicity(&a), periodicity(&noise));
        eprintln!("periodicity: speech {speech:.3}, white noise {white:.3}");
        assert!(
            speech > 0.3 && white < 0.05,
            "speech {speech}, noise {white}"
        );
    }
}
