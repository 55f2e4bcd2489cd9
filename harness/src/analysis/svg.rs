//! A small SVG chart writer for reports: scatter and line series over linear or log axes (or
//! categories on x), with ticks, gridlines, axis labels carrying units, point labels and a
//! legend. Text is SVG `<text>`, so no font files are needed.

use std::collections::BTreeSet;
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    Log,
}

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

/// Estimated width in pixels of `text` in a sans-serif font of `size` pixels: 0.6 em per
/// character, a little over the average of common sans-serif faces (so estimates err wide).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` broken at spaces into lines of at most `width` pixels at `size` (a word longer than
/// that keeps a line of its own).
fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&candidate, size) > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A title centred on `centre` within `width`: one line at 15 px when it fits, else wrapped
/// into lines that do. Returns the SVG and the height used.
fn title_svg(title: &str, centre: f64, width: f64, top: f64) -> (String, f64) {
    let lines = wrap(title, 15.0, width - 20.0);
    let mut svg = String::new();
    for (i, line) in lines.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text x="{centre:.1}" y="{:.1}" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            top + 18.0 * i as f64,
            escape(line)
        );
    }
    (svg, 18.0 * lines.len().max(1) as f64)
}

/// A rectangle (x0, y0, x1, y1) in pixels.
type Rect = (f64, f64, f64, f64);

