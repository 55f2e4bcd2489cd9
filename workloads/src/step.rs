//! The step abstraction: a pure function sample -> sample with typed parameters, the context it
//! runs in (seed, epoch), and the error it returns.

use std::fmt;

use crate::error::StepError;
use crate::rng::SeededRng;
use crate::sample::Sample;
use crate::storage::ReadFiles;

/// What a step may depend on besides its input: the run's seed, the current epoch, and how to
/// read files. Random steps draw from [`StepContext::rng`], so their output is a pure function of
/// (seed, sample id, epoch, step index) and identical whichever strategy ran them.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepContext<'a> {
    pub seed: u64,
    pub epoch: u64,
    /// Position of the step in its workload; keeps two random steps' streams independent.
    pub step_index: usize,
    /// Reads files for steps that read them (an emulated storage profile); `None`: the local
    /// file system directly.
    pub files: Option<&'a dyn ReadFiles>,
}

impl StepContext<'static> {
    /// Seed 0, epoch 0, the first step, files from the local file system: a context for a
    /// one-off call and for tests.
    pub const FIRST: StepContext<'static> = StepContext {
        seed: 0,
        epoch: 0,
        step_index: 0,
        files: None,
    };
}

impl StepContext<'_> {
    pub fn rng(&self, sample_id: u64) -> SeededRng {
        SeededRng::from_parts(&[self.seed, sample_id, self.epoch, self.step_index as u64])
    }

    /// Reads `length` bytes at `offset` of a file, through [`StepContext::files`] when set.
    pub fn read_range(
        &self,
        path: &std::path::Path,
        offset: u64,
        length: u64,
    ) -> std::io::Result<Vec<u8>> {
        match self.files {
            Some(files) => files.read_range(path, offset, length),
            None => crate::storage::read_regular_range(path, offset, length),
        }
    }

    /// Reads a whole file, through [`StepContext::files`] when set.
    pub fn read_file(&self, path: &std::path::Path) -> std::io::Result<Vec<u8>> {
        match self.files {
            Some(files) => files.read_file(path),
            None => std::fs::read(path),
        }
    }
}

/// A preprocessing step. Implementations are immutable after construction and shared by all
/// worker threads.
pub trait Step: Send + Sync + fmt::Debug {
    fn apply(&self, sample: Sample, ctx: &StepContext) -> Result<Sample, StepError>;

    /// One-time set-up the harness runs before anything is timed (building a tokenizer,
    /// generating an embedding table), so it is not charged to the first sample.
    fn prepare(&self) -> Result<(), StepError> {
        Ok(())
    }

    /// A Python step's callable: the harness runs consecutive Python steps of a phase as one
    /// chain in one worker process ([`crate::python::Chain`]).
    fn python_link(&self) -> Option<&crate::python::Link> {
        None
    }

    /// Checks what `validate` can know without running a sample (a Python step imports its
    /// module and finds its callable).
    fn check(&self) -> Result<(), StepError> {
        Ok(())
    }

    /// Steps registered with `fan_out` emit any number of samples per input into `out`; the
    /// harness numbers them ([`child_id`]). Every other step emits exactly `apply`'s result.
    fn apply_many(
        &self,
        sample: Sample,
        ctx: &StepContext,
        out: &mut Vec<Sample>,
    ) -> Result<(), StepError> {
        out.push(self.apply(sample, ctx)?);
        Ok(())
    }
}

/// Bits of a sample id that number the outputs of a fan-out step: output j of input sample p
/// has id `p << CHILD_ID_BITS | j`, so ids stay unique, stable and traceable to their file.
pub const CHILD_ID_BITS: u32 = 24;

/// The id of output `index` of the fan-out step applied to sample `parent`.
pub fn child_id(parent: u64, index: usize) -> Result<u64, StepError> {
    if index as u64 >= 1 << CHILD_ID_BITS || parent >= 1 << (64 - CHILD_ID_BITS) {
        return Err(StepError::new(format!(
            "sample {parent} fans out to more than {} samples",
            1u64 << CHILD_ID_BITS
        )));
    }
    Ok(parent << CHILD_ID_BITS | index as u64)
}

/// The input sample (source item) a fan-out output came from, and its index among the outputs.
pub fn parent_of(id: u64) -> (u64, u64) {
    (id >> CHILD_ID_BITS, id & ((1 << CHILD_ID_BITS) - 1))
}
