//! What a slower loader's runs read of a store, as the manifest records it.

use serde::{Deserialize, Serialize};

/// The part of a store (of the raw files) that runs under a loader slower than the sizing
/// read: its first `n` shards (items), and of each of those shards its first `per_shard`
/// records where the shards hold more than the epochs need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "PartRecord", into = "PartRecord")]
pub struct LoaderPart {
    pub n: usize,
    pub per_shard: Option<u64>,
}

impl From<usize> for LoaderPart {
    fn from(n: usize) -> LoaderPart {
        LoaderPart { n, per_shard: None }
    }
}

/// How the manifest writes a part: a number where the shards are read whole (as folders did
/// before parts could stop within a shard), both figures where not.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum PartRecord {
    Whole(usize),
    Capped {
        shards: usize,
        records_per_shard: u64,
    },
}

impl From<PartRecord> for LoaderPart {
    fn from(record: PartRecord) -> LoaderPart {
        match record {
            PartRecord::Whole(n) => n.into(),
            PartRecord::Capped {
                shards,
                records_per_shard,
            } => LoaderPart {
                n: shards,
                per_shard: Some(records_per_shard),
            },
        }
    }
}

impl From<LoaderPart> for PartRecord {
    fn from(part: LoaderPart) -> PartRecord {
        match part.per_shard {
            None => PartRecord::Whole(part.n),
            Some(records_per_shard) => PartRecord::Capped {
                shards: part.n,
                records_per_shard,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part read whole is written as folders before wrote it (a number), one that stops
    /// within its shards with both figures; each reads back as it was.
    #[test]
    fn loader_parts_are_written_as_numbers_unless_they_stop_within_their_shards() {
        let whole = LoaderPart::from(10);
        let capped = LoaderPart {
            n: 2,
            per_shard: Some(4_000),
        };
        assert_eq!(serde_json::to_string(&whole).unwrap(), "10");
        let text = serde_json::to_string(&capped).unwrap();
        assert_eq!(text, r#"{"shards":2,"records_per_shard":4000}"#);
        assert_eq!(serde_json::from_str::<LoaderPart>("10").unwrap(), whole);
        assert_eq!(serde_json::from_str::<LoaderPart>(&text).unwrap(), capped);
    }
}
