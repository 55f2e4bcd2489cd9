//! Where a store lives, behind one trait: a folder on this machine ([`LocalStore`]) or a prefix
//! in object storage (`remote::RemoteShards`). A store is always made in a local folder; the
//! backend finds a complete one, publishes one just made, and opens its shards, so the session
//! and the online phase never ask which it is, except where a page cache is concerned
//! ([`StoreBackend::local_path`]).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::store::error::{io_error, StoreError};
use crate::store::folder::{find_complete, StoreKey, StoreManifest};
use crate::store::shard::{reopen_file, Reopen};

pub trait StoreBackend: Send + Sync + fmt::Debug {
    /// The store's location for messages: its folder, or its `s3://` URL.
    fn location(&self) -> String;
    /// The manifest of a complete store here matching `key` (every shard present at its
    /// size); `None` when there is none.
    fn find_complete(&self, key: &StoreKey) -> Result<Option<StoreManifest>, StoreError>;
    /// Puts the store just made (complete) in the local folder `made` here. Time spent moving
    /// it counts as offline writing time in `manifest`.
    fn publish(&self, made: &Path, manifest: &mut StoreManifest) -> Result<(), StoreError>;
    /// A shard file's path when the store is on this machine, behind its page cache (eviction,
    /// residency and storage emulation apply to it); `None` in object storage.
    fn local_path(&self, file: &str) -> Option<PathBuf>;
    /// Whether the store is on this machine, behind its page cache.
    fn is_local(&self) -> bool;
    /// Opens the shard file `file`, `bytes` long, with the name its errors give.
    fn open(&self, file: &str, bytes: u64) -> Result<(PathBuf, Box<dyn Read + Send>), StoreError>;
    /// How to open the shard file `file` (`bytes` long) again at an offset, for a reader that
    /// goes on at a restart after damage it cannot step past ([`ShardReader::resume`]).
    ///
    /// [`ShardReader::resume`]: crate::store::ShardReader::resume
    fn reopen(&self, file: &str, bytes: u64) -> Option<Reopen>;
}

/// A store in a folder on this machine, made in place.
#[derive(Clone, Debug)]
pub struct LocalStore {
    pub dir: PathBuf,
}

impl StoreBackend for LocalStore {
    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn find_complete(&self, key: &StoreKey) -> Result<Option<StoreManifest>, StoreError> {
        find_complete(&self.dir, key)
    }

    fn publish(&self, made: &Path, _manifest: &mut StoreManifest) -> Result<(), StoreError> {
        debug_assert_eq!(made, self.dir, "a local store is made where it stays");
        Ok(())
    }

    fn local_path(&self, file: &str) -> Option<PathBuf> {
        Some(self.dir.join(file))
    }

    fn is_local(&self) -> bool {
        true
    }

    fn open(&self, file: &str, _bytes: u64) -> Result<(PathBuf, Box<dyn Read + Send>), StoreError> {
        let path = self.dir.join(file);
        let opened = std::fs::File::open(&path).map_err(io_error(&path))?;
        Ok((path, Box::new(opened)))
    }

    fn reopen(&self, file: &str, _bytes: u64) -> Option<Reopen> {
        Some(reopen_file(self.dir.join(file)))
    }
}
