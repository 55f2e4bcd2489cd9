//! Storage profiles: the bandwidth and latency of the storage a result is measured under. The
//! harness emulates a profile on a faster local disk by delaying reads (see
//! `docs/measurement.md`); steps read files through [`ReadFiles`] so that raw-file reads are
//! delayed like shard reads.
//!
//! The model has two regimes, as fio measures storage. A file of at least `small_file_kb` is
//! *streamed*: one request latency when it is opened, then its bytes at `stream_mb_s` per reader
//! and `aggregate_mb_s` over all readers. A smaller file is read as random requests of
//! `request_kb`, each taking `latency_ms` on its reader, at most `iops` of them per second over
//! all readers.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Bytes available to this user on the filesystem that holds `dir`, or would hold it once
/// made: that of its nearest existing ancestor (statvfs), when it can be asked.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    // A relative path's last ancestor is the empty path, which is the working directory.
    let existing = (dir.ancestors())
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())?;
    let path = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we pass and reads the NUL-terminated path.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut stat) != 0 {
            return None;
        }
        Some(stat.f_bavail as u64 * stat.f_frsize as u64)
    }
}

/// How steps read files. The harness passes one that emulates a storage profile; without one,
/// steps read with `std::fs::read`.
pub trait ReadFiles: Sync + fmt::Debug {
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>>;

    /// Reads `length` bytes at `offset` of a file (a WebDataset sample's span in its shard).
    /// This default reads the whole file; readers that can seek read just the range.
    fn read_range(&self, path: &Path, offset: u64, length: u64) -> std::io::Result<Vec<u8>> {
        let whole = self.read_file(path)?;
        slice_range(&whole, path, offset, length).map(<[u8]>::to_vec)
    }
}

/// `bytes[offset..offset + length]`, or an error naming `path` when the range is beyond them
/// (the file changed since it was listed).
pub fn slice_range<'a>(
    bytes: &'a [u8],
    path: &Path,
    offset: u64,
    length: u64,
) -> std::io::Result<&'a [u8]> {
    offset
        .checked_add(length)
        .filter(|end| *end <= bytes.len() as u64)
        .map(|end| &bytes[offset as usize..end as usize])
        .ok_or_else(|| beyond_end(path, offset, length, bytes.len() as u64))
}

fn beyond_end(path: &Path, offset: u64, length: u64, len: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        format!(
            "{}: bytes {offset}..{} are beyond its {len} bytes (it changed since it was listed)",
            path.display(),
            offset.saturating_add(length)
        ),
    )
}

/// Reads `length` bytes at `offset` of a regular local file (see [`read_regular`]).
pub fn read_regular_range(path: &Path, offset: u64, length: u64) -> std::io::Result<Vec<u8>> {
    check_regular(path)?;
    read_range_of(&std::fs::File::open(path)?, path, offset, length)
}

/// Reads `length` bytes at `offset` of the open `file` (at `path`), or an error naming it when
/// the range is beyond its end.
pub fn read_range_of(
    file: &std::fs::File,
    path: &Path,
    offset: u64,
    length: u64,
) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if offset.checked_add(length).is_none_or(|end| end > len) {
        return Err(beyond_end(path, offset, length, len));
    }
    let mut bytes = vec![0u8; length as usize];
    file.read_exact_at(&mut bytes, offset)?;
    Ok(bytes)
}

/// The name of the profile that adds nothing: the local disk as it is.
pub const LOCAL: &str = "local";

/// One storage profile. Absent limits are unlimited.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageProfile {
    /// Its key under `storage_profiles` (set from the key when a spec is read, whatever the
    /// file says); read back as written where a spec goes as JSON to a loader's process.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// One reader streaming one large file, MB/s (1e6 B).
    #[serde(default)]
    pub stream_mb_s: Option<f64>,
    /// All readers together streaming large files, MB/s.
    #[serde(default)]
    pub aggregate_mb_s: Option<f64>,
    /// Latency of one request in milliseconds: once per large file, per `request_kb` of a small
    /// file.
    #[serde(default)]
    pub latency_ms: f64,
    /// Size of one random request to a small file, KiB.
    #[serde(default = "default_request_kb")]
    pub request_kb: f64,
    /// Random requests per second over all readers.
    #[serde(default)]
    pub iops: Option<f64>,
    /// Files below this size (KiB) are read as random requests; larger ones are streamed.
    #[serde(default = "default_small_file_kb")]
    pub small_file_kb: f64,
    /// CPU this machine spends per MB read from the storage, outside the reader, in
    /// milliseconds: a network or FUSE filesystem's client (its decryption, copies and network
    /// stack). Charged to the reading thread once the bytes have arrived, so it takes the cores
    /// the pipeline uses; 0 (the default) for storage whose reads cost this machine nothing
    /// beyond the reader's own.
    #[serde(default)]
    pub cpu_ms_per_mb: f64,
}

