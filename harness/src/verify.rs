//! Functional identity: a strategy's final online output must hash, sample by sample, exactly as
//! fully-online processing of the raw files does (same seed, same epoch).

use std::collections::HashMap;

use indicatif::ProgressBar;

use crate::execute::{run_online, OnlineInput, OnlineJob};
use crate::pipeline::RunError;

#[derive(Debug, PartialEq)]
pub struct Verification {
    pub checked: usize,
    /// Sample ids whose output differs (or is missing on one side), sorted.
    pub mismatched: Vec<u64>,
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.mismatched.is_empty()
    }
}

/// Runs `job` (untimed) and the fully-online reference on the raw files, both hashing every
/// output, and compares them.
pub fn verify(job: &OnlineJob) -> Result<Verification, RunError> {
    let hidden = ProgressBar::hidden();
    let strategy = run_online(&OnlineJob { hash: true, ..*job }, &hidden)?;
    let reference = run_online(
        &OnlineJob {
            hash: true,
            split: 0,
            input: OnlineInput::Raw,
            ..*job
        },
        &hidden,
    )?;
    let expected: HashMap<u64, u64> = reference.hashes.into_iter().collect();
    let got: HashMap<u64, u64> = strategy.hashes.into_iter().collect();
    let mut mismatched: Vec<u64> = expected
        .iter()
        .filter(|(id, hash)| got.get(id) != Some(hash))
        .map(|(id, _)| *id)
        .chain(got.keys().filter(|id| !expected.contains_key(id)).copied())
        .collect();
    mismatched.sort_unstable();
    Ok(Verification {
        checked: expected.len(),
        mismatched,
    })
}
