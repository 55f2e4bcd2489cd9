//! The model itself: storage and hardware as the model sees them, a setting, and the
//! prediction of one strategy's epoch from its calibration (see the folder's doc for the
//! formulas).

use serde::Serialize;
use workloads::{ConsumerSpec, StorageProfile};

use crate::results::{CacheState, Calibration, MachineCalibration, StrategyCalibration};
use workloads::Codec;

/// Where an epoch's input comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    /// This machine's disk, as calibrated.
    Local(MachineCalibration),
    /// A storage profile (emulated here, or hypothetical).
    Profile(StorageProfile),
}

impl Storage {
    /// Per sample for one reader: device seconds it waits for; and samples/s the storage
    /// serves in all.
    fn device(&self, cal: &StrategyCalibration) -> Device {
        let b = cal.bytes_per_sample.max(1.0);
        let f = cal.files_per_sample.max(1e-12);
        let file = b / f;
        match self {
            Storage::Local(m) => {
                let seq = m.seq_read_mb_s.max(1e-9) * 1e6;
                let small = m.small_file_ms / 1e3;
                // Reads are synchronous (prepbench reads whole records, larger than the
                // kernel's default readahead): a worker waits for each file's opening and
                // bytes before it computes.
                Device {
                    cpu: 0.0,
                    waited: f
                        * (small
                            + (file - crate::results::calibration::SMALL_FILE_BYTES as f64)
                                .max(0.0)
                                / seq),
                    aggregate: m.parallel_read_mb_s.max(m.seq_read_mb_s).max(1e-9) * 1e6 / b,
                }
            }
            // The emulation delays each read in the reader's thread: nothing overlaps.
            Storage::Profile(p) => {
                let latency = p.latency_ms / 1e3;
                let cpu = p.cpu_ms_per_mb / 1e3 * b / 1e6;
                if file < p.small_file_kb * 1024.0 {
                    let requests = (file / (p.request_kb * 1024.0)).ceil().max(1.0) * f;
                    Device {
                        cpu,
                        waited: requests * latency,
                        aggregate: p.iops.map_or(f64::INFINITY, |iops| iops / requests),
                    }
                } else {
                    let stream = p.stream_mb_s.map_or(0.0, |mb| b / (mb * 1e6));
                    Device {
                        cpu,
                        waited: f * latency + stream,
                        aggregate: p.aggregate_mb_s.map_or(f64::INFINITY, |mb| mb * 1e6 / b),
                    }
                }
            }
        }
    }
}

/// What storage costs one reader per sample (seconds it waits, and CPU seconds its
/// filesystem client spends on this machine), and the samples/s it serves in all.
struct Device {
    waited: f64,
    cpu: f64,
    aggregate: f64,
}

/// How an epoch reads: from storage cold, from the page cache, or from the application cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Reading {
    Cold,
    PageCache,
    Memory,
}

impl Reading {
    /// How an epoch that started from `cache` reads.
    pub fn of(cache: CacheState) -> Reading {
        match cache {
            CacheState::Warm | CacheState::AppMiss => Reading::PageCache,
            CacheState::App => Reading::Memory,
            CacheState::Cold | CacheState::AppFill | CacheState::NullIo => Reading::Cold,
        }
    }
}

/// The machine a prediction is for.
#[derive(Clone, Debug, PartialEq)]
pub struct Hardware {
    pub name: String,
    pub cores: usize,
    /// CPU work takes 1 / cpu_speed of the calibrated time.
    pub cpu_speed: f64,
    pub storage: Storage,
}

/// One configuration to predict.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub threads: usize,
    /// Samples per epoch, when known: the calibrated per-epoch cost is spread over them
    /// (`None`: steady state).
    pub samples: Option<u64>,
    pub reading: Reading,
    pub consumer: Option<ConsumerSpec>,
}

impl Setting {
    /// Steady-state cold reads by `threads` workers, without a consumer: what `whatif` ranks.
    pub fn cold(threads: usize) -> Setting {
        Setting {
            samples: None,
            threads,
            reading: Reading::Cold,
            consumer: None,
        }
    }
}

/// The bounds and the prediction for one strategy on one machine.
#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    pub storage_bound: f64,
    pub cpu_bound: f64,
    pub consumer_bound: f64,
    /// The roofline: the smallest bound.
    pub bound: f64,
    /// `storage`, `cpu` or `consumer`.
    pub binds: &'static str,
    /// The model's throughput, samples/s.
    pub predicted: f64,
}

