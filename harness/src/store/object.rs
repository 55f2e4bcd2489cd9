//! Object storage as the store needs it, whatever the service (`s3.rs` with `--features s3`).

use std::io::Read;
use std::path::Path;

/// An object store holding prepbench stores under one prefix.
pub trait RemoteStore: Send + Sync + std::fmt::Debug {
    /// `s3://bucket/prefix`, for messages.
    fn url(&self) -> String;
    /// The object at `key` (relative to the prefix); `None` when there is none.
    fn fetch(&self, key: &str) -> std::io::Result<Option<Vec<u8>>>;
    /// The size of the object at `key`; `None` when there is none.
    fn size(&self, key: &str) -> std::io::Result<Option<u64>>;
    /// Uploads the local file `local` to `key`.
    fn put_file(&self, local: &Path, key: &str) -> std::io::Result<()>;
    /// Writes `bytes` to `key`.
    fn put(&self, key: &str, bytes: Vec<u8>) -> std::io::Result<()>;
    /// Deletes every object under `key_prefix`.
    fn remove(&self, key_prefix: &str) -> std::io::Result<()>;
    /// A reader of the object at `key`, `size` bytes long.
    fn open(&self, key: &str, size: u64) -> std::io::Result<Box<dyn Read + Send>> {
        self.open_at(key, size, 0)
    }
    /// A reader of the object at `key`, `size` bytes long, from byte `offset` on (ranged
    /// reads from there): how a shard reader goes on at a restart after damage.
    fn open_at(&self, key: &str, size: u64, offset: u64) -> std::io::Result<Box<dyn Read + Send>>;
    /// The objects directly under the key folder `dir` (`""` for the prefix itself) and, as
    /// folders, the next level of deeper keys; empty when there are none.
    fn list(&self, dir: &str) -> std::io::Result<Vec<datasets::Entry>>;
}
