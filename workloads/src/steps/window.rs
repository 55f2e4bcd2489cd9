//! `window`: cuts a [channels, samples] signal into consecutive windows [channels, length] (the
//! paper's NILM pipeline: one hour at 6.4 kHz into 360 windows of 10 s = 64,000 samples). It is
//! a fan-out step: one input sample becomes one output sample per window, each carrying the
//! input's other fields. A partial last window is dropped.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::{ParamDocs, StepFacts};
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// tensor [channels, samples] (any dtype)
    #[serde(default = "super::default_signal_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// window length in samples
    pub length: usize,
    /// Samples between window starts (default: `length`, no overlap).
    #[serde(default)]
    #[param(default = "length")]
    pub hop: Option<usize>,
}

step_spec! { Window, "window", "cut a [channels, samples] signal into windows [channels, length]: one output sample per window", StepFacts { fan_out: true, ..StepFacts::PURE } }

#[derive(Debug)]
pub struct Window {
    params: Params,
    hop: usize,
}

impl Window {
    pub fn new(params: Params) -> Result<Window, String> {
        let hop = params.hop.unwrap_or(params.length);
        if params.length == 0 || hop == 0 {
            return Err("length and hop must be positive".to_string());
        }
        Ok(Window { params, hop })
    }

    /// Windows of a signal of `samples` samples.
    pub fn count(&self, samples: usize) -> usize {
        if samples < self.params.length {
            0
        } else {
            1 + (samples - self.params.length) / self.hop
        }
    }
}

/// Copies columns `start..start + length` of each of the `channels` rows of `data`.
fn cut<T: Copy>(
    data: &[T],
    channels: usize,
    samples: usize,
    start: usize,
    length: usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(channels * length);
    for c in 0..channels {
        let row = c * samples + start;
        out.extend_from_slice(&data[row..row + length]);
    }
    out
}

impl Step for Window {
    fn apply(&self, _sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        Err(StepError::new(
            "`window` emits one sample per window; the harness calls apply_many",
        ))
    }

    fn apply_many(
        &self,
        mut sample: Sample,
        _ctx: &StepContext,
        out: &mut Vec<Sample>,
    ) -> Result<(), StepError> {
        let field = &self.params.field;
        let tensor = sample.take_tensor(field)?;
        let &[channels, samples] = tensor.shape() else {
            return Err(StepError::new(format!(
                "field `{field}` has shape {:?}, expected [channels, samples]",
                tensor.shape()
            )));
        };
        let length = self.params.length;
        // Every window at once, each a copy of the sample's other fields and its cut.
        let each = channels
            .saturating_mul(length)
            .saturating_mul(tensor.dtype().size_bytes());
        let held = sample.size_bytes() + tensor.data().len() * tensor.dtype().size_bytes();
        let child = each.saturating_add(sample.size_bytes());
        super::budget::reserve(field, held, &[self.count(samples), child], 1)?;
        for w in 0..self.count(samples) {
            let start = w * self.hop;
            let data = match tensor.data() {
                TensorData::U8(d) => TensorData::U8(cut(d, channels, samples, start, length)),
                TensorData::U16(d) => TensorData::U16(cut(d, channels, samples, start, length)),
                TensorData::I16(d) => TensorData::I16(cut(d, channels, samples, start, length)),
                TensorData::I32(d) => TensorData::I32(cut(d, channels, samples, start, length)),
                TensorData::F32(d) => TensorData::F32(cut(d, channels, samples, start, length)),
                TensorData::F64(d) => TensorData::F64(cut(d, channels, samples, start, length)),
            };
            let mut child = sample.clone();
            child.set(
                field,
                Field::Tensor(Tensor::new(vec![channels, length], data)?),
            );
            out.push(child);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_every_channel_into_consecutive_windows() {
        let w = Window::new(Params {
            field: "signal".into(),
            length: 3,
            hop: None,
        })
        .unwrap();
        let signal: Vec<f64> = (0..14).map(|v| v as f64).collect(); // 2 x 7
        let sample = Sample::new(5)
            .with_tensor("signal", vec![2, 7], TensorData::F64(signal))
            .with("note", Field::Text("kept".into()));
        let ctx = StepContext::default();
        let mut out = Vec::new();
        w.apply_many(sample, &ctx, &mut out).unwrap();
        assert_eq!(out.len(), 2, "the partial third window is dropped");
        assert_eq!(
            out[1].tensor("signal").unwrap().data(),
            &TensorData::F64(vec![3.0, 4.0, 5.0, 10.0, 11.0, 12.0])
        );
        assert_eq!(out[0].text("note").unwrap(), "kept");
        assert_eq!(w.count(64_000 * 360), 360 * 64_000 / 3);
        let paper = Window::new(Params {
            field: "signal".into(),
            length: 64_000,
            hop: None,
        })
        .unwrap();
        assert_eq!(paper.count(6_400 * 3_600), 360);
    }
}
