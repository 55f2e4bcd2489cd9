//! The application cache (`--cache app`): deserialized samples kept in process by the first
//! epoch's online workers and served to later epochs from memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use workloads::Sample;

/// An in-process cache of deserialized samples (the online steps' inputs), filled by one
/// epoch's workers and served to later epochs, up to a byte limit. Once the limit is passed
/// the cache is dropped and marked as not fitting.
#[derive(Debug)]
pub struct AppCache {
    pub limit_bytes: u64,
    used: AtomicU64,
    overflow: AtomicBool,
    pub(super) parts: Mutex<Vec<Arc<Vec<Sample>>>>,
}

impl AppCache {
    pub fn new(limit_bytes: u64) -> AppCache {
        AppCache {
            limit_bytes,
            used: Default::default(),
            overflow: AtomicBool::new(false),
            parts: Default::default(),
        }
    }

    /// Counts `bytes` kept by a loader process in its own memory (tf.data's `.cache()`).
    pub fn kept_elsewhere(&self, bytes: u64) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Marks the cache as not fitting: the filling epoch could not keep every sample.
    pub fn overflowed(&self) {
        self.overflow.store(true, Ordering::Relaxed);
    }

    /// Parts the filling epoch's workers stored.
    pub(super) fn part_count(&self) -> usize {
        self.parts.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether everything the filling epoch read was kept.
    pub fn fits(&self) -> bool {
        !self.overflow.load(Ordering::Relaxed)
    }

    /// Bytes the samples took (as far as counted before an overflow).
    pub fn bytes(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Keeps `sample` in a worker's `local` part unless the limit is passed.
    pub(super) fn keep(&self, sample: &Sample, local: &mut Vec<Sample>) {
        if !self.fits() {
            return;
        }
        let size = sample.size_bytes() as u64;
        if self.used.fetch_add(size, Ordering::Relaxed) + size > self.limit_bytes {
            self.overflow.store(true, Ordering::Relaxed);
            local.clear();
            local.shrink_to_fit();
            return;
        }
        local.push(sample.clone());
    }

    pub(super) fn store_part(&self, local: Vec<Sample>) {
        if self.fits() && !local.is_empty() {
            self.parts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::new(local));
        }
    }
}
