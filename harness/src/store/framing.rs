//! TFRecord framing: each record is `u64 length | u32 masked crc32c(length) | payload |
//! u32 masked crc32c(payload)`, all little-endian, so TensorFlow's `TFRecordDataset` reads
//! prepbench's shards. The reader verifies both checksums and reports where a record broke.

use std::io::{self, Read, Write};

use thiserror::Error;

/// TFRecord's checksum: crc32c rotated right by 15 bits plus a constant, so that a CRC of data
/// that itself contains CRCs stays well distributed.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Bytes of framing around each payload.
pub const FRAMING_BYTES: u64 = 16;

/// Where one record lies in its shard's (decompressed) stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    /// Offset of the record's header.
    pub offset: u64,
    /// Its payload's length.
    pub len: u64,
}

/// The payload length a record header declares at `offset` of a stream of `size` bytes, checked
/// against its length checksum, the shard's longest record and the stream's end; else what is
/// wrong with it.
pub fn declared_len(header: &[u8], offset: u64, size: u64, longest: u64) -> Result<u64, String> {
    let len_bytes: [u8; 8] = header[..8].try_into().expect("8 bytes");
    let len_crc = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if masked_crc32c(&len_bytes) != len_crc {
        return Err("length checksum mismatch (corrupt or not a TFRecord file)".into());
    }
    let len = u64::from_le_bytes(len_bytes);
    if len > longest {
        return Err(format!(
            "the record declares {len} bytes, more than the {longest} this shard may hold"
        ));
    }
    if offset + FRAMING_BYTES + len > size {
        return Err("truncated payload".into());
    }
    Ok(len)
}

pub struct RecordWriter<W: Write> {
    inner: W,
    records: u64,
}

impl<W: Write> RecordWriter<W> {
    pub fn new(inner: W) -> RecordWriter<W> {
        RecordWriter { inner, records: 0 }
    }

