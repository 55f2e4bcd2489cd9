//! Stores in object storage: the operations the store needs from it, whatever the service.
//! A remote store is made in a local staging directory like any other, then uploaded (the
//! manifest last, so its presence still means complete); reading streams each shard with
//! ranged GETs. The S3 implementation is `crate::store::s3` (feature `s3`).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::store::error::StoreError;
use crate::store::folder::{StoreKey, StoreManifest, STORE_MANIFEST};
pub use crate::store::object::RemoteStore;

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

impl crate::store::backend::StoreBackend for RemoteShards {
    fn location(&self) -> String {
        self.url("")
    }

    fn find_complete(&self, key: &StoreKey) -> Result<Option<StoreManifest>, StoreError> {
        find_complete(self, key)
    }

    /// Uploads the shards, then the manifest (with the upload counted as offline writing
    /// time), so its presence still means complete; then removes the local copy.
    fn publish(&self, made: &Path, manifest: &mut StoreManifest) -> Result<(), StoreError> {
        let start = std::time::Instant::now();
        self.store
            .remove(&self.prefix)
            .map_err(remote_error(self.url("")))?;
        for shard in &manifest.shards {
            self.store
                .put_file(&made.join(&shard.file), &self.key(&shard.file))
                .map_err(remote_error(self.url(&shard.file)))?;
        }
        let seconds = start.elapsed().as_secs_f64();
        manifest.offline_s += seconds;
        manifest.offline_writing_s += seconds;
        let text = serde_json::to_vec_pretty(manifest).expect("a store manifest serializes");
        self.store
            .put(&self.key(STORE_MANIFEST), text)
            .map_err(remote_error(self.url(STORE_MANIFEST)))?;
        // The staging copy is not needed any more.
        let _ = std::fs::remove_dir_all(made);
        Ok(())
    }

    fn local_path(&self, _file: &str) -> Option<std::path::PathBuf> {
        None
    }

    fn is_local(&self) -> bool {
        false
    }

    fn open(
        &self,
        file: &str,
        bytes: u64,
    ) -> Result<(std::path::PathBuf, Box<dyn Read + Send>), StoreError> {
        let label = self.url(file);
        let reader = self
            .store
            .open(&self.key(file), bytes)
            .map_err(remote_error(label.clone()))?;
        Ok((label.into(), reader))
    }

    /// Ranged reads of the object from the offset on.
    fn reopen(&self, file: &str, bytes: u64) -> Option<crate::store::shard::Reopen> {
        let (store, key) = (self.store.clone(), self.key(file));
        Some(Box::new(move |at| store.open_at(&key, bytes, at)))
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
    let manifest = StoreManifest::parse(&bytes, &url)?;
    if !key.matches(&manifest) {
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

/// A dataset in object storage, read through [`datasets::Files`]: its paths are the store's
/// URL followed by the object's key (`s3://bucket/prefix/train/x.JPEG`), so that samples and
/// messages name the object. Whole files are read with the store's ranged reads.
#[derive(Debug)]
pub struct RemoteFiles {
    store: Arc<dyn RemoteStore>,
    root: String,
    /// Object sizes seen in listings, by key: a read of a listed object needs no HEAD request.
    sizes: RwLock<HashMap<String, u64>>,
}

impl RemoteFiles {
    pub fn new(store: Arc<dyn RemoteStore>) -> RemoteFiles {
        RemoteFiles {
            root: store.url(),
            store,
            sizes: RwLock::default(),
        }
    }

    /// Where the dataset's paths start: the store's URL, without parameters.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The key of `path` under the store's prefix.
    fn key(&self, path: &Path) -> std::io::Result<String> {
        let text = path.to_str().unwrap_or_default();
        let rest = text.strip_prefix(self.root.as_str()).and_then(|r| {
            if r.is_empty() {
                Some(r)
            } else {
                r.strip_prefix('/')
            }
        });
        rest.map(|r| r.trim_end_matches('/').to_string())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not under {}", path.display(), self.root),
                )
            })
    }
}

impl workloads::ReadFiles for RemoteFiles {
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let key = self.key(path)?;
        let known = self.sizes.read().ok().and_then(|s| s.get(&key).copied());
        let not_found = || {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no object {}", path.display()),
            )
        };
        let size = match known {
            Some(size) => size,
            None => self.store.size(&key)?.ok_or_else(not_found)?,
        };
        let mut bytes = Vec::with_capacity(size as usize);
        self.store.open(&key, size)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

