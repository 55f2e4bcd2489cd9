//! A small SVG chart writer for reports: scatter and line series over linear or log axes (or
//! categories on x), with ticks, gridlines, axis labels carrying units, point labels and a
//! legend. Text is SVG `<text>`, so no font files are needed.

mod axis;
mod chart;
mod forest;
mod text;

pub use axis::Scale;
pub use chart::{Chart, Series};
pub use forest::{Forest, ForestRow};
pub use text::{format_number, text_width};

#[cfg(test)]
mod tests;
