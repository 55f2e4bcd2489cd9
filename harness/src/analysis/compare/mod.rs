//! `prepbench compare A B`: two results folders (two machines, two versions, or two settings of
//! one sweep), cell by cell. Cells are paired on every setting (workload, storage profile,
//! consumer, strategy, codec, threads, cache, epoch, shards, samples) but the one compared
//! across; each pair gets the throughput ratio B/A with a 95 % CI on the log scale, a t-test of
//! that log ratio, a multiple-comparison correction over all pairs tested, and a noise
//! threshold, as criterion judges a change.

pub(crate) mod conclusions;
mod output;
mod pairing;

pub use conclusions::Conclusions;
pub use pairing::{
    comparison, Across, Change, ChangeVerdict, CompareOptions, Comparison, Correction, ALPHA,
    DEFAULT_NOISE,
};
