//! Reading the CSV tables prepbench writes (and the paper's): a header plus rows of fields,
//! RFC 4180 quoting, typed access with errors naming the file, line and column.

use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TableError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
}

/// A CSV table held as strings.
#[derive(Clone, Debug)]
pub struct Table {
    pub origin: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

fn split_line(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', false) if field.is_empty() => quoted = true,
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return None;
    }
    fields.push(field);
    Some(fields)
}

impl Table {
    pub fn parse(text: &str, origin: &str) -> Result<Table, TableError> {
        let invalid = |line: usize, message: String| TableError::Invalid {
            path: origin.to_string(),
            line,
            message,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let header = match lines.next() {
            Some((_, l)) => split_line(l)
                .ok_or_else(|| invalid(1, "unterminated quote in the header".into()))?,
            None => return Err(invalid(1, "empty table: no header".into())),
        };
        let mut rows = Vec::new();
        for (i, line) in lines {
            let fields =
                split_line(line).ok_or_else(|| invalid(i + 1, "unterminated quote".into()))?;
            if fields.len() != header.len() {
                return Err(invalid(
                    i + 1,
                    format!("{} fields, the header has {}", fields.len(), header.len()),
                ));
            }
            rows.push(fields);
        }
        Ok(Table {
            origin: origin.to_string(),
            header,
            rows,
        })
    }

    pub fn read(path: &Path) -> Result<Table, TableError> {
        let text = std::fs::read_to_string(path).map_err(|source| TableError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Table::parse(&text, &path.display().to_string())
    }

    pub fn column(&self, name: &str) -> Result<usize, TableError> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| TableError::Invalid {
                path: self.origin.clone(),
                line: 1,
                message: format!("no column `{name}`"),
            })
    }

    /// The field of `row` (0-based, not counting the header) in column `col`.
    pub fn text(&self, row: usize, col: usize) -> &str {
        &self.rows[row][col]
    }

    /// The field parsed as a number; empty fields are `None`.
    pub fn number(&self, row: usize, col: usize) -> Result<Option<f64>, TableError> {
        let text = self.text(row, col).trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse::<f64>()
            .map(Some)
            .map_err(|_| TableError::Invalid {
                path: self.origin.clone(),
                line: row + 2,
                message: format!("column `{}` holds `{text}`, not a number", self.header[col]),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_errors() {
        let t = Table::parse("a,b,c\n1,\"x,\"\"y\"\"\",\n", "t.csv").unwrap();
        assert_eq!(t.rows[0], vec!["1", "x,\"y\"", ""]);
        assert_eq!(t.number(0, 0).unwrap(), Some(1.0));
        assert_eq!(t.number(0, 2).unwrap(), None);
        assert!(t.number(0, 1).unwrap_err().to_string().contains("t.csv:2"));
        assert!(Table::parse("a,b\n1\n", "u.csv")
            .unwrap_err()
            .to_string()
            .contains("u.csv:2: 1 fields"));
        assert!(t.column("zz").is_err());
    }
}
