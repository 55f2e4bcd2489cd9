//! What to run and in which order: `prepbench run` ([`run`]), a workload's sweep matrix
//! ([`sweep`]), its partition across hosts ([`partition`]) and the merge of the shards ([`merge`]),
//! concurrent reading by MPI ranks ([`ranks`], feature `mpi`), and every reference workload at
//! a named scale ([`reproduce`]), its undecided checks settled by more trials ([`settle`]).

pub mod calibrate;
pub mod executor;
pub mod matrix;
pub mod merge;
pub mod options;
pub mod partition;
#[cfg(feature = "mpi")]
pub mod ranks;
pub mod reproduce;
pub mod run;
pub mod settings;
pub mod settle;
pub mod sizing;
pub mod sweep;
pub mod trials;

pub use options::SweepOptions;
pub use settings::{load_workload, Places, Settings};
