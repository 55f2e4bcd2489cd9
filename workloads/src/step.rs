//! The step abstraction: a pure function sample -> sample with typed parameters, the context it
//! runs in (seed, epoch), and the error it returns.

use std::fmt;

use thiserror::Error;

use crate::rng::SeededRng;
use crate::sample::Sample;

/// A step failed on one sample. The harness adds the sample id, the file and the step name.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{message}")]
pub struct StepError {
    pub message: String,
}

impl StepError {
    pub fn new(message: impl Into<String>) -> StepError {
        StepError {
            message: message.into(),
        }
    }
}

/// What a step may depend on besides its input: the run's seed and the current epoch.
/// Random steps draw from [`StepContext::rng`], so their output is a pure function of
/// (seed, sample id, epoch, step index) and identical whichever strategy ran them.
#[derive(Clone, Copy, Debug)]
pub struct StepContext {
    pub seed: u64,
    pub epoch: u64,
    /// Position of the step in its workload; keeps two random steps' streams independent.
    pub step_index: usize,
}

impl StepContext {
    pub fn rng(&self, sample_id: u64) -> SeededRng {
        SeededRng::from_parts(&[self.seed, sample_id, self.epoch, self.step_index as u64])
    }
}

/// A preprocessing step. Implementations are immutable after construction and shared by all
/// worker threads.
pub trait Step: Send + Sync + fmt::Debug {
    fn apply(&self, sample: Sample, ctx: &StepContext) -> Result<Sample, StepError>;
}
