//! Stores in object storage: the operations the store needs from it, whatever the service.
//! A remote store is made in a local staging directory like any other, then uploaded (the
//! manifest last, so its presence still means complete); reading streams each shard with
//! ranged GETs. The S3 implementation is `crate::s3` (feature `s3`).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::{StoreError, StoreKey, StoreManifest, STORE_MANIFEST};

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
    fn open(&self, key: &str, size: u64) -> std::io::Result<Box<dyn Read + Send>>;
}

/// A materialized store's shards in a remote store.
#[derive(Clone, Debug)]
pub struct RemoteShards {
    pub store: Arc<dyn RemoteStore>,
    /// The store's key prefix, e.g. `cv/resized/none-16sh-500n-0123456789`.
    pub prefix: String,
}

impl RemoteShards {
    pub fn key(&self, file: &str) -> String {
        format!("{}/{file}", self.prefix)
    }

    /// `s3://bucket/prefix/<store>/<file>`, for messages.
    pub fn url(&self, file: &str) -> String {
        format!("{}/{}", self.store.url(), self.key(file))
    }
}

/// The key prefix of `key`'s store: its directory under an empty root, with `/`.
pub fn prefix(key: &StoreKey) -> String {
    key.dir(Path::new(""))
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn remote_error(url: String) -> impl Fn(std::io::Error) -> StoreError {
    move |e| StoreError::Invalid {
        path: url.clone(),
        message: e.to_string(),
    }
}

/// The manifest of a complete remote store matching `key` (every shard present at its size).
pub fn find_complete(
    shards: &RemoteShards,
    key: &StoreKey,
) -> Result<Option<StoreManifest>, StoreError> {
    let url = shards.url(STORE_MANIFEST);
    let Some(bytes) = shards
        .store
        .fetch(&shards.key(STORE_MANIFEST))
        .map_err(remote_error(url.clone()))?
    else {
        return Ok(None);
    };
    let manifest: StoreManifest =
        serde_json::from_slice(&bytes).map_err(|e| StoreError::Invalid {
            path: url,
            message: format!("unreadable store manifest: {e}"),
        })?;
    if manifest.codec.parse::<workloads::options::Codec>().is_err() || !key.matches(&manifest) {
        return Ok(None);
    }
    for shard in &manifest.shards {
        let size = shards
            .store
            .size(&shards.key(&shard.file))
            .map_err(remote_error(shards.url(&shard.file)))?;
        if size != Some(shard.bytes) {
            return Ok(None);
        }
    }
    Ok(Some(manifest))
}

/// Whether a store directory names object storage (`s3://...`).
pub fn is_remote(dir: &Path) -> bool {
    dir.to_str().is_some_and(|s| s.starts_with("s3://"))
}

/// The remote store a `--store-dir` URL names.
pub fn open(url: &Path) -> anyhow::Result<Arc<dyn RemoteStore>> {
    let url = url.to_str().unwrap_or_default();
    #[cfg(feature = "s3")]
    {
        Ok(Arc::new(crate::s3::S3Store::open(url)?))
    }
    #[cfg(not(feature = "s3"))]
    {
        anyhow::bail!(
            "store directory `{url}` is in object storage, and this prepbench was built without \
             it: `cargo build --release --features s3` (docs/cluster.md)"
        )
    }
}
