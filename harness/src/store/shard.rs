//! One shard file: written record by record through a codec and TFRecord framing, and read
//! back from any reader with the time spent in its read calls measured.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use workloads::Codec;

use super::codec::{self, CodecWriter};
use super::error::{io_error, StoreError};
use super::folder::{shard_file_name, Restart, ShardInfo, RESTART_EVERY_BYTES};
use super::framing::{FramingError, RecordReader, RecordWriter, FRAMING_BYTES};

/// Writes one shard under a temporary name; [`ShardWriter::finish`] syncs and renames it.
pub struct ShardWriter {
    final_path: PathBuf,
    tmp_path: PathBuf,
    records: RecordWriter<CodecWriter>,
    first_crc: Option<u32>,
    max_record: u64,
    /// Bytes of the decompressed stream written, where it was last restarted, and how far
    /// apart its restarts are (doubled as a shard grows, see [`MAX_RESTARTS`]).
    stream: u64,
    restarted_at: u64,
    restart_every: u64,
    restarts: Vec<Restart>,
}

/// Restarts kept of one shard: past this many, every other one is dropped and they are made
/// twice as far apart, so that `store.json` stays small whatever a shard holds (4,096 a shard:
/// 4 GiB of stream at 1 MiB; written pretty-printed, a restart took 74 bytes with 7-digit
/// offsets, so about 330 KB a shard at most with 10-digit ones).
const MAX_RESTARTS: usize = 4096;

/// Every other restart of `restarts` (the second, fourth, ...): each is still a point where
/// the stream may be entered, twice as far apart.
fn thinned(restarts: &mut Vec<Restart>) {
    let mut k = 0;
    restarts.retain(|_| {
        k += 1;
        k % 2 == 0
    });
}

impl ShardWriter {
    pub fn create(
        dir: &Path,
        index: usize,
        count: usize,
        codec: Codec,
    ) -> Result<ShardWriter, StoreError> {
        let name = shard_file_name(index, count, codec);
        let final_path = dir.join(&name);
        let tmp_path = dir.join(format!(".{name}.tmp"));
        let file = File::create(&tmp_path).map_err(io_error(&tmp_path))?;
        let writer = CodecWriter::new(codec, file).map_err(io_error(&tmp_path))?;
        Ok(ShardWriter {
            final_path,
            tmp_path,
            records: RecordWriter::new(writer),
            first_crc: None,
            max_record: 0,
            stream: 0,
            restarted_at: 0,
            restart_every: RESTART_EVERY_BYTES,
            restarts: Vec::new(),
        })
    }

    /// Restarts `bytes` of stream apart, where a test needs many in a small shard.
    #[cfg(test)]
    pub(super) fn restarting_every(mut self, bytes: u64) -> ShardWriter {
        self.restart_every = bytes;
        self
    }

    pub fn write(&mut self, payload: &[u8]) -> Result<(), StoreError> {
        if self.first_crc.is_none() {
            self.first_crc = Some(crc32c::crc32c(payload));
        }
        self.max_record = self.max_record.max(payload.len() as u64);
        if self.stream - self.restarted_at >= self.restart_every {
            let record = self.records.records();
            let at = (self.records.get_mut().restart()).map_err(io_error(&self.tmp_path))?;
            self.restarts.push(Restart(record, at, self.stream));
            if self.restarts.len() > MAX_RESTARTS {
                thinned(&mut self.restarts);
                self.restart_every *= 2;
            }
            self.restarted_at = self.stream;
        }
        self.stream += FRAMING_BYTES + payload.len() as u64;
        self.records
            .write_record(payload)
            .map_err(io_error(&self.tmp_path))
    }

    pub fn finish(self) -> Result<ShardInfo, StoreError> {
        let records = self.records.records();
        let file = self
            .records
            .into_inner()
            .finish()
            .map_err(io_error(&self.tmp_path))?;
        file.sync_all().map_err(io_error(&self.tmp_path))?;
        let bytes = file.metadata().map_err(io_error(&self.tmp_path))?.len();
        std::fs::rename(&self.tmp_path, &self.final_path).map_err(io_error(&self.final_path))?;
        let file = self
            .final_path
            .file_name()
            .expect("shard has a name")
            .to_string_lossy()
            .into_owned();
        Ok(ShardInfo {
            file,
            bytes,
            records,
            first_crc: self.first_crc,
            max_record: Some(self.max_record),
            restarts: self.restarts,
        })
    }
}

