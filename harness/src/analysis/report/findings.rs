//! The paper's six findings (PAPER.md), each judged on our measurements: reproduced, not
//! reproduced, or not measured, with our figures beside the paper's; and per workload the
//! Kendall tau between our strategy ranking by throughput and the paper's.

use workloads::Codec;

use crate::results::Condition;
use serde::Serialize;

use crate::analysis::report::tables;
use crate::analysis::report::view::WorkloadView;
use crate::analysis::stats::kendall_tau_b;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Reproduced,
    NotReproduced,
    NotMeasured,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not reproduced",
            Verdict::NotMeasured => "not measured",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub number: usize,
    pub claim: &'static str,
    pub verdict: Verdict,
    pub ours: String,
    pub paper: &'static str,
}

fn judge(
    number: usize,
    claim: &'static str,
    paper: &'static str,
    evidence: Vec<(bool, String)>,
) -> Finding {
    let verdict = if evidence.is_empty() {
        Verdict::NotMeasured
    } else if evidence.iter().all(|(ok, _)| *ok) {
        Verdict::Reproduced
    } else {
        Verdict::NotReproduced
    };
    let ours = if evidence.is_empty() {
        "no runs of the workloads or settings it needs".to_string()
    } else {
        evidence
            .into_iter()
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join("; ")
    };
    Finding {
        number,
        claim,
        verdict,
        ours,
        paper,
    }
}

fn cold_sps(view: &WorkloadView, strategy: &str, codec: Codec, threads: usize) -> Option<f64> {
    view.cold(strategy, codec, threads)
        .map(|c| c.throughput.mean)
}

/// Pipelines where the paper found an intermediate split fastest.
const MIDDLE_WINS: [&str; 4] = ["cv", "cv2-jpg", "cv2-png", "nlp"];

