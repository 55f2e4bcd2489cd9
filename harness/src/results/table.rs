//! A table of a results folder as a typed, append-only CSV file: its header is the row type's
//! field names, rows are written and read through the `csv` crate with serde (RFC 4180 quoting,
//! so a comma, quote or newline in a name survives), and every append is whole or absent.

use std::fs::OpenOptions;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::ResultsError;

/// The field names of a struct, in order, as serde sees them: its CSV header.
pub fn columns<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    use serde::forward_to_deserialize_any;

    /// A deserializer that only records the fields a struct asks for.
    struct Fields<'a>(&'a mut &'static [&'static str]);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("fields recorded")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Stop {
            Stop
        }
    }

    impl<'de> de::Deserializer<'de> for Fields<'_> {
        type Error = Stop;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = fields;
            Err(Stop)
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// Rows as CSV lines, without a header.
fn encode<R: Serialize>(rows: &[R]) -> Result<Vec<u8>, csv::Error> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    writer
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))
}

/// The header line of `R`.
fn header_line<R: DeserializeOwned>() -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    writer
        .write_record(columns::<R>())
        .expect("writing to memory cannot fail");
    writer.into_inner().expect("writing to memory cannot fail")
}

/// An append-only table of rows `R` in one CSV file.
pub struct Table<R> {
    path: PathBuf,
    _row: PhantomData<fn() -> R>,
}

impl<R: Serialize + DeserializeOwned> Table<R> {
    /// Creates `path` with `R`'s header, or checks an existing file's header (another build's
    /// columns would be silently misaligned) and cuts a torn last record (a crash mid-write),
    /// so that appends start on a record boundary.
    pub fn open(path: PathBuf) -> Result<Table<R>, ResultsError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(ResultsError::io(dir))?;
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(ResultsError::io(&path)(e)),
        };
        let table = Table {
            path,
            _row: PhantomData,
        };
        if bytes.is_empty() {
            table.append_bytes(&header_line::<R>())?;
            return Ok(table);
        }
        let whole = table.whole_records(&bytes)?;
        if whole < bytes.len() as u64 {
            let file = OpenOptions::new()
                .write(true)
                .open(&table.path)
                .map_err(ResultsError::io(&table.path))?;
            file.set_len(whole).map_err(ResultsError::io(&table.path))?;
            file.sync_data().map_err(ResultsError::io(&table.path))?;
        }
        Ok(table)
    }

    /// The length of `bytes` up to the end of its last whole record, after checking the header.
    /// A record is whole when it has the header's field count and ends with a line break.
    fn whole_records(&self, bytes: &[u8]) -> Result<u64, ResultsError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(bytes);
        let mut record = csv::ByteRecord::new();
        let expected = columns::<R>();
        let mut end = 0u64;
        let mut first = true;
        loop {
            let start = reader.position().byte();
            let more = reader
                .read_byte_record(&mut record)
                .map_err(|e| ResultsError::invalid(&self.path, e.to_string()))?;
            if !more {
                return Ok(end);
            }
            let after = reader.position().byte();
            if first {
                first = false;
                if !record.iter().eq(expected.iter().map(|c| c.as_bytes())) {
                    return Err(ResultsError::Conflict {
                        path: self.path.display().to_string(),
                        message: "has other columns than this prepbench writes; use a new \
                                  --out directory"
                            .into(),
                    });
                }
            }
            let terminated = after > 0 && bytes.get(after as usize - 1) == Some(&b'\n');
            if record.len() != expected.len() || !terminated {
                if after < bytes.len() as u64 {
                    return Err(ResultsError::invalid(
                        &self.path,
                        format!(
                            "record at byte {start} has {} fields, the header {}",
                            record.len(),
                            expected.len()
                        ),
                    ));
                }
                // The last record is torn: keep what came before it.
                return Ok(start);
            }
            end = after;
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `rows` in one write, then syncs. A failed write (a full disk) is cut back off,
    /// so the rows are in the file whole or not at all.
    pub fn append(&self, rows: &[R]) -> Result<(), ResultsError> {
        if rows.is_empty() {
            return Ok(());
        }
        let bytes = encode(rows).map_err(|e| ResultsError::invalid(&self.path, e.to_string()))?;
        self.append_bytes(&bytes)
    }

    fn append_bytes(&self, bytes: &[u8]) -> Result<(), ResultsError> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(ResultsError::io(&self.path))?;
        let before = file.metadata().map_err(ResultsError::io(&self.path))?.len();
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_data())
            .map_err(ResultsError::io(&self.path));
        if written.is_err() {
            // Best effort: the error is what the caller needs to hear.
            let _ = file.set_len(before).and_then(|()| file.sync_data());
        }
        written
    }

    /// Every row of the table.
    pub fn read(&self) -> Result<Vec<R>, ResultsError> {
        read_rows(&self.path)
    }
}

/// The rows of the CSV file at `path`, matched to `R`'s fields by the header's names (a column
/// added later may be missing from an older file); errors name the file and line.
pub fn read_rows<R: DeserializeOwned>(path: &Path) -> Result<Vec<R>, ResultsError> {
    workloads::storage::check_regular(path).map_err(ResultsError::io(path))?;
    let file = std::fs::File::open(path).map_err(ResultsError::io(path))?;
    parse_rows(std::io::BufReader::new(file), path)
}

