//! Epochs sized by time, as criterion sizes its iterations: from the calibration's costs, the
//! model predicts each (strategy, codec)'s fastest cold epoch at the plan's thread counts and
//! storage, and the store gets enough source items that even that epoch lasts the floor
//! (`--min-epoch-s`). Epochs served from a cache repeat their passes over the store until they
//! last the floor, so they need no larger store. A store may hold more items than the data has by cycling over it
//! (distinct records, repeated content; its manifest says so); raw files cannot cycle, so
//! `unprocessed` needs a larger dataset, which is generated up to a cap.

use std::collections::BTreeMap;

use workloads::Codec;

use crate::analysis::model::{self, Hardware, Reading, Setting};
use crate::plan::matrix::Plan;
use crate::results::{Calibration, MachineCalibration, SizingEntry, StrategyCalibration};

/// Sizing aims this much above the floor where the model predicts the fastest cold epoch bound
/// by a storage profile's reads, which the emulator paces as the model reads them.
const MARGIN: f64 = 1.2;
/// Sizing aims this much above the floor where the model predicts the fastest cold epoch bound
/// by the CPU (the workers' or the consumer's): the calibration's costs per sample err by tens
/// of percent (at 1.3, the quick reference's cold epochs had a median of 1.67 s and 2 % under
/// 1.15 s). At 1.2, quick-ba predicted NILM `aggregated` at 2 threads CPU-bound at 166,000
/// samples a second where its cold epochs read 200,000 (bound by the disk, calibrated at 2.4
/// GB/s, the 12 KB samples' 198,000): 0.96-1.00 s, under the 1 s floor, 6b not testable.
const CPU_MARGIN: f64 = 1.3;
/// Sizing aims this much above the floor where the model predicts the fastest cold epoch bound
/// by reading a local disk: a VM's cold reads of a whole store run 15-45 % under the
/// calibration's parallel read rate (quick reproductions on the Xeon VM: 1.2-1.7 GB/s in
/// epochs against 2.0-2.2 calibrated). Epochs the model predicts CPU-bound get [`CPU_MARGIN`]
/// (the 20.48 MB synthetic store, predicted bound by deserializing, read 0.92-1.05 s cold in
/// one quick run at 1.2: the model's CPU estimate erred by more than the margin).
pub const LOCAL_READ_MARGIN: f64 = 1.5;
/// Shards of a store read under a storage profile hold, on average, this many times the
/// profile's small-file cutoff.
const SHARD_MARGIN: f64 = 1.5;
/// A raw strategy reads the dataset's first items only where this many times what the model
/// says its epochs need is under four fifths of the dataset: raw files predicted are the
/// calibration's first epoch scaled, so they get a margin over [`MARGIN`] (quick's thousand
/// CV photographs read in 10 s epochs under the emulated storage, where the floor is 1 s).
const RAW_PART_MARGIN: f64 = 1.5;
/// A loader part's timed cold epoch under this many times the floor makes it again larger
/// (`sweep/parts.rs`): no tf.data row fell under the floor in five quick runs with it
/// (`quick-bv` to `quick-bz`, the shortest cold epoch of each 1.02-1.17 s).
pub const CHECK_MARGIN: f64 = 1.15;
/// A store of prepbench's engine whose timed cold epoch lasts under this many times the floor
/// is made again larger (`sweep/checks.rs`). Cold epochs of one such store spread by more than
/// a loader part's on these VMs: NILM `aggregated` at 2 threads, its check over 1.15 s, read
/// 0.85-0.92 s in all three trials of `quick-bx` and 0.96-1.41 s in `quick-bw` (6b not testable
/// in BX, four rows under the floor in BW).
pub const STORE_CHECK_MARGIN: f64 = 1.35;
/// At most this many cold epochs time a part or a store as its runs read it, each but the
/// last growing it where it fell short of the floor (`sweep/checks.rs`, `sweep/parts.rs`).
pub const CHECK_ROUNDS: usize = 3;