pub fn findings(views: &[WorkloadView]) -> Vec<Finding> {
    let paper_of = |v: &WorkloadView| v.paper_name.clone().unwrap_or_default();
    let mut f1 = Vec::new();
    // Finding 2 is about network storage: judged under emulated profiles where there are any,
    // with the local disk's ratio shown for contrast.
    let mut f2 = Vec::new();
    let mut f2_local = Vec::new();
    let mut f3 = Vec::new();
    let mut f4 = Vec::new();
    let mut f6 = Vec::new();
    // Dataset variants (`name@k=v`) are judged together, by finding 5 only. Runs with a
    // simulated consumer measure the consumer, not the pipeline: they are not judged.
    let judged = |v: &&WorkloadView| !v.simulated_consumer();
    for view in views
        .iter()
        .filter(|v| v.variant().1.is_none())
        .filter(judged)
    {
        let t = view.max_threads();
        let name = &view.title();
        // Runs under an emulated storage profile judge finding 2 (a network-storage finding)
        // only; the other findings are judged on plain runs.
        let plain = view.condition.is_plain();
        // 1. The fully preprocessed strategy is not the fastest; a middle split wins.
        if plain && MIDDLE_WINS.contains(&paper_of(view).as_str()) {
            let measured: Vec<(&str, f64)> = view
                .strategies
                .iter()
                .filter_map(|(_, s)| cold_sps(view, s, Codec::None, t).map(|v| (s.as_str(), v)))
                .collect();
            if let (Some(last), Some(best)) = (
                view.last_strategy(),
                measured.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
            ) {
                if let Some(last_sps) = cold_sps(view, last, Codec::None, t) {
                    f1.push((
                        best.0 != last,
                        format!(
                            "{name}: fastest {} at {:.0}/s, {:.1}x the last ({last}, {:.0}/s)",
                            best.0,
                            best.1,
                            best.1 / last_sps,
                            last_sps
                        ),
                    ));
                }
            }
        }
        // 2. Concatenating small files into records speeds up reading.
        if let (Some(raw), Some(cat)) = (
            cold_sps(view, "unprocessed", Codec::None, t),
            cold_sps(view, "concatenated", Codec::None, t),
        ) {
            // Where the paper measured the pipeline, the same conclusion: a clear gain (1.5x or
            // more) where it found one (CV 9.0x), none where it did not (CV2-PNG's 18 MB
            // frames, 1.4x).
            let paper_ratio = view.paper.as_ref().and_then(|p| {
                let sps = |name: &str| {
                    p.strategies
                        .iter()
                        .find(|r| r.strategy == name)
                        .map(|r| r.sps_epoch0)
                };
                Some(sps("concatenated")? / sps("unprocessed")?)
            });
            let ours = cat / raw;
            let gain_expected = paper_ratio.is_none_or(|r| r >= 1.5);
            let line = (
                (ours >= 1.5) == gain_expected,
                format!(
                    "{name}: concatenated / unprocessed = {ours:.2}x{}",
                    paper_ratio
                        .map(|r| format!(" (paper {r:.1}x)"))
                        .unwrap_or_default()
                ),
            );
            if view.emulated_storage() {
                f2.push(line);
            } else {
                f2_local.push(line);
            }
        }
        // 3. Compression pays only for large, redundant float data.
        let deflate = view
            .codecs
            .iter()
            .find(|c| matches!(c, Codec::Gzip { .. } | Codec::Zlib { .. }));
        if let (true, Some(codec), Some(last)) = (plain, deflate, view.last_strategy()) {
            for (_, s) in view.strategies.iter().filter(|(split, _)| *split > 0) {
                let (Some(none), Some(c)) = (
                    cold_sps(view, s, Codec::None, t),
                    cold_sps(view, s, *codec, t),
                ) else {
                    continue;
                };
                // Where the paper measured this strategy, its own result says whether the codec
                // should pay; elsewhere only the last (largest float) strategy should.
                let paper_ratio = view.paper.as_ref().and_then(|p| {
                    let row = p.compression.iter().find(|r| &r.strategy == s)?;
                    let with = if matches!(codec, Codec::Zlib { .. }) {
                        row.sps_zlib
                    } else {
                        row.sps_gzip
                    };
                    Some(with / row.sps_none)
                });
                let should_pay = paper_ratio.map_or(s == last, |r| r >= 1.1);
                let r = c / none;
                let paper_note = paper_ratio
                    .map(|p| format!(" (paper {p:.2}x)"))
                    .unwrap_or_default();
                f3.push((
                    if should_pay { r >= 1.1 } else { r <= 1.05 },
                    format!("{name}/{s}: {codec} / none = {r:.2}x{paper_note}"),
                ));
            }
        }
        // 4. The page cache speeds up re-reading the last strategy.
        if let (true, Some(last)) = (plain, view.last_strategy()) {
            if let (Some(cold), Some(warm)) = (
                view.cold(last, Codec::None, t),
                view.warm(last, Codec::None, t),
            ) {
                let r = warm.throughput.mean / cold.throughput.mean;
                f4.push((r >= 1.1, format!("{name}/{last}: page cache {r:.2}x")));
            }
        }
        // 6. More threads help CPU-bound online work more than reading stored results.
        if plain && view.threads.len() >= 2 {
            let (lo, hi) = (view.threads[0], t);
            let speedup = |s: &str| {
                Some(cold_sps(view, s, Codec::None, hi)? / cold_sps(view, s, Codec::None, lo)?)
            };
            if let (Some(raw), Some(last)) = (
                speedup("unprocessed"),
                view.last_strategy().and_then(speedup),
            ) {
                let ideal = hi as f64 / lo as f64;
                f6.push((
                    raw >= 0.6 * ideal && raw >= last,
                    format!(
                        "{name}: {lo} -> {hi} threads, unprocessed {raw:.2}x vs {} {last:.2}x",
                        view.last_strategy().unwrap_or("-")
                    ),
                ));
            }
        }
    }
    if f2.is_empty() {
        f2 = f2_local;
    } else {
        f2.extend(
            f2_local
                .into_iter()
                .map(|(_, line)| (true, format!("{line} (local disk, for contrast)"))),
        );
    }
    vec![
        judge(1, "The fully preprocessed strategy is not the fastest for CV, CV2-JPG, CV2-PNG and NLP; the middle split wins", "CV: resized 1789/s, 3.1x pixel-centered 576/s; NLP: 13x", f1),
        judge(2, "Concatenating small files into records speeds up reading (much on network storage)", "CV 107 -> 962 samples/s (9.0x); CV2-PNG 15 -> 21", f2),
        judge(3, "Compression pays only for large, redundant float data", "pixel-centered CV 1.6-2.4x faster at 73-93 % less storage; elsewhere neutral or slower", f3),
        judge(4, "Page-cache reuse speeds up the last strategy", "1.1x (NILM) to 4.2x (FLAC)", f4),
        judge(5, "Per byte, tiny samples read far slower than big ones", "15 GB of 0.01 MB samples read 11.6x slower than of 20.5 MB samples", finding_5(&views.iter().filter(judged).collect::<Vec<_>>())),
        judge(6, "More threads help CPU-bound online steps, not I/O-bound or tiny-sample strategies", "audio decoded 6-7x at 8 threads; NILM 0.8-1.0x", f6),
    ]
}

