//! A dataset variant (the options one point of a sweep's `dataset_options` sets) as a value,
//! and the label runs are recorded under: written by [`WorkloadLabel::format`] and read back by
//! [`WorkloadLabel::parse`], the one place each happens.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Dataset options a variant sets, by name; empty for the workload itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Variant(BTreeMap<String, String>);

impl Variant {
    pub fn new(options: BTreeMap<String, String>) -> Variant {
        Variant(options)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The options it sets, in name order.
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// The value it gives option `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

/// `key=value,key=value`, in name order.
impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// A workload label as recorded in results (`name` or `name@key=value,...`), read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadLabel {
    /// The workload's own name.
    pub base: String,
    /// The variant's options; empty for the workload itself.
    pub variant: Variant,
    /// The variant as recorded (`key=value,...`), `None` for the workload itself.
    pub tag: Option<String>,
}

impl WorkloadLabel {
    /// The label of `name`'s `variant`.
    pub fn format(name: &str, variant: &Variant) -> String {
        if variant.is_empty() {
            name.to_string()
        } else {
            format!("{name}@{variant}")
        }
    }

    /// Reads a recorded label. Option values hold no `,` or `=` (dataset options are scalars),
    /// so the tag splits back into the options it was written from.
    pub fn parse(label: &str) -> WorkloadLabel {
        match label.split_once('@') {
            Some((base, tag)) => WorkloadLabel {
                base: base.to_string(),
                variant: Variant(
                    tag.split(',')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                tag: Some(tag.to_string()),
            },
            None => WorkloadLabel {
                base: label.to_string(),
                variant: Variant::default(),
                tag: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_written_and_read_back_in_one_place() {
        let variant = Variant::new(BTreeMap::from([
            ("mb_per_sample".to_string(), "0.01".to_string()),
            ("dtype".to_string(), "uint8".to_string()),
        ]));
        let label = WorkloadLabel::format("synthetic-reading", &variant);
        assert_eq!(label, "synthetic-reading@dtype=uint8,mb_per_sample=0.01");
        let read = WorkloadLabel::parse(&label);
        assert_eq!(read.base, "synthetic-reading");
        assert_eq!(read.variant, variant);
        assert_eq!(read.tag.as_deref(), Some("dtype=uint8,mb_per_sample=0.01"));
        let plain = WorkloadLabel::parse("cv");
        assert_eq!((plain.base.as_str(), plain.tag), ("cv", None));
        assert_eq!(WorkloadLabel::format("cv", &Variant::default()), "cv");
    }
}
