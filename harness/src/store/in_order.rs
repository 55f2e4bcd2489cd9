//! An uncompressed shard read in order, as fast as the disk gives it: one positioned read
//! per record (which also reads the next record's header), the file advised ahead so that the
//! disk reads the next records while this one is checked and handed over. Every frame is
//! checked as `OpenStore` checks it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use workloads::Codec;

use super::error::{io_error, StoreError};
use super::folder::{next_restart, Restart};
use super::framing::{declared_len, FRAMING_BYTES};
use super::open::{check_payload, BadPayload, OpenStore};

/// Bytes read ahead of an in-order reader of an uncompressed shard (`posix_fadvise` WILLNEED,
/// asynchronous), so that the disk reads the next records while this one is checked and handed
/// over: without it a cold read alternates between waiting for the disk and working.
const READ_AHEAD_BYTES: u64 = 32 << 20;
/// The most one `posix_fadvise(WILLNEED)` asks for: the kernel reads at most the device's
/// read-ahead (its `read_ahead_kb`, 128 KiB by default, or its largest request where that is
/// more) of a larger range and leaves the rest to its own read-ahead on the misses that follow,
/// which runs on past a part's end (32 MiB advised read 8 MiB on a VM whose disk reads 8 MiB
/// ahead). So the range is advised in pieces of the default.
const ADVICE_PIECE_BYTES: u64 = 128 << 10;

/// An uncompressed shard's records in order: one positioned read per record, which also reads
/// the next record's header; the file read ahead as it goes.
pub struct InOrder {
    file: File,
    path: PathBuf,
    size: u64,
    longest: u64,
    records: u64,
    first_crc: Option<u32>,
    offset: u64,
    record: u64,
    header: Option<[u8; 12]>,
    advised_to: u64,
    /// Records read before the reader stops (`stop_after`; the shard's records unless told).
    limit: u64,
    /// Where read-ahead stops: the shard's end, or a restart at or past the last record read.
    advise_end: u64,
    /// An error left the reader where it cannot go on (any but a payload's checksum).
    broken: bool,
    /// Where the shard's frames can be found again (see [`InOrder::resume`]).
    restarts: Vec<Restart>,
}

