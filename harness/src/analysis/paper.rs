//! The paper's published figures (results/paper/*.csv, embedded): dataset sizes, per-strategy
//! storage, throughput and offline time, compression and caching, to set beside ours.

use serde::de::DeserializeOwned;
use serde::Deserialize;

const DATASETS: &str = include_str!("../../../results/paper/datasets.csv");
const STRATEGIES: &str = include_str!("../../../results/paper/strategies.csv");
const COMPRESSION: &str = include_str!("../../../results/paper/compression.csv");
const CACHING: &str = include_str!("../../../results/paper/caching.csv");
const SCALING: &str = include_str!("../../../results/paper/scaling.csv");
const SYNTHETIC_READING: &str = include_str!("../../../results/paper/synthetic_reading.csv");

/// One strategy of one pipeline as the paper reports it (8 threads, full dataset).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PaperStrategy {
    /// The paper's pipeline (`cv`, `nlp`, ...).
    pub pipeline: String,
    pub strategy: String,
    pub storage_gb: f64,
    pub sps_epoch0: f64,
    pub sps_epoch1: f64,
    /// Empty for `unprocessed`, which has no offline phase.
    pub offline_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PaperCompression {
    /// The paper's pipeline (`cv`, `nlp`, ...).
    pub pipeline: String,
    pub strategy: String,
    pub sps_none: f64,
    pub sps_gzip: f64,
    pub sps_zlib: f64,
    pub space_saving_pct: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PaperCaching {
    /// The paper's pipeline (`cv`, `nlp`, ...).
    pub pipeline: String,
    pub strategy: String,
    pub sps_no_cache: f64,
    pub sps_system_cache: f64,
    pub sps_application_cache: f64,
}

/// A thread speed-up the paper states as a range in its text (finding 6).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PaperScaling {
    pub pipeline: String,
    pub strategy: String,
    pub threads_from: usize,
    pub threads_to: usize,
    pub speedup_low: f64,
    pub speedup_high: f64,
}

/// Seconds to read the paper's 15 GB synthetic dataset of one sample size (finding 5).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PaperSyntheticReading {
    pub sample_mb: f64,
    pub online_s_no_cache: f64,
    pub online_s_system_cache: f64,
    pub online_s_application_cache: f64,
}

/// The MB of each of the paper's synthetic datasets.
pub const SYNTHETIC_DATASET_MB: f64 = 15_000.0;

/// The paper's synthetic reading experiment, smallest samples last (as published).
pub fn synthetic_reading() -> Vec<PaperSyntheticReading> {
    crate::results::table::parse_rows(
        SYNTHETIC_READING.as_bytes(),
        "synthetic_reading.csv".as_ref(),
    )
    .unwrap_or_else(|e| panic!("the embedded paper table is invalid: {e}"))
}

/// Memory of the paper's machine, GB: what "larger than memory" means for its strategies.
pub const MEMORY_GB: f64 = 80.0;
/// Threads of the paper's runs.
pub const THREADS: usize = 8;

#[derive(Deserialize)]
struct PaperDataset {
    pipeline: String,
    samples: u64,
    total_gb: f64,
}

/// A row of one of the paper's tables: it belongs to one pipeline.
trait OfPipeline {
    fn pipeline(&self) -> &str;
}

macro_rules! of_pipeline {
    ($($ty:ty),+) => {
        $(impl OfPipeline for $ty {
            fn pipeline(&self) -> &str {
                &self.pipeline
            }
        })+
    };
}

of_pipeline!(
    PaperStrategy,
    PaperCompression,
    PaperCaching,
    PaperScaling,
    PaperDataset
);

/// Everything the paper says about one pipeline.
#[derive(Clone, Debug, Default)]
pub struct PaperPipeline {
    pub samples: u64,
    pub total_gb: f64,
    pub strategies: Vec<PaperStrategy>,
    pub compression: Vec<PaperCompression>,
    pub caching: Vec<PaperCaching>,
    pub scaling: Vec<PaperScaling>,
}

/// The rows of the embedded table `name` that belong to `pipeline`.
fn rows<R: DeserializeOwned + OfPipeline>(text: &str, name: &str, pipeline: &str) -> Vec<R> {
    crate::results::table::parse_rows::<R>(text.as_bytes(), name.as_ref())
        .unwrap_or_else(|e| panic!("the embedded paper table is invalid: {e}"))
        .into_iter()
        .filter(|r| r.pipeline() == pipeline)
        .collect()
}

/// The pipelines the paper reports, in its tables' order.
pub fn pipelines() -> Vec<String> {
    let all: Vec<PaperDataset> =
        crate::results::table::parse_rows(DATASETS.as_bytes(), "datasets.csv".as_ref())
            .unwrap_or_else(|e| panic!("the embedded paper table is invalid: {e}"));
    all.into_iter().map(|d| d.pipeline).collect()
}

/// The paper's figures for `pipeline` (`cv`, `cv2-jpg`, `nlp`, ...), if it reports it.
pub fn pipeline(pipeline: &str) -> Option<PaperPipeline> {
    let dataset = rows::<PaperDataset>(DATASETS, "datasets.csv", pipeline)
        .into_iter()
        .next()?;
    Some(PaperPipeline {
        samples: dataset.samples,
        total_gb: dataset.total_gb,
        strategies: rows(STRATEGIES, "strategies.csv", pipeline),
        compression: rows(COMPRESSION, "compression.csv", pipeline),
        caching: rows(CACHING, "caching.csv", pipeline),
        scaling: rows(SCALING, "scaling.csv", pipeline),
    })
}

impl PaperPipeline {
    pub fn strategy(&self, name: &str) -> Option<&PaperStrategy> {
        self.strategies.iter().find(|s| s.strategy == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cv_figures_are_the_published_ones() {
        let cv = pipeline("cv").unwrap();
        assert_eq!(cv.samples, 1_281_167);
        let resized = cv.strategy("resized").unwrap();
        assert_eq!(
            (resized.storage_gb, resized.sps_epoch0, resized.sps_epoch1),
            (347.3, 1789.0, 1808.0)
        );
        assert_eq!(cv.strategy("unprocessed").unwrap().offline_s, None);
        assert_eq!(cv.compression.len(), 4);
        assert!(pipeline("cv2-png")
            .unwrap()
            .caching
            .iter()
            .any(|c| c.sps_application_cache == 9148.0));
        assert!(pipeline("mnist").is_none());
    }
}
