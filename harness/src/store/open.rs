//! A complete store read by record number, outside a measured run: what the Python package's
//! `prepbench.open_store` is made of. Every frame is checked as the measured reader checks it
//! (both checksums, the recorded longest record, the recorded record counts and first records),
//! and an error names the shard file and the record.
//!
//! Uncompressed shards are read record by record with positioned reads (one read per record
//! once a shard's frames are indexed, so many processes may share nothing but the files).
//! Compressed shards (the codec covers the whole stream, as TFRecord's does) are entered at
//! their restarts (about every MiB of stream, where the writer emptied the compressor's
//! dictionary or began a new frame): a record read by number decompresses the stretch from the
//! restart before it to the next, kept within a byte budget (least recently used stretches go
//! first). A store written before restarts has one stretch a shard. In order,
//! [`OpenStore::shard_reader`] streams any codec without keeping anything.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use workloads::Codec;

use super::error::{io_error, StoreError};
use super::folder::{StoreManifest, FORMAT_VERSION, STORE_MANIFEST};
use super::framing::{declared_len, masked_crc32c, Frame, FRAMING_BYTES, MAX_RECORD_BYTES};
use super::housekeeping::not_a_store;
use super::shard::ShardReader;
use super::stretch::{self, Stretch};

/// Decompressed shards kept for reading by record number unless told otherwise: 1 GiB.
pub const DEFAULT_CACHE_BYTES: u64 = 1 << 30;

/// A shard as far as it has been opened: its file, and its frames once indexed.
#[derive(Default)]
struct Shard {
    file: Option<File>,
    /// An uncompressed shard's frames, by stretch (from one restart to the next), each found
    /// when a record of it is first read.
    frames: Vec<Option<Vec<Frame>>>,
}

/// A complete store, opened for reading by record number.
pub struct OpenStore {
    dir: PathBuf,
    manifest: StoreManifest,
    /// `starts[k]`: global number of shard k's first record; one more entry, the total.
    starts: Vec<u64>,
    shards: Vec<Shard>,
    /// Decompressed stretches of compressed shards by (shard, stretch), each with the read
    /// that last used it; `held` their bytes, `reads` the reads so far.
    cache: HashMap<(usize, usize), (Stretch, u64)>,
    held: u64,
    reads: u64,
    cache_bytes: u64,
}

fn invalid(path: &Path, message: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// What is wrong with record `local`'s payload: its checksum (the frame intact: the next record
/// can be read), or as a shard's first record, not the one its store wrote there.
pub(super) enum BadPayload {
    Checksum,
    Replaced,
}

impl BadPayload {
    pub(super) fn what(&self) -> &'static str {
        match self {
            BadPayload::Checksum => "payload checksum mismatch",
            BadPayload::Replaced => {
                "not the shard its store wrote: its first record is not the one written there \
                 (the file was replaced, e.g. by a copy of another shard)"
            }
        }
    }
}

/// Checks a payload against its stored checksum, and a shard's first record against the CRC the
/// store recorded of it.
pub(super) fn check_payload(
    payload: &[u8],
    crc: u32,
    local: u64,
    first_crc: Option<u32>,
) -> Result<(), BadPayload> {
    if masked_crc32c(payload) != crc {
        return Err(BadPayload::Checksum);
    }
    if local == 0 && first_crc.is_some_and(|c| c != crc32c::crc32c(payload)) {
        return Err(BadPayload::Replaced);
    }
    Ok(())
}

