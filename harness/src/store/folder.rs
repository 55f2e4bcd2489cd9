//! A store's folder: its manifest and key, its marker and lock, how it is made complete, found
//! again and cleared, and the space it may take.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use workloads::Codec;

use crate::store::error::{io_error, StoreError};

pub const STORE_MANIFEST: &str = "store.json";
/// The file that marks a directory as a store prepbench made (and so may clear).
pub const STORE_MARKER: &str = ".prepbench-store";

/// The lock file of the store `dir`: a hidden file beside it (`.NAME.lock`), held while the
/// store is materialized; `None` for a path without a parent and a name.
pub fn lock_path(dir: &Path) -> Option<PathBuf> {
    let (parent, name) = (dir.parent()?, dir.file_name()?);
    Some(parent.join(format!(".{}.lock", name.to_string_lossy())))
}

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
pub(crate) const FORMAT_VERSION: u32 = 1;

pub use workloads::storage::free_bytes;

/// One shard file of a complete store.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShardInfo {
    pub file: String,
    pub bytes: u64,
    pub records: u64,
    /// CRC-32C of the first record's payload: a shard file replaced by another (a copy of a
    /// sibling) is found when read. Absent in stores from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_crc: Option<u32>,
    /// The longest record written: a longer declared length is refused before it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_record: Option<u64>,
    /// Where the shard's stream may be entered (every [`RESTART_EVERY_BYTES`] of it, further
    /// apart in a shard of more than 4 GiB of stream, so that a shard keeps at most 4,096): a
    /// compressed shard's decompression begins there (a record read by number is
    /// decompressed from the restart before it, not from the shard's start), and an
    /// uncompressed shard's frames are found again from there after a damaged header. Empty
    /// for a shard of a single stretch, and in stores from before restarts were written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<Restart>,
}

impl ShardInfo {
    /// The first restart after record `record` (where reading goes on past damage there).
    pub fn restart_after(&self, record: u64) -> Option<Restart> {
        next_restart(&self.restarts, record)
    }

    /// What is wrong with the shard's record count, if anything: an uncompressed shard's file
    /// is its stream, and every record takes at least its framing there.
    pub fn records_error(&self, codec: Codec) -> Option<String> {
        use crate::store::framing::FRAMING_BYTES;
        let fits = codec != Codec::None
            || self
                .records
                .checked_mul(FRAMING_BYTES)
                .is_some_and(|b| b <= self.bytes);
        (!fits).then(|| {
            format!(
                "{} records cannot lie in its {} bytes (a record takes at least {FRAMING_BYTES})",
                self.records, self.bytes
            )
        })
    }

    /// What is wrong with the shard's recorded restarts, if anything: each must lie after the
    /// one before it (records, file and stream offsets), within the shard, and hold as many
    /// stream bytes as its records may (a stretch is decompressed up to that bound, and no
    /// further). Checked whenever a manifest is read.
    pub fn restarts_error(&self, codec: Codec) -> Option<String> {
        use crate::store::framing::{FRAMING_BYTES, MAX_RECORD_BYTES};
        if self.restarts.is_empty() {
            return None;
        }
        let longest = self.max_record.unwrap_or(MAX_RECORD_BYTES);
        let (mut record, mut at, mut stream) = (0, 0, 0);
        for r in &self.restarts {
            let records = r.record().saturating_sub(record);
            let bytes = r.stream_offset().saturating_sub(stream);
            let fits = bytes >= records * FRAMING_BYTES
                && bytes <= records.saturating_mul(FRAMING_BYTES + longest);
            // An uncompressed shard's stream is its file.
            let unmoved = codec != Codec::None || r.file_offset() == r.stream_offset();
            if records == 0
                || r.record() >= self.records
                || r.file_offset() <= at
                || r.file_offset() >= self.bytes
                || !fits
                || !unmoved
            {
                return Some(format!(
                    "its restart [{}, {}, {}] does not follow [{record}, {at}, {stream}] \
                     within its {} records and {} bytes",
                    r.record(),
                    r.file_offset(),
                    r.stream_offset(),
                    self.records,
                    self.bytes
                ));
            }
            (record, at, stream) = (r.record(), r.file_offset(), r.stream_offset());
        }
        None
    }
}

/// Records a store's manifest may list in all (2^48: far past any store, and a count that
/// every reader's index, Python's `len` among them, holds without overflowing).
pub const MAX_STORE_RECORDS: u64 = 1 << 48;

/// Decompressed bytes of a shard's stream between two restarts (at least; a restart lies at a
/// record's start): 1 MiB cost a deflate stream 0.02-0.34 % of its size on CV's streams
/// (`pixel-centered` 29.64 % of its bytes with GZIP against 29.54 % as one stretch, `resized`
/// 76.76 % against 76.74 %), where 256 KiB cost up to 1.3 %.
pub const RESTART_EVERY_BYTES: u64 = 1 << 20;

/// The first of `restarts` after record `record`.
pub fn next_restart(restarts: &[Restart], record: u64) -> Option<Restart> {
    restarts
        .get(restarts.partition_point(|r| r.record() <= record))
        .copied()
}

/// A restart: the first record after it (of its shard), its offset in the shard file and in
/// the decompressed stream. Written as `[record, file offset, stream offset]`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Restart(pub u64, pub u64, pub u64);

impl Restart {
    pub fn record(&self) -> u64 {
        self.0
    }

