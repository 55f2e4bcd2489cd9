//! The report as data: an ordered list of blocks (headings, paragraphs, tables, lists,
//! figures, and composed Markdown for the sections that are prose), built once by
//! `assemble.rs` and written by one writer per format (`markdown.rs`, `json.rs`, and CSV for
//! every table). A new table is one function returning a [`Table`] and one line that pushes it:
//! it then appears in report.md, report.json and `tables/`.

use serde::Serialize;

use crate::analysis::svg::Chart;

/// One table: a caption above it, its columns and its rows (cells as the report prints them).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table {
    /// What the table is, within its section (`strategies`, `caching`, ...): its CSV file's
    /// name and its key in report.json.
    pub id: &'static str,
    pub caption: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(id: &'static str, caption: String, columns: Vec<String>) -> Table {
        Table {
            id,
            caption,
            columns,
            rows: Vec::new(),
        }
    }

    /// Columns given as text.
    pub fn with_columns(id: &'static str, caption: String, columns: &[&str]) -> Table {
        Table::new(id, caption, columns.iter().map(|c| c.to_string()).collect())
    }
}

/// A plot: the file it is written to under `plots/`, and the chart.
#[derive(Clone, Debug)]
pub struct Figure {
    pub file: String,
    pub chart: Chart,
}

/// One block of the report.
#[derive(Clone, Debug)]
pub enum Block {
    /// `#` to `###` and its text.
    Heading { level: usize, text: String },
    /// A paragraph: its text, then a blank line.
    Paragraph(String),
    /// One line, with no blank line after it.
    Line(String),
    /// A blank line.
    Gap,
    /// A bulleted list, one item per line.
    List(Vec<String>),
    /// A table under its caption, then a blank line.
    Table(Table),
    /// Figures, one link per line, then a blank line; each is written to `plots/`.
    Figures(Vec<Figure>),
    /// A section composed as Markdown (findings, recommendations, the prediction model, peer
    /// measurements), written as it is followed by a newline.
    Markdown(String),
}

/// The report: its blocks in order, and the section each table belongs to.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub blocks: Vec<Block>,
}

impl Report {
    pub fn heading(&mut self, level: usize, text: impl Into<String>) {
        self.blocks.push(Block::Heading {
            level,
            text: text.into(),
        });
    }

    pub fn paragraph(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// A table under a `###` heading, when there is one.
    pub fn titled_table(&mut self, title: &str, table: Option<Table>) {
        if let Some(table) = table {
            self.heading(3, title);
            self.blocks.push(Block::Table(table));
        }
    }

    /// Every table with the `##` section it is in (the report's own text before the first).
    pub fn tables(&self) -> Vec<(&str, &Table)> {
        let mut section = "";
        let mut out = Vec::new();
        for block in &self.blocks {
            match block {
                Block::Heading { level: 2, text } => section = text,
                Block::Table(t) => out.push((section, t)),
                _ => {}
            }
        }
        out
    }

    /// Every figure, in order.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.blocks.iter().flat_map(|b| match b {
            Block::Figures(f) => f.as_slice(),
            _ => &[],
        })
    }
}
