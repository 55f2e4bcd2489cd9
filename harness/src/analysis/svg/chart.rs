//! Scatter and line charts: series of points (with labels and 95 % intervals) over two axes,
//! drawn as SVG in named phases (frame, grid, axis labels, series, legend).

use std::fmt::Write;

use super::axis::{Axis, Scale};
use super::text::{escape, format_number, text_width, title_svg};

#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// One label per point (drawn beside it, placed clear of the other labels and points), or
    /// empty.
    pub labels: Vec<String>,
    /// One 95 % interval of y per point (drawn as an error bar), or empty.
    pub y_intervals: Vec<Option<(f64, f64)>>,
    /// Connect the points in order.
    pub line: bool,
    /// Draw a dashed line (e.g. a Pareto front), without dots.
    pub dashed: bool,
    /// Draw each point as a ring around what lies there (a recommendation marked on a
    /// strategy's dot), not as a dot.
    pub ring: bool,
}

impl Series {
    /// Points drawn as dots, each with its label beside it.
    pub fn labelled_dots(name: &str, points: Vec<(f64, f64)>, labels: Vec<String>) -> Series {
        Series {
            name: name.into(),
            points,
            labels,
            ..Series::default()
        }
    }

    /// Points joined by a dashed line, without labels (a front, a diagonal).
    pub fn dashed_line(name: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            line: true,
            dashed: true,
            ..Series::default()
        }
    }

    /// Points drawn as rings around the dots already there (what a recommendation names).
    pub fn rings(name: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            ring: true,
            ..Series::default()
        }
    }

    /// The same series with a 95 % interval of y per point.
    pub fn with_intervals(mut self, intervals: Vec<Option<(f64, f64)>>) -> Series {
        self.y_intervals = intervals;
        self
    }
}

#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// When non-empty, x values are indices into these names.
    pub x_categories: Vec<String>,
    /// When non-empty, the x ticks (the thread counts swept, say) instead of round numbers.
    pub x_ticks: Vec<f64>,
    /// Start a linear y axis at zero.
    pub y_from_zero: bool,
    pub series: Vec<Series>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 80.0;
/// Least room right of the plot for the legend.
const RIGHT: f64 = 150.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 64.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// A rectangle (x0, y0, x1, y1) in pixels.
pub(super) type Rect = (f64, f64, f64, f64);

pub(super) fn overlap(a: Rect, b: Rect) -> f64 {
    let w = (a.2.min(b.2) - a.0.max(b.0)).max(0.0);
    let h = (a.3.min(b.3) - a.1.max(b.1)).max(0.0);
    w * h
}

/// Where to write a label of `width` for a point at (x, y): the first of eight places around it
/// that overlaps nothing taken and stays inside `area`, else the one overlapping least. Returns
/// the text's start and baseline; the label's box joins `taken`.
fn place_label(x: f64, y: f64, width: f64, area: Rect, taken: &mut Vec<Rect>) -> (f64, f64) {
    const H: f64 = 11.0;
    let candidates = [
        (x + 6.0, y - 5.0),
        (x + 6.0, y + 13.0),
        (x - 6.0 - width, y - 5.0),
        (x - 6.0 - width, y + 13.0),
        (x - width / 2.0, y - 8.0),
        (x - width / 2.0, y + 17.0),
        (x + 8.0, y + 4.0),
        (x - 8.0 - width, y + 4.0),
    ];
    let boxed = |(tx, ty): (f64, f64)| (tx, ty - H + 2.0, tx + width, ty + 2.0);
    let cost = |c: (f64, f64)| {
        let b = boxed(c);
        let outside = if b.0 < area.0 || b.2 > area.2 || b.1 < area.1 || b.3 > area.3 {
            1e6
        } else {
            0.0
        };
        outside + taken.iter().map(|t| overlap(b, *t)).sum::<f64>()
    };
    let best = candidates
        .iter()
        .copied()
        .find(|c| cost(*c) == 0.0)
        .unwrap_or_else(|| {
            candidates
                .iter()
                .copied()
                .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
                .unwrap_or(candidates[0])
        });
    taken.push(boxed(best));
    best
}

/// Where a chart is drawn: the canvas, the plot area inside it, and its two axes.
struct Plot {
    width: f64,
    height: f64,
    /// The plot area's top edge (below the title) and size.
    top: f64,
    pw: f64,
    ph: f64,
    title: String,
    x: Axis,
    y: Axis,
    categorical: bool,
}

impl Plot {
    fn px(&self, x: f64) -> f64 {
        LEFT + self.x.frac(x) * self.pw
    }

    fn py(&self, y: f64) -> f64 {
        self.top + self.ph - self.y.frac(y) * self.ph
    }

