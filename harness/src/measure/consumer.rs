//! A simulated training consumer: it takes samples in batches from the workers' queue, which
//! holds `prefetch` batches, and "computes" on each batch for a fixed or drawn time, sleeping (an
//! accelerator: the CPU is free for the workers) or spinning (training on the CPU). Measured as
//! MLPerf Storage does: accelerator utilisation (AU) is compute time over wall time; the data
//! stall fraction is the time spent waiting for batches over wall time.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use workloads::consumer::{ComputeMode, ConsumerSpec};
use workloads::rng::SeededRng;
use workloads::Sample;

use crate::results::{CacheState, RunRow};

/// What the simulated training measured over one epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConsumerMetrics {
    pub batches: u64,
    /// Seconds spent computing (as slept or spun, measured).
    pub compute_s: f64,
    /// Seconds spent waiting for batches.
    pub wait_s: f64,
    /// From the epoch's start to the first batch complete.
    pub first_batch_s: f64,
    pub wait_p50_ms: f64,
    pub wait_p99_ms: f64,
}

impl ConsumerMetrics {
    /// Accelerator utilisation over `wall_s`, percent.
    pub fn au_pct(&self, wall_s: f64) -> f64 {
        if wall_s > 0.0 {
            (100.0 * self.compute_s / wall_s).min(100.0)
        } else {
            0.0
        }
    }

    /// Share of `wall_s` spent waiting for data, percent.
    pub fn stall_pct(&self, wall_s: f64) -> f64 {
        if wall_s > 0.0 {
            (100.0 * self.wait_s / wall_s).min(100.0)
        } else {
            0.0
        }
    }
}

/// The consumer's state over one epoch: the batch being filled and the measurements so far.
pub struct Trainer {
    spec: ConsumerSpec,
    rng: SeededRng,
    epoch_start: Instant,
    in_batch: usize,
    /// When the consumer started waiting for the batch being filled.
    waiting_since: Instant,
    waits: Vec<f64>,
    metrics: ConsumerMetrics,
}

impl Trainer {
    pub fn new(spec: ConsumerSpec, seed: u64, epoch: u64, epoch_start: Instant) -> Trainer {
        Trainer {
            spec,
            rng: SeededRng::from_parts(&[seed, epoch, 0x0074_7261_696e]),
            epoch_start,
            in_batch: 0,
            waiting_since: epoch_start,
            waits: Vec::new(),
            metrics: ConsumerMetrics::default(),
        }
    }

    /// One sample arrived; a full batch is then computed on.
    pub fn take(&mut self) {
        self.in_batch += 1;
        if self.in_batch == self.spec.batch {
            self.step();
        }
    }

    /// The batch is complete (or the data ended): record the wait and compute.
    fn step(&mut self) {
        let now = Instant::now();
        let wait = now.duration_since(self.waiting_since).as_secs_f64();
        if self.metrics.batches == 0 {
            self.metrics.first_batch_s = now.duration_since(self.epoch_start).as_secs_f64();
        }
        self.waits.push(wait);
        self.metrics.wait_s += wait;
        self.metrics.batches += 1;
        self.in_batch = 0;
        let seconds = self.spec.compute.draw(&mut self.rng);
        let start = Instant::now();
        // Compute times are range-checked when parsed; a draw's tail is held to the same limit.
        let seconds =
            Duration::from_secs_f64(seconds.clamp(0.0, workloads::consumer::MAX_COMPUTE_S));
        compute(self.spec.mode, seconds);
        let end = Instant::now();
        self.metrics.compute_s += end.duration_since(start).as_secs_f64();
        self.waiting_since = end;
    }

