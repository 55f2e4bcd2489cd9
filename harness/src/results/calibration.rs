//! What calibration measured, as recorded under `calibration` in a results folder's manifest:
//! the machine's storage and memory figures and each (strategy, codec)'s costs per sample. The
//! prediction model reads these; `measure::calibrate` measures them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use workloads::Codec;

/// The size of the small files the machine calibration reads cold (`small_file_ms`).
pub const SMALL_FILE_BYTES: usize = 16 * 1024;

/// Seconds as milliseconds to the microsecond; a figure that rounds to zero is `0.000`, never
/// `-0.000` (an estimate a hair below zero).
fn ms(seconds: f64) -> String {
    let text = format!("{:.3}", seconds * 1e3);
    if text == "-0.000" {
        "0.000".into()
    } else {
        text
    }
}

/// The machine's figures the model uses.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MachineCalibration {
    pub hostname: String,
    pub cores: usize,
    /// The processor it was measured on: a virtual machine keeps its hostname when it moves
    /// to another host (this project's VM moved from an AMD EPYC, whose calibration read 2.6
    /// GB/s cold, to an Intel Xeon reading 1.8-2.1). Empty in calibrations from before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_model: String,
    /// Where the storage figures were measured (the store directory).
    pub dir: String,
    pub measured_utc: String,
    /// `memcpy` of a 64 MiB buffer, GB/s.
    pub memcpy_gb_s: f64,
    /// One stream of 1 MiB reads of an evicted file, MB/s.
    pub seq_read_mb_s: f64,
    /// `streams` such streams at once, each over its own file, MB/s in all.
    pub parallel_read_mb_s: f64,
    pub streams: usize,
    /// Opening and reading one evicted 16 KiB file, ms (one reader).
    pub small_file_ms: f64,
    /// One random 4 KiB read of an evicted file, ms.
    pub request_ms: f64,
    /// Share of the test files' pages still cached after eviction (0 on a real disk; tmpfs
    /// cannot evict, and the storage figures are then the page cache's).
    pub resident_after_evict_pct: f64,
}

/// One (strategy, codec)'s costs per sample, from a warm one-thread epoch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StrategyCalibration {
    pub workload: String,
    pub strategy: String,
    pub split: usize,
    pub codec: Codec,
    /// Samples the calibration's warm epoch delivered, over all its passes.
    pub samples: u64,
    /// Passes over the strategy's samples (repeated until the epoch lasted long enough); one
    /// in calibrations recorded before passes repeated.
    #[serde(default = "one_pass")]
    pub passes: u64,
    /// Bytes an epoch reads per sample: the stored shards, or the raw files for unprocessed.
    pub bytes_per_sample: f64,
    /// Files an epoch opens per sample (raw files, or shards over samples).
    pub files_per_sample: f64,
    /// Bytes the consumer receives per sample.
    pub output_bytes_per_sample: f64,
    /// Reading from the page cache (shard reads, `read_file`), s per sample.
    pub read_s: f64,
    /// Decompressing and unframing, s per sample.
    pub decompress_s: f64,
    /// Decoding records into samples, s per sample.
    pub deserialize_s: f64,
    /// Each online step other than `read_file`, s per sample.
    pub steps: Vec<(String, f64)>,
    /// The consumer's busy time (receiving and touching samples), s per sample.
    pub consumer_s: f64,
    /// What an epoch costs beyond its samples (starting the worker, opening files, draining
    /// the queue): the epoch's wall time less the worker's stages, s per epoch.
    #[serde(default)]
    pub epoch_s: f64,
    /// CPU used by other processes and stolen by the hypervisor during the epoch kept, % of
    /// the machine (an epoch past 10 % is measured again, up to three times, and the first quiet
    /// one kept, else the cheapest); absent in calibrations from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed_pct: Option<f64>,
}

fn one_pass() -> u64 {
    1
}

impl StrategyCalibration {
    /// The distinct samples the calibration read: those of one pass.
    pub fn distinct_samples(&self) -> u64 {
        self.samples / self.passes.max(1)
    }

    /// The key in the manifest: `workload/strategy/codec`.
    pub fn key(&self) -> String {
        key(&self.workload, &self.strategy, self.codec)
    }