/// Whether a cold epoch timed before the runs (a store's or a loader part's) lasted under
/// `margin` times the floor `floor_s` ([`STORE_CHECK_MARGIN`], [`CHECK_MARGIN`]); not where it
/// was not timed (no finite, positive seconds).
pub fn short_of(seconds: f64, floor_s: f64, margin: f64) -> bool {
    was_timed(seconds) && seconds < floor_s * margin
}

/// Whether a check's epoch was timed at all: finite, positive seconds.
pub fn was_timed(seconds: f64) -> bool {
    seconds > 0.0 && seconds.is_finite()
}
/// A store repeats its source at most this many times.
pub const MAX_CYCLES: usize = 1024;
/// A sized store holds at most this many bytes (uncompressed estimate from the calibration),
/// unless the local disk reads so fast that its cold epochs would end before the floor
/// ([`store_byte_cap`]).
pub const MAX_STORE_BYTES: f64 = 3e9;
/// On a disk that fast, a sized store holds at most this many bytes, and at most a third of the
/// machine's memory (its warm epochs read it from the page cache).
pub const MAX_FAST_STORE_BYTES: f64 = 8e9;
/// The dataset grows at most this many times its requested size for `unprocessed` (a dataset
/// cheap to generate, up to a store's byte cap of files; see [`growth_cap`]).
pub const MAX_SOURCE_GROWTH: usize = 8;

/// The bytes a sized store may hold on `machine`, with `memory_bytes` of memory (0: not known),
/// for epochs of `floor_s`: [`MAX_STORE_BYTES`], or where the disk's calibrated read rate would
/// read that in less than the floor with [`LOCAL_READ_MARGIN`], what it reads in that time, up
/// to [`MAX_FAST_STORE_BYTES`] and a third of the memory. At 3 GB, quick's stores of CV
/// `pixel-centered`, MP3 and FLAC `spectrogram-encoded` and NILM `decoded` read cold in 0.86-0.99
/// s on a VM whose disk was calibrated at 2.6-3.3 GB/s (`quick-bd`, `quick-be`): their checks
/// not testable, the audio pipelines' best strategy undetermined.
pub fn store_byte_cap(machine: &MachineCalibration, floor_s: f64, memory_bytes: u64) -> f64 {
    let read_bytes_s = machine.parallel_read_mb_s.max(machine.seq_read_mb_s) * 1e6;
    let ceiling = MAX_FAST_STORE_BYTES
        .min(memory_bytes as f64 / 3.0)
        .max(MAX_STORE_BYTES);
    // `max` passes over a NaN, where `clamp` keeps it: a rate not measured keeps the cap.
    (floor_s * read_bytes_s * LOCAL_READ_MARGIN)
        .max(MAX_STORE_BYTES)
        .min(ceiling)
}

/// How many times its size a dataset of `bytes` may grow for raw epochs' length: a few times
/// when generating is costly (encoders), up to `byte_cap` ([`store_byte_cap`]: a fast disk's
/// raw files grow as far as its stores) when it is not.
pub fn growth_cap(cheap_to_generate: bool, bytes: u64, byte_cap: f64) -> usize {
    let by_bytes = (byte_cap / (bytes as f64).max(1.0)) as usize;
    if cheap_to_generate {
        MAX_SOURCE_GROWTH.max(by_bytes)
    } else {
        MAX_SOURCE_GROWTH
    }
}

/// How many times its size the dataset of `spec` may grow for raw epochs' length: not at all
/// when it is the user's (a path, `--dataset`) or its kind cannot be generated (a folder of
/// files is all there is: prepbench never writes into it), else [`growth_cap`] within
/// `byte_cap`.
pub fn dataset_growth(spec: &workloads::WorkloadSpec, bytes: u64, byte_cap: f64) -> usize {
    match datasets::find_kind(&spec.dataset.kind) {
        Ok(kind) if spec.dataset.path.is_none() && kind.generate_one.is_some() => {
            growth_cap(kind.cheap_to_generate, bytes, byte_cap)
        }
        _ => 1,
    }
}

