//! Text in a chart: its estimated width, wrapping, the title, escaping, and numbers as tick
//! labels.

use std::fmt::Write;

/// Estimated width in pixels of `text` in a sans-serif font of `size` pixels: 0.6 em per
/// character, a little over the average of common sans-serif faces (so estimates err wide).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` broken at spaces into lines of at most `width` pixels at `size` (a word longer than
/// that keeps a line of its own).
pub(super) fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
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
pub(super) fn title_svg(title: &str, centre: f64, width: f64, top: f64) -> (String, f64) {
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

/// `text` with the characters XML gives meaning to escaped.
pub(super) fn escape(text: &str) -> String {
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
