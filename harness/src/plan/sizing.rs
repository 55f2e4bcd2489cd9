//! Epochs sized by time, as criterion sizes its iterations: from the calibration's costs, the
//! model predicts each (strategy, codec)'s fastest epoch at the plan's thread counts and
//! storage, and the store gets enough source items that even that epoch lasts the floor
//! (`--min-epoch-s`). A store may hold more items than the data has by cycling over it
//! (distinct records, repeated content; its manifest says so); raw files cannot cycle, so
//! `unprocessed` needs a larger dataset, which is generated up to a cap.

use std::collections::BTreeMap;

use workloads::Codec;

use crate::analysis::model::{self, Reading, Setting};
use crate::plan::matrix::Plan;
use crate::results::{Calibration, SizingEntry};

/// Sizing aims this much above the floor: the model errs by a few to tens of percent.
const MARGIN: f64 = 1.3;
/// A store repeats its source at most this many times.
pub const MAX_CYCLES: usize = 1024;
/// A sized store holds at most this many bytes (uncompressed estimate from the calibration).
pub const MAX_STORE_BYTES: f64 = 3e9;
/// The dataset grows at most this many times its requested size for `unprocessed`.
pub const MAX_SOURCE_GROWTH: usize = 8;

/// How many source items each part of a sweep reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sizes {
    /// Items of the dataset (what `unprocessed` reads each epoch).
    pub source_items: usize,
    /// Items of each store, by (strategy, codec); at least `source_items`.
    pub store_items: BTreeMap<(String, Codec), usize>,
    /// What the sizing could not reach within its caps, in words.
    pub capped: Vec<String>,
}

impl Sizes {
    /// The manifest's record of these sizes for epochs of `floor_s`.
    pub fn to_entry(&self, floor_s: f64) -> SizingEntry {
        SizingEntry {
            min_epoch_s: floor_s,
            source_items: self.source_items,
            stores: self
                .store_items
                .iter()
                .map(|((s, c), n)| (format!("{s}/{c}"), (*n).max(self.source_items)))
                .collect(),
            capped: self.capped.clone(),
        }
    }

    /// Items the store of `strategy` with `codec` holds.
    pub fn store_items(&self, strategy: &str, codec: Codec) -> usize {
        self.store_items
            .get(&(strategy.to_string(), codec))
            .copied()
            .unwrap_or(self.source_items)
            .max(self.source_items)
    }
}