    /// The plot area as a rectangle.
    fn area(&self) -> Rect {
        (LEFT, self.top, LEFT + self.pw, self.top + self.ph)
    }
}

impl Chart {
    pub fn to_svg(&self) -> String {
        let plot = self.plot();
        let mut svg = String::new();
        let (width, height) = (plot.width, plot.height);
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        svg.push_str(&plot.title);
        self.write_grid(&plot, &mut svg);
        self.write_axis_labels(&plot, &mut svg);
        self.write_series(&plot, &mut svg);
        self.write_interval_note(&plot, &mut svg);
        svg.push_str("</svg>\n");
        svg
    }

    /// The canvas, grown right for a wide legend and down for a wrapped title, and the axes.
    fn plot(&self) -> Plot {
        let legend_width = self
            .series
            .iter()
            .map(|s| text_width(&s.name, 12.0))
            .fold(0.0, f64::max);
        let right = RIGHT.max(legend_width + 60.0);
        let width = WIDTH - RIGHT + right;
        let pw = WIDTH - LEFT - RIGHT;
        let (title, title_h) = title_svg(&self.title, width / 2.0, width, 24.0);
        let top = TOP + title_h - 18.0;
        let height = HEIGHT + top - TOP;
        Plot {
            width,
            height,
            top,
            pw,
            ph: height - top - BOTTOM,
            title,
            x: self.x_axis(),
            y: self.y_axis(),
            categorical: !self.x_categories.is_empty(),
        }
    }

    /// Categories, the given ticks, or an axis fitted to the points' x values.
    fn x_axis(&self) -> Axis {
        if !self.x_categories.is_empty() {
            return Axis {
                scale: Scale::Linear,
                lo: -0.5,
                hi: self.x_categories.len() as f64 - 0.5,
                ticks: (0..self.x_categories.len()).map(|i| i as f64).collect(),
            };
        }
        if self.x_ticks.is_empty() {
            let xs: Vec<f64> = self
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .collect();
            return Axis::new(&xs, self.x_scale, false);
        }
        let (lo, hi) = self
            .x_ticks
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        let (lo, hi) = match self.x_scale {
            Scale::Linear => {
                let pad = ((hi - lo) * 0.05).max(0.5);
                (lo - pad, hi + pad)
            }
            Scale::Log => (lo / 1.1, hi * 1.1),
        };
        Axis {
            scale: self.x_scale,
            lo,
            hi,
            ticks: self.x_ticks.clone(),
        }
    }

    /// An axis fitted to the points' y values and their intervals.
    fn y_axis(&self) -> Axis {
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| {
                s.points.iter().map(|p| p.1).chain(
                    s.y_intervals
                        .iter()
                        .flatten()
                        // A rate's interval below zero (few trials, a linear CI) ends at zero.
                        .flat_map(|&(lo, hi)| {
                            [if self.y_from_zero { lo.max(0.0) } else { lo }, hi]
                        }),
                )
            })
            .collect();
        Axis::new(&ys, self.y_scale, self.y_from_zero)
    }

    /// Gridlines and tick labels of both axes.
    fn write_grid(&self, plot: &Plot, svg: &mut String) {
        let (top, pw, ph) = (plot.top, plot.pw, plot.ph);
        for &t in &plot.y.ticks {
            let y = plot.py(t);
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e4e4e4"/>"##,
                LEFT + pw
            );
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                y + 4.0,
                format_number(t)
            );
        }
        let slot = pw / plot.x.ticks.len().max(1) as f64;
        for (i, &t) in plot.x.ticks.iter().enumerate() {
            let x = plot.px(t);
            let label = if plot.categorical {
                self.x_categories[i].clone()
            } else {
                format_number(t)
            };
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#e4e4e4"/>"##,
                top + ph
            );
            // Category names wider than their slot are written at a slant.
            if plot.categorical && text_width(&label, 12.0) > slot - 4.0 {
                let _ = writeln!(
                    svg,
                    r#"<text transform="translate({x:.1} {:.1}) rotate(-20)" text-anchor="end">{}</text>"#,
                    top + ph + 16.0,
                    escape(&label)
                );
            } else {
                let _ = writeln!(
                    svg,
                    r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                    top + ph + 18.0,
                    escape(&label)
                );
            }
        }
    }

    /// The plot area's border and the two axis labels.
    fn write_axis_labels(&self, plot: &Plot, svg: &mut String) {
        let (top, pw, ph) = (plot.top, plot.pw, plot.ph);
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            plot.height - 10.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            top + ph / 2.0,
            escape(&self.y_label)
        );
    }

    /// Every series: its line, interval bars, dots and labels (placed clear of every dot and
    /// of each other), and its legend entry.
    fn write_series(&self, plot: &Plot, svg: &mut String) {
        // Every dot is an obstacle for every label.
        let mut taken: Vec<Rect> = Vec::new();
        let mut shown_of = Vec::new();
        for series in &self.series {
            let shown: Vec<(usize, f64, f64)> = series
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| plot.x.shows(p.0) && plot.y.shows(p.1))
                .map(|(i, p)| (i, plot.px(p.0), plot.py(p.1)))
                .collect();
            if !series.dashed {
                taken.extend(
                    shown
                        .iter()
                        .map(|&(_, x, y)| (x - 5.0, y - 5.0, x + 5.0, y + 5.0)),
                );
            }
            shown_of.push(shown);
        }
        for (k, (series, shown)) in self.series.iter().zip(&shown_of).enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let dash = if series.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            if series.line && shown.len() > 1 {
                let path: Vec<String> = shown
                    .iter()
                    .map(|(_, x, y)| format!("{x:.1},{y:.1}"))
                    .collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
                    path.join(" ")
                );
            }
            write_intervals(plot, series, shown, colour, svg);
            if !series.dashed {
                write_dots(plot, series, shown, colour, &mut taken, svg);
            }
            write_legend_entry(plot, series, k, colour, dash, svg);
        }
    }

    /// A note under the legend that the bars are 95 % intervals, when there are any.
    fn write_interval_note(&self, plot: &Plot, svg: &mut String) {
        if self
            .series
            .iter()
            .any(|s| s.y_intervals.iter().any(Option::is_some))
        {
            let ly = plot.top + 10.0 + 20.0 * self.series.len() as f64;
            let _ = writeln!(
                svg,
                r##"<text x="{}" y="{}" font-size="11" fill="#555">bars: 95 % CI</text>"##,
                LEFT + plot.pw + 16.0,
                ly + 4.0
            );
        }
    }
}

