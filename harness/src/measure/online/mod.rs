//! The online phase: every epoch's reading and online steps, behind one interface ([`Engine`],
//! given an [`OnlineJob`], giving back an [`OnlineResult`]). `native` is prepbench's own engine
//! (worker threads reading shards or raw files, the steps in process); another engine (a
//! loader a team trains with) is one file or folder here implementing [`Engine`] plus one line
//! in [`ENGINES`].

pub mod engine;
pub mod native;
mod process;
pub mod tfdata;
pub mod torch;

pub use engine::{Engine, KeptProcess, OnlineInput, OnlineJob, OnlineResult, StageTimes};
pub use process::{retire_idle, take_stacks};

use indicatif::ProgressBar;

use crate::measure::errors::RunError;

/// Every online engine, by name; the first is the default.
pub static ENGINES: &[&dyn Engine] = &[&native::Native, &torch::Torch, &tfdata::TfData];

/// The engine named `name` (`native`).
pub fn engine(name: &str) -> Option<&'static dyn Engine> {
    ENGINES.iter().copied().find(|e| e.name() == name)
}

/// prepbench's own engine, the default.
pub fn default_engine() -> &'static dyn Engine {
    ENGINES[0]
}

/// Whether `name` is prepbench's own engine (runs under it are the plain ones).
pub fn is_default(name: &str) -> bool {
    name == default_engine().name()
}

/// How a verify failure names what failed: the strategy, its codec and a loader other than
/// prepbench's own (`resized (gzip, torch loader)`), the same from `run` and `sweep`.
pub fn verify_label(strategy: &str, codec: workloads::Codec, loader: &str) -> String {
    if is_default(loader) {
        format!("{strategy} ({codec})")
    } else {
        format!("{strategy} ({codec}, {loader} loader)")
    }
}

/// Runs one epoch of `job` on its engine.
pub fn run(job: &OnlineJob, progress: &ProgressBar) -> Result<OnlineResult, RunError> {
    // Each of the job's threads holds a sample: each gets its share of the memory budget.
    workloads::steps::budget::set_workers(job.threads);
    job.engine.run(job, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_are_found_by_their_unique_names() {
        let names: Vec<&str> = ENGINES.iter().map(|e| e.name()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(default_engine().name(), "native");
        // The name rows record for it, where results cannot ask the engines.
        assert!(is_default(crate::results::rows::NATIVE_LOADER));
        assert!(engine("native").is_some() && engine("no-such-loader").is_none());
    }
}
