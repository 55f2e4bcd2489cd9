//! A forest plot: one row per estimate with its interval, on a log axis.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::axis::{Axis, Scale};
use super::text::{escape, format_number, text_width, title_svg, wrap};

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

/// Height of one row, and width of the plot area, in pixels.
const ROW: f64 = 18.0;
const PLOT_W: f64 = 460.0;

/// Where a forest plot is drawn: the canvas, the plot area's left and top edges and height,
/// the log axis, and the title and subtitle lines.
struct Layout {
    width: f64,
    height: f64,
    left: f64,
    top: f64,
    ph: f64,
    axis: Axis,
    title: String,
    title_h: f64,
    sub_lines: Vec<String>,
}

impl Layout {
    fn px(&self, v: f64) -> f64 {
        self.left + self.axis.frac(v) * PLOT_W
    }
}

impl Forest {
    pub fn to_svg(&self) -> String {
        let l = self.layout();
        let mut svg = String::new();
        let (width, height) = (l.width, l.height);
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        svg.push_str(&l.title);
        for (i, line) in l.sub_lines.iter().enumerate() {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#444">{}</text>"##,
                width / 2.0,
                10.0 + l.title_h + 6.0 + 15.0 * i as f64,
                escape(line)
            );
        }
        self.write_axis(&l, &mut svg);
        self.write_rows(&l, &mut svg);
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            l.left + PLOT_W / 2.0,
            l.top + l.ph + 36.0,
            escape(&self.x_label)
        );
        self.write_legend(&l, &mut svg);
        svg.push_str("</svg>\n");
        svg
    }

    /// The canvas sized for the labels, title and rows, and a log axis over every value.
    fn layout(&self) -> Layout {
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
        Layout {
            width,
            height: top + ph + 96.0,
            left: label_w,
            top,
            ph,
            axis: Axis::new(&values, Scale::Log, false),
            title,
            title_h,
            sub_lines,
        }
    }

    /// The noise band, the ticks and gridlines, the reference line and the plot's border.
    fn write_axis(&self, l: &Layout, svg: &mut String) {
        let (left, top, ph) = (l.left, l.top, l.ph);
        if let Some((lo, hi)) = self.band {
            let (x0, x1) = (l.px(lo).max(left), l.px(hi).min(left + PLOT_W));
            let _ = writeln!(
                svg,
                r##"<rect x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{ph:.1}" fill="#ececec"/>"##,
                (x1 - x0).max(0.0)
            );
        }
        for &t in &l.axis.ticks {
            let x = l.px(t);
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
        let x = l.px(self.reference);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333" stroke-width="1.2"/>"##,
            top + ph
        );
        let _ = writeln!(
            svg,
            r#"<rect x="{left:.1}" y="{top:.1}" width="{PLOT_W}" height="{ph:.1}" fill="none" stroke="black"/>"#
        );
    }

    /// Each row: its label, its interval's bar and its estimate's dot.
    fn write_rows(&self, l: &Layout, svg: &mut String) {
        let left = l.left;
        for (i, row) in self.rows.iter().enumerate() {
            let y = l.top + ROW * (i as f64 + 0.5);
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
                    l.px(lo).clamp(left, left + PLOT_W),
                    l.px(hi).clamp(left, left + PLOT_W),
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
                l.px(row.value)
            );
        }
    }

    /// The legend: the groups present, then the band, on one line under the axis title.
    fn write_legend(&self, l: &Layout, svg: &mut String) {
        let mut lx = l.left;
        let ly = l.top + l.ph + 62.0;
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
    }
}
