//! The paper's published figures (results/paper/*.csv, embedded): dataset sizes, per-strategy
//! storage, throughput and offline time, compression and caching, to set beside ours.

use crate::table::Table;

const DATASETS: &str = include_str!("../../results/paper/datasets.csv");
const STRATEGIES: &str = include_str!("../../results/paper/strategies.csv");
const COMPRESSION: &str = include_str!("../../results/paper/compression.csv");
const CACHING: &str = include_str!("../../results/paper/caching.csv");

/// One strategy of one pipeline as the paper reports it (8 threads, full dataset).
#[derive(Clone, Debug, PartialEq)]
pub struct PaperStrategy {
    pub strategy: String,
    pub storage_gb: f64,
    pub sps_epoch0: f64,
    pub sps_epoch1: f64,
    pub offline_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PaperCompression {
    pub strategy: String,
    pub sps_none: f64,
    pub sps_gzip: f64,
    pub sps_zlib: f64,
    pub space_saving_pct: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PaperCaching {
    pub strategy: String,
    pub sps_no_cache: f64,
    pub sps_system_cache: f64,
    pub sps_application_cache: f64,
}

/// Everything the paper says about one pipeline.
#[derive(Clone, Debug, Default)]
pub struct PaperPipeline {
    pub samples: u64,
    pub total_gb: f64,
    pub strategies: Vec<PaperStrategy>,
    pub compression: Vec<PaperCompression>,
    pub caching: Vec<PaperCaching>,
}

fn rows<'t>(table: &'t Table, pipeline: &'t str) -> impl Iterator<Item = usize> + 't {
    let col = table
        .column("pipeline")
        .expect("paper tables have a pipeline column");
    (0..table.rows.len()).filter(move |&r| table.text(r, col) == pipeline)
}

fn num(table: &Table, row: usize, name: &str) -> Option<f64> {
    table.number(row, table.column(name).ok()?).ok().flatten()
}

fn text(table: &Table, row: usize, name: &str) -> String {
    table
        .column(name)
        .map(|c| table.text(row, c).to_string())
        .unwrap_or_default()
}

/// The paper's figures for `pipeline` (`cv`, `cv2-jpg`, `nlp`, ...), if it reports it.
pub fn pipeline(pipeline: &str) -> Option<PaperPipeline> {
    let parse =
        |text: &str, name: &str| Table::parse(text, name).expect("embedded paper tables are valid");
    let (datasets, strategies) = (
        parse(DATASETS, "datasets.csv"),
        parse(STRATEGIES, "strategies.csv"),
    );
    let (compression, caching) = (
        parse(COMPRESSION, "compression.csv"),
        parse(CACHING, "caching.csv"),
    );
    let d = rows(&datasets, pipeline).next()?;
    Some(PaperPipeline {
        samples: num(&datasets, d, "samples").unwrap_or(0.0) as u64,
        total_gb: num(&datasets, d, "total_gb").unwrap_or(0.0),
        strategies: rows(&strategies, pipeline)
            .map(|r| PaperStrategy {
                strategy: text(&strategies, r, "strategy"),
                storage_gb: num(&strategies, r, "storage_gb").unwrap_or(0.0),
                sps_epoch0: num(&strategies, r, "sps_epoch0").unwrap_or(0.0),
                sps_epoch1: num(&strategies, r, "sps_epoch1").unwrap_or(0.0),
                offline_s: num(&strategies, r, "offline_s"),
            })
            .collect(),
        compression: rows(&compression, pipeline)
            .map(|r| PaperCompression {
                strategy: text(&compression, r, "strategy"),
                sps_none: num(&compression, r, "sps_none").unwrap_or(0.0),
                sps_gzip: num(&compression, r, "sps_gzip").unwrap_or(0.0),
                sps_zlib: num(&compression, r, "sps_zlib").unwrap_or(0.0),
                space_saving_pct: num(&compression, r, "space_saving_pct").unwrap_or(0.0),
            })
            .collect(),
        caching: rows(&caching, pipeline)
            .map(|r| PaperCaching {
                strategy: text(&caching, r, "strategy"),
                sps_no_cache: num(&caching, r, "sps_no_cache").unwrap_or(0.0),
                sps_system_cache: num(&caching, r, "sps_system_cache").unwrap_or(0.0),
                sps_application_cache: num(&caching, r, "sps_application_cache").unwrap_or(0.0),
            })
            .collect(),
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
