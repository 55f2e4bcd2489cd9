//! Stores in S3-compatible object storage (feature `s3`, through the `object_store` crate):
//! `--store-dir s3://bucket/prefix[?range_mb=8&concurrency=4]`.
//!
//! Endpoint, region and credentials come from the standard AWS variables
//! (`AWS_ENDPOINT_URL` or `AWS_ENDPOINT`, `AWS_REGION` or `AWS_DEFAULT_REGION`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); an `http://` endpoint
//! is allowed as given. Shards are read with ranged GETs of `range_mb` MB, `concurrency` of them
//! in flight per shard reader, in order. Uploads of files over 8 MB are multipart.

use std::collections::VecDeque;
use std::io::Read;
use std::path::Path as FsPath;
use std::sync::Arc;

use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use crate::store::object::RemoteStore;

const PART: usize = 8 << 20;

/// An S3 bucket and prefix, with a runtime for the client's requests.
pub struct S3Store {
    url: String,
    store: Arc<dyn ObjectStore>,
    prefix: String,
    runtime: tokio::runtime::Runtime,
    range_bytes: u64,
    concurrency: usize,
}

impl std::fmt::Debug for S3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S3Store({})", self.url)
    }
}

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl S3Store {
    /// Parses `s3://bucket/prefix?range_mb=R&concurrency=C` and builds the client.
    pub fn open(url: &str) -> anyhow::Result<S3Store> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| anyhow::anyhow!("`{url}` is not an s3:// URL"))?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        anyhow::ensure!(!bucket.is_empty(), "`{url}` names no bucket");
        let (mut range_mb, mut concurrency) = (8.0f64, 4usize);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("range_mb", v)) => {
                    range_mb = v.parse().ok().filter(|v: &f64| *v > 0.0).ok_or_else(|| {
                        anyhow::anyhow!("`{url}`: range_mb={v} is not a positive number")
                    })?
                }
                Some(("concurrency", v)) => {
                    concurrency = v.parse().ok().filter(|v: &usize| *v > 0).ok_or_else(|| {
                        anyhow::anyhow!("`{url}`: concurrency={v} is not a positive integer")
                    })?
                }
                _ => anyhow::bail!("`{url}`: unknown parameter `{pair}` (range_mb, concurrency)"),
            }
        }
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        let endpoint = std::env::var("AWS_ENDPOINT_URL")
            .ok()
            .or_else(|| std::env::var("AWS_ENDPOINT").ok());
        if let Some(e) = &endpoint {
            builder = builder
                .with_endpoint(e)
                .with_allow_http(e.starts_with("http://"));
        }
        if let Ok(region) =
            std::env::var("AWS_REGION").or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
        {
            builder = builder.with_region(region);
        }
        let store = builder
            .build()
            .map_err(|e| anyhow::anyhow!("`{url}`: {e}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        Ok(S3Store {
            url: format!("s3://{}", location.trim_end_matches('/')),
            store: Arc::new(store),
            prefix: prefix.trim_matches('/').to_string(),
            runtime,
            range_bytes: (range_mb * 1e6) as u64,
            concurrency,
        })
    }

    fn path(&self, key: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(key)
        } else {
            Path::from(format!("{}/{key}", self.prefix))
        }
    }
}

impl RemoteStore for S3Store {
    fn url(&self) -> String {
        self.url.clone()
    }

    fn fetch(&self, key: &str) -> std::io::Result<Option<Vec<u8>>> {
        let path = self.path(key);
        self.runtime.block_on(async {
            match self.store.get(&path).await {
                Ok(r) => Ok(Some(r.bytes().await.map_err(io)?.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(io(e)),
            }
        })
    }

    fn size(&self, key: &str) -> std::io::Result<Option<u64>> {
        let path = self.path(key);
        self.runtime.block_on(async {
            match self.store.head(&path).await {
                Ok(m) => Ok(Some(m.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(io(e)),
            }
        })
    }

    fn put_file(&self, local: &FsPath, key: &str) -> std::io::Result<()> {
        let path = self.path(key);
        let len = std::fs::metadata(local)?.len() as usize;
        if len <= PART {
            return self.put(key, std::fs::read(local)?);
        }
        self.runtime.block_on(async {
            let upload = self.store.put_multipart(&path).await.map_err(io)?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, PART);
            let mut f = std::fs::File::open(local)?;
            let mut buf = vec![0u8; PART];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                writer.wait_for_capacity(4).await.map_err(io)?;
                writer.write(&buf[..n]);
            }
            writer.finish().await.map_err(io)?;
            Ok(())
        })
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        let path = self.path(key);
        self.runtime.block_on(async {
            self.store
                .put(&path, PutPayload::from(bytes))
                .await
                .map_err(io)
                .map(|_| ())
        })
    }

    fn remove(&self, key_prefix: &str) -> std::io::Result<()> {
        let prefix = self.path(key_prefix);
        self.runtime.block_on(async {
            let mut listed = self.store.list(Some(&prefix));
            let mut paths = Vec::new();
            while let Some(meta) = listed.next().await {
                paths.push(meta.map_err(io)?.location);
            }
            for p in paths {
                self.store.delete(&p).await.map_err(io)?;
            }
            Ok(())
        })
    }

    fn list(&self, dir: &str) -> std::io::Result<Vec<datasets::Entry>> {
        let prefix = self.path(dir);
        let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
        let listed = self
            .runtime
            .block_on(self.store.list_with_delimiter(prefix.as_ref()))
            .map_err(io)?;
        let name = |p: &Path| p.filename().unwrap_or_default().to_string();
        let folders = listed
            .common_prefixes
            .iter()
            .map(|p| datasets::Entry::named(name(p), true, 0, 0));
        let objects = listed.objects.iter().map(|m| {
            let modified_ns = m
                .last_modified
                .timestamp_nanos_opt()
                .map_or(0, |ns| ns.max(0) as u128);
            datasets::Entry::named(name(&m.location), false, m.size, modified_ns)
        });
        Ok(folders.chain(objects).collect())
    }

    fn open_at(&self, key: &str, size: u64, offset: u64) -> std::io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(RangedReader {
            handle: self.runtime.handle().clone(),
            store: self.store.clone(),
            path: self.path(key),
            size,
            range: self.range_bytes.max(1),
            concurrency: self.concurrency,
            requested: offset.min(size),
            pending: VecDeque::new(),
            current: bytes::Bytes::new(),
            pos: 0,
        }))
    }
}

/// Reads an object in order with ranged GETs, `concurrency` ranges in flight.
struct RangedReader {
    handle: tokio::runtime::Handle,
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
    range: u64,
    concurrency: usize,
    /// Where the next range to request starts.
    requested: u64,
    pending: VecDeque<tokio::task::JoinHandle<object_store::Result<bytes::Bytes>>>,
    current: bytes::Bytes,
    pos: usize,
}

impl Read for RangedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.current.len() {
            while self.pending.len() < self.concurrency && self.requested < self.size {
                let end = (self.requested + self.range).min(self.size);
                let (store, path) = (self.store.clone(), self.path.clone());
                let range = self.requested..end;
                self.pending.push_back(
                    self.handle
                        .spawn(async move { store.get_range(&path, range).await }),
                );
                self.requested = end;
            }
            let Some(next) = self.pending.pop_front() else {
                return Ok(0);
            };
            self.current = self
                .handle
                .block_on(next)
                .map_err(io)?
                .map_err(|e| io(format!("{}: {e}", self.path)))?;
            self.pos = 0;
            if self.current.is_empty() {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
