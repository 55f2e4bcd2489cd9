//! The chains of Python steps a workload keeps, by the steps they cover.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, RwLock};

use super::chain::Chain;
use super::link::Link;

/// The chains a workload's phases run, by the range of steps they cover.
#[derive(Default)]
pub struct Pools {
    /// Looked up for every sample by every thread: read-locked, written once per chain.
    chains: RwLock<HashMap<(usize, usize), Arc<Chain>>>,
}

impl std::fmt::Debug for Pools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.chains.read().map(|c| c.len()).unwrap_or(0);
        write!(f, "Pools {{ {count} chains }}")
    }
}

impl Pools {
    /// The chain of steps `range`, made from `links` the first time.
    pub fn get(&self, range: Range<usize>, links: impl FnOnce() -> Vec<Link>) -> Arc<Chain> {
        let key = (range.start, range.end);
        if let Some(chain) = self
            .chains
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return chain.clone();
        }
        let mut chains = self.chains.write().unwrap_or_else(|e| e.into_inner());
        chains
            .entry(key)
            .or_insert_with(|| Arc::new(Chain::new(links())))
            .clone()
    }

    /// Ends the idle workers of every chain but `keep`'s, so that the workers of phases run
    /// before do not stay alive beside this one's.
    pub fn retire_others(&self, keep: &[Range<usize>]) {
        let chains = self.chains.read().unwrap_or_else(|e| e.into_inner());
        for ((start, end), chain) in chains.iter() {
            if !keep.iter().any(|r| r.start == *start && r.end == *end) {
                chain.retire();
            }
        }
    }
}