fn default_request_kb() -> f64 {
    4.0
}

fn default_small_file_kb() -> f64 {
    1024.0
}

impl StorageProfile {
    /// The local disk unchanged.
    pub fn local() -> StorageProfile {
        StorageProfile {
            name: LOCAL.into(),
            description: "the local disk as it is, nothing emulated".into(),
            stream_mb_s: None,
            aggregate_mb_s: None,
            latency_ms: 0.0,
            request_kb: default_request_kb(),
            iops: None,
            small_file_kb: default_small_file_kb(),
            cpu_ms_per_mb: 0.0,
        }
    }

    /// The paper's HDD-backed Ceph over 10 Gb/s, from its fio figures
    /// (`results/paper/storage_profile.csv`): 219 MB/s for one thread reading one file, 910 MB/s
    /// for eight; 1629 random 4 KiB requests per second (6.6 MB/s) for one thread over 5000 small
    /// files, 9853 (40.4 MB/s) for eight.
    pub fn paper_ceph_hdd() -> StorageProfile {
        StorageProfile {
            name: "paper-ceph-hdd".into(),
            description: "the paper's HDD-backed Ceph (fio: 219 MB/s one stream, 910 MB/s eight; \
                          6.6 MB/s one thread over small files, 40.4 MB/s eight)"
                .into(),
            stream_mb_s: Some(219.0),
            aggregate_mb_s: Some(910.0),
            latency_ms: 1000.0 / 1629.0,
            request_kb: 4.0,
            iops: Some(9853.0),
            small_file_kb: default_small_file_kb(),
            cpu_ms_per_mb: 0.0,
        }
    }

    /// The built-in profiles by name.
    pub fn builtin() -> Vec<StorageProfile> {
        vec![StorageProfile::local(), StorageProfile::paper_ceph_hdd()]
    }

    /// Whether reads under this profile are left alone (nothing to emulate).
    pub fn is_passthrough(&self) -> bool {
        self.stream_mb_s.is_none()
            && self.aggregate_mb_s.is_none()
            && self.iops.is_none()
            && self.latency_ms == 0.0
            && self.cpu_ms_per_mb == 0.0
    }

    /// Checks every figure lies in its physical range (a positive figure from a 1 KB/s link to
    /// a 10 TB/s one, a latency up to 100 s); the message names the bad one and the range.
    /// Figures outside these ranges are typos, and at the extremes the delays they imply
    /// overflow a clock.
    pub fn validate(&self) -> Result<(), String> {
        let within = |what: &str, v: f64, lo: f64, hi: f64| {
            if v >= lo && v <= hi {
                Ok(())
            } else {
                Err(format!(
                    "storage profile `{}`: {what} must be a number from {} to {}, got {}",
                    self.name,
                    crate::number::Num(lo),
                    crate::number::Num(hi),
                    crate::number::Num(v)
                ))
            }
        };
        for (what, v) in [
            ("stream_mb_s", self.stream_mb_s),
            ("aggregate_mb_s", self.aggregate_mb_s),
        ] {
            if let Some(v) = v {
                within(what, v, 1e-3, 1e7)?;
            }
        }
        if let Some(v) = self.iops {
            within("iops", v, 1e-3, 1e9)?;
        }
        within("request_kb", self.request_kb, 0.5, 1048576.0)?;
        within("small_file_kb", self.small_file_kb, 0.5, 1048576.0)?;
        within("cpu_ms_per_mb", self.cpu_ms_per_mb, 0.0, 100_000.0)?;
        within("latency_ms", self.latency_ms, 0.0, 100_000.0)
    }
}

/// Reads the regular file at `path` (links followed). Anything else, such as a FIFO (whose read
/// would wait for a writer forever) or a device (`/dev/zero` never ends), is refused before it
/// is opened, saying what it is.
pub fn read_regular(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    check_regular(path)?;
    std::fs::read(path)
}

