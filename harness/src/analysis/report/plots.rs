//! The report's plots per workload: throughput vs storage with the Pareto front (the paper's
//! central figure), thread scaling, codec effect and cache effect.

use crate::analysis::svg::{Chart, Scale, Series};
use crate::analysis::view::WorkloadView;
use workloads::Codec;

const SPS: &str = "throughput, cold epoch (samples/s)";
const MB: &str = "storage per sample (MB)";

/// Indices of the points not dominated in (lower storage, higher throughput), by storage.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let mut front: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let (s, t) = points[i];
            !points
                .iter()
                .any(|&(s2, t2)| s2 <= s && t2 >= t && (s2 < s || t2 > t))
        })
        .collect();
    front.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0));
    front
}

fn chart(
    title: String,
    x_label: &str,
    y_label: &str,
    x_scale: Scale,
    y_scale: Scale,
    series: Vec<Series>,
) -> Chart {
    Chart {
        title,
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_scale,
        y_scale,
        x_categories: Vec::new(),
        y_from_zero: y_scale == Scale::Linear,
        series,
    }
}

/// (file name, chart) for each plot the workload's cells support.
pub fn plots(view: &WorkloadView) -> Vec<(String, Chart)> {
    let t = view.max_threads();
    let mut out = Vec::new();
    let (mut points, mut labels) = (Vec::new(), Vec::new());
    for (_, s) in &view.strategies {
        if let Some(c) = view.cold(s, Codec::None, t) {
            points.push((c.mb_per_sample(), c.throughput.mean));
            labels.push(s.clone());
        }
    }
    if !points.is_empty() {
        let front: Vec<(f64, f64)> = pareto_front(&points)
            .into_iter()
            .map(|i| points[i])
            .collect();
        let series = vec![
            Series::labelled_dots("strategies", points, labels),
            Series::dashed_line("Pareto front", front),
        ];
        out.push((
            format!("{}-tradeoff.svg", view.file_stem()),
            chart(
                format!(
                    "{}: throughput vs storage ({t} threads, codec none)",
                    view.title()
                ),
                MB,
                SPS,
                Scale::Log,
                Scale::Log,
                series,
            ),
        ));
    }
    if view.threads.len() >= 2 {
        let series = view
            .strategies
            .iter()
            .map(|(_, s)| Series {
                name: s.clone(),
                points: view
                    .threads
                    .iter()
                    .filter_map(|&th| {
                        view.cold(s, Codec::None, th)
                            .map(|c| (th as f64, c.throughput.mean))
                    })
                    .collect(),
                labels: Vec::new(),
                line: true,
                dashed: false,
            })
            .collect();
        out.push((
            format!("{}-threads.svg", view.file_stem()),
            chart(
                format!("{}: thread scaling (codec none)", view.title()),
                "worker threads",
                SPS,
                Scale::Linear,
                Scale::Linear,
                series,
            ),
        ));
    }
    if view.codecs.len() >= 2 {
        let series = view
            .codecs
            .iter()
            .map(|codec| {
                let cells: Vec<_> = view
                    .strategies
                    .iter()
                    .filter(|(split, _)| *split > 0)
                    .filter_map(|(_, s)| view.cold(s, *codec, t).map(|c| (s.clone(), c)))
                    .collect();
                Series {
                    name: codec.to_string(),
                    points: cells
                        .iter()
                        .map(|(_, c)| (c.mb_per_sample(), c.throughput.mean))
                        .collect(),
                    labels: cells.iter().map(|(s, _)| s.clone()).collect(),
                    line: false,
                    dashed: false,
                }
            })
            .collect();
        out.push((
            format!("{}-codecs.svg", view.file_stem()),
            chart(
                format!("{}: codec effect ({t} threads)", view.title()),
                MB,
                SPS,
                Scale::Log,
                Scale::Log,
                series,
            ),
        ));
    }
    let names: Vec<String> = view.strategies.iter().map(|(_, s)| s.clone()).collect();
    let series_for = |label: &str, warm: bool| Series {
        name: label.into(),
        points: names
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                if warm {
                    view.warm(s, Codec::None, t)
                } else {
                    view.cold(s, Codec::None, t)
                }
                .map(|c| (i as f64, c.throughput.mean))
            })
            .collect(),
        labels: Vec::new(),
        line: false,
        dashed: false,
    };
    let series = vec![
        series_for("cold (evicted)", false),
        series_for("page cache (epoch 1)", true),
    ];
    if series.iter().any(|s| !s.points.is_empty()) {
        let mut c = chart(
            format!("{}: cache effect ({t} threads, codec none)", view.title()),
            "strategy",
            "throughput (samples/s)",
            Scale::Linear,
            Scale::Log,
            series,
        );
        c.x_categories = names;
        out.push((format!("{}-cache.svg", view.file_stem()), c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_front_keeps_only_undominated_points() {
        // (storage, throughput): b dominates d (less storage, more throughput).
        let points = [(1.0, 100.0), (0.5, 50.0), (2.0, 300.0), (1.5, 80.0)];
        assert_eq!(pareto_front(&points), vec![1, 0, 2]);
    }
}
