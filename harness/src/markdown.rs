//! Markdown tables, as report.md, `whatif` and `calibrate` print them.

use std::fmt::Write;

/// A Markdown table: a header row, its rule, and one line per row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}
