//! A small SVG chart writer for reports: scatter and line series over linear or log axes (or
//! categories on x), with ticks, gridlines, axis labels carrying units, point labels and a
//! legend. Text is SVG `<text>`, so no font files are needed.

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

mod forest;
pub use forest::{Forest, ForestRow};
#[cfg(test)]
mod tests;
