//! The record store: a materialized strategy is a directory of TFRecord-framed shards (written
//! under a temporary name, synced, renamed) plus `store.json`, written last, which makes the
//! directory complete. An incomplete directory is never read: it is cleared and redone.

pub mod backend;
pub mod codec;
pub mod error;
pub mod folder;
pub mod framing;
pub mod housekeeping;
pub mod in_order;
pub mod object;
pub mod open;
pub mod remote;
#[cfg(feature = "s3")]
pub mod s3;
mod shard;
mod stretch;
#[cfg(test)]
mod testing;

pub use backend::{LocalStore, StoreBackend};
pub(crate) use error::io_error;
pub use error::StoreError;
pub use folder::{
    clear, clearable, complete, create, find_complete, free_bytes, lock_path, shard_file_name,
    ShardInfo, StoreKey, StoreManifest, STORE_MANIFEST, STORE_MARKER,
};
pub use in_order::InOrder;
pub use open::{OpenStore, DEFAULT_CACHE_BYTES};
pub use shard::{reopen_file, Reopen, ShardReader, ShardWriter};