impl InOrder {
    fn corrupt(&self, what: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            shard: self.path.display().to_string(),
            record: self.record,
            offset: self.offset,
            compressed: false,
            what: what.into(),
        }
    }

    fn advise(&mut self) {
        use std::os::fd::AsRawFd;
        if self.offset + READ_AHEAD_BYTES / 2 >= self.advised_to
            && self.advised_to < self.advise_end
        {
            let from = self.advised_to.max(self.offset);
            let length = READ_AHEAD_BYTES.min(self.advise_end - from);
            let mut at = from;
            while at < from + length {
                let piece = ADVICE_PIECE_BYTES.min(from + length - at);
                // SAFETY: a valid descriptor; advice only, its failure changes nothing.
                unsafe {
                    libc::posix_fadvise(
                        self.file.as_raw_fd(),
                        at as libc::off_t,
                        piece as libc::off_t,
                        libc::POSIX_FADV_WILLNEED,
                    );
                }
                at += piece;
            }
            self.advised_to = from + length;
        }
    }

    /// Reads only the shard's first `records` records (an epoch that reads part of a store):
    /// nothing is read ahead past the restart at or after the last of them (a restart about
    /// every MiB of stream; the shard's end where it has none), and not the header after it.
    /// Read ahead to the shard's end, an epoch reading the first 141 of 187 records of 237 KB
    /// (MP3 `decoded` under `--loader torch` in a quick reproduction) read 11 MB a shard it
    /// did not use. Call before the first record is read.
    pub fn stop_after(&mut self, records: u64) {
        self.limit = records.min(self.records);
        self.advise_end = match records.checked_sub(1) {
            Some(last) if self.limit < self.records => next_restart(&self.restarts, last)
                .map_or(self.size, |r| r.file_offset().min(self.size)),
            Some(_) => self.size,
            None => 0,
        };
    }

    /// Whether reading may go on after an error: only past a record whose payload failed its
    /// checksum, its frame being intact.
    pub fn can_continue(&self) -> bool {
        !self.broken
    }

    /// After an error reading cannot step past (a damaged header), goes on at the shard's
    /// first restart after the record that failed, where the writer noted a record's start:
    /// the record read next, or `None` where the store noted none after it.
    pub fn resume(&mut self) -> Option<u64> {
        if !self.broken {
            return None;
        }
        let restart = next_restart(&self.restarts, self.record)?;
        self.offset = restart.file_offset();
        self.record = restart.record();
        self.header = None;
        self.broken = false;
        Some(self.record)
    }

    /// The next record's number in the shard and payload; `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let record = self.record;
        let next = self.read_next();
        // Only a payload's checksum steps past its record; any other error stays where it was.
        self.broken |= next.is_err() && self.record == record;
        next
    }

    fn read_next(&mut self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        if self.record >= self.limit && self.limit < self.records {
            return Ok(None);
        }
        if self.offset >= self.size {
            if self.record != self.records {
                return Err(self.corrupt(format!(
                    "not the shard its store wrote: it holds {} records where the store wrote {}",
                    self.record, self.records
                )));
            }
            return Ok(None);
        }
        self.advise();
        let header = match self.header.take() {
            Some(h) => h,
            None => {
                if self.offset + 12 > self.size {
                    return Err(self.corrupt("truncated header"));
                }
                let mut h = [0u8; 12];
                self.file
                    .read_exact_at(&mut h, self.offset)
                    .map_err(|e| self.corrupt(format!("reading: {e}")))?;
                h
            }
        };
        let len = declared_len(&header, self.offset, self.size, self.longest)
            .map_err(|what| self.corrupt(what))?;
        let end = self.offset + FRAMING_BYTES + len;
        // The payload, its checksum, and the next record's header when there is one and it
        // is to be read.
        let wanted = self.limit == self.records || self.record + 1 < self.limit;
        let next = if end + 12 <= self.size && wanted {
            12
        } else {
            0
        };
        let mut buf = vec![0u8; len as usize + 4 + next];
        self.file
            .read_exact_at(&mut buf, self.offset + 12)
            .map_err(|e| self.corrupt(format!("reading: {e}")))?;
        if next > 0 {
            self.header = Some(buf[len as usize + 4..].try_into().expect("12 bytes"));
        }
        let crc = u32::from_le_bytes(buf[len as usize..len as usize + 4].try_into().expect("4"));
        buf.truncate(len as usize);
        if let Err(bad) = check_payload(&buf, crc, self.record, self.first_crc) {
            let e = self.corrupt(bad.what());
            if matches!(bad, BadPayload::Checksum) {
                // The frame is intact: the next record can still be read.
                self.offset = end;
                self.record += 1;
            }
            return Err(e);
        }
        let record = self.record;
        self.offset = end;
        self.record += 1;
        Ok(Some((record, buf)))
    }
}

impl OpenStore {
    /// Shard `shard`'s records in order, for an uncompressed store (`None` for a compressed
    /// one: [`OpenStore::shard_reader`] streams those).
    pub fn in_order(&self, shard: usize) -> Result<Option<InOrder>, StoreError> {
        if self.manifest().codec != Codec::None {
            return Ok(None);
        }
        use std::os::fd::AsRawFd;
        let path = self.shard_path(shard);
        let file = File::open(&path).map_err(io_error(&path))?;
        // SAFETY: a valid descriptor; advice only.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
        }
        let info = &self.manifest().shards[shard];
        Ok(Some(InOrder {
            file,
            path,
            size: info.bytes,
            longest: self.longest(shard),
            records: info.records,
            first_crc: info.first_crc,
            offset: 0,
            record: 0,
            header: None,
            advised_to: 0,
            limit: info.records,
            advise_end: info.bytes,
            broken: false,
            restarts: info.restarts.clone(),
        }))
    }
}

#[cfg(test)]
mod tests;