/// How many source items each part of a sweep reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sizes {
    /// Items of the dataset (what `unprocessed` reads each epoch).
    pub source_items: usize,
    /// Items of each store, by (strategy, codec): beyond `source_items` a store cycles over
    /// the source, below it it holds the source's first items (never fewer than the dataset
    /// had before it grew for the raw files).
    pub store_items: BTreeMap<(String, Codec), usize>,
    /// What the sizing could not reach within its caps, in words.
    pub capped: Vec<String>,
    /// The parts of the stores (raw files) that runs under a loader slower than these sizes
    /// read, as the folder recorded them (`SizingEntry::loader_parts`).
    pub loader_parts: BTreeMap<String, crate::results::LoaderPart>,
    /// The first items of the dataset that each raw strategy reads under prepbench's own
    /// engine, where the dataset as asked for holds far more than its epochs need
    /// ([`RAW_PART_MARGIN`]).
    pub raw_parts: BTreeMap<String, usize>,
    /// The most items each store may hold (its byte cap, [`MAX_CYCLES`]), by (strategy, codec).
    pub store_caps: BTreeMap<(String, Codec), usize>,
    /// The items of the stores whose cold epoch was timed before their runs, as the folder
    /// recorded them (`SizingEntry::checked`): each store holds at least these, and one
    /// holding just these is not timed again (`sweep/checks.rs`).
    pub checked: BTreeMap<(String, Codec), usize>,
}

impl Sizes {
    /// The manifest's record of these sizes for epochs of `floor_s`.
    pub fn to_entry(&self, floor_s: f64, samples_per_item: f64) -> SizingEntry {
        SizingEntry {
            min_epoch_s: floor_s,
            source_items: self.source_items,
            source_samples: Some((self.source_items as f64 * samples_per_item).round() as u64),
            stores: self
                .store_items
                .iter()
                .map(|((s, c), n)| (SizingEntry::store_key(s, c), *n))
                .collect(),
            capped: self.capped.clone(),
            loader_parts: self.loader_parts.clone(),
            parts_timed_on: BTreeMap::new(),
            // Recorded by the checks themselves (`sweep/checks.rs`) and carried over by
            // `SizingEntry::keep_from`.
            checked: BTreeMap::new(),
        }
    }

    /// Items the store of `strategy` with `codec` holds.
    pub fn store_items(&self, strategy: &str, codec: Codec) -> usize {
        self.store_items
            .get(&(strategy.to_string(), codec))
            .copied()
            .unwrap_or(self.source_items)
    }
}

/// A cell's prediction inputs: its calibration, the machine as the cell's storage reads, the
/// setting, and whether that storage is the local disk.
type Predict<'c> = (&'c StrategyCalibration, Hardware, Setting, bool);

/// The fastest cold epoch over `predicts` (samples/s), as a store of `(shards, samples)`
/// reads (raw files, `None`: as calibrated), and the margin its sizing takes:
/// [`LOCAL_READ_MARGIN`] where reading the local disk binds it, [`MARGIN`] where a storage
/// profile does, else [`CPU_MARGIN`].
fn fastest_cold(predicts: &[Predict], store: Option<(usize, f64)>) -> (f64, f64) {
    predicts
        .iter()
        .map(|(cal, hw, setting, local)| {
            let p = match store {
                Some((shards, samples)) => {
                    model::predict(&model::laid_out(cal, shards, samples), hw, setting)
                }
                None => model::predict(cal, hw, setting),
            };
            let margin = match (p.binds, *local) {
                ("storage", true) => LOCAL_READ_MARGIN,
                ("storage", false) => MARGIN,
                _ => CPU_MARGIN,
            };
            (p.predicted, margin)
        })
        .fold((0.0, MARGIN), |a, b| if b.0 > a.0 { b } else { a })
}