/// A file whose `read` calls are timed: the storage part of reading a shard, apart from
/// decompression and framing.
struct TimedFile {
    file: Box<dyn Read + Send>,
    nanos: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Read for TimedFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = std::time::Instant::now();
        let n = self.file.read(buf);
        self.nanos.fetch_add(
            start.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        n
    }
}

/// Opens a shard's bytes again from a file offset: how a reader goes on at a restart.
pub type Reopen = Box<dyn FnMut(u64) -> std::io::Result<Box<dyn Read + Send>> + Send>;

/// Opens the shard file `path` again at an offset.
pub fn reopen_file(path: PathBuf) -> Reopen {
    Box::new(move |at| {
        use std::io::{Seek, SeekFrom};
        let mut file = File::open(&path)?;
        file.seek(SeekFrom::Start(at))?;
        Ok(Box::new(file) as Box<dyn Read + Send>)
    })
}

/// Reads the payloads of one shard in order, checking every frame.
pub struct ShardReader {
    path: PathBuf,
    codec: Codec,
    /// How to open the shard again at an offset, where the caller can.
    reopen: Option<Reopen>,
    records: RecordReader<Box<dyn Read + Send>>,
    read_nanos: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Time inside `next_into`, file reads included.
    record_seconds: f64,
    /// What the store recorded of this shard, checked as it is read.
    expected: Option<ShardInfo>,
    /// Set when the shard is not the one its store wrote: nothing more is read from it.
    refused: bool,
}

impl ShardReader {
    pub fn open(path: &Path, codec: Codec) -> Result<ShardReader, StoreError> {
        let file = File::open(path).map_err(io_error(path))?;
        let reader = ShardReader::from_read(path, codec, Box::new(file))?;
        Ok(reader.reopening(reopen_file(path.to_path_buf())))
    }

    /// Lets the reader go on at the next restart after an error it cannot step past
    /// ([`ShardReader::resume`]), opening the shard again with `reopen`.
    pub fn reopening(mut self, reopen: Reopen) -> ShardReader {
        self.reopen = Some(reopen);
        self
    }

    /// Reads a shard from any reader (a file, emulated storage, object storage); `label`
    /// names it in errors.
    pub fn from_read(
        label: &Path,
        codec: Codec,
        file: Box<dyn Read + Send>,
    ) -> Result<ShardReader, StoreError> {
        let read_nanos = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let timed = TimedFile {
            file,
            nanos: read_nanos.clone(),
        };
        let inner = codec::reader(codec, timed).map_err(io_error(label))?;
        Ok(ShardReader {
            path: label.to_path_buf(),
            codec,
            reopen: None,
            records: RecordReader::new(inner),
            read_nanos,
            record_seconds: 0.0,
            expected: None,
            refused: false,
        })
    }

    /// Checks the shard against what its store recorded of it: its first record is the one
    /// written there, no record is longer than the longest written, and it holds as many
    /// records. A shard replaced by a copy of another fails on its first record.
    pub fn expecting(mut self, info: &ShardInfo) -> ShardReader {
        if let Some(max) = info.max_record {
            self.records = std::mem::replace(
                &mut self.records,
                RecordReader::new(Box::new(std::io::empty())),
            )
            .with_max_len(max);
        }
        self.expected = Some(info.clone());
        self
    }

    /// Seconds spent so far in the file's `read` calls (storage or page cache, not decoding).
    pub fn read_seconds(&self) -> f64 {
        self.read_nanos.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9
    }

