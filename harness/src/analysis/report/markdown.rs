//! The report as Markdown (report.md).

use std::fmt::Write;

use crate::analysis::report::model::{Block, Report};

/// report.md's text.
pub fn markdown(report: &Report) -> String {
    let mut md = String::new();
    for block in &report.blocks {
        match block {
            Block::Heading { level, text } => {
                let _ = writeln!(md, "{} {text}\n", "#".repeat(*level));
            }
            Block::Paragraph(text) => {
                let _ = writeln!(md, "{text}\n");
            }
            Block::Line(text) => {
                let _ = writeln!(md, "{text}");
            }
            Block::Gap => md.push('\n'),
            Block::List(items) => {
                for item in items {
                    let _ = writeln!(md, "- {item}");
                }
            }
            Block::Table(t) => {
                let columns: Vec<&str> = t.columns.iter().map(String::as_str).collect();
                let _ = writeln!(
                    md,
                    "{}\n\n{}",
                    t.caption,
                    crate::markdown::table(&columns, &t.rows)
                );
            }
            Block::Figures(figures) => {
                let links: Vec<String> = figures
                    .iter()
                    .map(|f| format!("![{}](plots/{})", f.file, f.file))
                    .collect();
                let _ = writeln!(md, "{}\n", links.join("\n"));
            }
            Block::Markdown(text) => {
                let _ = writeln!(md, "{text}");
            }
        }
    }
    md
}
