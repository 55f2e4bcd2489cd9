//! The paper's own figures (`results/paper/*.csv`) as [`Observations`]: exact values, on the
//! paper's storage, 8 threads on 8 cores and 80 GB of memory. The rules must find every
//! sub-claim reproduced on them.

use crate::analysis::findings::observed::{
    Compressed, Figure, Observations, Pipeline, Scaling, SizePoint, SizeSeries, Storage, Strategy,
};
use crate::analysis::paper::{self, PaperPipeline};
use crate::analysis::stats::LogEstimate;

fn exact(value: f64) -> Figure {
    LogEstimate::exact(value).ok_or_else(|| format!("the paper's figure {value} is not positive"))
}

fn ratio(a: f64, b: f64) -> Figure {
    Ok(exact(a)?.over(&exact(b)?))
}

/// The paper's text: compressing made the offline phase 1.1x to 13.5x slower (no per-strategy
/// figures were published).
const OFFLINE_GROWTH: (f64, f64) = (1.1, 13.5);

fn strategy(p: &PaperPipeline, s: &paper::PaperStrategy, last: bool) -> Strategy {
    // The caching table measured the last strategies again; where it did, its own no-cache
    // baseline goes with its cached figures.
    let caching = p
        .caching
        .iter()
        .find(|c| c.strategy == s.strategy)
        .filter(|_| last);
    let page_cache = Some(match caching {
        Some(c) => ratio(c.sps_system_cache, c.sps_no_cache),
        None => ratio(s.sps_epoch1, s.sps_epoch0),
    });
    let codecs = p
        .compression
        .iter()
        .filter(|c| c.strategy == s.strategy)
        .flat_map(|c| {
            [("gzip", c.sps_gzip), ("zlib", c.sps_zlib)].map(|(codec, sps)| Compressed {
                codec: codec.into(),
                speedup: ratio(sps, c.sps_none),
                stored_fraction: Some(1.0 - c.space_saving_pct / 100.0),
                offline_growth: Some(
                    LogEstimate::range(OFFLINE_GROWTH.0, OFFLINE_GROWTH.1)
                        .ok_or_else(|| "no range".to_string()),
                ),
                mechanism: None,
            })
        })
        .collect();
    let scaling = p
        .scaling
        .iter()
        .find(|r| r.strategy == s.strategy)
        .map(|r| Scaling {
            from: r.threads_from,
            to: r.threads_to,
            speedup: LogEstimate::range(r.speedup_low, r.speedup_high)
                .ok_or_else(|| "no range".to_string()),
            mechanism: None,
        });
    Strategy {
        name: s.strategy.clone(),
        store_gb: Some(s.storage_gb),
        cold: Some(exact(s.sps_epoch0)),
        cold_mean: Some(s.sps_epoch0),
        page_cache,
        app_cache: caching.map(|c| ratio(c.sps_application_cache, c.sps_no_cache)),
        app_over_page: caching.map(|c| ratio(c.sps_application_cache, c.sps_system_cache)),
        codecs,
        scaling,
        beyond: None,
        mechanism: None,
        cells: Vec::new(),
    }
}

/// Every pipeline and the synthetic reading experiment of the paper.
pub fn observations() -> Observations {
    let pipelines = paper::pipelines()
        .into_iter()
        .filter_map(|name| {
            let p = paper::pipeline(&name)?;
            let n = p.strategies.len();
            Some(Pipeline {
                label: format!("paper {name}"),
                pipeline: name,
                storage: Storage::Paper,
                memory_gb: paper::MEMORY_GB,
                cores: paper::THREADS,
                threads: paper::THREADS,
                strategies: p
                    .strategies
                    .iter()
                    .enumerate()
                    .map(|(i, s)| strategy(&p, s, i + 1 == n))
                    .collect(),
            })
        })
        .collect();
    let mb_s = |seconds: f64| exact(paper::SYNTHETIC_DATASET_MB / seconds);
    let sizes = vec![SizeSeries {
        label: "paper synthetic".into(),
        storage: Storage::Paper,
        judged: true,
        sizes: paper::synthetic_reading()
            .iter()
            .map(|r| SizePoint {
                mb_per_sample: r.sample_mb,
                cold_mb_s: mb_s(r.online_s_no_cache),
                warm_mb_s: Some(mb_s(r.online_s_system_cache)),
                cells: Vec::new(),
            })
            .collect(),
    }];
    Observations { pipelines, sizes }
}
