//! A simulated training consumer: it takes samples in batches from the workers' queue, which
//! holds `prefetch` batches, and "computes" on each batch for a fixed or drawn time, sleeping (an
//! accelerator: the CPU is free for the workers) or spinning (training on the CPU). Measured as
//! MLPerf Storage does: accelerator utilisation (AU) is compute time over wall time; the data
//! stall fraction is the time spent waiting for batches over wall time.

use std::fmt;
use std::str::FromStr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use workloads::rng::SeededRng;
use workloads::Sample;

/// How long one batch's computation takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ComputeTime {
    Fixed(f64),
    /// Normal with this mean and standard deviation (seconds), drawn per batch, cut at zero.
    Normal {
        mean: f64,
        sd: f64,
    },
    /// Uniform between the two (seconds), drawn per batch.
    Uniform {
        lo: f64,
        hi: f64,
    },
}

/// How the consumer spends its compute time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeMode {
    /// Sleep: the computation runs elsewhere (an accelerator); the CPU is free.
    Sleep,
    /// Busy-wait: the computation occupies a CPU core, as training on the CPU would.
    Spin,
}

/// The simulated training step, from `--consumer`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConsumerSpec {
    pub batch: usize,
    pub compute: ComputeTime,
    pub mode: ComputeMode,
    /// Batches the queue holds ahead of the consumer.
    pub prefetch: usize,
}

fn parse_duration(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(format!(
            "`{text}`: a duration needs a unit: ms, us or s (e.g. 100ms)"
        ));
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 100ms)"))?;
    if !(value >= 0.0 && value.is_finite()) {
        return Err(format!("`{text}`: a duration must be zero or positive"));
    }
    Ok(value * scale)
}

fn format_duration(s: f64) -> String {
    let ms = s * 1e3;
    if ms == ms.round() {
        format!("{ms}ms")
    } else {
        format!("{}us", (s * 1e6).round())
    }
}

impl FromStr for ComputeTime {
    type Err = String;

    /// `100ms`, `normal:100ms:10ms` (mean, standard deviation) or `uniform:80ms:120ms`.
    fn from_str(text: &str) -> Result<ComputeTime, String> {
        let parts: Vec<&str> = text.split(':').collect();
        match parts.as_slice() {
            [one] => Ok(ComputeTime::Fixed(parse_duration(one)?)),
            ["normal", mean, sd] => Ok(ComputeTime::Normal {
                mean: parse_duration(mean)?,
                sd: parse_duration(sd)?,
            }),
            ["uniform", lo, hi] => {
                let (lo, hi) = (parse_duration(lo)?, parse_duration(hi)?);
                if hi < lo {
                    return Err(format!("`{text}`: the upper bound is below the lower one"));
                }
                Ok(ComputeTime::Uniform { lo, hi })
            }
            _ => Err(format!(
                "`{text}`: compute time is a duration (100ms), normal:MEAN:SD or uniform:LO:HI"
            )),
        }
    }
}

impl fmt::Display for ComputeTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ComputeTime::Fixed(s) => write!(f, "{}", format_duration(s)),
            ComputeTime::Normal { mean, sd } => write!(
                f,
                "normal:{}:{}",
                format_duration(mean),
                format_duration(sd)
            ),
            ComputeTime::Uniform { lo, hi } => {
                write!(f, "uniform:{}:{}", format_duration(lo), format_duration(hi))
            }
        }
    }
}

impl ComputeTime {
    /// The mean computation time per batch, seconds.
    pub fn mean(&self) -> f64 {
        match *self {
            ComputeTime::Fixed(s) => s,
            ComputeTime::Normal { mean, .. } => mean,
            ComputeTime::Uniform { lo, hi } => (lo + hi) / 2.0,
        }
    }

    fn draw(&self, rng: &mut SeededRng) -> f64 {
        match *self {
            ComputeTime::Fixed(s) => s,
            ComputeTime::Uniform { lo, hi } => rng.range_f64(lo, hi),
            ComputeTime::Normal { mean, sd } => {
                // Box-Muller on two uniforms in (0, 1].
                let u1 = 1.0 - rng.unit_f64();
                let u2 = rng.unit_f64();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (mean + sd * z).max(0.0)
            }
        }
    }
}

impl FromStr for ConsumerSpec {
    type Err = String;

