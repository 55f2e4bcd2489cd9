//! `embed`: looks token ids up in an embedding table -> float32 [n, dim]. As in the paper's code,
//! the table is not a trained one but a seeded random matrix (50257 x 768 by default, GPT-2's
//! vocabulary and width), uniform in [-0.05, 0.05) like Keras's default Embedding initializer.
//! It is generated once per process (about 154 MB) and shared by every thread and step using
//! the same (seed, vocabulary, dim).

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::rng::SeededRng;
use crate::sample::{FieldName, Sample, TensorData};
use crate::step::{Step, StepContext};

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// int32 ids [n]; removed
    #[serde(default = "super::default_tokens_field")]
    #[param(reads)]
    pub from: FieldName,
    /// float32 [n, dim] to write
    #[serde(default = "default_to")]
    #[param(default = "embedded")]
    #[param(writes)]
    pub to: FieldName,
    /// rows of the table; larger ids are an error
    #[serde(default = "default_vocabulary")]
    #[param(default = "50257")]
    pub vocabulary: usize,
    /// width of the table
    #[serde(default = "default_dim")]
    #[param(default = "768")]
    pub dim: usize,
    /// Seed of the table.
    #[serde(default)]
    #[param(default = "0")]
    pub seed: u64,
}

fn default_to() -> FieldName {
    "embedded".into()
}
fn default_vocabulary() -> usize {
    super::bpe_encode::VOCABULARY
}
fn default_dim() -> usize {
    768
}

step_spec! { Embed, "embed", "embedding lookup of int32 token ids into a seeded random table -> float32 [n, dim]" }

/// A row-major [vocabulary, dim] table.
#[derive(Debug)]
pub struct Table {
    pub values: Vec<f32>,
}

/// The table for (seed, vocabulary, dim), generated on first use and shared afterwards.
pub fn table(seed: u64, vocabulary: usize, dim: usize) -> Arc<Table> {
    static TABLES: OnceLock<super::Memo<(u64, usize, usize), Table>> = OnceLock::new();
    let built = TABLES
        .get_or_init(Default::default)
        .get_or_build((seed, vocabulary, dim), || {
            // Rows come from per-row streams, so the table does not depend on thread count.
            let mut values = Vec::with_capacity(vocabulary * dim);
            for row in 0..vocabulary {
                let mut rng = SeededRng::from_parts(&[seed, row as u64, 0xe3b]);
                values.extend((0..dim).map(|_| (rng.unit_f64() * 0.1 - 0.05) as f32));
            }
            Ok(Table { values })
        });
    built.expect("generating a table has no failure path")
}

pub struct Embed {
    params: Params,
    table: OnceLock<Arc<Table>>,
}

/// The parameters only: the table is built from them on first use (see `Memo`'s `Debug`).
impl std::fmt::Debug for Embed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embed")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Embed {
    pub fn new(params: Params) -> Result<Embed, String> {
        if params.vocabulary == 0 || params.dim == 0 {
            return Err("vocabulary and dim must be positive".to_string());
        }
        if params.vocabulary.saturating_mul(params.dim) > 1 << 31 {
            return Err(format!(
                "a {} x {} table is larger than 2^31 values",
                params.vocabulary, params.dim
            ));
        }
        Ok(Embed {
            params,
            table: OnceLock::new(),
        })
    }

    fn table(&self) -> &Table {
        self.table
            .get_or_init(|| table(self.params.seed, self.params.vocabulary, self.params.dim))
    }
}

impl Step for Embed {
    fn prepare(&self) -> Result<(), StepError> {
        self.table();
        Ok(())
    }

    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let from = &self.params.from;
        let (shape, data) = sample.take_tensor(from)?.into_parts();
        let TensorData::I32(ids) = data else {
            return Err(StepError::new(format!(
                "field `{from}` is {}, expected int32 token ids",
                data.dtype()
            )));
        };
        let (dim, vocabulary) = (self.params.dim, self.params.vocabulary);
        let table = &self.table().values;
        let held = sample.size_bytes() + ids.len() * 4;
        let n = super::budget::reserve(&self.params.to, held, &[ids.len(), dim], 4)?;
        let mut out = Vec::with_capacity(n);
        for &id in &ids {
            if id < 0 || id as usize >= vocabulary {
                return Err(StepError::new(format!(
                    "token id {id} is outside the table's {vocabulary} rows"
                )));
            }
            let row = id as usize * dim;
            out.extend_from_slice(&table[row..row + dim]);
        }
        let mut shape = shape;
        shape.push(dim);
        sample.set_tensor(&self.params.to, shape, TensorData::F32(out))?;
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_looked_up_and_shared() {
        let step = Embed::new(Params {
            from: "tokens".into(),
            to: "embedded".into(),
            vocabulary: 10,
            dim: 4,
            seed: 3,
        })
        .unwrap();
        let sample = Sample::new(0).with_tensor("tokens", vec![2], TensorData::I32(vec![7, 2]));
        let ctx = StepContext::default();
        let out = step.apply(sample, &ctx).unwrap();
        let t = table(3, 10, 4);
        assert!(Arc::ptr_eq(&t, &table(3, 10, 4)));
        let e = out.tensor("embedded").unwrap();
        assert_eq!(e.shape(), &[2, 4]);
        let mut expected = t.values[28..32].to_vec();
        expected.extend_from_slice(&t.values[8..12]);
        assert_eq!(e.data(), &TensorData::F32(expected));
        assert!(t.values.iter().all(|v| (-0.05..0.05).contains(v)));
        let bad = Sample::new(0).with_tensor("tokens", vec![1], TensorData::I32(vec![10]));
        assert!(step
            .apply(bad, &ctx)
            .unwrap_err()
            .message
            .contains("10 rows"));
    }
}