    pub fn file_offset(&self) -> u64 {
        self.1
    }

    pub fn stream_offset(&self) -> u64 {
        self.2
    }
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
    /// Source items materialized (a fan-out step makes several records of one).
    pub samples: u64,
    /// Items of the source it was made from: fewer than `samples` when the store cycles over
    /// its source to hold more records than the data has (distinct records, repeated content);
    /// 0 in stores from before it was recorded.
    #[serde(default)]
    pub source_items: u64,
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
    /// The workload spec it was made from (canonical), so that a reader knows which steps
    /// are left to run online; absent in stores from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<serde_json::Value>,
    /// Set where this lists the first of a store's shards alone (a run's part of a store:
    /// `Materialized::part`): the store's shard count. Never written.
    #[serde(skip)]
    pub part_of: Option<usize>,
    /// Set where such a part reads only the first records of each of its shards: how many.
    /// Never written.
    #[serde(skip)]
    pub records_per_shard: Option<u64>,
}

impl StoreManifest {
    /// The manifest in `bytes`, read from `at` (a path or URL, named in the error with what
    /// mends it: the store is damaged, so it is made again or removed).
    pub fn parse(bytes: &[u8], at: &str) -> Result<StoreManifest, StoreError> {
        let damaged = |what: String| StoreError::Invalid {
            path: at.to_string(),
            message: format!(
                "unreadable store manifest ({what}): the store is damaged; `--rematerialize` \
                 on run or sweep makes it again, `prepbench store remove --stale` removes it"
            ),
        };
        let manifest: StoreManifest =
            serde_json::from_slice(bytes).map_err(|e| damaged(e.to_string()))?;
        let mut total: u64 = 0;
        for shard in &manifest.shards {
            let what = (shard.records_error(manifest.codec))
                .or_else(|| shard.restarts_error(manifest.codec));
            if let Some(what) = what {
                return Err(damaged(format!("shard `{}`: {what}", shard.file)));
            }
            total = total
                .checked_add(shard.records)
                .filter(|&t| t <= MAX_STORE_RECORDS)
                .ok_or_else(|| {
                    damaged(format!(
                        "its shards list more than {MAX_STORE_RECORDS} records in all"
                    ))
                })?;
        }
        Ok(manifest)
    }

    /// Whether the shards listed hold the records of source item `item` (`id` mod the store's
    /// shard count is an item's shard: `materialize`).
    pub fn holds_item(&self, item: u64) -> bool {
        self.part_of
            .is_none_or(|whole| (item % whole.max(1) as u64) < self.shards.len() as u64)
    }

    pub fn storage_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.bytes).sum()
    }

    /// The bytes a run of these shards reads: all of them, or where it reads each one's first
    /// `records_per_shard` records, that share of each shard's bytes (its records' sizes are
    /// not listed; one record of a shard is as large as another of the same strategy).
    pub fn part_bytes(&self) -> u64 {
        let Some(cap) = self.records_per_shard else {
            return self.storage_bytes();
        };
        (self.shards.iter())
            .map(|s| match s.records {
                0 => s.bytes,
                n => (s.bytes as f64 * n.min(cap) as f64 / n as f64).round() as u64,
            })
            .sum()
    }

    /// The records a run of these shards reads: all of them, or of each its first
    /// `records_per_shard` ([`StoreManifest::part_bytes`]).
    pub fn part_records(&self) -> u64 {
        let cap = self.records_per_shard.unwrap_or(u64::MAX);
        self.shards.iter().map(|s| s.records.min(cap)).sum()
    }

    /// How many times the store repeats its source (1 when it does not cycle).
    pub fn cycles(&self) -> f64 {
        if self.source_items == 0 {
            1.0
        } else {
            self.samples as f64 / self.source_items as f64
        }
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
        let codec = self.codec.folder_name();
        let hash = self.hash();
        // Names become folders here: a variant's name holds its options' values.
        root.join(workloads::path_component(&self.workload))
            .join(workloads::path_component(&self.strategy))
            .join(format!(
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
            source_items: self.samples,
            source_fingerprint: self.source_fingerprint.clone(),
            prefix_fingerprint: self.prefix_fingerprint.clone(),
            offline_s,
            offline_cpu_user_s: cpu_user_s,
            offline_cpu_sys_s: cpu_sys_s,
            offline_processing_s: 0.0,
            offline_writing_s: 0.0,
            shards,
            skipped: Vec::new(),
            spec: None,
            part_of: None,
            records_per_shard: None,
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
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&path)(e)),
    };
    let manifest = StoreManifest::parse(&bytes, &path.display().to_string())?;
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
    for path in clearable(dir)? {
        std::fs::remove_file(&path).map_err(io_error(&path))?;
    }
    Ok(())
}

/// The files [`clear`] would remove from `dir`, or why it would refuse: the one check behind
/// clearing and behind a dry run's promise.
pub fn clearable(dir: &Path) -> Result<Vec<std::path::PathBuf>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
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
    Ok(ours)
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

/// Every record `next` yields (it fills its buffer and says whether it did), for tests.
#[cfg(test)]
pub(crate) fn drain<E>(
    mut next: impl FnMut(&mut Vec<u8>) -> Result<bool, E>,
) -> Result<Vec<Vec<u8>>, E> {
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    while next(&mut buf)? {
        out.push(buf.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
