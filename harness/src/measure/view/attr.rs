//! What a view says of a file: its folder's metadata, read-only.

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo};

/// What the view says of a file whose metadata is `meta`, as inode `ino`.
pub(super) fn file_attr(ino: u64, meta: &std::fs::Metadata) -> FileAttr {
    let kind = kind_of(meta.file_type());
    let at = |s: i64, ns: i64| {
        let s = u64::try_from(s).unwrap_or(0);
        UNIX_EPOCH + Duration::new(s, u32::try_from(ns).unwrap_or(0))
    };
    FileAttr {
        ino: INodeNo(ino),
        size: meta.size(),
        blocks: meta.blocks(),
        atime: at(meta.atime(), meta.atime_nsec()),
        mtime: at(meta.mtime(), meta.mtime_nsec()),
        ctime: at(meta.ctime(), meta.ctime_nsec()),
        crtime: at(meta.ctime(), meta.ctime_nsec()),
        kind,
        // Read-only: no write bit, whatever the folder's.
        perm: (meta.mode() & 0o7555) as u16,
        nlink: u32::try_from(meta.nlink()).unwrap_or(u32::MAX),
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: u32::try_from(meta.rdev()).unwrap_or(0),
        blksize: u32::try_from(meta.blksize()).unwrap_or(4096),
        flags: 0,
    }
}

pub(super) fn kind_of(t: std::fs::FileType) -> FileType {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        FileType::Directory
    } else if t.is_symlink() {
        FileType::Symlink
    } else if t.is_fifo() {
        FileType::NamedPipe
    } else if t.is_char_device() {
        FileType::CharDevice
    } else if t.is_block_device() {
        FileType::BlockDevice
    } else if t.is_socket() {
        FileType::Socket
    } else {
        FileType::RegularFile
    }
}