impl datasets::Files for RemoteFiles {
    fn list(&self, dir: &Path) -> std::io::Result<Vec<datasets::Entry>> {
        let key = self.key(dir)?;
        let entries = self.store.list(&key)?;
        if entries.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such prefix: no objects under it",
            ));
        }
        if let Ok(mut sizes) = self.sizes.write() {
            for e in entries.iter().filter(|e| !e.is_dir) {
                let child = if key.is_empty() {
                    e.name.clone()
                } else {
                    format!("{key}/{}", e.name)
                };
                sizes.insert(child, e.size);
            }
        }
        Ok(entries)
    }

    fn is_local(&self) -> bool {
        false
    }

    fn as_read(&self) -> &dyn workloads::ReadFiles {
        self
    }
}

/// The object store a URL (`--store-dir`, a dataset path) names.
pub fn open(url: &Path) -> anyhow::Result<Arc<dyn RemoteStore>> {
    let url = url.to_str().unwrap_or_default();
    #[cfg(feature = "s3")]
    {
        Ok(Arc::new(crate::store::s3::S3Store::open(url)?))
    }
    #[cfg(not(feature = "s3"))]
    {
        anyhow::bail!(
            "`{url}` is in object storage, and this prepbench was built without it: `cargo build \
             --release --features s3` (docs/cluster.md)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Files;
    use std::path::PathBuf;

    /// An object store over a local folder, listing as S3 does (keys below a prefix, one level
    /// of common prefixes), so the dataset readers can be run through [`RemoteFiles`] here.
    #[derive(Debug)]
    struct FolderStore {
        root: PathBuf,
    }

    impl RemoteStore for FolderStore {
        fn url(&self) -> String {
            "s3://bucket/sets".into()
        }
        fn fetch(&self, key: &str) -> std::io::Result<Option<Vec<u8>>> {
            match std::fs::read(self.root.join(key)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }
        fn size(&self, key: &str) -> std::io::Result<Option<u64>> {
            Ok(std::fs::metadata(self.root.join(key)).ok().map(|m| m.len()))
        }
        fn put_file(&self, _: &Path, _: &str) -> std::io::Result<()> {
            unimplemented!("read-only")
        }
        fn put(&self, _: &str, _: Vec<u8>) -> std::io::Result<()> {
            unimplemented!("read-only")
        }
        fn remove(&self, _: &str) -> std::io::Result<()> {
            unimplemented!("read-only")
        }
        fn open_at(
            &self,
            key: &str,
            size: u64,
            offset: u64,
        ) -> std::io::Result<Box<dyn Read + Send>> {
            use std::io::{Seek, SeekFrom};
            let mut file = std::fs::File::open(self.root.join(key))?;
            file.seek(SeekFrom::Start(offset))?;
            Ok(Box::new(file.take(size.saturating_sub(offset))))
        }
        fn list(&self, dir: &str) -> std::io::Result<Vec<datasets::Entry>> {
            match datasets::LocalFiles.list(&self.root.join(dir)) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                other => other,
            }
        }
    }

    #[test]
    fn layouts_read_through_an_object_store_match_the_local_reading() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(RemoteFiles::new(Arc::new(FolderStore {
            root: dir.path().to_path_buf(),
        }))) as Arc<dyn Files>;
        assert!(!files.is_local());
        for (kind, samples) in [("imagenet", 5), ("coco", 3), ("synthetic", 2)] {
            let local_root = dir.path().join(kind);
            let request = datasets::GenerateRequest {
                root: local_root.clone(),
                samples,
                seed: 3,
                threads: 2,
                options: Default::default(),
            };
            let local = datasets::prepare(kind, &request, &|_| ()).unwrap();
            let url = PathBuf::from(format!("s3://bucket/sets/{kind}"));
            let remote_request = datasets::GenerateRequest {
                root: url.clone(),
                ..request
            };
            let remote = datasets::prepare_in(&files, kind, &remote_request, &|_| ()).unwrap();
            assert_eq!(remote.len(), samples, "{kind}");
            assert_eq!(remote.fingerprint(), local.fingerprint(), "{kind}");
            for (r, l) in remote.items.iter().zip(&local.items) {
                let rel = l.path.strip_prefix(&local_root).unwrap();
                assert_eq!(r.path, url.join(rel), "{kind}");
                assert_eq!((r.size_bytes, &r.fields), (l.size_bytes, &l.fields));
                let bytes = files.as_read().read_file(&r.path).unwrap();
                assert_eq!(
                    bytes,
                    std::fs::read(&l.path).unwrap(),
                    "{}",
                    r.path.display()
                );
            }
            // More samples than the prefix holds: no generation there, an error saying so.
            let more = datasets::GenerateRequest {
                samples: samples + 1,
                ..remote_request
            };
            let err = datasets::prepare_in(&files, kind, &more, &|_| ()).unwrap_err();
            assert!(err.to_string().contains("prepbench generate"), "{err}");
        }
        let err = datasets::prepare_in(
            &files,
            "imagenet",
            &datasets::GenerateRequest {
                root: PathBuf::from("s3://bucket/sets/none"),
                samples: 1,
                ..Default::default()
            },
            &|_| (),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no such prefix"), "{err}");
        let outside = files.as_read().read_file(Path::new("s3://other/x.jpg"));
        assert_eq!(
            outside.unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn a_shard_in_object_storage_is_read_on_from_the_restart_after_damage() {
        use crate::store::backend::StoreBackend;
        use crate::store::shard::ShardReader;
        use crate::store::testing::letters;
        let dir = tempfile::tempdir().unwrap();
        for name in ["gzip", "zstd", "none"] {
            let m = crate::store::testing::make_store(
                &dir.path().join(name),
                name.parse().unwrap(),
                1,
                30,
                letters,
            );
            let info = &m.shards[0];
            let (first, second) = (info.restarts[0], info.restarts[1]);
            // The first bytes of a stretch (a record's header, a frame's or a block's): damage
            // no reader steps past.
            let path = dir.path().join(name).join(&info.file);
            let mut bytes = std::fs::read(&path).unwrap();
            let at = first.file_offset() as usize;
            for b in &mut bytes[at..at + 64] {
                *b ^= 0x5a;
            }
            std::fs::write(&path, &bytes).unwrap();
            let shards = RemoteShards {
                store: Arc::new(FolderStore {
                    root: dir.path().to_path_buf(),
                }),
                prefix: name.into(),
            };
            let read_all = |again: bool| {
                let (label, file) = shards.open(&info.file, info.bytes).unwrap();
                let mut reader = ShardReader::from_read(&label, m.codec, file)
                    .unwrap()
                    .expecting(info);
                if again {
                    reader = reader.reopening(shards.reopen(&info.file, info.bytes).unwrap());
                }
                let (mut read, mut buf) = (Vec::new(), Vec::new());
                loop {
                    let index = reader.record_index();
                    match reader.next_into(&mut buf) {
                        Ok(true) => read.push((index, buf == letters(index))),
                        Ok(false) => break,
                        Err(_) if reader.can_continue() => {}
                        // On at the first restart after the record that failed (a decoder
                        // may fail on the damage while it ends the record before it).
                        Err(_) => match reader.resume().unwrap() {
                            Some(went_on) => {
                                let next = info.restarts.iter().find(|r| r.record() > index);
                                assert_eq!(Some(went_on), next.map(|r| r.record()), "{name}");
                            }
                            None => break,
                        },
                    }
                }
                read
            };
            // With ranged reads from the restart, every record after the damaged stretch is
            // read, and read right; without them, the shard ends at the damage.
            let resumed = read_all(true);
            assert!(resumed.iter().all(|&(_, right)| right), "{name}");
            let indices: Vec<u64> = resumed.iter().map(|&(i, _)| i).collect();
            let after: Vec<u64> = (second.record()..30).collect();
            assert!(indices.ends_with(&after), "{name}: {indices:?}");
            assert!(
                indices
                    .iter()
                    .all(|&i| i < first.record() || i >= second.record()),
                "{name}: {indices:?}"
            );
            let stopped = read_all(false);
            assert!(stopped.iter().all(|&(i, _)| i < first.record()), "{name}");
        }
    }
}