impl OpenStore {
    /// Opens the store in `dir` (the folder holding `store.json` and its shards): refused,
    /// naming the file, when it is not a complete store, was written by another format, or a
    /// shard is missing or has another size than the store recorded.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<OpenStore, StoreError> {
        let path = dir.join(STORE_MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                not_a_store(dir)
            } else {
                io_error(&path)(e)
            }
        })?;
        let manifest = StoreManifest::parse(text.as_bytes(), &path.display().to_string())?;
        if manifest.format != FORMAT_VERSION {
            return Err(invalid(
                &path,
                format!(
                    "store format {} where this prepbench reads format {FORMAT_VERSION}",
                    manifest.format
                ),
            ));
        }
        let mut starts = vec![0u64];
        for shard in &manifest.shards {
            let file = dir.join(&shard.file);
            if shard.file.contains('/') || shard.file.starts_with('.') {
                return Err(invalid(&path, format!("names a shard `{}`", shard.file)));
            }
            // Named for what it is: a shard replaced by a directory or a FIFO otherwise reads
            // as "4096 bytes" or "0 bytes where the store wrote ...".
            workloads::storage::check_regular(&file).map_err(io_error(&file))?;
            let bytes = std::fs::metadata(&file).map_err(io_error(&file))?.len();
            if bytes != shard.bytes {
                return Err(invalid(
                    &file,
                    format!(
                        "{bytes} bytes where the store wrote {} (changed since it was made; \
                         rematerialize it)",
                        shard.bytes
                    ),
                ));
            }
            starts.push(starts.last().expect("one start") + shard.records);
        }
        let shards = manifest.shards.iter().map(|_| Shard::default()).collect();
        Ok(OpenStore {
            dir: dir.to_path_buf(),
            manifest,
            starts,
            shards,
            cache: HashMap::new(),
            held: 0,
            reads: 0,
            cache_bytes,
        })
    }

    pub fn manifest(&self) -> &StoreManifest {
        &self.manifest
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records in the store (fan-out steps make several of one source item).
    pub fn len(&self) -> u64 {
        *self.starts.last().expect("one start")
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Global number of shard `shard`'s first record.
    pub fn shard_start(&self, shard: usize) -> u64 {
        self.starts[shard]
    }

    /// The shard holding record `index`, and the record's number within it.
    pub fn locate(&self, index: u64) -> Option<(usize, u64)> {
        if index >= self.len() {
            return None;
        }
        let shard = self.starts.partition_point(|&s| s <= index) - 1;
        Some((shard, index - self.starts[shard]))
    }

    pub(super) fn shard_path(&self, shard: usize) -> PathBuf {
        self.dir.join(&self.manifest.shards[shard].file)
    }

    /// Reads shard `shard` in order, every frame checked against what the store recorded.
    pub fn shard_reader(&self, shard: usize) -> Result<ShardReader, StoreError> {
        let info = &self.manifest.shards[shard];
        Ok(ShardReader::open(&self.shard_path(shard), self.manifest.codec)?.expecting(info))
    }

    /// The payload of record `index` (of all the store's records, in shard order), checked.
    pub fn read(&mut self, index: u64) -> Result<Vec<u8>, StoreError> {
        let Some((shard, local)) = self.locate(index) else {
            return Err(invalid(
                &self.dir,
                format!("record {index} of a store holding {}", self.len()),
            ));
        };
        if self.manifest.codec == Codec::None {
            self.read_uncompressed(shard, local)
        } else {
            self.read_compressed(shard, local)
        }
    }

    fn corrupt(
        &self,
        shard: usize,
        record: u64,
        offset: u64,
        what: impl Into<String>,
    ) -> StoreError {
        StoreError::Corrupt {
            shard: self.shard_path(shard).display().to_string(),
            record,
            offset,
            compressed: self.manifest.codec != Codec::None,
            what: what.into(),
        }
    }

    pub(super) fn longest(&self, shard: usize) -> u64 {
        self.manifest.shards[shard]
            .max_record
            .unwrap_or(MAX_RECORD_BYTES)
    }

    /// Checks a payload (see [`check_payload`]).
    fn check(
        &self,
        shard: usize,
        local: u64,
        frame: Frame,
        payload: &[u8],
        crc: u32,
    ) -> Result<(), StoreError> {
        let first = self.manifest.shards[shard].first_crc;
        check_payload(payload, crc, local, first)
            .map_err(|bad| self.corrupt(shard, local, frame.offset, bad.what()))
    }

    fn read_uncompressed(&mut self, shard: usize, local: u64) -> Result<Vec<u8>, StoreError> {
        if self.shards[shard].file.is_none() {
            let path = self.shard_path(shard);
            self.shards[shard].file = Some(File::open(&path).map_err(io_error(&path))?);
        }
        let info = &self.manifest.shards[shard];
        let stretch = stretch::stretch_of(info, local);
        let first = stretch::span(info, stretch).first;
        if self.shards[shard].frames.len() <= stretch {
            self.shards[shard]
                .frames
                .resize(info.restarts.len() + 1, None);
        }
        if self.shards[shard].frames[stretch].is_none() {
            let frames = self.index_file(shard, stretch)?;
            self.shards[shard].frames[stretch] = Some(frames);
        }
        let frames = self.shards[shard].frames[stretch]
            .as_ref()
            .expect("indexed");
        let frame = frames[(local - first) as usize];
        let file = self.shards[shard].file.as_ref().expect("opened");
        let mut buf = vec![0u8; frame.len as usize + 4];
        file.read_exact_at(&mut buf, frame.offset + 12)
            .map_err(|e| self.corrupt(shard, local, frame.offset, format!("reading: {e}")))?;
        let crc = u32::from_le_bytes(buf[frame.len as usize..].try_into().expect("4 bytes"));
        buf.truncate(frame.len as usize);
        self.check(shard, local, frame, &buf, crc)?;
        Ok(buf)
    }

    fn read_compressed(&mut self, shard: usize, local: u64) -> Result<Vec<u8>, StoreError> {
        let key = (
            shard,
            stretch::stretch_of(&self.manifest.shards[shard], local),
        );
        self.reads += 1;
        if !self.cache.contains_key(&key) {
            let (path, codec) = (self.shard_path(shard), self.manifest.codec);
            let info = &self.manifest.shards[shard];
            let read = stretch::decompress(&path, codec, info, key.1, self.longest(shard))?;
            let size = read.stream.len() as u64;
            // The least recently read go first, to make room; the one just read stays.
            while self.held + size > self.cache_bytes {
                let oldest = self.cache.iter().min_by_key(|(_, (_, last))| *last);
                let Some(&oldest) = oldest.map(|(k, _)| k) else {
                    break;
                };
                let (gone, _) = self.cache.remove(&oldest).expect("listed");
                self.held -= gone.stream.len() as u64;
            }
            self.held += size;
            self.cache.insert(key, (read, 0));
        }
        let (read, last) = self.cache.get_mut(&key).expect("kept");
        *last = self.reads;
        let frame = read.frames[(local - read.first) as usize];
        let start = (frame.offset + 12) as usize;
        let end = start + frame.len as usize;
        let payload = read.stream[start..end].to_vec();
        let crc = u32::from_le_bytes(read.stream[end..end + 4].try_into().expect("4 bytes"));
        let named = Frame {
            offset: read.base + frame.offset,
            len: frame.len,
        };
        self.check(shard, local, named, &payload, crc)?;
        Ok(payload)
    }

    /// Decompressed bytes kept for reading by number, as kept and as counted.
    #[cfg(test)]
    pub(super) fn held_bytes(&self) -> u64 {
        let kept = self
            .cache
            .values()
            .map(|(s, _)| s.stream.len() as u64)
            .sum();
        assert_eq!(kept, self.held, "the bytes kept and the bytes counted");
        kept
    }

    /// The frames of stretch `stretch` of an uncompressed shard (from the restart before it to
    /// the next, or the whole shard), found by reading each header where the previous record
    /// ends.
    fn index_file(&self, shard: usize, stretch: usize) -> Result<Vec<Frame>, StoreError> {
        let file = self.shards[shard].file.as_ref().expect("opened");
        let info = &self.manifest.shards[shard];
        let span = stretch::span(info, stretch);
        let (first, mut offset) = (span.first, span.file_at);
        let size = span.next.map_or(info.bytes, |r| r.file_offset());
        let mut frames = Vec::with_capacity(span.records as usize);
        while offset < size {
            let mut header = [0u8; 12];
            let record = first + frames.len() as u64;
            if offset + 12 > size {
                return Err(self.corrupt(shard, record, offset, "truncated header"));
            }
            file.read_exact_at(&mut header, offset)
                .map_err(|e| self.corrupt(shard, record, offset, format!("reading: {e}")))?;
            let frame = self.frame(shard, record, offset, &header, size)?;
            frames.push(frame);
            offset += FRAMING_BYTES + frame.len;
        }
        if frames.len() as u64 != span.records {
            let path = self.shard_path(shard);
            return Err(stretch::miscounted(&path, info, &span, frames.len()));
        }
        Ok(frames)
    }

    /// Parses and checks one record header at `offset` of a stream of `size` bytes.
    fn frame(
        &self,
        shard: usize,
        record: u64,
        offset: u64,
        header: &[u8],
        size: u64,
    ) -> Result<Frame, StoreError> {
        declared_len(header, offset, size, self.longest(shard))
            .map(|len| Frame { offset, len })
            .map_err(|what| self.corrupt(shard, record, offset, what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::complete;

    /// A store of `shards` shards of `per` records each (record i's payload: i as text,
    /// repeated), and its manifest.
    fn make(dir: &Path, codec: Codec, shards: usize, per: u64) -> StoreManifest {
        crate::store::testing::make_store(dir, codec, shards, per, payload)
    }

    fn payload(i: u64) -> Vec<u8> {
        format!("record {i} ")
            .repeat(1 + (i % 7) as usize)
            .into_bytes()
    }

    #[test]
    fn every_codec_reads_every_record_by_number_in_any_order() {
        for name in ["none", "gzip", "zlib", "zstd", "lz4"] {
            let dir = tempfile::tempdir().unwrap();
            make(dir.path(), name.parse().unwrap(), 3, 5);
            // A budget of one shard: reading across shards evicts and decompresses again.
            let mut store = OpenStore::open(dir.path(), 1).unwrap();
            assert_eq!(store.len(), 15);
            for i in [14, 0, 7, 3, 12, 5, 0, 14] {
                assert_eq!(store.read(i).unwrap(), payload(i), "{name} record {i}");
            }
            assert_eq!(store.locate(5), Some((1, 0)));
            assert!(store.read(15).is_err());
        }
    }

    #[test]
    fn an_uncompressed_shard_reads_in_order_as_by_number() {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), Codec::None, 2, 6);
        let mut store = OpenStore::open(dir.path(), 1).unwrap();
        for shard in 0..2 {
            let mut records = store.in_order(shard).unwrap().unwrap();
            let mut got = Vec::new();
            while let Some((local, payload)) = records.next_record().unwrap() {
                got.push((local, payload));
            }
            assert_eq!(got.len(), 6);
            for (local, payload) in got {
                let global = store.shard_start(shard) + local;
                assert_eq!(payload, store.read(global).unwrap());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), "gzip".parse().unwrap(), 1, 2);
        assert!(OpenStore::open(dir.path(), 1)
            .unwrap()
            .in_order(0)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_damaged_record_is_named_and_its_neighbours_still_read() {
        for name in ["none", "gzip"] {
            let dir = tempfile::tempdir().unwrap();
            let m = make(dir.path(), name.parse().unwrap(), 1, 4);
            let path = dir.path().join(&m.shards[0].file);
            let mut bytes = std::fs::read(&path).unwrap();
            if name == "none" {
                // The last byte of record 1's payload.
                let at = 16 + payload(0).len() + 12 + payload(1).len() - 1;
                bytes[at] ^= 0xff;
                std::fs::write(&path, &bytes).unwrap();
                let mut store = OpenStore::open(dir.path(), DEFAULT_CACHE_BYTES).unwrap();
                let e = store.read(1).unwrap_err().to_string();
                assert!(
                    e.contains("record 1") && e.contains(&m.shards[0].file),
                    "{e}"
                );
                assert!(e.contains("payload checksum mismatch"), "{e}");
                assert_eq!(store.read(2).unwrap(), payload(2));
                // In order: the same record named, and the next one read after it.
                let mut records = store.in_order(0).unwrap().unwrap();
                assert_eq!(records.next_record().unwrap().unwrap().1, payload(0));
                let e = records.next_record().unwrap_err().to_string();
                assert!(e.contains("record 1") && e.contains("checksum"), "{e}");
                assert_eq!(records.next_record().unwrap().unwrap().1, payload(2));
            } else {
                // A damaged compressed stream is named with its shard.
                let at = bytes.len() / 2;
                bytes[at] ^= 0xff;
                std::fs::write(&path, &bytes).unwrap();
                let mut store = OpenStore::open(dir.path(), DEFAULT_CACHE_BYTES).unwrap();
                let e = store.read(0).unwrap_err().to_string();
                assert!(e.contains(&m.shards[0].file), "{e}");
            }
        }
    }

    #[test]
    fn a_folder_that_is_not_a_complete_store_or_changed_since_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = OpenStore::open(dir.path(), 1).err().unwrap().to_string();
        assert!(e.contains("not a complete prepbench store"), "{e}");
        // A folder holding stores points to them; a missing one says so.
        let strategy = tempfile::tempdir().unwrap();
        let one = strategy.path().join("none-2sh-2n-a");
        make(&one, Codec::None, 2, 2);
        let e = OpenStore::open(strategy.path(), 1)
            .err()
            .unwrap()
            .to_string();
        let named = format!("it holds one, {}: name that folder", one.display());
        assert!(e.contains(&named), "{e}");
        let two = strategy.path().join("none-2sh-2n-b");
        make(&two, Codec::None, 2, 2);
        let e = OpenStore::open(strategy.path(), 1)
            .err()
            .unwrap()
            .to_string();
        let named = format!(
            "holds 2 stores, {} and {} among",
            one.display(),
            two.display()
        );
        assert!(e.contains(&named), "{e}");
        let e = OpenStore::open(&one.join("gone"), 1)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no such folder"), "{e}");
        let m = make(dir.path(), Codec::None, 2, 2);
        // A shard replaced by its sibling (same size here: both hold records of equal lengths
        // only by chance, so truncate instead to change its size).
        let path = dir.path().join(&m.shards[1].file);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let e = OpenStore::open(dir.path(), 1).err().unwrap().to_string();
        assert!(
            e.contains(&m.shards[1].file) && e.contains("rematerialize"),
            "{e}"
        );
        // A copy of shard 0 over shard 1 (the same size): its first record is refused.
        let dir = tempfile::tempdir().unwrap();
        let m = make(dir.path(), Codec::None, 2, 1);
        let mut manifest = m.clone();
        std::fs::copy(
            dir.path().join(&m.shards[0].file),
            dir.path().join(&m.shards[1].file),
        )
        .unwrap();
        manifest.shards[1].bytes = m.shards[0].bytes;
        complete(dir.path(), &manifest).unwrap();
        let mut store = OpenStore::open(dir.path(), 1).unwrap();
        let e = store.read(1).unwrap_err().to_string();
        assert!(e.contains("not the shard its store wrote"), "{e}");
    }

    #[test]
    fn a_shard_that_is_not_a_file_is_named_for_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let m = make(dir.path(), Codec::None, 2, 2);
        let path = dir.path().join(&m.shards[1].file);
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = OpenStore::open(dir.path(), 1).err().unwrap().to_string();
        assert!(
            e.contains(&m.shards[1].file) && e.contains("a directory"),
            "{e}"
        );
        std::fs::remove_dir(&path).unwrap();
        if std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success())
        {
            let e = OpenStore::open(dir.path(), 1).err().unwrap().to_string();
            assert!(e.contains(&m.shards[1].file) && e.contains("a FIFO"), "{e}");
        }
    }
}
