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
    /// One label per point (drawn beside it), or empty.
    pub labels: Vec<String>,
    /// Connect the points in order.
    pub line: bool,
    /// Draw a dashed line (e.g. a Pareto front).
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
    /// Start a linear y axis at zero.
    pub y_from_zero: bool,
    pub series: Vec<Series>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 64.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

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
                let raw = (hi - lo) / 5.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| *s >= raw)
                    .unwrap_or(10.0 * mag);
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
        let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let categorical = !self.x_categories.is_empty();
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        let x_axis = if categorical {
            Axis {
                scale: Scale::Linear,
                lo: -0.5,
                hi: self.x_categories.len() as f64 - 0.5,
                ticks: (0..self.x_categories.len()).map(|i| i as f64).collect(),
            }
        } else {
            Axis::new(&xs, self.x_scale, false)
        };
        let y_axis = Axis::new(&ys, self.y_scale, self.y_from_zero);
        let px = |x: f64| LEFT + x_axis.frac(x) * pw;
        let py = |y: f64| TOP + ph - y_axis.frac(y) * ph;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            LEFT + pw / 2.0,
            escape(&self.title)
        );
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
        for (i, &t) in x_axis.ticks.iter().enumerate() {
            let x = px(t);
            let label = if categorical {
                escape(&self.x_categories[i])
            } else {
                format_number(t)
            };
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e4e4e4"/>"##,
                TOP + ph
            );
            let _ = writeln!(
                svg,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
                TOP + ph + 18.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            HEIGHT - 16.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            TOP + ph / 2.0,
            escape(&self.y_label)
        );
        for (k, series) in self.series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let shown: Vec<(usize, f64, f64)> = series
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| x_axis.shows(p.0) && y_axis.shows(p.1))
                .map(|(i, p)| (i, px(p.0), py(p.1)))
                .collect();
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
            if !series.dashed {
                for &(i, x, y) in &shown {
                    let _ = writeln!(
                        svg,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{colour}"/>"#
                    );
                    if let Some(label) = series.labels.get(i) {
                        let _ = writeln!(
                            svg,
                            r#"<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                            x + 6.0,
                            y - 6.0,
                            escape(label)
                        );
                    }
                }
            }
            let ly = TOP + 10.0 + 20.0 * k as f64;
            let lx = LEFT + pw + 16.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/>"#,
                lx + 18.0
            );
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}">{}</text>"#,
                lx + 24.0,
                ly + 4.0,
                escape(&series.name)
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
            y_from_zero: true,
            series: vec![Series {
                name: "cold".into(),
                points: vec![(0.1, 600.0), (1.0, 1500.0), (0.0, 5.0)],
                labels: vec!["raw".into(), "dec".into(), "zero".into()],
                line: true,
                dashed: false,
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
            2,
            "a zero cannot sit on a log axis"
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
}
