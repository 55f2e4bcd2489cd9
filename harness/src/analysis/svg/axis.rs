//! A chart's axes: linear or log scales, their ranges and round ticks.

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    Log,
}

/// The least of 1, 2 or 5 times a power of ten at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// An axis: data range mapped to pixels, and its ticks.
pub(super) struct Axis {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

impl Axis {
    pub fn new(values: &[f64], scale: Scale, from_zero: bool) -> Axis {
        let usable: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0))
            .collect();
        let (mut lo, mut hi) = usable
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        if usable.is_empty() {
            (lo, hi) = (1.0, 10.0);
        }
        match scale {
            Scale::Log if hi / lo <= 5.0 => {
                // Less than a decade: round ticks spaced as on a linear axis, the range
                // padded by 5 % each way instead of widened to whole decades.
                let (lo, hi) = (lo / 1.05, hi * 1.05);
                let step = nice_step((hi - lo) / 5.0);
                let first = (lo / step).ceil() as i64;
                let last = (hi / step).floor() as i64;
                let ticks = (first..=last)
                    .map(|i| i as f64 * step)
                    .filter(|t| *t > 0.0)
                    .collect();
                Axis {
                    scale,
                    lo,
                    hi,
                    ticks,
                }
            }
            Scale::Log => {
                let (l, h) = (
                    lo.log10().floor(),
                    hi.log10().ceil().max(lo.log10().floor() + 1.0),
                );
                let mut ticks = Vec::new();
                let dense = h - l <= 2.0;
                for e in l as i32..=h as i32 {
                    for m in [1.0, 2.0, 5.0] {
                        let t = m * 10f64.powi(e);
                        if (m == 1.0 || dense) && t >= 10f64.powf(l) && t <= 10f64.powf(h) {
                            ticks.push(t);
                        }
                    }
                }
                Axis {
                    scale,
                    lo: 10f64.powf(l),
                    hi: 10f64.powf(h),
                    ticks,
                }
            }
            Scale::Linear => {
                if from_zero {
                    lo = lo.min(0.0);
                }
                if hi - lo < 1e-12 {
                    hi = lo + lo.abs().max(1.0);
                }
                let step = nice_step((hi - lo) / 5.0);
                let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
                let ticks = (0..=((hi - lo) / step).round() as usize)
                    .map(|i| lo + i as f64 * step)
                    .collect();
                Axis {
                    scale,
                    lo,
                    hi,
                    ticks,
                }
            }
        }
    }

    /// Position of `v` in [0, 1] along the axis.
    pub fn frac(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log => (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
        }
    }

    pub fn shows(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }
}
