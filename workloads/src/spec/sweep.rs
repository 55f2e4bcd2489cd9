//! A workload's sweep defaults: the matrix `sweep` runs when the command line says nothing.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::options::{CacheMode, Codec};

/// Default settings of a sweep over this workload; the CLI overrides each.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SweepDefaults {
    /// Empty means every strategy the steps allow.
    #[serde(default)]
    pub strategies: Vec<String>,
    #[serde(default = "default_codecs")]
    pub codecs: Vec<Codec>,
    #[serde(default = "default_threads")]
    pub threads: Vec<usize>,
    #[serde(default = "default_cache")]
    pub cache: Vec<CacheMode>,
    #[serde(default = "default_trials")]
    pub trials: usize,
    #[serde(default = "default_epochs")]
    pub epochs: usize,
    /// Shards per materialized strategy (fixed, so one store serves every thread count).
    #[serde(default = "default_shards")]
    pub shards: usize,
    /// Dataset options swept as a dimension: every combination is its own dataset, swept as
    /// the variant `<name>@<key>=<value>,...` (e.g. the paper's twelve synthetic sample sizes).
    #[serde(
        default,
        deserialize_with = "scalar_lists",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub dataset_options: BTreeMap<String, Vec<String>>,
    /// Size of each variant's dataset in MB (1e6 B): its sample count is this divided by its
    /// MB per sample, so every variant reads the same number of bytes (unless `--samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_mb: Option<f64>,
    /// Storage profiles to measure under: `local`, `paper-ceph-hdd`, or one defined under the
    /// workload's `storage_profiles`.
    #[serde(default = "default_storage")]
    pub storage: Vec<String>,
}

fn default_storage() -> Vec<String> {
    vec![crate::storage::LOCAL.to_string()]
}

/// A map whose values are lists of YAML scalars, kept as their text.
fn scalar_lists<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
    let raw: BTreeMap<String, Vec<serde_yaml_ng::Value>> = BTreeMap::deserialize(d)?;
    raw.into_iter()
        .map(|(k, values)| {
            let texts = values
                .into_iter()
                .map(|v| match v {
                    serde_yaml_ng::Value::String(s) => Ok(s),
                    serde_yaml_ng::Value::Number(n) => Ok(n.to_string()),
                    serde_yaml_ng::Value::Bool(b) => Ok(b.to_string()),
                    other => Err(de::Error::custom(format!(
                        "values of `{k}` must be scalars, got {other:?}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((k, texts))
        })
        .collect()
}

fn default_codecs() -> Vec<Codec> {
    vec![Codec::None]
}
fn default_threads() -> Vec<usize> {
    vec![1, 2, 4, 8]
}
fn default_cache() -> Vec<CacheMode> {
    vec![CacheMode::Cold]
}
fn default_trials() -> usize {
    5
}
fn default_epochs() -> usize {
    2
}
fn default_shards() -> usize {
    16
}

impl Default for SweepDefaults {
    fn default() -> Self {
        SweepDefaults {
            strategies: Vec::new(),
            codecs: default_codecs(),
            threads: default_threads(),
            cache: default_cache(),
            trials: default_trials(),
            epochs: default_epochs(),
            shards: default_shards(),
            dataset_options: BTreeMap::new(),
            dataset_mb: None,
            storage: default_storage(),
        }
    }
}
