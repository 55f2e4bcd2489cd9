//! `pad_truncate`: makes the first dimension of a tensor exactly `length`: longer tensors keep
//! their first `length` rows, shorter ones are padded at the end with `pad` (for token ids,
//! GPT-2's `<|endoftext|>` 50256 by default). The original length can be kept in an int32
//! field, for attention masks.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{Field, FieldName, Sample, Tensor, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// tensor to fix, replaced
    #[serde(default = "super::default_tokens_field")]
    #[param(reads, writes)]
    pub field: FieldName,
    /// rows after the step
    pub length: usize,
    /// padding value (cast to the tensor's dtype)
    #[serde(default = "default_pad")]
    #[param(default = "50256")]
    pub pad: f64,
    /// Write the length before padding or truncation to this int32 field.
    #[serde(default)]
    #[param(writes)]
    pub length_field: Option<FieldName>,
}

fn default_pad() -> f64 {
    super::bpe_encode::END_OF_TEXT as f64
}

step_spec! { PadTruncate, "pad_truncate", "truncate or pad a tensor's first dimension to a fixed length" }

#[derive(Debug)]
pub struct PadTruncate {
    params: Params,
}

impl PadTruncate {
    pub fn new(params: Params) -> Result<PadTruncate, String> {
        if !params.pad.is_finite() {
            return Err(format!(
                "pad must be finite, got {}",
                crate::number::Num(params.pad)
            ));
        }
        Ok(PadTruncate { params })
    }
}

fn fit<T: Copy>(mut v: Vec<T>, len: usize, pad: T) -> Vec<T> {
    v.resize(len, pad);
    v
}

impl Step for PadTruncate {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let field = &self.params.field;
        let held = sample.size_bytes();
        let (mut shape, data) = sample.take_tensor(field)?.into_parts();
        let Some(&rows) = shape.first() else {
            return Err(StepError::new(format!("field `{field}` is a scalar")));
        };
        let mut out_shape = shape.clone();
        out_shape[0] = self.params.length;
        let n = super::budget::reserve(field, held, &out_shape, data.dtype().size_bytes())?;
        let pad = self.params.pad;
        let out = match data {
            TensorData::U8(v) => TensorData::U8(fit(v, n, pad as u8)),
            TensorData::U16(v) => TensorData::U16(fit(v, n, pad as u16)),
            TensorData::I16(v) => TensorData::I16(fit(v, n, pad as i16)),
            TensorData::I32(v) => TensorData::I32(fit(v, n, pad as i32)),
            TensorData::F32(v) => TensorData::F32(fit(v, n, pad as f32)),
            TensorData::F64(v) => TensorData::F64(fit(v, n, pad)),
        };
        shape[0] = self.params.length;
        sample.set_tensor(field, shape, out)?;
        if let Some(name) = &self.params.length_field {
            sample.set(name, Field::Tensor(Tensor::scalar_i32(rows as i32)));
        }
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_and_truncates_rows() {
        let step = PadTruncate::new(Params {
            field: "tokens".into(),
            length: 4,
            pad: 50256.0,
            length_field: Some("n".into()),
        })
        .unwrap();
        let ctx = StepContext::default();
        let tokens =
            |v: Vec<i32>| Sample::new(0).with_tensor("tokens", vec![v.len()], TensorData::I32(v));
        let short = step.apply(tokens(vec![1, 2]), &ctx).unwrap();
        assert_eq!(
            short.tensor("tokens").unwrap().data(),
            &TensorData::I32(vec![1, 2, 50256, 50256])
        );
        assert_eq!(short.tensor("n").unwrap().data(), &TensorData::I32(vec![2]));
        let long = step.apply(tokens((0..9).collect()), &ctx).unwrap();
        assert_eq!(
            long.tensor("tokens").unwrap().data(),
            &TensorData::I32(vec![0, 1, 2, 3])
        );
        let empty = step.apply(tokens(vec![]), &ctx).unwrap();
        assert_eq!(empty.tensor("tokens").unwrap().shape(), &[4]);
    }
}