/// A series' 95 % intervals as error bars, clamped to the plot area.
fn write_intervals(
    plot: &Plot,
    series: &Series,
    shown: &[(usize, f64, f64)],
    colour: &str,
    svg: &mut String,
) {
    let (top, ph) = (plot.top, plot.ph);
    for &(i, x, _) in shown.iter() {
        let Some(Some((lo, hi))) = series.y_intervals.get(i) else {
            continue;
        };
        let clamp = |v: f64| {
            if plot.y.shows(v) {
                plot.py(v).clamp(top, top + ph)
            } else {
                top + ph
            }
        };
        let (y0, y1) = (clamp(*lo), clamp(*hi));
        let _ = writeln!(
            svg,
            r#"<path d="M{x:.1},{y0:.1}V{y1:.1}M{:.1},{y0:.1}h8M{:.1},{y1:.1}h8" stroke="{colour}" stroke-width="1.5" fill="none"/>"#,
            x - 4.0,
            x - 4.0
        );
    }
}

/// One point's mark: a dot, or a ring for a series of rings.
fn mark(series: &Series, x: f64, y: f64, colour: &str) -> String {
    match series.ring {
        true => format!(
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="8" fill="none" stroke="{colour}" stroke-width="2.5"/>"#
        ),
        false => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{colour}"/>"#),
    }
}

/// A series' dots and their labels, each label placed clear of what is `taken`.
fn write_dots(
    plot: &Plot,
    series: &Series,
    shown: &[(usize, f64, f64)],
    colour: &str,
    taken: &mut Vec<Rect>,
    svg: &mut String,
) {
    for &(i, x, y) in shown.iter() {
        let _ = writeln!(svg, "{}", mark(series, x, y, colour));
        if let Some(label) = series.labels.get(i) {
            let (tx, ty) = place_label(x, y, text_width(label, 11.0), plot.area(), taken);
            let _ = writeln!(
                svg,
                r#"<text x="{tx:.1}" y="{ty:.1}" font-size="11">{}</text>"#,
                escape(label)
            );
        }
    }
}

/// Series `k`'s legend entry: its mark (a dot, a line, or a line through a dot) and name.
fn write_legend_entry(
    plot: &Plot,
    series: &Series,
    k: usize,
    colour: &str,
    dash: &str,
    svg: &mut String,
) {
    let ly = plot.top + 10.0 + 20.0 * k as f64;
    let lx = LEFT + plot.pw + 16.0;
    if series.line {
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/>"#,
            lx + 22.0
        );
    }
    if !series.dashed {
        let _ = writeln!(svg, "{}", mark(series, lx + 11.0, ly, colour));
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}">{}</text>"#,
        lx + 28.0,
        ly + 4.0,
        escape(&series.name)
    );
}
