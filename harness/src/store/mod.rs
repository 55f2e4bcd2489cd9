//! The record store: a materialized strategy is a directory of TFRecord-framed shards (written
//! under a temporary name, synced, renamed) plus `store.json`, written last, which makes the
//! directory complete. An incomplete directory is never read: it is cleared and redone.

pub mod codec;
pub mod framing;

pub mod remote;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use workloads::Codec;

use codec::CodecWriter;
use framing::{FramingError, RecordReader, RecordWriter};

pub const STORE_MANIFEST: &str = "store.json";
/// The file that marks a directory as a store prepbench made (and so may clear).
pub const STORE_MARKER: &str = ".prepbench-store";

/// Creates `dir` (and its parents) as a store directory, with its marker.
pub fn create(dir: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let marker = dir.join(STORE_MARKER);
    std::fs::write(
        &marker,
        b"a prepbench store: prepbench may clear this directory\n",
    )
    .map_err(io_error(&marker))
}
const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("corrupt shard {shard}: record {record} at byte {offset}{}: {what}", if *.compressed { " of the decompressed stream" } else { "" })]
    Corrupt {
        shard: String,
        record: u64,
        offset: u64,
        compressed: bool,
        what: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error(
        "not enough space for the store in {dir}: {}; {:.1} MB free{}",
        if *.during_write { "the disk filled up while writing (the partial store was removed)" } else { "refused before writing" },
        *.free_bytes as f64 / 1e6,
        needed_bytes.map(|n| format!(", the store needs about {:.1} MB uncompressed", n as f64 / 1e6)).unwrap_or_default()
    )]
    NoSpace {
        dir: String,
        free_bytes: u64,
        needed_bytes: Option<u64>,
        during_write: bool,
    },
}

/// Bytes available to this user on the filesystem holding `dir` (statvfs), when it can be asked.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we pass and reads the NUL-terminated path.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut stat) != 0 {
            return None;
        }
        Some(stat.f_bavail as u64 * stat.f_frsize as u64)
    }
}

impl StoreError {
    /// Whether the error is the disk being full (ENOSPC or a quota), anywhere in a store write.
    pub fn is_no_space(&self) -> bool {
        match self {
            StoreError::Io { source, .. } => matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT)
            ),
            StoreError::NoSpace { .. } => true,
            _ => false,
        }
    }
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// One shard file of a complete store.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShardInfo {
    pub file: String,
    pub bytes: u64,
    pub records: u64,
}

/// What a store holds and how it was made; written last, so its presence means complete.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StoreManifest {
    pub format: u32,
    pub prepbench_version: String,
    pub workload: String,
    pub strategy: String,
    pub split: usize,
    pub codec: Codec,
    pub samples: u64,
    pub source_fingerprint: String,
    pub prefix_fingerprint: String,
    pub offline_s: f64,
    pub offline_cpu_user_s: f64,
    pub offline_cpu_sys_s: f64,
    /// Worker seconds running the offline steps, and encoding, compressing and writing their
    /// output (summed over workers, so up to threads x offline_s).
    #[serde(default)]
    pub offline_processing_s: f64,
    #[serde(default)]
    pub offline_writing_s: f64,
    pub shards: Vec<ShardInfo>,
    /// Samples the offline steps failed on and left out (`on_error: skip`).
    #[serde(default)]
    pub skipped: Vec<crate::results::Skipped>,
}

impl StoreManifest {
    pub fn storage_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.bytes).sum()
    }
}

/// Identifies a materialization: equal keys mean equal stored bytes.
#[derive(Clone, Debug)]
pub struct StoreKey {
    pub workload: String,
    pub strategy: String,
    pub split: usize,
    pub codec: Codec,
    pub shards: usize,
    pub samples: u64,
    pub source_fingerprint: String,
    pub prefix_fingerprint: String,
}

impl StoreKey {
    fn hash(&self) -> String {
        let text = format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            env!("CARGO_PKG_VERSION"),
            self.codec,
            self.shards,
            self.samples,
            self.source_fingerprint,
            self.prefix_fingerprint
        );
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
    }

    /// `ROOT/<workload>/<strategy>/<codec>-<shards>sh-<samples>n-<hash>`.
    pub fn dir(&self, root: &Path) -> PathBuf {
        let codec = self.codec.to_string().replace(':', "");
        let hash = self.hash();
        root.join(&self.workload).join(&self.strategy).join(format!(
            "{codec}-{}sh-{}n-{}",
            self.shards,
            self.samples,
            &hash[..10]
        ))
    }

    pub(crate) fn matches(&self, m: &StoreManifest) -> bool {
        m.format == FORMAT_VERSION
            && m.prepbench_version == env!("CARGO_PKG_VERSION")
            && m.codec == self.codec
            && m.shards.len() == self.shards
            && m.samples == self.samples
            && m.source_fingerprint == self.source_fingerprint
            && m.prefix_fingerprint == self.prefix_fingerprint
    }

    pub fn manifest(
        &self,
        shards: Vec<ShardInfo>,
        offline_s: f64,
        cpu_user_s: f64,
        cpu_sys_s: f64,
    ) -> StoreManifest {
        StoreManifest {
            format: FORMAT_VERSION,
            prepbench_version: env!("CARGO_PKG_VERSION").to_string(),
            workload: self.workload.clone(),
            strategy: self.strategy.clone(),
            split: self.split,
            codec: self.codec,
            samples: self.samples,
            source_fingerprint: self.source_fingerprint.clone(),
            prefix_fingerprint: self.prefix_fingerprint.clone(),
            offline_s,
            offline_cpu_user_s: cpu_user_s,
            offline_cpu_sys_s: cpu_sys_s,
            offline_processing_s: 0.0,
            offline_writing_s: 0.0,
            shards,
            skipped: Vec::new(),
        }
    }
}

