//! `bpe_encode`: GPT-2's byte-pair encoding (the r50k_base ranks bundled with tiktoken-rs, fully
//! offline; ids identical to OpenAI's tiktoken `encode_ordinary`, so `<|endoftext|>` in the text
//! is ordinary text) -> int32 `tokens` [n]. The encoder is built once per process.

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

/// GPT-2's end-of-text token id.
pub const END_OF_TEXT: i32 = 50_256;
/// Size of GPT-2's vocabulary (ids 0..50257).
pub const VOCABULARY: usize = 50_257;

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// text field to encode; removed
    #[serde(default = "super::default_text_field")]
    #[param(reads)]
    pub from: FieldName,
    /// int32 tensor [n] to write
    #[serde(default = "super::default_tokens_field")]
    #[param(writes)]
    pub to: FieldName,
    /// Append `<|endoftext|>` (50256), as GPT-2's training data separates documents.
    #[serde(default)]
    pub append_eot: bool,
}

step_spec! { BpeEncode, "bpe_encode", "GPT-2 BPE (r50k_base, tiktoken-identical ids) of a text field to int32 tokens [n]" }

#[derive(Debug)]
pub struct BpeEncode {
    params: Params,
}

impl BpeEncode {
    pub fn new(params: Params) -> Result<BpeEncode, String> {
        Ok(BpeEncode { params })
    }
}

/// The GPT-2 token ids of `text`.
pub fn encode(text: &str) -> Vec<i32> {
    tiktoken_rs::r50k_base_singleton()
        .encode_ordinary(text)
        .into_iter()
        .map(|id| id as i32)
        .collect()
}

impl Step for BpeEncode {
    fn prepare(&self) -> Result<(), StepError> {
        // Builds the encoder (~50 ms) before anything is timed.
        let _ = tiktoken_rs::r50k_base_singleton();
        Ok(())
    }

    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let text = sample.take_text(&self.params.from)?;
        let mut tokens = encode(&text);
        if self.params.append_eot {
            tokens.push(END_OF_TEXT);
        }
        let n = tokens.len();
        sample.set_tensor(&self.params.to, vec![n], TensorData::I32(tokens))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_ids() {
        assert_eq!(super::encode("Hello world"), vec![15496, 995]);
        assert_eq!(super::encode(""), Vec::<i32>::new());
    }
}