/// The sizes that make every epoch of `plan` last `floor_s`, for a workload whose dataset
/// now has `source_items` items making `samples_per_item` samples each.
pub fn sizes(
    plan: &Plan,
    workload: &str,
    calibration: &Calibration,
    floor_s: f64,
    source_items: usize,
    samples_per_item: f64,
) -> Sizes {
    let mut out = Sizes {
        source_items,
        ..Sizes::default()
    };
    let Some(machine) = calibration.machine.as_ref() else {
        return out;
    };
    // The fastest predicted epoch of each (strategy, codec) over its cells, and the items that
    // keep its shard files at least as large as a storage profile's small-file cutoff (a
    // profile reads smaller files as random requests: a tiny compressed store would measure
    // the profile's small-file rate, not a record store's).
    let mut fastest: BTreeMap<(usize, String, Codec), (f64, f64)> = BTreeMap::new();
    let mut least: BTreeMap<(String, Codec), usize> = BTreeMap::new();
    for cell in &plan.cells {
        let Some(cal) = calibration.strategy(workload, &cell.strategy.name, cell.codec) else {
            continue;
        };
        let hw = model::this_machine(machine, Some(&cell.storage));
        // Epochs after the first read from the page cache, unless emulated storage delays
        // every read (or there is only the cold epoch).
        let readings: &[Reading] = if plan.epochs > 1 && cell.storage.is_passthrough() {
            &[Reading::Cold, Reading::PageCache]
        } else {
            &[Reading::Cold]
        };
        let sps = readings
            .iter()
            .map(|&reading| {
                model::predict(
                    cal,
                    &hw,
                    &Setting {
                        threads: cell.threads,
                        samples: None,
                        reading,
                        consumer: plan.consumer,
                    },
                )
                .predicted
            })
            .fold(0.0, f64::max);
        if !cell.storage.is_passthrough() && cell.strategy.split > 0 {
            let shard_bytes = cell.storage.small_file_kb * 1024.0;
            let per_item_bytes = (cal.bytes_per_sample * samples_per_item).max(1.0);
            let items = (plan.shards as f64 * shard_bytes / per_item_bytes).ceil() as usize;
            let entry = least
                .entry((cell.strategy.name.clone(), cell.codec))
                .or_default();
            *entry = (*entry).max(items);
        }
        let entry = fastest
            .entry((cell.strategy.split, cell.strategy.name.clone(), cell.codec))
            .or_insert((0.0, cal.bytes_per_sample));
        entry.0 = entry.0.max(sps);
    }
    let per_item = samples_per_item.max(1e-9);
    let needed = |sps: f64| (floor_s * sps * MARGIN / per_item).ceil() as usize;
    // Raw files first: the dataset they grow is what the stores then cycle over.
    for ((split, name, _), (sps, _)) in &fastest {
        if *split > 0 {
            continue;
        }
        let (want, cap) = (needed(*sps), source_items * MAX_SOURCE_GROWTH);
        if want > cap {
            out.capped.push(format!(
                "{name}: {want} items for {floor_s} s epochs, capped at {cap} (raw files do not cycle)"
            ));
        }
        out.source_items = out.source_items.max(want.min(cap));
    }
    for ((split, name, codec), (sps, bytes_per_sample)) in fastest {
        if split == 0 {
            continue;
        }
        let want = needed(sps).max(least.get(&(name.clone(), codec)).copied().unwrap_or(0));
        let by_bytes = (MAX_STORE_BYTES / (bytes_per_sample * per_item).max(1.0)) as usize;
        let cap = (out.source_items * MAX_CYCLES)
            .min(by_bytes)
            .max(out.source_items);
        if want > cap {
            out.capped.push(format!(
                "{name} ({codec}): {want} items for {floor_s} s epochs, capped at {cap}"
            ));
        }
        out.store_items.insert((name, codec), want.min(cap));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sweep::SweepOptions;
    use crate::results::{MachineCalibration, StrategyCalibration};

    fn cost(strategy: &str, split: usize, worker_s: f64, bytes: f64) -> StrategyCalibration {
        StrategyCalibration {
            workload: "cv".into(),
            strategy: strategy.into(),
            split,
            codec: Codec::None,
            samples: 100,
            bytes_per_sample: bytes,
            files_per_sample: 1.0,
            output_bytes_per_sample: bytes,
            read_s: 0.0,
            decompress_s: 0.0,
            deserialize_s: 0.0,
            steps: vec![("work".into(), worker_s)],
            consumer_s: 1e-7,
            epoch_s: 0.0,
        }
    }

    #[test]
    fn fast_stores_cycle_slow_raw_files_grow_the_dataset_and_caps_hold() {
        let mut calibration = Calibration {
            machine: Some(MachineCalibration {
                hostname: "h".into(),
                cores: 2,
                dir: "/".into(),
                measured_utc: String::new(),
                memcpy_gb_s: 10.0,
                seq_read_mb_s: 2000.0,
                parallel_read_mb_s: 4000.0,
                streams: 2,
                small_file_ms: 0.05,
                request_ms: 0.05,
                resident_after_evict_pct: 0.0,
            }),
            ..Default::default()
        };
        // unprocessed: 2 ms a sample (1000/s on 2 threads); resized: 0.1 ms (20000/s); a huge
        // pixel-centered: 0.1 ms, but 100 MB a sample.
        for c in [
            cost("unprocessed", 0, 2e-3, 1e5),
            cost("resized", 3, 1e-4, 2e5),
            cost("pixel-centered", 4, 1e-4, 1e8),
        ] {
            calibration.strategies.insert(c.key(), c);
        }
        let workload = workloads::load("cv").unwrap();
        let opts = SweepOptions {
            workload: "cv".into(),
            strategies: Some(vec![
                "unprocessed".into(),
                "resized".into(),
                "pixel-centered".into(),
            ]),
            codecs: Some(vec![Codec::None]),
            threads: Some(vec![2]),
            trials: Some(1),
            ..Default::default()
        };
        let plan = Plan::new(&workload, &opts).unwrap();
        let s = sizes(&plan, "cv", &calibration, 1.0, 100, 1.0);
        // Raw files: 1000/s on 2 threads x 1 s x the margin = 1300 items, more than the 8x
        // growth allowed, so capped at 800 and said.
        assert_eq!(s.source_items, 100 * MAX_SOURCE_GROWTH, "{s:?}");
        // The fast store wants 20000/s x 1.3 = 25975 items: within 1024 cycles of the dataset as
        // grown for the raw files, but held to 3 GB of 0.2 MB samples.
        assert_eq!(s.store_items("resized", Codec::None), 15_000, "{s:?}");
        // The huge one is held by the byte cap, never below its source.
        assert_eq!(s.store_items("pixel-centered", Codec::None), 800, "{s:?}");
        assert_eq!(s.capped.len(), 3, "{s:?}");
        assert!(s.capped[0].contains("raw files do not cycle"), "{s:?}");
        // A slower machine needs fewer items: the same costs at a tenth of the floor.
        let short = sizes(&plan, "cv", &calibration, 0.1, 100, 1.0);
        assert_eq!(short.source_items, 130, "{short:?}");
        assert_eq!(short.store_items("resized", Codec::None), 2598, "{short:?}");
        // Without a calibrated machine nothing is sized.
        let bare = sizes(&plan, "cv", &Calibration::default(), 1.0, 100, 1.0);
        assert_eq!(bare.source_items, 100);
        assert!(bare.store_items.is_empty());
    }
}
