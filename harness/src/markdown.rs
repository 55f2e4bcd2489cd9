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

/// Rows for programs instead of a Markdown table: CSV or JSON (plain seconds and bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    Csv,
    Json,
}

impl Rows {
    /// From a command's `--csv` and `--json` flags; `None`: Markdown.
    pub fn from_flags(csv: bool, json: bool) -> Option<Rows> {
        match (csv, json) {
            (true, _) => Some(Rows::Csv),
            (_, true) => Some(Rows::Json),
            _ => None,
        }
    }
}

/// Rows of named fields as CSV (a header from the first row's names; absent values empty) or
/// as a JSON array of objects.
pub fn rows_as(
    format: Rows,
    rows: &[Vec<(&'static str, serde_json::Value)>],
) -> anyhow::Result<String> {
    match format {
        Rows::Json => {
            let values: Vec<serde_json::Value> = rows
                .iter()
                .map(|row| {
                    serde_json::Value::Object(
                        row.iter()
                            .map(|(k, v)| (k.to_string(), v.clone()))
                            .collect(),
                    )
                })
                .collect();
            Ok(serde_json::to_string_pretty(&values)? + "\n")
        }
        Rows::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            if let Some(first) = rows.first() {
                w.write_record(first.iter().map(|(name, _)| *name))?;
            }
            for row in rows {
                w.write_record(row.iter().map(|(_, v)| match v {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                }))?;
            }
            Ok(String::from_utf8(w.into_inner()?)?)
        }
    }
}