/// `cal` as a store of `samples` samples in `shards` shard files reads: its files grow with
/// the store (a storage profile reads files under its small-file cutoff as random requests,
/// larger ones streamed), where the calibration measured a small store. Raw files
/// (`shards == 0`) read as calibrated.
pub fn laid_out(cal: &StrategyCalibration, shards: usize, samples: f64) -> StrategyCalibration {
    let mut sized = cal.clone();
    if shards > 0 && samples > 0.0 {
        sized.files_per_sample = shards as f64 / samples;
    }
    sized
}

pub fn predict(cal: &StrategyCalibration, hw: &Hardware, setting: &Setting) -> Prediction {
    let speed = hw.cpu_speed.max(1e-9);
    let p = match setting.reading {
        Reading::Memory => cal.compute_s(),
        _ => cal.worker_s(),
    } / speed;
    let p = p.max(1e-12);
    let s = (cal.consumer_s / speed).max(1e-12);
    let threads = setting.threads.max(1) as f64;
    let spin = setting
        .consumer
        .is_some_and(|c| c.mode == workloads::consumer::ComputeMode::Spin);
    let cores = (hw.cores as f64 - if spin { 1.0 } else { 0.0 }).max(1.0);
    let device = match setting.reading {
        Reading::Cold => hw.storage.device(cal),
        _ => Device {
            waited: 0.0,
            cpu: 0.0,
            aggregate: f64::INFINITY,
        },
    };
    // A filesystem client's CPU is the worker's too: spent after each read, on the cores.
    let p = p + device.cpu / speed;
    let (d, aggregate) = (device.waited, device.aggregate);
    let storage_bound = if d > 0.0 {
        (threads / d).min(aggregate)
    } else {
        aggregate
    };
    let cpu_bound = (threads / p).min(cores / (p + s)).min(1.0 / s);
    let consumer_bound = setting.consumer.map_or(f64::INFINITY, |c| {
        c.batch as f64 / c.compute.mean().max(1e-12)
    });
    let (bound, binds) = [
        (storage_bound, "storage"),
        (cpu_bound, "cpu"),
        (consumer_bound, "consumer"),
    ]
    .into_iter()
    .fold(
        (f64::INFINITY, "cpu"),
        |best, b| if b.0 < best.0 { b } else { best },
    );
    // A worker waits for its reads, then computes; T / (p + d) is below T / p and T / d, so
    // only the bounds' other terms can be lower.
    let steady = (threads / (p + d)).min(bound);
    let predicted = match setting.samples {
        Some(n) if n > 0 && cal.epoch_s > 0.0 => n as f64 / (n as f64 / steady + cal.epoch_s),
        _ => steady,
    };
    Prediction {
        storage_bound,
        cpu_bound,
        consumer_bound,
        bound,
        binds,
        predicted,
    }
}

/// This machine as calibrated, reading from `storage` (`local`: its own disk).
pub fn this_machine(m: &MachineCalibration, storage: Option<&StorageProfile>) -> Hardware {
    Hardware {
        name: m.hostname.clone(),
        cores: m.cores,
        cpu_speed: 1.0,
        storage: match storage {
            Some(p) if !p.is_passthrough() => Storage::Profile(p.clone()),
            _ => Storage::Local(m.clone()),
        },
    }
}

/// A throughput for tables.
pub fn sps(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

// ------------------------------------------------------------------------------ validation

/// The strategies' predictions on `hw` (cold reads, codec `codec`, `hw.cores` threads), best
/// first.
pub fn ranking<'c>(
    cal: &'c Calibration,
    workload: &str,
    codec: Codec,
    hw: &Hardware,
) -> Vec<(&'c StrategyCalibration, Prediction)> {
    let setting = Setting::cold(hw.cores);
    let mut out: Vec<_> = cal
        .strategies
        .values()
        .filter(|s| s.workload == workload && s.codec == codec)
        .map(|s| (s, predict(s, hw, &setting)))
        .collect();
    out.sort_by(|a, b| {
        b.1.predicted
            .total_cmp(&a.1.predicted)
            .then(a.0.bytes_per_sample.total_cmp(&b.0.bytes_per_sample))
    });
    out
}

#[cfg(test)]
pub(super) mod tests {
    use crate::analysis::model::*;
    use crate::results::{CacheState, StrategyCalibration};
    use workloads::{Codec, ConsumerSpec, StorageProfile};

    fn cal(bytes: f64, files: f64, worker: f64) -> StrategyCalibration {
        calibrated("s", bytes, files, worker)
    }