/// The file name of shard `index` of `count`.
pub fn shard_file_name(index: usize, count: usize, codec: Codec) -> String {
    format!(
        "shard-{index:05}-of-{count:05}.tfrecord{}",
        codec.extension()
    )
}

/// Reads `dir/store.json` if the store there is complete, matches `key` and all its shards are
/// present with their recorded sizes.
pub fn find_complete(dir: &Path, key: &StoreKey) -> Result<Option<StoreManifest>, StoreError> {
    let path = dir.join(STORE_MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&path)(e)),
    };
    let manifest: StoreManifest = serde_json::from_str(&text).map_err(|e| StoreError::Invalid {
        path: path.display().to_string(),
        message: format!("unreadable store manifest: {e}"),
    })?;
    if !key.matches(&manifest) {
        return Ok(None);
    }
    for shard in &manifest.shards {
        let shard_path = dir.join(&shard.file);
        match std::fs::metadata(&shard_path) {
            Ok(m) if m.len() == shard.bytes => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(manifest))
}

/// Removes what an earlier materialization left in `dir` (its shards, temporaries and manifest).
/// Refuses a non-empty directory without prepbench's marker (or, from before markers, a store
/// manifest), and one holding anything else.
pub fn clear(dir: &Path) -> Result<(), StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(dir)(e)),
    };
    let entries: Vec<std::fs::DirEntry> =
        entries.collect::<Result<_, _>>().map_err(io_error(dir))?;
    let owned = dir.join(STORE_MARKER).is_file() || dir.join(STORE_MANIFEST).is_file();
    if !entries.is_empty() && !owned {
        return Err(StoreError::Invalid {
            path: dir.display().to_string(),
            message: format!(
                "is not empty and has no `{STORE_MARKER}` marker, so prepbench did not make it: \
                 refusing to clear it (choose another --store-dir)"
            ),
        });
    }
    let mut ours = Vec::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("shard-")
            || name.starts_with(".shard-")
            || name == STORE_MANIFEST
            || name == STORE_MARKER
        {
            ours.push(entry.path());
        } else {
            return Err(StoreError::Invalid {
                path: dir.display().to_string(),
                message: format!(
                    "holds `{name}`, which prepbench did not write: refusing to clear it"
                ),
            });
        }
    }
    for path in ours {
        std::fs::remove_file(&path).map_err(io_error(&path))?;
    }
    Ok(())
}

/// Writes `manifest` as `dir/store.json` atomically, completing the store.
pub fn complete(dir: &Path, manifest: &StoreManifest) -> Result<(), StoreError> {
    let path = dir.join(STORE_MANIFEST);
    let tmp = dir.join(".store.json.tmp");
    let text = serde_json::to_string_pretty(manifest).expect("manifest serializes");
    let mut file = File::create(&tmp).map_err(io_error(&tmp))?;
    file.write_all(text.as_bytes()).map_err(io_error(&tmp))?;
    file.sync_all().map_err(io_error(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io_error(&path))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))
}

