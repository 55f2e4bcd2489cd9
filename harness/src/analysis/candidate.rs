//! What a recommendation ranks: a strategy's candidate (its figures scaled to the planned size)
//! and the weights of the score.

/// Weights of offline time, storage and throughput, written `P,S,T` (PRESTO's default 0,0,1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights(pub f64, pub f64, pub f64);

impl std::str::FromStr for Weights {
    type Err = String;

    fn from_str(text: &str) -> Result<Weights, String> {
        let values: Vec<f64> = text
            .split(',')
            .map(|v| v.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("`{text}`: weights are three numbers P,S,T"))?;
        // Zero, or 10^-6 to 10^6: a score of weights beyond that is not finite (1e308 x 3
        // overflows) or is all one weight's.
        let in_range = |v: f64| v == 0.0 || (1e-6..=1e6).contains(&v);
        match values[..] {
            [p, s, t] if values.iter().all(|v| in_range(*v)) && p + s + t > 0.0 => Ok(Weights(p, s, t)),
            _ => Err(format!("`{text}`: weights are three numbers P,S,T (offline time, storage, throughput), each 0 or from 0.000001 to 1000000, not all zero")),
        }
    }
}

impl std::fmt::Display for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::units::number;
        write!(
            f,
            "offline {}, storage {}, throughput {}",
            number(self.0),
            number(self.1),
            number(self.2)
        )
    }
}

/// One (strategy, codec) at the largest thread count measured, scaled to the planned size.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub strategy: String,
    pub codec: workloads::Codec,
    /// The planned size its times and storage are for.
    pub samples: f64,
    pub offline_s: f64,
    pub storage_bytes: f64,
    pub cold_sps: f64,
    /// The 95 % interval of `cold_sps` (`None` from one trial).
    pub cold_ci95: Option<(f64, f64)>,
    /// `cold_sps` on the log scale with its variance, for ratios to other candidates (`None`
    /// from one trial).
    pub cold_estimate: Option<crate::analysis::stats::LogEstimate>,
    /// Whether its cold epochs lasted long enough to judge by.
    pub long_enough: bool,
    /// The evidence behind `cold_sps`: trials, the median cold epoch in seconds, and the
    /// samples one epoch read.
    pub trials: usize,
    pub epoch_s: f64,
    pub measured_samples: u64,
    pub warm_sps: Option<f64>,
    pub score_cold: f64,
    pub score_warm: Option<f64>,
    pub pareto: bool,
    /// offline + first epoch cold + the rest warm (cold when the data does not fit in memory).
    pub total_s: f64,
    /// The rate of the epochs after the first in that total (warm, or cold when the data does
    /// not fit in memory).
    pub later_sps: f64,
    /// Materializations behind `offline_s` (0 for `unprocessed`).
    pub offline_n: usize,
    pub fits_in_memory: bool,
}