    /// A stored strategy's calibration: `bytes` and `files` read and `worker` CPU seconds per
    /// sample, 100 samples.
    pub(in crate::analysis::model) fn calibrated(
        strategy: &str,
        bytes: f64,
        files: f64,
        worker: f64,
    ) -> StrategyCalibration {
        StrategyCalibration {
            workload: "w".into(),
            strategy: strategy.into(),
            split: 1,
            codec: Codec::None,
            samples: 100,
            passes: 1,
            bytes_per_sample: bytes,
            files_per_sample: files,
            output_bytes_per_sample: bytes,
            read_s: 0.0,
            decompress_s: 0.0,
            deserialize_s: 0.0,
            steps: vec![("step".into(), worker)],
            consumer_s: 1e-6,
            epoch_s: 0.0,
            disturbed_pct: None,
        }
    }

    fn profile(stream: f64, aggregate: f64) -> Hardware {
        Hardware {
            name: "h".into(),
            cores: 8,
            cpu_speed: 1.0,
            storage: Storage::Profile(StorageProfile {
                stream_mb_s: Some(stream),
                aggregate_mb_s: Some(aggregate),
                latency_ms: 0.0,
                ..StorageProfile::local()
            }),
        }
    }

    fn cold(threads: usize) -> Setting {
        Setting::cold(threads)
    }

    #[test]
    fn bounds_follow_the_formulas() {
        // 10 MB in 1/16 shard per sample, 10 ms of CPU: with 4 threads the CPU allows 400/s;
        // storage 100 MB/s per reader, 200 MB/s in all: 20/s binds.
        let c = cal(10e6, 1.0 / 16.0, 0.01);
        let p = predict(&c, &profile(100.0, 200.0), &cold(4));
        assert!((p.storage_bound - 20.0).abs() < 1e-9, "{p:?}");
        assert!((p.cpu_bound - 400.0).abs() < 0.1, "{p:?}");
        assert_eq!(p.binds, "storage");
        // Each worker reads 0.1 s then computes 0.01 s: 4 / 0.11 = 36/s, capped at 20 in all.
        assert!((p.predicted - 20.0).abs() < 1e-9);
        // With fast storage the CPU binds, and cores cap the threads.
        let p = predict(&c, &profile(1e6, 1e6), &cold(16));
        assert_eq!(p.binds, "cpu");
        assert!((p.cpu_bound - 8.0 / (0.01 + 1e-6)).abs() < 1.0, "{p:?}");
        // From the page cache, storage does not bind; a faster CPU scales the CPU bound.
        let mut fast = profile(1.0, 1.0);
        fast.cpu_speed = 2.0;
        let warm = Setting {
            reading: Reading::PageCache,
            ..cold(1)
        };
        let p = predict(&c, &fast, &warm);
        assert!(p.storage_bound.is_infinite());
        assert!((p.predicted - 200.0).abs() < 0.1, "{p:?}");
        // An epoch's fixed cost is spread over its samples: 100 samples at 200/s take 0.5 s,
        // plus 0.5 s of start-up: 100/s; the roofline is unchanged.
        let mut c = c;
        c.epoch_s = 0.5;
        let p = predict(
            &c,
            &fast,
            &Setting {
                samples: Some(100),
                ..warm
            },
        );
        assert!((p.predicted - 100.0).abs() < 0.1, "{p:?}");
        assert!((p.bound - 200.0).abs() < 0.1, "{p:?}");
    }

    #[test]
    fn a_filesystem_clients_cpu_is_added_to_the_workers() {
        // 1 MB per sample, 10 ms of CPU, 8 cores and fast storage: 800/s; a client spending
        // 5 ms per MB makes each sample 15 ms of CPU: 533/s, CPU-bound still.
        let c = cal(1e6, 1.0 / 16.0, 0.01);
        let mut hw = profile(1e6, 1e6);
        let before = predict(&c, &hw, &cold(8));
        let Storage::Profile(p) = &mut hw.storage else {
            unreachable!()
        };
        p.cpu_ms_per_mb = 5.0;
        let after = predict(&c, &hw, &cold(8));
        assert_eq!(after.binds, "cpu");
        assert!(
            (before.cpu_bound / after.cpu_bound - 1.5).abs() < 1e-3,
            "{after:?}"
        );
        // From the page cache the client reads nothing.
        let warm = Setting {
            reading: Reading::PageCache,
            ..cold(8)
        };
        assert_eq!(predict(&c, &hw, &warm).cpu_bound, before.cpu_bound);
    }