    /// Seconds spent so far reading records beyond the file's `read` calls: decompression, CRC
    /// checks and framing.
    pub fn unframe_seconds(&self) -> f64 {
        (self.record_seconds - self.read_seconds()).max(0.0)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Index of the record the next call reads.
    pub fn record_index(&self) -> u64 {
        self.records.record_index()
    }

    /// Whether reading may go on after an error (only past a record whose payload failed its
    /// checksum).
    pub fn can_continue(&self) -> bool {
        !self.refused && self.records.can_continue()
    }

    /// After an error reading cannot step past, goes on at the shard's first
    /// restart after the record that failed (see
    /// [`CodecWriter::restart`](super::codec::CodecWriter::restart)): the record it reads
    /// next, or `None` where there is no restart after it, the store recorded none, or the
    /// reader cannot open its shard again. The records in between are not read.
    pub fn resume(&mut self) -> Result<Option<u64>, StoreError> {
        if self.refused || self.records.can_continue() {
            return Ok(None);
        }
        let failed = self.records.record_index();
        let next = (self.expected.as_ref()).and_then(|info| info.restart_after(failed));
        let (Some(restart), Some(reopen)) = (next, self.reopen.as_mut()) else {
            return Ok(None);
        };
        let file = reopen(restart.file_offset()).map_err(io_error(&self.path))?;
        let timed = TimedFile {
            file,
            nanos: self.read_nanos.clone(),
        };
        let inner = codec::restart_reader(self.codec, timed).map_err(io_error(&self.path))?;
        self.records
            .resume(inner, restart.record(), restart.stream_offset());
        Ok(Some(restart.record()))
    }

    /// Reads the next payload into `payload`; `Ok(false)` at the end of the shard.
    pub fn next_into(&mut self, payload: &mut Vec<u8>) -> Result<bool, StoreError> {
        if self.refused {
            return Err(StoreError::Invalid {
                path: self.path.display().to_string(),
                message: "not the shard its store wrote; nothing more is read from it".into(),
            });
        }
        let start = std::time::Instant::now();
        let index = self.records.record_index();
        let result = self.records.next_into(payload);
        self.record_seconds += start.elapsed().as_secs_f64();
        if let (Some(expected), Ok(more)) = (&self.expected, &result) {
            let replaced = match (*more, index) {
                (true, 0) => expected
                    .first_crc
                    .filter(|&crc| crc != crc32c::crc32c(payload))
                    .map(|_| {
                        "its first record is not the one the store wrote there (the file \
                              was replaced, e.g. by a copy of another shard); rematerialize \
                              with --rematerialize"
                            .to_string()
                    }),
                (true, i) if i >= expected.records => Some(format!(
                    "it holds more records than the {} the store wrote",
                    expected.records
                )),
                (false, i) if i < expected.records => Some(format!(
                    "it ends after {i} of the {} records the store wrote",
                    expected.records
                )),
                _ => None,
            };
            if let Some(what) = replaced {
                self.refused = true;
                return Err(StoreError::Invalid {
                    path: self.path.display().to_string(),
                    message: format!("not the shard its store wrote: record {index}: {what}"),
                });
            }
        }
        result.map_err(|e| {
            let shard = self.path.display().to_string();
            let (record, offset, what) = match e {
                FramingError::Corrupt {
                    record,
                    offset,
                    what,
                } => (record, offset, what),
                FramingError::Io {
                    record,
                    offset,
                    source,
                } => (record, offset, source.to_string()),
            };
            StoreError::Corrupt {
                shard,
                record,
                offset,
                compressed: self.codec != Codec::None,
                what,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinned_restarts_keep_every_other_one_still_in_order() {
        let mut restarts: Vec<Restart> = (1..=9).map(|k| Restart(k, 10 * k, 100 * k)).collect();
        thinned(&mut restarts);
        let records: Vec<u64> = restarts.iter().map(|r| r.record()).collect();
        assert_eq!(records, [2, 4, 6, 8]);
        assert!(restarts
            .windows(2)
            .all(|w| w[0].file_offset() < w[1].file_offset()));
        // A shard written past MAX_RESTARTS keeps at most that many (here at a
        // kilobyte's stream for speed: the rule is the count's, not the spacing's).
        let dir = tempfile::tempdir().unwrap();
        let mut w = ShardWriter::create(dir.path(), 0, 1, Codec::Lz4).unwrap();
        w.restart_every = 1024;
        for i in 0..(3 * MAX_RESTARTS as u64) {
            w.write(&i.to_le_bytes().repeat(128)).unwrap();
        }
        let info = w.finish().unwrap();
        assert!(
            info.restarts.len() <= MAX_RESTARTS,
            "{}",
            info.restarts.len()
        );
        assert!(
            info.restarts.len() >= MAX_RESTARTS / 2,
            "{}",
            info.restarts.len()
        );
        assert_eq!(info.restarts_error(Codec::Lz4), None);
    }
}
