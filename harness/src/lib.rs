//! prepbench's harness: the record store, page-cache control, the offline (materialize) and
//! online (execute) phases, metrics, results and the CLI's commands.

pub mod attribution;
pub mod cache;
pub mod calibrate;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod consumer;
pub mod emulate;
pub mod execute;
pub mod materialize;
pub mod metrics;
pub mod model;
pub mod paper;
pub mod pipeline;
pub mod progress;
#[cfg(feature = "mpi")]
pub mod ranks;
pub mod recommend;
pub mod report;
pub mod reproduce;
pub mod results;
pub mod run;
pub mod sampler;
pub mod shard;
pub mod show;
pub mod stats;
pub mod store;
pub mod summary;
pub mod svg;
pub mod sweep;
pub mod system;
pub mod table;
pub mod verify;
pub mod warnings;