/// [`read_rows`] over any reader; `origin` names it in errors.
pub fn parse_rows<R: DeserializeOwned>(
    reader: impl std::io::Read,
    origin: &Path,
) -> Result<Vec<R>, ResultsError> {
    let mut reader = csv::ReaderBuilder::new().from_reader(reader);
    let header = reader
        .headers()
        .map_err(|e| ResultsError::invalid(origin, e.to_string()))?
        .clone();
    if header.is_empty() || header.iter().all(str::is_empty) {
        return Err(ResultsError::invalid(
            origin,
            "empty table: no header".into(),
        ));
    }
    // A header sharing no column with the rows' fields is another file, whether or not rows
    // follow it (without rows, no field would be found missing).
    let known = columns::<R>();
    if !known.is_empty() && !header.iter().any(|h| known.contains(&h)) {
        let shown: Vec<&str> = header.iter().take(4).collect();
        return Err(ResultsError::invalid(
            origin,
            format!(
                "its header ({}{}) has none of the columns this prepbench writes (`{}`, ...): \
                 not a table this prepbench wrote",
                shown.join(","),
                if header.len() > 4 { ",..." } else { "" },
                known[0]
            ),
        ));
    }
    reader
        .deserialize()
        .map(|row| row.map_err(|e| ResultsError::invalid(origin, describe(&e))))
        .collect()
}

/// A CSV or field error in words, with its line.
fn describe(e: &csv::Error) -> String {
    let line = e.position().map(|p| format!("line {}: ", p.line()));
    let message = e.to_string();
    if let Some(field) = message
        .split("missing field `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
    {
        // Every row lacks it: the header has no such column.
        return format!("no column `{field}`: not a table this prepbench wrote, or a damaged one");
    }
    let what = match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => match err.field() {
            Some(field) => format!("field {}: {}", field + 1, err.kind()),
            None => err.kind().to_string(),
        },
        _ => e.to_string(),
    };
    format!("{}{what}", line.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Row {
        id: String,
        value: f64,
        #[serde(default)]
        later: Option<u64>,
    }

    fn row(id: &str) -> Row {
        Row {
            id: id.into(),
            value: 1.5,
            later: None,
        }
    }

    #[test]
    fn columns_are_the_fields_in_order() {
        assert_eq!(columns::<Row>(), ["id", "value", "later"]);
    }

    #[test]
    fn names_with_commas_quotes_and_newlines_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let table = Table::<Row>::open(dir.path().join("t.csv")).unwrap();
        let odd = Row {
            id: "a,\"b\"\nc".into(),
            value: 2.0,
            later: Some(3),
        };
        table.append(&[row("r1")]).unwrap();
        table.append(&[odd]).unwrap();
        let table = Table::<Row>::open(dir.path().join("t.csv")).unwrap();
        let rows = table.read().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].id, "a,\"b\"\nc");
        assert_eq!(rows[1].later, Some(3));
    }

    #[test]
    fn a_torn_last_record_is_cut_even_inside_quotes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let table = Table::<Row>::open(path.clone()).unwrap();
        table.append(&[row("r1"), row("r2")]).unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        for torn in ["r3,1.", "\"r3\nhalf", "r3,1.5,7\nr4"] {
            std::fs::write(&path, format!("{whole}{torn}")).unwrap();
            let table = Table::<Row>::open(path.clone()).unwrap();
            let kept = std::fs::read_to_string(&path).unwrap();
            let expected = match torn {
                "r3,1.5,7\nr4" => format!("{whole}r3,1.5,7\n"),
                _ => whole.clone(),
            };
            assert_eq!(kept, expected, "{torn:?}");
            assert!(table.read().is_ok());
        }
    }

    #[test]
    fn older_files_with_fewer_columns_load_and_foreign_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.csv");
        std::fs::write(&old, "id,value\nr1,2.5\n").unwrap();
        let rows: Vec<Row> = read_rows(&old).unwrap();
        assert_eq!(rows[0].later, None);
        // Appending to it would misalign the columns.
        let err = Table::<Row>::open(old.clone()).err().unwrap();
        assert!(err.to_string().contains("other columns"), "{err}");
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "id,value\nr1,2.5\n");
        let bad = dir.path().join("bad.csv");
        std::fs::write(&bad, "id,value\nr1,x\n").unwrap();
        let err = read_rows::<Row>(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.csv") && err.contains("line 2"), "{err}");
        std::fs::write(&bad, "id,other\nr1,x\n").unwrap();
        let err = read_rows::<Row>(&bad).unwrap_err().to_string();
        assert!(err.contains("no column `value`"), "{err}");
        // A foreign header is refused with rows or without: no row finds a field missing.
        for text in ["a,b\n", "a,b\n1,2\n"] {
            std::fs::write(&bad, text).unwrap();
            let err = read_rows::<Row>(&bad).unwrap_err().to_string();
            assert!(
                err.contains("bad.csv") && err.contains("its header (a,b) has none of the columns"),
                "{err}"
            );
        }
        // A header of this prepbench's columns and no rows yet is an empty table.
        std::fs::write(&bad, "id,value,later\n").unwrap();
        assert!(read_rows::<Row>(&bad).unwrap().is_empty());
    }
}