/// Finding 5 from dataset variants sized by `mb_per_sample`: per strategy, read bandwidth
/// (cold, codec none, most threads) of the smallest samples against the largest.
fn finding_5(views: &[&WorkloadView]) -> Vec<(bool, String)> {
    // Each base once, in first-seen order (its variants need not be adjacent).
    // Each (base, condition) once, in first-seen order (variants need not be adjacent).
    let mut bases: Vec<(&str, &Condition)> = Vec::new();
    for v in views.iter().filter(|v| tables::variant_mb(v).is_some()) {
        let key = (v.variant().0, &v.condition);
        if !bases.contains(&key) {
            bases.push(key);
        }
    }
    let mut evidence = Vec::new();
    for (base, condition) in bases {
        let group: Vec<(&WorkloadView, f64)> = views
            .iter()
            .filter(|v| v.variant().0 == base && v.condition == *condition)
            .filter_map(|&v| Some((v, tables::variant_mb(v)?)))
            .collect();
        let (Some(small), Some(large)) = (
            group.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
            group.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
        ) else {
            continue;
        };
        if small.1 == large.1 {
            continue;
        }
        let base = if condition.is_plain() {
            base.to_string()
        } else {
            format!("{base} [{condition}]")
        };
        for (_, strategy) in &small.0.strategies {
            let mbps = |(view, mb): &(&WorkloadView, f64)| {
                cold_sps(view, strategy, Codec::None, view.max_threads()).map(|sps| sps * mb)
            };
            if let (Some(s), Some(l)) = (mbps(small), mbps(large)) {
                let slower = l / s;
                evidence.push((
                    slower >= 2.0,
                    format!(
                        "{base}/{strategy}: {} MB samples at {s:.0} MB/s, {} MB at {l:.0} MB/s ({slower:.1}x slower per byte)",
                        small.1, large.1
                    ),
                ));
            }
        }
    }
    evidence
}

/// Kendall's tau-b between our cold throughput ranking and the paper's epoch-0 ranking over the
/// strategies both measured; `None` without the paper's figures or two common strategies.
pub fn kendall(view: &WorkloadView) -> Option<(f64, usize)> {
    let paper = view.paper.as_ref()?;
    let t = view.max_threads();
    let pairs: Vec<(f64, f64)> = view
        .strategies
        .iter()
        .filter_map(|(_, s)| {
            Some((
                cold_sps(view, s, Codec::None, t)?,
                paper.strategy(s)?.sps_epoch0,
            ))
        })
        .collect();
    let (ours, theirs): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    kendall_tau_b(&ours, &theirs).map(|tau| (tau, pairs.len()))
}