    /// `batch=32,compute=100ms,mode=sleep,prefetch=2`; every key but `compute` is optional
    /// (batch 32, sleep, prefetch 2).
    fn from_str(text: &str) -> Result<ConsumerSpec, String> {
        let mut spec = ConsumerSpec {
            batch: 32,
            compute: ComputeTime::Fixed(0.0),
            mode: ComputeMode::Sleep,
            prefetch: 2,
        };
        let mut has_compute = false;
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| {
                format!("`{part}`: expected key=value (batch, compute, mode, prefetch)")
            })?;
            let count = |what: &str| -> Result<usize, String> {
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("`{value}`: {what} must be a whole number"))
            };
            match key.trim() {
                "batch" => spec.batch = count("batch")?,
                "prefetch" => spec.prefetch = count("prefetch")?,
                "compute" => {
                    spec.compute = value.trim().parse()?;
                    has_compute = true;
                }
                "mode" => {
                    spec.mode = match value.trim() {
                        "sleep" => ComputeMode::Sleep,
                        "spin" => ComputeMode::Spin,
                        other => return Err(format!("`{other}`: mode is sleep or spin")),
                    }
                }
                other => {
                    return Err(format!(
                        "`{other}`: unknown consumer key; known: batch, compute, mode, prefetch"
                    ))
                }
            }
        }
        if !has_compute {
            return Err("the consumer needs compute=TIME (e.g. compute=100ms)".into());
        }
        if spec.batch == 0 {
            return Err("batch must be at least 1".into());
        }
        Ok(spec)
    }
}

impl fmt::Display for ConsumerSpec {
    /// The label in runs.csv: `32x100ms-sleep-p2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            ComputeMode::Sleep => "sleep",
            ComputeMode::Spin => "spin",
        };
        write!(
            f,
            "{}x{}-{mode}-p{}",
            self.batch, self.compute, self.prefetch
        )
    }
}

impl ConsumerSpec {
    /// Samples the workers' queue holds: `prefetch` batches (at least one sample).
    pub fn queue_capacity(&self) -> usize {
        (self.prefetch * self.batch).max(1)
    }

    /// Reads back a runs.csv label (`32x100ms-sleep-p2`, as `Display` writes it); `None` for
    /// `-` or anything else.
    pub fn from_label(label: &str) -> Option<ConsumerSpec> {
        let (batch, rest) = label.split_once('x')?;
        let mut parts = rest.rsplitn(3, '-');
        let prefetch = parts.next()?.strip_prefix('p')?.parse().ok()?;
        let mode = match parts.next()? {
            "sleep" => ComputeMode::Sleep,
            "spin" => ComputeMode::Spin,
            _ => return None,
        };
        Some(ConsumerSpec {
            batch: batch.parse().ok()?,
            compute: parts.next()?.parse().ok()?,
            mode,
            prefetch,
        })
    }
}

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
        compute(self.spec.mode, Duration::from_secs_f64(seconds));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_their_label() {
        let s: ConsumerSpec = "batch=32,compute=100ms".parse().unwrap();
        assert_eq!(s.batch, 32);
        assert_eq!(s.compute, ComputeTime::Fixed(0.1));
        assert_eq!(s.to_string(), "32x100ms-sleep-p2");
        let s: ConsumerSpec = "compute=normal:50ms:5ms,mode=spin,prefetch=0,batch=8"
            .parse()
            .unwrap();
        assert_eq!(s.to_string(), "8xnormal:50ms:5ms-spin-p0");
        assert_eq!(s.queue_capacity(), 1);
        let s: ConsumerSpec = "compute=uniform:250us:1.5ms".parse().unwrap();
        assert_eq!(s.compute.to_string(), "uniform:250us:1500us");
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (text, needle) in [
            ("batch=32", "compute="),
            ("compute=100", "unit"),
            ("compute=100ms,batch=0", "at least 1"),
            ("compute=100ms,mode=gpu", "sleep or spin"),
            ("compute=100ms,speed=2", "unknown consumer key"),
            ("compute=uniform:2ms:1ms", "below"),
            ("compute=-1ms", "positive"),
        ] {
            let err = text.parse::<ConsumerSpec>().unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn draws_stay_in_range_and_are_seeded() {
        let mut a = SeededRng::new(1);
        let mut b = SeededRng::new(1);
        let n = ComputeTime::Normal {
            mean: 0.01,
            sd: 0.02,
        };
        for _ in 0..1000 {
            let x = n.draw(&mut a);
            assert!(x >= 0.0);
            assert_eq!(x, n.draw(&mut b));
        }
        let u = ComputeTime::Uniform { lo: 0.1, hi: 0.2 };
        assert!((0..1000).all(|_| (0.1..0.2).contains(&u.draw(&mut a))));
    }

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