    #[test]
    fn small_files_pay_latency_per_request_and_the_consumer_can_bind() {
        let mut hw = profile(100.0, 100.0);
        if let Storage::Profile(p) = &mut hw.storage {
            p.latency_ms = 1.0;
            p.iops = Some(1000.0);
        }
        // One 40 KiB file per sample: 10 requests of 1 ms per reader; 100 samples/s in all.
        let c = cal(40.0 * 1024.0, 1.0, 1e-4);
        let p = predict(&c, &hw, &cold(2));
        assert!((p.storage_bound - 100.0).abs() < 1e-6, "{p:?}");
        let consumer = ConsumerSpec::from_label("32x100ms-sleep-p2").unwrap();
        assert_eq!(consumer.batch, 32);
        assert!(
            (consumer.compute.mean() - 0.1).abs() < 1e-12
                && consumer.mode == workloads::consumer::ComputeMode::Sleep
        );
        let p = predict(
            &c,
            &hw,
            &Setting {
                consumer: Some(ConsumerSpec {
                    batch: 8,
                    ..consumer
                }),
                ..cold(2)
            },
        );
        assert_eq!(p.binds, "consumer");
        assert!((p.predicted - 80.0).abs() < 1e-6);
        assert!(ConsumerSpec::from_label("-").is_none());
        let n = ConsumerSpec::from_label("16xnormal:50ms:5ms-spin-p1").unwrap();
        assert!(
            (n.compute.mean() - 0.05).abs() < 1e-12
                && n.mode == workloads::consumer::ComputeMode::Spin
        );
        // The label reads back to the spec that wrote it.
        assert_eq!(n.to_string(), "16xnormal:50ms:5ms-spin-p1");
        // The same samples laid out as a store of 1000 in 10 shards: 4 MB files, streamed at
        // 100 MB/s per reader, not requested 4 KiB at a time.
        let store = laid_out(&c, 10, 1000.0);
        assert!((store.files_per_sample - 0.01).abs() < 1e-12);
        let p = predict(&store, &hw, &cold(2));
        assert!(p.storage_bound > 1000.0, "{p:?}");
        // Raw files read as calibrated.
        assert_eq!(laid_out(&c, 0, 1000.0).files_per_sample, c.files_per_sample);
    }

    #[test]
    fn validation_reports_errors_and_ranking_agreement() {
        let prediction = |v: f64| Prediction {
            storage_bound: v,
            cpu_bound: v,
            consumer_bound: f64::INFINITY,
            bound: v,
            binds: "cpu",
            predicted: v,
        };
        let row = |strategy: &str, measured: f64, predicted: f64, threads: usize| Checked {
            workload: "w".into(),
            condition: Default::default(),
            strategy: strategy.into(),
            codec: Codec::None,
            threads,
            cache: CacheState::Cold,
            epoch: 0,
            measured,
            prediction: prediction(predicted),
            short: false,
        };
        let v = validate(&[
            row("a", 100.0, 110.0, 1),
            row("b", 200.0, 180.0, 1),
            row("a", 100.0, 150.0, 2),
            row("b", 120.0, 120.0, 2),
        ])
        .unwrap();
        assert_eq!(v.configurations, 4);
        assert!((v.median_error_pct - 10.0).abs() < 1e-9);
        assert!((v.max_error_pct - 50.0).abs() < 1e-9);
        assert_eq!((v.ranked_groups, v.best_agrees), (2, 1));
    }

    #[test]
    fn hardware_files_load_and_bad_ones_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("nvme.yaml");
        // As docs/measurement.md shows it.
        std::fs::write(
            &good,
            "name: nvme-box\ncores: 32\ncpu_speed: 1.3\nstorage: {stream_mb_s: 2500, aggregate_mb_s: 6000, latency_ms: 0.08, iops: 500000}\n",
        )
        .unwrap();
        let hw = hardware_file(&good).unwrap();
        assert_eq!((hw.cores, hw.cpu_speed), (32, 1.3));
        assert!(matches!(&hw.storage, Storage::Profile(p) if p.aggregate_mb_s == Some(6000.0)));
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "name: x\ncores: 0\nstorage: {}\n").unwrap();
        let e = hardware_file(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.yaml") && e.contains("cores"), "{e}");
        std::fs::write(&bad, "name: x\ncores: 4\ncpus: 3\nstorage: {}\n").unwrap();
        let e = hardware_file(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.yaml") && e.contains("cpus"), "{e}");
    }

    #[test]
    fn kendall_counts_concordant_pairs() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            kendall(&s(&["a", "b", "c"]), &s(&["a", "b", "c"])),
            Some((1.0, 3))
        );
        assert_eq!(
            kendall(&s(&["a", "b", "c"]), &s(&["c", "b", "a"])),
            Some((-1.0, 3))
        );
        assert_eq!(kendall(&s(&["a"]), &s(&["a"])), None);
    }
}
