//! The simulated training consumer's specification (`--consumer batch=32,compute=100ms`): how
//! large a batch is, how long its computation takes and how, and how many batches the queue
//! holds. Its label (`32x100ms-sleep-p2`) names the consumer in runs.csv and is read back here.

use std::fmt;
use std::str::FromStr;

use crate::rng::SeededRng;
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

/// The longest compute time per batch (an hour): longer is a typo, and far longer overflows
/// the clock the consumer sleeps on.
pub const MAX_COMPUTE_S: f64 = 3600.0;

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
    let seconds = value * scale;
    if !(0.0..=MAX_COMPUTE_S).contains(&seconds) {
        return Err(format!(
            "`{text}`: a compute time must be from 0 to {MAX_COMPUTE_S} s"
        ));
    }
    Ok(seconds)
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

    pub fn draw(&self, rng: &mut SeededRng) -> f64 {
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
            let count = |what: &str, lo: usize, hi: usize| -> Result<usize, String> {
                match value.trim().parse::<usize>() {
                    Ok(n) if (lo..=hi).contains(&n) => Ok(n),
                    _ => Err(format!(
                        "`{value}`: {what} must be a whole number from {lo} to {hi}"
                    )),
                }
            };
            match key.trim() {
                "batch" => spec.batch = count("batch", 1, 1 << 20)?,
                "prefetch" => spec.prefetch = count("prefetch", 0, 1 << 16)?,
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
            ("compute=100ms,batch=0", "from 1 to"),
            ("compute=100ms,batch=18446744073709551615", "from 1 to"),
            ("compute=100ms,prefetch=99999999999", "from 0 to"),
            ("compute=1e20s", "from 0 to 3600 s"),
            ("compute=normal:1e300ms:1ms", "from 0 to 3600 s"),
            ("compute=NaNms", "from 0 to"),
            ("compute=infs", "from 0 to"),
            ("compute=100ms,mode=gpu", "sleep or spin"),
            ("compute=100ms,speed=2", "unknown consumer key"),
            ("compute=uniform:2ms:1ms", "below"),
            ("compute=-1ms", "from 0 to"),
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
}
