//! Where a dataset's files live. Readers list folders and read annotation files through
//! [`Files`], so one reader serves a dataset on a local disk and one in object storage (the
//! harness implements [`Files`] over S3); pipelines read the raw files through the same value
//! (it is their [`ReadFiles`]).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use workloads::ReadFiles;

/// Whether a path names object storage (`s3://...`) rather than a local folder.
pub fn is_remote(dir: &Path) -> bool {
    dir.to_str().is_some_and(|s| s.starts_with("s3://"))
}

/// `name` under the folder `dir`, for local paths and object-storage URLs alike (a URL's
/// parameters stay at its end: `s3://b/data?range_mb=4` + `x` is `s3://b/data/x?range_mb=4`).
pub fn join(dir: &Path, name: &str) -> PathBuf {
    match dir.to_str().filter(|_| is_remote(dir)) {
        Some(url) => {
            let (location, query) = url.split_once('?').unwrap_or((url, ""));
            let joined = format!("{}/{name}", location.trim_end_matches('/'));
            if query.is_empty() {
                joined.into()
            } else {
                format!("{joined}?{query}").into()
            }
        }
        None => dir.join(name),
    }
}

/// One entry of a listed folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name as text, for matching, ordering and messages (a byte that is not UTF-8 shows
    /// as U+FFFD); [`Entry::path_in`] gives the path the file system knows.
    pub name: String,
    /// The name exactly as the file system gives it (a Unix name is any bytes but `/`).
    pub os_name: std::ffi::OsString,
    pub is_dir: bool,
    /// Bytes (0 for folders).
    pub size: u64,
    /// Last modification, nanoseconds since the Unix epoch (0 when unknown).
    pub modified_ns: u128,
}

/// A folder's entries, and the names of those left out with what each is.
pub type Listed = (Vec<Entry>, Vec<(String, String)>);

/// The file system a dataset is read from.
pub trait Files: ReadFiles + Send + Sync + fmt::Debug {
    /// The entries of the folder `dir`, in no particular order; `NotFound` when there is none.
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>>;
    /// [`Files::list`], with the names of the entries it leaves out (neither a folder nor a
    /// regular file, links followed) and what each is.
    fn list_with_left_out(&self, dir: &Path) -> io::Result<Listed> {
        Ok((self.list(dir)?, Vec::new()))
    }
    /// Whether the files are on this machine, behind its page cache: cache eviction, residency
    /// and storage emulation apply to them only.
    fn is_local(&self) -> bool;
    /// These files as the reader steps use (`self`; spelled out for the MSRV, which has no
    /// trait upcasting).
    fn as_read(&self) -> &dyn ReadFiles;
}

/// The local file system (symbolic links followed).
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalFiles;

/// The local file system, shared.
pub fn local() -> Arc<dyn Files> {
    Arc::new(LocalFiles)
}

impl Entry {
    /// An entry named `name` (an object key's last part, or a name already known to be text).
    pub fn named(name: String, is_dir: bool, size: u64, modified_ns: u128) -> Entry {
        Entry {
            os_name: name.clone().into(),
            name,
            is_dir,
            size,
            modified_ns,
        }
    }

    /// This entry's path in the folder `dir` it was listed from, built from its exact name, so
    /// a name holding bytes that are not UTF-8 still names the file.
    pub fn path_in(&self, dir: &Path) -> PathBuf {
        if is_remote(dir) {
            join(dir, &self.name)
        } else {
            dir.join(&self.os_name)
        }
    }
}

fn entry(os_name: std::ffi::OsString, meta: &std::fs::Metadata) -> Entry {
    let modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Entry {
        name: os_name.to_string_lossy().into_owned(),
        os_name,
        is_dir: meta.is_dir(),
        size: if meta.is_dir() { 0 } else { meta.len() },
        modified_ns,
    }
}

impl ReadFiles for LocalFiles {
    /// Reads a regular file (links followed). Anything else, such as a FIFO (whose read would
    /// wait for a writer forever) or a device (`/dev/zero` never ends), is refused before it is
    /// opened.
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        workloads::storage::read_regular(path)
    }

    fn read_range(&self, path: &Path, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        workloads::storage::read_regular_range(path, offset, length)
    }
}

