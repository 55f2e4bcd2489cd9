//! The report's plots per workload: throughput vs storage with the Pareto front (the paper's
//! central figure), thread scaling, codec effect and cache effect.

use crate::analysis::report::model::Figure;
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
        x_ticks: Vec::new(),
        y_from_zero: y_scale == Scale::Linear,
        series,
    }
}

/// Each plot the workload's cells support; `recommended` (a strategy and codec) is marked on
/// the trade-off plot.
pub fn plots(view: &WorkloadView, recommended: Option<&(String, Codec)>) -> Vec<Figure> {
    [
        tradeoff(view, recommended),
        threads(view),
        codecs(view),
        cache(view),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn figure(view: &WorkloadView, kind: &str, chart: Chart) -> Figure {
    Figure {
        file: format!("{}-{kind}.svg", view.file_stem()),
        chart,
    }
}

/// Cold throughput against storage per sample, with the Pareto front, and the recommended
/// strategy marked (its point without compression, the codec named when it is another).
fn tradeoff(view: &WorkloadView, recommended: Option<&(String, Codec)>) -> Option<Figure> {
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let (mut points, mut labels, mut intervals) = (Vec::new(), Vec::new(), Vec::new());
    for (_, s) in &view.strategies {
        if let Some(c) = view.cold(s, Codec::None, t) {
            points.push((c.mb_per_sample(), c.throughput.mean));
            labels.push(s.clone());
            intervals.push(c.throughput.ci95);
        }
    }
    if points.is_empty() {
        return None;
    }
    let front: Vec<(f64, f64)> = pareto_front(&points)
        .into_iter()
        .map(|i| points[i])
        .collect();
    let marked = recommended.and_then(|(strategy, codec)| {
        let at = labels.iter().position(|l| l == strategy)?;
        let name = match codec {
            Codec::None => format!("recommended: {strategy}"),
            other => format!("recommended: {strategy} (stored with {other})"),
        };
        Some(Series::rings(&name, vec![points[at]]))
    });
    let mut series = vec![
        Series::labelled_dots("strategies", points, labels).with_intervals(intervals),
        Series::dashed_line("Pareto front", front),
    ];
    series.extend(marked);
    let title = format!(
        "{}: throughput vs storage ({threads_text}, codec none)",
        view.title()
    );
    let chart = chart(title, MB, SPS, Scale::Log, Scale::Log, series);
    Some(figure(view, "tradeoff", chart))
}

/// Cold throughput per strategy against the thread count.
fn threads(view: &WorkloadView) -> Option<Figure> {
    if view.threads.len() < 2 {
        return None;
    }
    let series = view
        .strategies
        .iter()
        .map(|(_, s)| {
            let cells: Vec<_> = view
                .threads
                .iter()
                .filter_map(|&th| view.cold(s, Codec::None, th).map(|c| (th, c)))
                .collect();
            Series {
                name: s.clone(),
                points: cells
                    .iter()
                    .map(|(th, c)| (*th as f64, c.throughput.mean))
                    .collect(),
                line: true,
                ..Series::default()
            }
            .with_intervals(cells.iter().map(|(_, c)| c.throughput.ci95).collect())
        })
        .collect();
    let mut c = chart(
        format!("{}: thread scaling (codec none)", view.title()),
        "worker threads",
        SPS,
        Scale::Linear,
        Scale::Linear,
        series,
    );
    c.x_ticks = view.threads.iter().map(|&t| t as f64).collect();
    Some(figure(view, "threads", c))
}

/// Cold throughput against storage per sample, one series per codec.
fn codecs(view: &WorkloadView) -> Option<Figure> {
    if view.codecs.len() < 2 {
        return None;
    }
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
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
            Series::labelled_dots(
                &codec.to_string(),
                cells
                    .iter()
                    .map(|(_, c)| (c.mb_per_sample(), c.throughput.mean))
                    .collect(),
                cells.iter().map(|(s, _)| s.clone()).collect(),
            )
            .with_intervals(cells.iter().map(|(_, c)| c.throughput.ci95).collect())
        })
        .collect();
    let title = format!("{}: codec effect ({threads_text})", view.title());
    let chart = chart(title, MB, SPS, Scale::Log, Scale::Log, series);
    Some(figure(view, "codecs", chart))
}