    /// The data ended: a partial last batch is computed on too.
    pub fn finish(mut self) -> ConsumerMetrics {
        if self.in_batch > 0 {
            self.step();
        }
        let mut waits = self.waits;
        waits.sort_by(f64::total_cmp);
        self.metrics.wait_p50_ms = percentile(&waits, 0.50) * 1e3;
        self.metrics.wait_p99_ms = percentile(&waits, 0.99) * 1e3;
        self.metrics
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn compute(mode: ComputeMode, time: Duration) {
    match mode {
        ComputeMode::Sleep => std::thread::sleep(time),
        ComputeMode::Spin => {
            let start = Instant::now();
            while start.elapsed() < time {
                std::hint::spin_loop();
            }
        }
    }
}

/// The null-I/O control: the same consumer fed `samples` copies of `template` from memory by
/// one producer thread, so its own overhead (queueing, batching, sleep accuracy) is known.
/// Returns the metrics and the wall time.
pub fn null_io_control(
    spec: ConsumerSpec,
    template: &Sample,
    samples: u64,
    seed: u64,
) -> (ConsumerMetrics, f64) {
    let (tx, rx) = mpsc::sync_channel::<Sample>(spec.queue_capacity());
    let start = Instant::now();
    let mut trainer = Trainer::new(spec, seed, u64::MAX, start);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for _ in 0..samples {
                if tx.send(template.clone()).is_err() {
                    break;
                }
            }
        });
        while let Ok(sample) = rx.recv() {
            std::hint::black_box(&sample);
            trainer.take();
        }
    });
    let metrics = trainer.finish();
    (metrics, start.elapsed().as_secs_f64())
}

/// Batches the null-I/O control runs at the least, so that filling the first batch does not
/// weigh on its utilisation as it would over a run of one or two batches.
const MIN_CONTROL_BATCHES: u64 = 10;

/// The null-I/O control of a run with a consumer: the same consumer fed copies of one of the
/// run's samples from memory, as many as the run's last epoch had (at least
/// [`MIN_CONTROL_BATCHES`] batches). Its row follows the epochs (cache `null-io`, epoch after the
/// last) and keeps the run's storage and consumer labels, so reports show it beside the run,
/// though it reads nothing.
pub fn null_io_row(last: &RunRow, consumer: ConsumerSpec, template: &Sample, seed: u64) -> RunRow {
    let samples = last
        .samples
        .max(MIN_CONTROL_BATCHES * consumer.batch as u64);
    let (metrics, wall_s) = null_io_control(consumer, template, samples, seed);
    RunRow {
        started_utc: crate::results::utc_now(),
        epoch: last.epoch + 1,
        cache: CacheState::NullIo,
        samples,
        online_s: wall_s,
        throughput_sps: if wall_s > 0.0 {
            samples as f64 / wall_s
        } else {
            0.0
        },
        // It reads nothing: no storage behind its samples.
        storage_bytes: 0,
        read_bytes: 0,
        read_chars: 0,
        cpu_user_s: 0.0,
        cpu_sys_s: 0.0,
        evict_method: "none".into(),
        residency_before_pct: 0.0,
        residency_after_pct: 0.0,
        au_pct: Some(metrics.au_pct(wall_s)),
        stall_pct: Some(metrics.stall_pct(wall_s)),
        first_batch_s: Some(metrics.first_batch_s),
        batch_wait_p50_ms: Some(metrics.wait_p50_ms),
        batch_wait_p99_ms: Some(metrics.wait_p99_ms),
        device_read_mb_s: None,
        cpu_busy_pct: None,
        first_sample_s: None,
        steady_sps: None,
        foreign_load_pct: None,
        steal_pct: None,
        passes: 1,
        ..last.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[3.0], 0.99), 3.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn batches_count_partial_last_ones() {
        let spec: ConsumerSpec = "batch=4,compute=0ms".parse().unwrap();
        let mut t = Trainer::new(spec, 0, 0, Instant::now());
        for _ in 0..10 {
            t.take();
        }
        let m = t.finish();
        assert_eq!(m.batches, 3);
        assert!(m.first_batch_s >= 0.0 && m.wait_p99_ms >= m.wait_p50_ms);
    }
}
