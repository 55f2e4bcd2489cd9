//! Where a workload's samples come from: a dataset kind, a folder, a sample count, a seed and
//! the kind's options.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// Where the dataset comes from: a kind known to the `datasets` crate (a layout reader and a
/// generator), a path (generated there when missing), and how many samples a run uses.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub kind: String,
    /// Relative paths are resolved against the data directory (`--data-dir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Samples a run uses unless `--samples` says otherwise (the first N in source order).
    #[serde(default = "default_samples")]
    pub samples: usize,
    /// Seed of the generator when the dataset has to be generated.
    #[serde(default)]
    pub seed: u64,
    /// Generator options of the dataset kind (e.g. `dtype: uint8`), checked by the kind.
    #[serde(
        default,
        deserialize_with = "scalar_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub options: BTreeMap<String, String>,
}

/// A map whose values are YAML scalars, kept as their text (`0.64`, `uint8`, `true`).
fn scalar_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let raw: BTreeMap<String, serde_yaml_ng::Value> = BTreeMap::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_yaml_ng::Value::String(s) => s,
                serde_yaml_ng::Value::Number(n) => n.to_string(),
                serde_yaml_ng::Value::Bool(b) => b.to_string(),
                other => {
                    return Err(de::Error::custom(format!(
                        "option `{k}` must be a scalar, got {other:?}"
                    )))
                }
            };
            Ok((k, text))
        })
        .collect()
}

/// `dataset.samples` where a workload gives none.
pub const DEFAULT_SAMPLES: usize = 1000;

fn default_samples() -> usize {
    DEFAULT_SAMPLES
}