/// Cold and page-cache throughput per strategy.
fn cache(view: &WorkloadView) -> Option<Figure> {
    let t = view.max_threads();
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let names: Vec<String> = view.strategies.iter().map(|(_, s)| s.clone()).collect();
    let series_for = |label: &str, warm: bool| {
        let cells: Vec<_> = names
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                if warm {
                    view.warm(s, Codec::None, t)
                } else {
                    view.cold(s, Codec::None, t)
                }
                .map(|c| (i, c))
            })
            .collect();
        Series {
            name: label.into(),
            points: cells
                .iter()
                .map(|(i, c)| (*i as f64, c.throughput.mean))
                .collect(),
            ..Series::default()
        }
        .with_intervals(cells.iter().map(|(_, c)| c.throughput.ci95).collect())
    };
    let series = vec![
        series_for("cold (evicted)", false),
        series_for("page cache (epoch 1)", true),
    ];
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    let mut c = chart(
        format!(
            "{}: cache effect ({threads_text}, codec none)",
            view.title()
        ),
        "strategy",
        "throughput (samples/s)",
        Scale::Linear,
        Scale::Log,
        series,
    );
    c.x_categories = names;
    Some(figure(view, "cache", c))
}

/// One workload's cold throughput per strategy under each storage profile it was read under
/// (codec none, at the most threads all of them ran), the profiles side by side with their CIs:
/// `None` unless the views (one workload, one consumer) cover two or more profiles.
pub fn across_storage(views: &[&WorkloadView]) -> Option<Figure> {
    if views.len() < 2 {
        return None;
    }
    let t = views.iter().map(|v| v.max_threads()).min()?;
    let threads_text = crate::units::count(t as u64, "thread", "threads");
    let mut names: Vec<String> = Vec::new();
    for view in views {
        for (_, s) in &view.strategies {
            if !names.contains(s) {
                names.push(s.clone());
            }
        }
    }
    let n = views.len() as f64;
    let series: Vec<Series> = views
        .iter()
        .enumerate()
        .map(|(k, view)| {
            // Side by side within a strategy's slot, so that bars do not hide each other.
            let offset = (k as f64 - (n - 1.0) / 2.0) * (0.5 / n);
            let cells: Vec<_> = names
                .iter()
                .enumerate()
                .filter_map(|(i, s)| view.cold(s, Codec::None, t).map(|c| (i, c)))
                .collect();
            Series {
                name: view
                    .condition
                    .storage
                    .clone()
                    .unwrap_or_else(|| "local disk".into()),
                points: cells
                    .iter()
                    .map(|(i, c)| (*i as f64 + offset, c.throughput.mean))
                    .collect(),
                ..Series::default()
            }
            .with_intervals(cells.iter().map(|(_, c)| c.throughput.ci95).collect())
        })
        .collect();
    if series.iter().filter(|s| !s.points.is_empty()).count() < 2 {
        return None;
    }
    let first = views[0];
    let consumer = first
        .condition
        .consumer
        .map(|c| format!(", consumer {c}"))
        .unwrap_or_default();
    let mut c = chart(
        format!(
            "{}: cold throughput by storage profile ({threads_text}, codec none{consumer})",
            first.name
        ),
        "strategy",
        SPS,
        Scale::Linear,
        Scale::Log,
        series,
    );
    c.x_categories = names;
    let stem = crate::analysis::view::file_stem_of(&first.name);
    Some(Figure {
        file: format!("{stem}-storage-profiles.svg"),
        chart: c,
    })
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
