//! What to run and in which order: `prepbench run` ([`run`]), a workload's sweep matrix
//! ([`sweep`]), its partition across hosts ([`partition`]) and the merge of the shards ([`merge`]),
//! concurrent reading by MPI ranks ([`ranks`], feature `mpi`), and every reference workload at
//! a named scale ([`reproduce`]).

pub mod executor;
pub mod matrix;
pub mod merge;
pub mod partition;
#[cfg(feature = "mpi")]
pub mod ranks;
pub mod reproduce;
pub mod run;
pub mod settings;
pub mod sizing;
pub mod sweep;
pub mod trials;

pub use settings::{Places, Settings};

/// Loads a reference workload or a workload file, reading the dataset at `dataset` when given
/// (`--dataset`, in place of the file's `dataset.path`), and checks what it asks of its dataset
/// (a known kind, options the kind has, fields its steps read): what `validate` checks, so that
/// `run` and `sweep` refuse the same files before doing anything.
pub fn load_workload(
    name_or_path: &str,
    dataset: Option<&std::path::Path>,
) -> anyhow::Result<workloads::Workload> {
    let mut spec = workloads::load_spec(name_or_path)?;
    if let Some(path) = dataset {
        let path = if datasets::files::is_remote(path) {
            path.to_path_buf()
        } else {
            std::path::absolute(path)?
        };
        spec = spec.with_dataset(path);
    }
    datasets::check_workload(&spec)?;
    Ok(workloads::Workload::build(spec)?)
}