impl Files for LocalFiles {
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        Ok(self.list_with_left_out(dir)?.0)
    }

    fn list_with_left_out(&self, dir: &Path) -> io::Result<Listed> {
        let (mut entries, mut left_out) = (Vec::new(), Vec::new());
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            // Follows links, as reading the file will; a dangling link is left out, and so is
            // anything but a folder or a regular file (a FIFO or a link to a device is never a
            // sample: reading it would wait or never end).
            let why = match std::fs::metadata(e.path()) {
                Ok(meta) if meta.is_dir() || meta.is_file() => {
                    entries.push(entry(e.file_name(), &meta));
                    continue;
                }
                Ok(meta) => workloads::storage::file_kind(meta.file_type()).to_string(),
                Err(err) => match std::fs::read_link(e.path()) {
                    Ok(to) if err.kind() == io::ErrorKind::NotFound => {
                        format!("a link to {}, which does not exist", to.display())
                    }
                    _ => format!("unreadable: {err}"),
                },
            };
            left_out.push((e.file_name().to_string_lossy().into_owned(), why));
        }
        Ok((entries, left_out))
    }

    fn is_local(&self) -> bool {
        true
    }

    fn as_read(&self) -> &dyn ReadFiles {
        self
    }
}

/// The files of `dir` whose names end in one of `suffixes` (lower case; names compared in any
/// case), in no particular order; an error naming `dir` when it cannot be listed.
pub(crate) fn files_ending(
    files: &dyn Files,
    dir: &Path,
    suffixes: &[&str],
) -> Result<Vec<Entry>, crate::error::DatasetError> {
    let listed = files
        .list(dir)
        .map_err(|e| crate::error::DatasetError::Io {
            path: dir.display().to_string(),
            source: e,
        })?;
    Ok(listed
        .into_iter()
        .filter(|e| {
            let lower = e.name.to_ascii_lowercase();
            !e.is_dir && suffixes.iter().any(|s| lower.ends_with(s))
        })
        .collect())
}

/// `dir`'s sub-folders, in natural order of their names.
pub(crate) fn folders(files: &dyn Files, dir: &Path) -> io::Result<Vec<Entry>> {
    let mut found: Vec<Entry> = files.list(dir)?.into_iter().filter(|e| e.is_dir).collect();
    found.sort_by_key(|e| natural_key(&e.name));
    Ok(found)
}

/// Orders file names the way people read numbers: `x_2` before `x_10`.
pub fn natural_key(name: &str) -> (String, u64, String) {
    let stem_end = name.find('.').unwrap_or(name.len());
    let stem = &name[..stem_end];
    // Counted in bytes from the end: ASCII digits are whole characters, so this is a character
    // boundary whatever letters come before (`photo_café1`).
    let digits_start = stem.len() - stem.bytes().rev().take_while(u8::is_ascii_digit).count();
    let number = stem[digits_start..].parse::<u64>().unwrap_or(0);
    (stem[..digits_start].to_string(), number, name.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_folders_and_regular_files_are_listed_or_read() {
        use super::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.JPEG"), b"x").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let fifo = root.join("b.JPEG");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        std::os::unix::fs::symlink("/dev/zero", root.join("c.JPEG")).unwrap();
        let mut names: Vec<String> = LocalFiles
            .list(root)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        names.sort();
        assert_eq!(names, vec!["a.JPEG", "sub"]);
        let err = LocalFiles.read_file(&root.join("c.JPEG")).unwrap_err();
        assert!(err.to_string().contains("a device"), "{err}");
        if made.is_ok_and(|s| s.success()) {
            // Refused at once, not read (which would wait for a writer).
            let err = LocalFiles.read_file(&fifo).unwrap_err();
            assert!(err.to_string().contains("a FIFO"), "{err}");
        }
        assert_eq!(LocalFiles.read_file(&root.join("a.JPEG")).unwrap(), b"x");
    }

    use super::*;

    #[test]
    fn local_listing_follows_links_and_sizes_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.txt"), b"12345").unwrap();
        std::os::unix::fs::symlink(dir.path().join("a.txt"), dir.path().join("b.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("dangling")).unwrap();
        let mut listed = LocalFiles.list(dir.path()).unwrap();
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<(&str, bool, u64)> = listed
            .iter()
            .map(|e| (e.name.as_str(), e.is_dir, e.size))
            .collect();
        assert_eq!(
            names,
            [("a.txt", false, 5), ("b.txt", false, 5), ("sub", true, 0)]
        );
        assert!(listed[0].modified_ns > 0);
        let err = LocalFiles.list(&dir.path().join("none")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let names: Vec<String> = folders(&LocalFiles, dir.path())
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["sub"]);
    }

    #[test]
    fn urls_join_before_their_parameters() {
        assert_eq!(
            join(Path::new("s3://b/data?range_mb=4"), "imagenet-seed0"),
            PathBuf::from("s3://b/data/imagenet-seed0?range_mb=4")
        );
        assert_eq!(
            join(Path::new("s3://b/data/"), "x"),
            PathBuf::from("s3://b/data/x")
        );
        assert_eq!(join(Path::new("data"), "x"), PathBuf::from("data/x"));
    }
}