    pub fn write_record(&mut self, payload: &[u8]) -> io::Result<()> {
        let len = (payload.len() as u64).to_le_bytes();
        let mut header = [0u8; 12];
        header[..8].copy_from_slice(&len);
        header[8..].copy_from_slice(&masked_crc32c(&len).to_le_bytes());
        self.inner.write_all(&header)?;
        self.inner.write_all(payload)?;
        self.inner
            .write_all(&masked_crc32c(payload).to_le_bytes())?;
        self.records += 1;
        Ok(())
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn into_inner(self) -> W {
        self.inner
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}

#[derive(Debug, Error)]
pub enum FramingError {
    #[error("record {record} at byte {offset}: {what}")]
    Corrupt {
        record: u64,
        offset: u64,
        what: String,
    },
    #[error("record {record} at byte {offset}: {source}")]
    Io {
        record: u64,
        offset: u64,
        source: io::Error,
    },
}

const PAYLOAD_MISMATCH: &str = "payload checksum mismatch";

pub struct RecordReader<R: Read> {
    inner: R,
    /// Byte offset of the next record in the (decompressed) stream.
    offset: u64,
    record: u64,
    /// Set by an error after which the stream's position is unknown (a bad length, a short
    /// read): nothing more can be read. A payload checksum mismatch leaves it clear.
    broken: bool,
    /// The longest payload accepted: a length above it is refused before it is read.
    max_len: u64,
}

/// The longest record a reader accepts unless told the store's own largest: 4 GiB, the most a
/// step may make of one sample.
pub const MAX_RECORD_BYTES: u64 = workloads::steps::MAX_TENSOR_BYTES;

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean end of stream before any byte.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

impl<R: Read> RecordReader<R> {
    pub fn new(inner: R) -> RecordReader<R> {
        RecordReader {
            inner,
            offset: 0,
            record: 0,
            broken: false,
            max_len: MAX_RECORD_BYTES,
        }
    }

    /// Refuses records longer than `max_len` bytes (a store's largest record, as it recorded).
    pub fn with_max_len(mut self, max_len: u64) -> RecordReader<R> {
        self.max_len = max_len;
        self
    }

    /// Whether reading may go on after an error: only a record whose payload failed its
    /// checksum can be stepped over, its frame being intact.
    pub fn can_continue(&self) -> bool {
        !self.broken
    }

    /// Index of the next record.
    pub fn record_index(&self) -> u64 {
        self.record
    }

    /// Goes on from `inner`, a stream that begins with record `record` at `offset` of the
    /// shard's stream (a restart), after an error that broke the old one.
    pub fn resume(&mut self, inner: R, record: u64, offset: u64) {
        self.inner = inner;
        self.record = record;
        self.offset = offset;
        self.broken = false;
    }

    fn corrupt(&self, what: impl Into<String>) -> FramingError {
        FramingError::Corrupt {
            record: self.record,
            offset: self.offset,
            what: what.into(),
        }
    }

    /// Reads the next payload into `payload`; `Ok(false)` at a clean end of the stream. After a
    /// payload checksum mismatch the reader stands at the next record; after any other error
    /// [`RecordReader::can_continue`] is false.
    pub fn next_into(&mut self, payload: &mut Vec<u8>) -> Result<bool, FramingError> {
        if self.broken {
            return Err(self.corrupt("the stream is unreadable after an earlier error"));
        }
        let result = self.read_record(payload);
        if let Err(e) = &result {
            let stepped_over =
                matches!(e, FramingError::Corrupt { what, .. } if what == PAYLOAD_MISMATCH);
            if stepped_over {
                self.offset += FRAMING_BYTES + payload.len() as u64;
                self.record += 1;
            } else {
                self.broken = true;
            }
        }
        result
    }

    fn read_record(&mut self, payload: &mut Vec<u8>) -> Result<bool, FramingError> {
        let io_err = |s: &Self, source| FramingError::Io {
            record: s.record,
            offset: s.offset,
            source,
        };
        let mut header = [0u8; 12];
        let got = read_full(&mut self.inner, &mut header).map_err(|e| io_err(self, e))?;
        if got == 0 {
            return Ok(false);
        }
        if got < header.len() {
            return Err(self.corrupt(format!("truncated header ({got} of 12 bytes)")));
        }
        let len_bytes: [u8; 8] = header[..8].try_into().expect("8 bytes");
        let stored_len_crc = u32::from_le_bytes(header[8..].try_into().expect("4 bytes"));
        if masked_crc32c(&len_bytes) != stored_len_crc {
            return Err(self.corrupt("length checksum mismatch (corrupt or not a TFRecord file)"));
        }
        let len = u64::from_le_bytes(len_bytes);
        if len > self.max_len {
            // A valid length checksum on a length no writer of this store produced: a record
            // that would decompress far beyond what the store holds.
            return Err(self.corrupt(format!(
                "the record declares {len} bytes, more than the {} this shard may hold",
                self.max_len
            )));
        }
        payload.clear();
        // Grows with the data actually read: a huge length cannot allocate ahead of the bytes.
        let read = (&mut self.inner)
            .take(len)
            .read_to_end(payload)
            .map_err(|e| io_err(self, e))? as u64;
        if read < len {
            return Err(self.corrupt(format!("truncated payload ({read} of {len} bytes)")));
        }
        let mut footer = [0u8; 4];
        let got = read_full(&mut self.inner, &mut footer).map_err(|e| io_err(self, e))?;
        if got < 4 {
            return Err(self.corrupt("truncated payload checksum"));
        }
        if masked_crc32c(payload) != u32::from_le_bytes(footer) {
            return Err(self.corrupt(PAYLOAD_MISMATCH));
        }
        self.offset += FRAMING_BYTES + len;
        self.record += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value_and_tfrecord_mask() {
        // The CRC-32C check value from the catalogue of parametrised CRC algorithms.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        // mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8, evaluated independently (Python) for
        // the check value and for the empty input (crc32c 0).
        assert_eq!(masked_crc32c(b"123456789"), 0xC78A_B0E5);
        assert_eq!(masked_crc32c(b""), 0xA282_EAD8);
    }

    /// A reader that counts the bytes asked of it: a refused length must not be read.
    struct Counting<R>(R, std::rc::Rc<std::cell::Cell<usize>>);

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1.set(self.1.get() + n);
            Ok(n)
        }
    }

    #[test]
    fn a_length_beyond_the_limit_is_refused_before_its_bytes_are_read() {
        // A valid frame declaring 6 GiB (its length checksum is right), then a megabyte of data:
        // as a record of zeros in a gzip shard would decompress, honestly, to 6 GiB.
        let len = 6u64 << 30;
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend(masked_crc32c(&len.to_le_bytes()).to_le_bytes());
        bytes.extend(vec![0u8; 1 << 20]);
        for (limit, default) in [(MAX_RECORD_BYTES, true), (1000, false)] {
            let read = std::rc::Rc::new(std::cell::Cell::new(0));
            let inner = Counting(io::Cursor::new(bytes.clone()), read.clone());
            let mut r = RecordReader::new(inner);
            if !default {
                r = r.with_max_len(limit);
            }
            let err = r.next_into(&mut Vec::new()).unwrap_err().to_string();
            assert!(
                err.contains(&format!("declares {len} bytes, more than the {limit}")),
                "{err}"
            );
            assert_eq!(read.get(), 12, "only the frame header was read");
            assert!(!r.can_continue());
        }
    }

    #[test]
    fn frames_are_laid_out_as_tfrecord_specifies() {
        let mut w = RecordWriter::new(Vec::new());
        w.write_record(b"abc").unwrap();
        let bytes = w.into_inner();
        assert_eq!(bytes.len(), 3 + 16);
        assert_eq!(&bytes[..8], &3u64.to_le_bytes());
        assert_eq!(
            &bytes[8..12],
            &masked_crc32c(&3u64.to_le_bytes()).to_le_bytes()
        );
        assert_eq!(&bytes[12..15], b"abc");
        assert_eq!(&bytes[15..], &masked_crc32c(b"abc").to_le_bytes());
    }

    fn stream(payloads: &[&[u8]]) -> Vec<u8> {
        let mut w = RecordWriter::new(Vec::new());
        for p in payloads {
            w.write_record(p).unwrap();
        }
        w.into_inner()
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Vec<u8>>, FramingError> {
        let mut r = RecordReader::new(bytes);
        crate::store::folder::drain(|buf| r.next_into(buf))
    }

    #[test]
    fn round_trip_including_empty_records() {
        let payloads: [&[u8]; 3] = [b"first", b"", &[7u8; 1000]];
        let got = read_all(&stream(&payloads)).unwrap();
        assert_eq!(got, payloads.iter().map(|p| p.to_vec()).collect::<Vec<_>>());
    }

    #[test]
    fn every_flipped_byte_is_caught_with_the_record_and_offset() {
        let bytes = stream(&[b"one", b"two!", b"three"]);
        let starts = [0u64, 19, 39];
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            let err = read_all(&bad).unwrap_err();
            let FramingError::Corrupt { record, offset, .. } = err else {
                panic!("{err}")
            };
            assert_eq!(offset, starts[record as usize], "byte {i}");
            assert!(i as u64 >= offset, "byte {i} blamed on a later record");
        }
    }

    #[test]
    fn truncation_anywhere_is_an_error_not_a_short_read() {
        let bytes = stream(&[b"one", b"two!"]);
        for cut in 1..bytes.len() {
            if cut == 19 {
                assert_eq!(
                    read_all(&bytes[..cut]).unwrap().len(),
                    1,
                    "a clean record boundary"
                );
                continue;
            }
            assert!(read_all(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