/// The sizes that make every epoch of `plan` last `floor_s`, for a workload whose dataset
/// now has `source_items` items making `samples_per_item` samples each, and may grow
/// `max_growth` times for the raw files, on a machine with `memory_bytes` of memory (0: not
/// known; see [`store_byte_cap`]).
pub fn sizes(
    plan: &Plan,
    workload: &str,
    calibration: &Calibration,
    floor_s: f64,
    (source_items, samples_per_item): (usize, f64),
    (max_growth, memory_bytes): (usize, u64),
) -> Sizes {
    let mut out = Sizes {
        source_items,
        ..Sizes::default()
    };
    let Some(machine) = calibration.machine.as_ref() else {
        return out;
    };
    // The cells of each (strategy, codec), predicted as a store of a given size would read
    // (its shard files grow with it: files under a storage profile's small-file cutoff are read
    // as random requests, larger ones streamed), and the items that keep its shard files at
    // least that cutoff (a tiny compressed store would measure the profile's small-file rate,
    // not a record store's).
    let mut cells: BTreeMap<(usize, String, Codec), Vec<Predict>> = BTreeMap::new();
    let mut least: BTreeMap<(String, Codec), usize> = BTreeMap::new();
    for cell in &plan.cells {
        let Some(cal) = calibration.strategy(workload, &cell.strategy.name, cell.codec) else {
            continue;
        };
        let hw = model::this_machine(machine, Some(&cell.storage));
        if !cell.storage.is_passthrough() && cell.strategy.split > 0 {
            // On average half again the cutoff, so that shards smaller than the mean (items
            // differ in size) still stream: one shard under it reads as hundreds of requests.
            let shard_bytes = cell.storage.small_file_kb * 1024.0 * SHARD_MARGIN;
            let per_item_bytes = (cal.bytes_per_sample * samples_per_item).max(1.0);
            let items = (plan.shards as f64 * shard_bytes / per_item_bytes).ceil() as usize;
            let entry = least
                .entry((cell.strategy.name.clone(), cell.codec))
                .or_default();
            *entry = (*entry).max(items);
        }
        // The cold epoch only: an epoch served from a cache repeats its passes until it lasts
        // the floor (`OnlineJob::min_s`), so no store is sized for the cache's speed.
        let setting = Setting {
            threads: cell.threads,
            samples: None,
            reading: Reading::Cold,
            consumer: plan.consumer,
        };
        cells
            .entry((cell.strategy.split, cell.strategy.name.clone(), cell.codec))
            .or_default()
            .push((cal, hw, setting, cell.storage.is_passthrough()));
    }
    let byte_cap = store_byte_cap(machine, floor_s, memory_bytes);
    let per_item = samples_per_item.max(1e-9);
    // Items for epochs of the floor at `sps` samples/s, with the margin its bound asks.
    let needed = |(sps, margin): (f64, f64)| (floor_s * sps * margin / per_item).ceil() as usize;
    let fastest = |predicts: &[Predict], items: Option<usize>| {
        fastest_cold(predicts, items.map(|n| (plan.shards, n as f64 * per_item)))
    };
    // Raw files first: the dataset they grow is what the stores then cycle over.
    let mut raw = Vec::new();
    for ((split, name, _), predicts) in &cells {
        if *split > 0 {
            continue;
        }
        let (want, cap) = (needed(fastest(predicts, None)), source_items * max_growth);
        if want > cap {
            out.capped.push(format!(
                "{name}: {want} items for {floor_s} s epochs, capped at {cap} (raw files do not cycle)"
            ));
        }
        out.source_items = out.source_items.max(want.min(cap));
        let threads = predicts.iter().map(|p| p.2.threads).max().unwrap_or(1);
        raw.push((name.clone(), want, threads));
    }
    for (name, want, threads) in raw {
        let part = ((want as f64 * RAW_PART_MARGIN).ceil() as usize).max(4 * threads);
        if (part as f64) < 0.8 * out.source_items as f64 {
            out.raw_parts.insert(name, part);
        }
    }
    for ((split, name, codec), predicts) in cells {
        if split == 0 {
            continue;
        }
        let bytes_per_sample = predicts[0].0.bytes_per_sample;
        // Stores hold at least the dataset as asked for, even where the raw files grow it.
        let floor_items = least
            .get(&(name.clone(), codec))
            .copied()
            .unwrap_or(0)
            .max(source_items);
        // A larger store has larger shard files, which the model reads no slower: grow the
        // store until the epoch it predicts for that size lasts the floor.
        let mut want = floor_items;
        for _ in 0..16 {
            let next = needed(fastest(&predicts, Some(want))).max(floor_items);
            if next <= want {
                break;
            }
            want = next;
        }
        // Rounded up as `want` is: where the disk binds, the cap is the want itself (both are
        // the disk's rate for the floor with its margin), which flooring called capped by
        // one item (`quick-bg`: "3553 items for 1 s epochs, capped at 3552").
        let by_bytes = (byte_cap / (bytes_per_sample * per_item).max(1.0)).ceil() as usize;
        let cap = (out.source_items * MAX_CYCLES)
            .min(by_bytes)
            .max(source_items);
        if want > cap {
            out.capped.push(format!(
                "{name} ({codec}): {want} items for {floor_s} s epochs, capped at {cap}"
            ));
        }
        // Both `want` and `cap` are at least the dataset as asked for.
        out.store_items.insert((name.clone(), codec), want.min(cap));
        out.store_caps.insert((name, codec), cap);
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
            passes: 1,
            bytes_per_sample: bytes,
            files_per_sample: 1.0,
            output_bytes_per_sample: bytes,
            read_s: 0.0,
            decompress_s: 0.0,
            deserialize_s: 0.0,
            steps: vec![("work".into(), worker_s)],
            consumer_s: 1e-7,
            epoch_s: 0.0,
            disturbed_pct: None,
        }
    }

    /// A calibration of a 2-core machine reading (sequential, parallel) MB/s cold.
    fn calibrated((seq_read_mb_s, parallel_read_mb_s): (f64, f64)) -> Calibration {
        Calibration {
            machine: Some(MachineCalibration {
                hostname: "h".into(),
                cpu_model: String::new(),
                cores: 2,
                dir: "/".into(),
                measured_utc: String::new(),
                memcpy_gb_s: 10.0,
                seq_read_mb_s,
                parallel_read_mb_s,
                streams: 2,
                small_file_ms: 0.05,
                request_ms: 0.05,
                resident_after_evict_pct: 0.0,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn fast_stores_cycle_slow_raw_files_grow_the_dataset_and_caps_hold() {
        let mut calibration = calibrated((20000.0, 40000.0));
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
        let s = sizes(
            &plan,
            "cv",
            &calibration,
            1.0,
            (100, 1.0),
            (MAX_SOURCE_GROWTH, 0),
        );
        // Raw files: 1000/s on 2 threads x 1 s x the margin = 1300 items, more than the 8x
        // growth allowed, so capped at 800 and said.
        assert_eq!(s.source_items, 100 * MAX_SOURCE_GROWTH, "{s:?}");
        // The fast store wants 20000/s x 1.3 = 25975 items cold (a fast disk): within 1024
        // cycles of the dataset as grown for the raw files, but held to 3 GB of 0.2 MB samples.
        assert_eq!(s.store_items("resized", Codec::None), 15_000, "{s:?}");
        // The huge one (100 MB a sample) is held by the byte cap: fewer items than the grown
        // dataset (its first ones), never fewer than the dataset held before it grew.
        assert_eq!(s.store_items("pixel-centered", Codec::None), 100, "{s:?}");
        assert_eq!(s.capped.len(), 3, "{s:?}");
        assert!(s.capped[0].contains("raw files do not cycle"), "{s:?}");
        // A slower machine needs fewer items: the same costs at a tenth of the floor.
        let short = sizes(
            &plan,
            "cv",
            &calibration,
            0.1,
            (100, 1.0),
            (MAX_SOURCE_GROWTH, 0),
        );
        // (Cold reads add to the 2 ms and 0.1 ms of work: a little under 130 and 2600.)
        assert!((110..130).contains(&short.source_items), "{short:?}");
        let resized = short.store_items("resized", Codec::None);
        assert!((1300..2600).contains(&resized), "{short:?}");
        // A dataset cheap to generate grows up to the byte cap instead (100 items of 0.1 MB
        // may grow 300 times), so its raw epochs reach the floor.
        assert_eq!(growth_cap(true, 100 * 100_000, MAX_STORE_BYTES), 300);
        assert_eq!(
            growth_cap(false, 100 * 100_000, MAX_STORE_BYTES),
            MAX_SOURCE_GROWTH
        );
        assert_eq!(
            growth_cap(true, 10_000_000_000, MAX_STORE_BYTES),
            MAX_SOURCE_GROWTH
        );
        // On a disk fast enough to lift a store's cap, raw files grow as far (`quick-bg`: two
        // 20.48 MB synthetic files grown 73 times to 3 GB, 146 where 185 were wanted, while
        // its stores were allowed 3.8 GB; 4.95 GB is the cap at `quick-bd`'s 3.3 GB/s).
        assert_eq!(growth_cap(true, 40_960_000, MAX_STORE_BYTES), 73);
        assert_eq!(growth_cap(true, 40_960_000, 4.95e9), 120);
        let cheap = sizes(
            &plan,
            "cv",
            &calibration,
            1.0,
            (100, 1.0),
            (growth_cap(true, 10_000_000, MAX_STORE_BYTES), 0),
        );
        assert!(
            cheap.source_items > 800 && cheap.capped.len() == 2,
            "{cheap:?}"
        );
        // Without a calibrated machine nothing is sized.
        let bare = sizes(
            &plan,
            "cv",
            &Calibration::default(),
            1.0,
            (100, 1.0),
            (MAX_SOURCE_GROWTH, 0),
        );
        assert_eq!(bare.source_items, 100);
        assert!(bare.store_items.is_empty());
        // Raw epochs that need a part of the dataset read its first items, with a margin over
        // the model's: a little under 1000/s wants about 1170 items of a 10,000-item dataset
        // (the floor with its margin), and the part half again as many.
        assert!(
            s.raw_parts.is_empty() && cheap.raw_parts.is_empty(),
            "{s:?}"
        );
        let large = sizes(&plan, "cv", &calibration, 1.0, (10_000, 1.0), (1, 0));
        assert_eq!(large.source_items, 10_000);
        let part = large.raw_parts["unprocessed"];
        assert!((1600..1900).contains(&part), "{large:?}");
        // Nor where the part would read most of the dataset anyway.
        let near = sizes(&plan, "cv", &calibration, 1.0, (2_100, 1.0), (1, 0));
        assert!(near.raw_parts.is_empty(), "{near:?}");
    }

    /// A disk that reads 3 GB in less than the floor lifts the byte cap to what a cold epoch
    /// of the floor reads, within the memory's third and [`MAX_FAST_STORE_BYTES`]; a slower one,
    /// or a machine whose memory is not known, keeps [`MAX_STORE_BYTES`].
    #[test]
    fn a_fast_disk_lifts_the_byte_cap_within_the_memory() {
        let machine = |rates| calibrated(rates).machine.unwrap();
        let gb = 1e9 as u64;
        let slow = machine((1500.0, 1400.0));
        assert_eq!(store_byte_cap(&slow, 1.0, 24 * gb), MAX_STORE_BYTES);
        let fast = machine((3300.0, 3250.0));
        assert!((store_byte_cap(&fast, 1.0, 24 * gb) - 4.95e9).abs() < 1e3);
        assert_eq!(store_byte_cap(&fast, 1.0, 6 * gb), MAX_STORE_BYTES);
        assert_eq!(store_byte_cap(&fast, 1.0, 0), MAX_STORE_BYTES);
        assert_eq!(store_byte_cap(&fast, 0.5, 24 * gb), MAX_STORE_BYTES);
        let faster = machine((10_000.0, 9000.0));
        assert_eq!(store_byte_cap(&faster, 1.0, 64 * gb), MAX_FAST_STORE_BYTES);
        assert_eq!(store_byte_cap(&faster, 1.0, 15 * gb), 5e9);
        let unmeasured = machine((f64::NAN, f64::NAN));
        assert_eq!(store_byte_cap(&unmeasured, 1.0, 24 * gb), MAX_STORE_BYTES);

        // A store of 0.6 MB samples cheap to read, as CV `pixel-centered`: bound by the disk at
        // 3.25 GB/s, it wants about 4.9 GB for the floor with the local read's margin.
        let mut calibration = calibrated((3300.0, 3250.0));
        let c = cost("pixel-centered", 4, 1e-6, 6e5);
        calibration.strategies.insert(c.key(), c);
        let workload = workloads::load("cv").unwrap();
        let opts = SweepOptions {
            workload: "cv".into(),
            strategies: Some(vec!["pixel-centered".into()]),
            codecs: Some(vec![Codec::None]),
            threads: Some(vec![2]),
            trials: Some(1),
            ..Default::default()
        };
        let plan = Plan::new(&workload, &opts).unwrap();
        let sized = |memory| sizes(&plan, "cv", &calibration, 1.0, (100, 1.0), (1, memory));
        let roomy = sized(24 * gb);
        let items = roomy.store_items("pixel-centered", Codec::None);
        // At the calibrated rate its cold epoch lasts the floor and more.
        assert!(items as f64 * 6e5 / 3.25e9 > 1.2, "{roomy:?}");
        assert!(roomy.capped.is_empty(), "{roomy:?}");
        // Samples whose size does not divide the cap: the disk binds, so the store the floor
        // wants is what the cap allows, not one item more (it was said capped by one).
        let mut odd = calibration.clone();
        let c = cost("pixel-centered", 4, 1e-6, 6.1e5);
        odd.strategies.insert(c.key(), c);
        let odd = sizes(&plan, "cv", &odd, 1.0, (100, 1.0), (1, 24 * gb));
        let cap = store_byte_cap(&calibration.machine.clone().unwrap(), 1.0, 24 * gb) / 6.1e5;
        let items = odd.store_items("pixel-centered", Codec::None) as f64;
        assert!(
            items <= cap.ceil() && items > 1.2 * 3.25e9 / 6.1e5,
            "{odd:?}"
        );
        assert!(odd.capped.is_empty(), "{odd:?}");
        // With memory unknown the old cap holds it: 0.92 s at that rate, and said.
        let unknown = sized(0);
        assert_eq!(unknown.store_items("pixel-centered", Codec::None), 5000);
        assert_eq!(unknown.capped.len(), 1, "{unknown:?}");
    }

    /// Under an emulated profile a store read as small files (its base size) streams once
    /// sized up: the model is asked about the store at the size it would have, not the one it
    /// was calibrated on, or the store stays at a fraction of the floor.
    #[test]
    fn stores_are_predicted_at_the_size_they_will_have() {
        let mut calibration = calibrated((2000.0, 4000.0));
        // 0.3 MB samples, 1 ms of work each; calibrated on 24 items in 16 shards (0.45 MB
        // files, under the profile's 1 MiB small-file cutoff: random 4 KiB requests).
        let mut resized = cost("resized", 3, 1e-3, 3e5);
        resized.files_per_sample = 16.0 / 24.0;
        calibration.strategies.insert(resized.key(), resized);
        let workload = workloads::load("cv").unwrap();
        let opts = SweepOptions {
            workload: "cv".into(),
            strategies: Some(vec!["resized".into()]),
            codecs: Some(vec![Codec::None]),
            threads: Some(vec![2]),
            trials: Some(1),
            storage: Some(vec!["paper-ceph-hdd".into()]),
            ..Default::default()
        };
        let mut plan = Plan::new(&workload, &opts).unwrap();
        plan.shards = 16;
        let s = sizes(
            &plan,
            "cv",
            &calibration,
            1.0,
            (24, 1.0),
            (MAX_SOURCE_GROWTH, 0),
        );
        let items = s.store_items("resized", Codec::None);
        // Streamed (1.4 ms a sample at 219 MB/s, plus 1 ms of work, on 2 readers: ~840/s),
        // the store needs about 1100 items for 1.3 s, where the small-file rate of the
        // calibrated layout (4 KiB requests: ~45/s) would ask for the 56 of the shard cutoff.
        assert!((900..1300).contains(&items), "{s:?}");
        assert!(s.capped.is_empty(), "{s:?}");
        // However slow the work, the shards stay streamed: 16 shards of 1.5 MiB of 0.3 MB
        // samples on average, 84 items.
        let mut slow = calibration.clone();
        for c in slow.strategies.values_mut() {
            c.steps = vec![("work".into(), 1.0)];
        }
        let s = sizes(&plan, "cv", &slow, 1.0, (24, 1.0), (MAX_SOURCE_GROWTH, 0));
        assert_eq!(s.store_items("resized", Codec::None), 84, "{s:?}");
    }
}