    /// Bytes of each file it reads: a shard of the store, or a raw file.
    pub fn file_bytes(&self) -> f64 {
        self.bytes_per_sample / self.files_per_sample.max(1e-12)
    }

    /// Worker CPU seconds per sample with the input in memory already (application cache).
    pub fn compute_s(&self) -> f64 {
        self.steps.iter().map(|(_, s)| s).sum()
    }

    /// Worker CPU seconds per sample reading from the page cache.
    pub fn worker_s(&self) -> f64 {
        self.read_s + self.decompress_s + self.deserialize_s + self.compute_s()
    }

    /// Decompression seconds per stored byte.
    pub fn decompress_s_per_byte(&self) -> f64 {
        if self.bytes_per_sample > 0.0 {
            self.decompress_s / self.bytes_per_sample
        } else {
            0.0
        }
    }
}

pub fn key(workload: &str, strategy: &str, codec: Codec) -> String {
    format!("{workload}/{strategy}/{codec}")
}

/// Everything calibrated for a results folder.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub machine: Option<MachineCalibration>,
    /// By `workload/strategy/codec`.
    pub strategies: BTreeMap<String, StrategyCalibration>,
}

impl Calibration {
    pub fn strategy(
        &self,
        workload: &str,
        strategy: &str,
        codec: Codec,
    ) -> Option<&StrategyCalibration> {
        self.strategies.get(&key(workload, strategy, codec))
    }

    /// The calibrated workloads, sorted.
    pub fn workloads(&self) -> std::collections::BTreeSet<&str> {
        self.strategies
            .values()
            .map(|s| s.workload.as_str())
            .collect()
    }

    /// Adds `other`'s entries (its machine replaces ours).
    pub fn merge(&mut self, other: Calibration) {
        if other.machine.is_some() {
            self.machine = other.machine;
        }
        self.strategies.extend(other.strategies);
    }
}

impl MachineCalibration {
    /// The figures in words, with a note when the test files could not be evicted.
    pub fn summary(&self) -> String {
        format!(
            "memcpy {:.1} GB/s; cold sequential read {:.0} MB/s with one stream and {:.0} MB/s with {}; a small file {:.3} ms; a random 4 KiB read {:.3} ms{}",
            self.memcpy_gb_s,
            self.seq_read_mb_s,
            self.parallel_read_mb_s,
            self.streams,
            self.small_file_ms,
            self.request_ms,
            if self.resident_after_evict_pct > 1.0 {
                format!(
                    " (the test files stayed {:.0} % cached after eviction, tmpfs?: the read figures are the page cache's)",
                    self.resident_after_evict_pct
                )
            } else {
                String::new()
            }
        )
    }
}

/// The calibration lines `prepbench calibrate` prints.
pub fn describe(c: &Calibration) -> String {
    let mut out = String::new();
    if let Some(m) = &c.machine {
        out.push_str(&format!(
            "machine {} ({} cores), storage measured in {}:\n  {}\n",
            m.hostname,
            m.cores,
            m.dir,
            m.summary()
        ));
    }
    let rows: Vec<Vec<String>> = c
        .strategies
        .values()
        .map(|s| {
            vec![
                s.key(),
                format!("{:.4}", s.bytes_per_sample / 1e6),
                ms(s.read_s),
                ms(s.decompress_s),
                ms(s.deserialize_s),
                ms(s.compute_s()),
                ms(s.consumer_s),
                format!("{:.2}", s.decompress_s_per_byte() * 1e9),
            ]
        })
        .collect();
    out.push_str(&crate::markdown::table(
        &[
            "workload/strategy/codec",
            "MB/sample",
            "read ms",
            "decompress ms",
            "deserialize ms",
            "steps ms",
            "consumer ms",
            "decompress ns/byte",
        ],
        &rows,
    ));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn milliseconds_never_print_a_negative_zero() {
        assert_eq!(super::ms(-1e-9), "0.000");
        assert_eq!(super::ms(0.0012345), "1.234");
        assert_eq!(super::ms(-0.002), "-2.000");
    }
}