/// What a file of type `t` is, in words (`a FIFO`, `a device`).
pub fn file_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "something else"
    }
}

/// Refuses a `path` that is not a regular file (links followed), saying what it is.
pub fn check_regular(path: &std::path::Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        return Ok(());
    }
    let what = file_kind(meta.file_type());
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file ({what}): prepbench reads only regular files"),
    ))
}

/// Finds `name` among `custom` profiles (a workload's `storage_profiles`) and the built-in ones.
pub fn find_profile(
    name: &str,
    custom: &BTreeMap<String, StorageProfile>,
) -> Result<StorageProfile, String> {
    if let Some(p) = custom.get(name) {
        return Ok(p.clone());
    }
    StorageProfile::builtin()
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            let mut known: Vec<String> = StorageProfile::builtin()
                .into_iter()
                .map(|p| p.name)
                .collect();
            known.extend(custom.keys().cloned());
            format!(
                "no storage profile `{name}`{}; known: {} (define others under \
                 `storage_profiles:` in the workload file)",
                crate::suggest::did_you_mean(name, known.iter().map(String::as_str)),
                known.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_of_a_folder_not_yet_made_is_its_nearest_existing_ancestors() {
        // Relative (the working directory's filesystem: the empty path is never "there"; a
        // relative --data-dir once went unchecked, and a sweep filled the disk), absolute, and
        // the folder itself.
        for dir in ["not/yet/made", "made", "/not/yet/made", "/", "."] {
            assert!(free_bytes(Path::new(dir)).is_some(), "{dir}");
        }
    }

    #[test]
    fn paper_profile_reproduces_the_fio_figures() {
        let p = StorageProfile::paper_ceph_hdd();
        // One thread over small files: one request per latency.
        let one = p.request_kb * 1024.0 / (p.latency_ms / 1000.0) / 1e6;
        assert!((one - 6.67).abs() < 0.05, "{one}");
        let eight = p.iops.unwrap() * p.request_kb * 1024.0 / 1e6;
        assert!((eight - 40.4).abs() < 0.05, "{eight}");
        assert!(!p.is_passthrough());
        assert!(StorageProfile::local().is_passthrough());
        p.validate().unwrap();
    }

    #[test]
    fn unknown_profiles_list_the_known_ones() {
        let err = find_profile("nfs", &BTreeMap::new()).unwrap_err();
        assert!(err.contains("local, paper-ceph-hdd"), "{err}");
        let mut custom = BTreeMap::new();
        let mut nfs = StorageProfile::local();
        nfs.name = "nfs".into();
        nfs.stream_mb_s = Some(100.0);
        custom.insert("nfs".into(), nfs.clone());
        assert_eq!(find_profile("nfs", &custom).unwrap(), nfs);
    }

    #[test]
    fn bad_figures_are_named() {
        let mut p = StorageProfile::local();
        p.name = "x".into();
        p.iops = Some(0.0);
        assert!(p.validate().unwrap_err().contains("iops"));
        p.iops = None;
        p.latency_ms = f64::NAN;
        assert!(p.validate().unwrap_err().contains("latency_ms"));
        // Extremes a clock cannot hold are refused with the range, not only non-positive ones.
        p.latency_ms = 1e300;
        assert!(p
            .validate()
            .unwrap_err()
            .contains("latency_ms must be a number from 0 to"));
        p.latency_ms = 0.0;
        for tiny in [1.0e-300, 0.0, -1.0, f64::INFINITY, 1e300] {
            p.stream_mb_s = Some(tiny);
            let err = p.validate().unwrap_err();
            assert!(
                err.contains("stream_mb_s must be a number from 0.001 to"),
                "{err}"
            );
        }
        p.stream_mb_s = None;
        for bad in [-1.0, f64::NAN, 1e300] {
            p.cpu_ms_per_mb = bad;
            let err = p.validate().unwrap_err();
            assert!(
                err.contains("cpu_ms_per_mb must be a number from 0 to"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_client_cpu_cost_alone_is_something_to_emulate() {
        let mut p = StorageProfile::local();
        p.cpu_ms_per_mb = 5.0;
        assert!(!p.is_passthrough());
        p.validate().unwrap();
        let parsed: StorageProfile =
            serde_yaml_ng::from_str("stream_mb_s: 70\ncpu_ms_per_mb: 4.5\n").unwrap();
        assert_eq!(parsed.cpu_ms_per_mb, 4.5);
    }
}