/// Writes one shard under a temporary name; [`ShardWriter::finish`] syncs and renames it.
pub struct ShardWriter {
    final_path: PathBuf,
    tmp_path: PathBuf,
    records: RecordWriter<CodecWriter>,
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
        })
    }

    pub fn write(&mut self, payload: &[u8]) -> Result<(), StoreError> {
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

/// Reads the payloads of one shard in order, checking every frame.
pub struct ShardReader {
    path: PathBuf,
    compressed: bool,
    records: RecordReader<Box<dyn Read + Send>>,
    read_nanos: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Time inside `next_into`, file reads included.
    record_seconds: f64,
}

impl ShardReader {
    pub fn open(path: &Path, codec: Codec) -> Result<ShardReader, StoreError> {
        ShardReader::open_through(path, codec, None)
    }

    /// Opens a shard whose reads go through an emulated storage `throttle` (their delay counts
    /// as read time).
    pub fn open_through(
        path: &Path,
        codec: Codec,
        throttle: Option<&std::sync::Arc<crate::emulate::Throttle>>,
    ) -> Result<ShardReader, StoreError> {
        let file: Box<dyn Read + Send> = match throttle {
            Some(t) => Box::new(t.open(path).map_err(io_error(path))?),
            None => Box::new(File::open(path).map_err(io_error(path))?),
        };
        ShardReader::from_read(path, codec, file)
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
            compressed: codec != Codec::None,
            records: RecordReader::new(inner),
            read_nanos,
            record_seconds: 0.0,
        })
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
        self.records.can_continue()
    }

    /// Reads the next payload into `payload`; `Ok(false)` at the end of the shard.
    pub fn next_into(&mut self, payload: &mut Vec<u8>) -> Result<bool, StoreError> {
        let start = std::time::Instant::now();
        let result = self.records.next_into(payload);
        self.record_seconds += start.elapsed().as_secs_f64();
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
                compressed: self.compressed,
                what,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(codec: Codec) -> StoreKey {
        StoreKey {
            workload: "w".into(),
            strategy: "decoded".into(),
            split: 2,
            codec,
            shards: 2,
            samples: 4,
            source_fingerprint: "src".into(),
            prefix_fingerprint: "steps".into(),
        }
    }

    fn write_store(dir: &Path, codec: Codec) -> StoreManifest {
        create(dir).unwrap();
        let mut shards = Vec::new();
        for s in 0..2 {
            let mut w = ShardWriter::create(dir, s, 2, codec).unwrap();
            for r in 0..2u8 {
                w.write(&[s as u8, r, 42]).unwrap();
            }
            shards.push(w.finish().unwrap());
        }
        let m = key(codec).manifest(shards, 1.0, 0.5, 0.1);
        complete(dir, &m).unwrap();
        m
    }

    fn read_shard(path: &Path, codec: Codec) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut r = ShardReader::open(path, codec)?;
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while r.next_into(&mut buf)? {
            out.push(buf.clone());
        }
        Ok(out)
    }

    #[test]
    fn complete_stores_are_found_and_read_back_for_every_codec() {
        for name in ["none", "gzip", "zlib", "zstd", "lz4"] {
            let codec: Codec = name.parse().unwrap();
            let root = tempfile::tempdir().unwrap();
            let dir = key(codec).dir(root.path());
            let written = write_store(&dir, codec);
            let found = find_complete(&dir, &key(codec)).unwrap().expect("complete");
            assert_eq!(found, written);
            assert_eq!(found.shards[0].file, shard_file_name(0, 2, codec));
            let records = read_shard(&dir.join(&found.shards[1].file), codec).unwrap();
            assert_eq!(records, vec![vec![1, 0, 42], vec![1, 1, 42]], "{name}");
            assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")));
        }
    }

    #[test]
    fn a_store_without_manifest_or_with_another_key_is_not_reused() {
        let root = tempfile::tempdir().unwrap();
        let dir = key(Codec::None).dir(root.path());
        write_store(&dir, Codec::None);
        let mut other = key(Codec::None);
        other.prefix_fingerprint = "changed".into();
        assert!(find_complete(&dir, &other).unwrap().is_none());
        std::fs::remove_file(dir.join(STORE_MANIFEST)).unwrap();
        assert!(find_complete(&dir, &key(Codec::None)).unwrap().is_none());
        // Interrupted (no manifest) but marked as ours: cleared, marker and all.
        clear(&dir).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        // Someone else's directory: refused, whatever its files are called.
        std::fs::write(dir.join("shard-00000-of-00001.tfrecord"), b"theirs").unwrap();
        let err = clear(&dir).unwrap_err().to_string();
        assert!(err.contains("marker"), "{err}");
        assert!(dir.join("shard-00000-of-00001.tfrecord").exists());
        // Ours, but holding a file prepbench did not write: refused too.
        create(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
        assert!(clear(&dir).unwrap_err().to_string().contains("notes.txt"));
        assert!(dir.join("notes.txt").exists());
    }

    #[test]
    fn a_flipped_byte_in_a_shard_names_shard_record_and_offset() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s");
        let m = write_store(&dir, Codec::None);
        let path = dir.join(&m.shards[0].file);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[19 + 13] ^= 0x40; // inside the second record's payload
        std::fs::write(&path, bytes).unwrap();
        let err = read_shard(&path, Codec::None).unwrap_err().to_string();
        assert!(
            err.contains(&m.shards[0].file)
                && err.contains("record 1 at byte 19")
                && err.contains("checksum"),
            "{err}"
        );
        // The manifest still matches on size: corruption is caught when reading, not skipped.
        assert!(find_complete(&dir, &key(Codec::None)).unwrap().is_some());
    }

    #[test]
    fn a_shard_compressed_with_another_codec_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s");
        let m = write_store(&dir, Codec::Zstd { level: 3 });
        let path = dir.join(&m.shards[0].file);
        for wrong in ["none", "gzip", "lz4"] {
            assert!(
                read_shard(&path, wrong.parse().unwrap()).is_err(),
                "{wrong}"
            );
        }
    }
}
