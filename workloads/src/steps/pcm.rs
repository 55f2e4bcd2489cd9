//! PCM helpers shared by the audio steps: the sample rate a sample carries, PCM tensors as
//! float32, and float32 back to int16.

use crate::error::StepError;
use crate::sample::{Field, Sample, Tensor, TensorData};

/// The sample's `sample_rate` field, when it has one.
pub(crate) fn sample_rate_of(sample: &Sample) -> Result<Option<u32>, StepError> {
    let Some(Field::Tensor(t)) = sample.get(super::SAMPLE_RATE_FIELD) else {
        return Ok(None);
    };
    match t.data() {
        TensorData::I32(v) if v.len() == 1 && v[0] > 0 => Ok(Some(v[0] as u32)),
        _ => Err(StepError::new(format!(
            "field `{}` must be one positive int32",
            super::SAMPLE_RATE_FIELD
        ))),
    }
}

/// A mono PCM tensor as float32 in [-1, 1) (int16 divided by 32768); float32 data is moved,
/// not copied.
pub(crate) fn pcm_into_f32(tensor: Tensor, field: &str) -> Result<Vec<f32>, StepError> {
    if tensor.shape().len() != 1 {
        return Err(StepError::new(format!(
            "field `{field}` has shape {:?}, expected mono PCM [samples]",
            tensor.shape()
        )));
    }
    match tensor.into_parts().1 {
        TensorData::I16(v) => Ok(v.iter().map(|&s| s as f32 / 32768.0).collect()),
        TensorData::F32(v) => Ok(v),
        other => Err(StepError::new(format!(
            "field `{field}` is {}, expected int16 or float32 PCM",
            other.dtype()
        ))),
    }
}

/// float32 PCM to int16: x · 32768 rounded and clipped (exact for 16-bit sources).
pub(crate) fn f32_to_i16(samples: &[f32]) -> Vec<i16> {
    samples
        .iter()
        .map(|&x| (x * 32768.0).round().clamp(-32768.0, 32767.0) as i16)
        .collect()
}