fn overlap(a: Rect, b: Rect) -> f64 {
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

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label: integers plainly, small values with the digits they need.
pub fn format_number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let text = if a >= 100.0 || (v.fract() == 0.0 && a >= 1.0) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let digits = (-a.log10().floor()) as usize + 1;
        format!("{v:.digits$}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
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
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Axis {
    fn new(values: &[f64], scale: Scale, from_zero: bool) -> Axis {
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
    fn frac(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log => (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
        }
    }

    fn shows(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }
}

impl Chart {
    pub fn to_svg(&self) -> String {
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
        let ph = height - top - BOTTOM;
        let categorical = !self.x_categories.is_empty();
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.x_ticks.iter().copied())
            .collect();
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
        let x_axis = if categorical {
            Axis {
                scale: Scale::Linear,
                lo: -0.5,
                hi: self.x_categories.len() as f64 - 0.5,
                ticks: (0..self.x_categories.len()).map(|i| i as f64).collect(),
            }
        } else if !self.x_ticks.is_empty() {
            let mut axis = Axis::new(&xs, self.x_scale, false);
            let (lo, hi) = self
                .x_ticks
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                    (a.min(*v), b.max(*v))
                });
            let pad = match self.x_scale {
                Scale::Linear => ((hi - lo) * 0.05).max(0.5),
                Scale::Log => 0.0,
            };
            (axis.lo, axis.hi) = match self.x_scale {
                Scale::Linear => (lo - pad, hi + pad),
                Scale::Log => (lo / 1.1, hi * 1.1),
            };
            axis.ticks = self.x_ticks.clone();
            axis
        } else {
            Axis::new(&xs, self.x_scale, false)
        };
        let y_axis = Axis::new(&ys, self.y_scale, self.y_from_zero);
        let px = |x: f64| LEFT + x_axis.frac(x) * pw;
        let py = |y: f64| top + ph - y_axis.frac(y) * ph;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        svg.push_str(&title);
        for &t in &y_axis.ticks {
            let y = py(t);
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
        let slot = pw / x_axis.ticks.len().max(1) as f64;
        for (i, &t) in x_axis.ticks.iter().enumerate() {
            let x = px(t);
            let label = if categorical {
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
            if categorical && text_width(&label, 12.0) > slot - 4.0 {
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
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            height - 10.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            top + ph / 2.0,
            escape(&self.y_label)
        );
        // Every dot is an obstacle for every label.
        let mut taken: Vec<Rect> = Vec::new();
        let mut shown_of = Vec::new();
        for series in &self.series {
            let shown: Vec<(usize, f64, f64)> = series
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| x_axis.shows(p.0) && y_axis.shows(p.1))
                .map(|(i, p)| (i, px(p.0), py(p.1)))
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
        let area = (LEFT, top, LEFT + pw, top + ph);
        for (k, (series, shown)) in self.series.iter().zip(&shown_of).enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            if series.line && shown.len() > 1 {
                let path: Vec<String> = shown
                    .iter()
                    .map(|(_, x, y)| format!("{x:.1},{y:.1}"))
                    .collect();
                let dash = if series.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
                    path.join(" ")
                );
            }
            for &(i, x, _) in shown.iter() {
                let Some(Some((lo, hi))) = series.y_intervals.get(i) else {
                    continue;
                };
                let clamp = |v: f64| {
                    if y_axis.shows(v) {
                        py(v).clamp(top, top + ph)
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
            if !series.dashed {
                for &(i, x, y) in shown.iter() {
                    let _ = writeln!(
                        svg,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{colour}"/>"#
                    );
                    if let Some(label) = series.labels.get(i) {
                        let (tx, ty) = place_label(x, y, text_width(label, 11.0), area, &mut taken);
                        let _ = writeln!(
                            svg,
                            r#"<text x="{tx:.1}" y="{ty:.1}" font-size="11">{}</text>"#,
                            escape(label)
                        );
                    }
                }
            }
            // The legend's mark is the series' mark: a dot, a line, or a line through a dot.
            let ly = top + 10.0 + 20.0 * k as f64;
            let lx = LEFT + pw + 16.0;
            if series.line {
                let dash = if series.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    svg,
                    r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/>"#,
                    lx + 22.0
                );
            }
            if !series.dashed {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{}" cy="{ly}" r="4" fill="{colour}"/>"#,
                    lx + 11.0
                );
            }
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}">{}</text>"#,
                lx + 28.0,
                ly + 4.0,
                escape(&series.name)
            );
        }
        if self
            .series
            .iter()
            .any(|s| s.y_intervals.iter().any(Option::is_some))
        {
            let ly = top + 10.0 + 20.0 * self.series.len() as f64;
            let _ = writeln!(
                svg,
                r##"<text x="{}" y="{}" font-size="11" fill="#555">bars: 95 % CI</text>"##,
                LEFT + pw + 16.0,
                ly + 4.0
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// One row of a [`Forest`] plot: an estimate and its interval.
#[derive(Clone, Debug)]
pub struct ForestRow {
    pub label: String,
    pub value: f64,
    pub interval: Option<(f64, f64)>,
    /// Index into [`Forest::groups`]: its colour and legend entry.
    pub group: usize,
}

/// A forest plot: one row per estimate, a dot at its value and a bar over its interval on a log
/// x axis, a reference line (no change) and a shaded band (the noise threshold).
#[derive(Clone, Debug)]
pub struct Forest {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub rows: Vec<ForestRow>,
    /// (legend text, colour) per group.
    pub groups: Vec<(String, &'static str)>,
    pub reference: f64,
    pub band: Option<(f64, f64)>,
    pub band_label: String,
}

impl Forest {
    pub fn to_svg(&self) -> String {
        const ROW: f64 = 18.0;
        const PLOT_W: f64 = 460.0;
        let label_w = self
            .rows
            .iter()
            .map(|r| text_width(&r.label, 11.0))
            .fold(60.0, f64::max)
            + 16.0;
        let width = label_w + PLOT_W + 30.0;
        let (title, title_h) = title_svg(&self.title, width / 2.0, width, 22.0);
        let sub_lines = wrap(&self.subtitle, 11.0, width - 20.0);
        let top = 10.0 + title_h + 15.0 * sub_lines.len() as f64 + 8.0;
        let ph = ROW * self.rows.len().max(1) as f64;
        let height = top + ph + 96.0;
        let mut values: Vec<f64> = self
            .rows
            .iter()
            .flat_map(|r| {
                let (lo, hi) = r.interval.unwrap_or((r.value, r.value));
                [r.value, lo, hi]
            })
            .collect();
        values.push(self.reference);
        if let Some((lo, hi)) = self.band {
            values.extend([lo, hi]);
        }
        let axis = Axis::new(&values, Scale::Log, false);
        let left = label_w;
        let px = |v: f64| left + axis.frac(v) * PLOT_W;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        svg.push_str(&title);
        for (i, line) in sub_lines.iter().enumerate() {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#444">{}</text>"##,
                width / 2.0,
                10.0 + title_h + 6.0 + 15.0 * i as f64,
                escape(line)
            );
        }
        if let Some((lo, hi)) = self.band {
            let (x0, x1) = (px(lo).max(left), px(hi).min(left + PLOT_W));
            let _ = writeln!(
                svg,
                r##"<rect x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{ph:.1}" fill="#ececec"/>"##,
                (x1 - x0).max(0.0)
            );
        }
        for &t in &axis.ticks {
            let x = px(t);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e4e4e4"/>"##,
                top + ph
            );
            let _ = writeln!(
                svg,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                top + ph + 16.0,
                format_number(t)
            );
        }
        let x = px(self.reference);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333" stroke-width="1.2"/>"##,
            top + ph
        );
        let _ = writeln!(
            svg,
            r#"<rect x="{left:.1}" y="{top:.1}" width="{PLOT_W}" height="{ph:.1}" fill="none" stroke="black"/>"#
        );
        for (i, row) in self.rows.iter().enumerate() {
            let y = top + ROW * (i as f64 + 0.5);
            let colour = self.groups.get(row.group).map_or("#000", |g| g.1);
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
                left - 8.0,
                y + 4.0,
                escape(&row.label)
            );
            if let Some((lo, hi)) = row.interval {
                let (x0, x1) = (
                    px(lo).clamp(left, left + PLOT_W),
                    px(hi).clamp(left, left + PLOT_W),
                );
                let _ = writeln!(
                    svg,
                    r#"<path d="M{x0:.1},{y:.1}H{x1:.1}M{x0:.1},{:.1}v8M{x1:.1},{:.1}v8" stroke="{colour}" stroke-width="1.5" fill="none"/>"#,
                    y - 4.0,
                    y - 4.0
                );
            }
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#,
                px(row.value)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            left + PLOT_W / 2.0,
            top + ph + 36.0,
            escape(&self.x_label)
        );
        // Legend: the groups present, then the band, on one line under the axis title.
        let mut lx = left;
        let ly = top + ph + 62.0;
        let used: BTreeSet<usize> = self.rows.iter().map(|r| r.group).collect();
        for (g, (name, colour)) in self.groups.iter().enumerate() {
            if !used.contains(&g) {
                continue;
            }
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"/>"#,
                lx + 4.0,
                ly - 4.0
            );
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{ly:.1}" font-size="11">{}</text>"#,
                lx + 12.0,
                escape(name)
            );
            lx += 24.0 + text_width(name, 11.0);
        }
        if self.band.is_some() {
            let _ = writeln!(
                svg,
                r##"<rect x="{lx:.1}" y="{:.1}" width="14" height="10" fill="#ececec" stroke="#bbb"/>"##,
                ly - 9.0
            );
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{ly:.1}" font-size="11">{}</text>"#,
                lx + 20.0,
                escape(&self.band_label)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> Chart {
        Chart {
            title: "a & b".into(),
            x_label: "storage per sample (MB)".into(),
            y_label: "throughput (samples/s)".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Linear,
            x_categories: Vec::new(),
            x_ticks: Vec::new(),
            y_from_zero: true,
            series: vec![Series {
                name: "cold".into(),
                points: vec![(0.1, 600.0), (1.0, 1500.0), (0.0, 5.0)],
                labels: vec!["raw".into(), "dec".into(), "zero".into()],
                line: true,
                ..Series::default()
            }],
        }
    }

    #[test]
    fn svg_has_axes_labels_points_and_legend() {
        let svg = chart().to_svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("storage per sample (MB)") && svg.contains("throughput (samples/s)"));
        assert!(svg.contains("a &amp; b"), "title is escaped");
        assert_eq!(
            svg.matches("<circle").count(),
            2 + 1,
            "a zero cannot sit on a log axis (and the legend's mark is a dot on a line)"
        );
        assert!(svg.contains(">raw<") && svg.contains(">cold<"));
        assert!(
            svg.contains(">0.1<") && svg.contains(">1<"),
            "log ticks at decades"
        );
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let axis = Axis::new(&[3.0, 97.0], Scale::Linear, true);
        assert_eq!(axis.ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(format_number(0.05), "0.05");
        assert_eq!(format_number(1500.0), "1500");
        assert_eq!(format_number(2.5), "2.5");
    }

    /// The boxes of the point labels written in an SVG (by the estimate the placement uses).
    fn label_boxes(svg: &str) -> Vec<Rect> {
        svg.lines()
            .filter(|l| l.starts_with("<text x=") && l.contains(r#"font-size="11""#))
            .map(|l| {
                let num = |key: &str| -> f64 {
                    let rest = &l[l.find(key).unwrap() + key.len()..];
                    rest[..rest.find('"').unwrap()].parse().unwrap()
                };
                let text = &l[l.find('>').unwrap() + 1..l.rfind("</text>").unwrap()];
                let (x, y) = (num("x=\""), num("y=\""));
                (x, y - 9.0, x + text_width(text, 11.0), y + 2.0)
            })
            .collect()
    }

    #[test]
    fn labels_of_nearby_points_do_not_collide() {
        // Six strategies within a few pixels of each other (unprocessed and concatenated sit
        // on top of each other in the paper's CV figure).
        let points = vec![
            (1.0, 100.0),
            (1.02, 101.0),
            (1.04, 99.0),
            (0.98, 100.5),
            (5.0, 300.0),
            (5.1, 302.0),
        ];
        let labels: Vec<String> = [
            "unprocessed",
            "concatenated",
            "decoded",
            "resized",
            "pixel-centered",
            "random-crop",
        ]
        .map(String::from)
        .to_vec();
        let mut c = chart();
        c.series = vec![Series::labelled_dots("strategies", points, labels)];
        let svg = c.to_svg();
        let boxes = label_boxes(&svg);
        assert_eq!(boxes.len(), 6, "{svg}");
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                assert_eq!(overlap(*a, *b), 0.0, "{a:?} and {b:?} overlap");
            }
        }
    }

    #[test]
    fn given_ticks_error_bars_long_titles_and_legend_marks() {
        let mut c = chart();
        c.x_scale = Scale::Linear;
        c.x_ticks = vec![1.0, 2.0, 4.0, 8.0];
        c.title = "a workload with a long name under storage paper-ceph-hdd, consumer 32x100ms: thread scaling (codec none)".into();
        c.series = vec![
            Series {
                name: "decoded".into(),
                points: vec![(1.0, 100.0), (2.0, 190.0), (4.0, 350.0), (8.0, 600.0)],
                line: true,
                ..Series::default()
            }
            .with_intervals(vec![
                Some((-40.0, 240.0)),
                None,
                Some((300.0, 400.0)),
                None,
            ]),
            Series::dashed_line("front", vec![(1.0, 50.0), (8.0, 50.0)]),
        ];
        let svg = c.to_svg();
        for tick in [">1<", ">2<", ">4<", ">8<"] {
            assert!(svg.contains(tick), "tick {tick}");
        }
        assert!(
            !svg.contains(">1.5<") && !svg.contains(">3<"),
            "only the given ticks"
        );
        assert_eq!(svg.matches("<path d=\"M").count(), 2, "two error bars");
        assert!(svg.contains("95 % CI"));
        assert!(
            !svg.contains(">-"),
            "an interval below zero ends at the zero axis"
        );
        // The title is wrapped into lines that each fit the picture.
        let width: f64 = {
            let w = &svg[svg.find("width=\"").unwrap() + 7..];
            w[..w.find('"').unwrap()].parse().unwrap()
        };
        let titles: Vec<&str> = svg
            .lines()
            .filter(|l| l.contains(r#"font-weight="bold""#))
            .collect();
        assert!(titles.len() >= 2, "wrapped: {titles:?}");
        for t in titles {
            let text = &t[t.find('>').unwrap() + 1..t.rfind("</text>").unwrap()];
            assert!(text_width(text, 15.0) <= width, "{text}");
        }
        // Legend: the line series shows a line and a dot; the dashed one a dashed line only.
        assert_eq!(svg.matches("stroke-dasharray").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4 + 1);
    }

    #[test]
    fn narrow_log_ranges_get_round_ticks_inside_the_range() {
        let axis = Axis::new(&[0.92, 1.0, 1.07], Scale::Log, false);
        assert!(axis.lo < 0.92 && axis.hi > 1.07 && axis.hi / axis.lo < 1.5);
        assert!(axis.ticks.len() >= 3, "{:?}", axis.ticks);
        assert!(axis.ticks.iter().all(|t| *t >= axis.lo && *t <= axis.hi));
        assert!(axis.ticks.contains(&1.0));
    }

    #[test]
    fn forest_rows_bars_reference_and_band() {
        let forest = Forest {
            title: "Throughput B / A".into(),
            subtitle: "A: x; B: y".into(),
            x_label: "ratio".into(),
            rows: vec![
                ForestRow {
                    label: "decoded · 2".into(),
                    value: 1.5,
                    interval: Some((1.4, 1.6)),
                    group: 0,
                },
                ForestRow {
                    label: "raw · 2".into(),
                    value: 0.99,
                    interval: None,
                    group: 2,
                },
            ],
            groups: vec![
                ("faster".into(), "#2ca02c"),
                ("slower".into(), "#d62728"),
                ("no change".into(), "#555555"),
            ],
            reference: 1.0,
            band: Some((1.0 / 1.02, 1.02)),
            band_label: "±2 % noise".into(),
        };
        let svg = forest.to_svg();
        assert!(svg.contains(">decoded · 2<") && svg.contains(">raw · 2<"));
        assert_eq!(svg.matches("<path").count(), 1, "one interval");
        // Rows' dots plus the legend's two groups in use (not "slower").
        assert_eq!(svg.matches("<circle").count(), 2 + 2);
        assert!(!svg.contains(">slower<") && svg.contains("±2 % noise"));
    }
}
