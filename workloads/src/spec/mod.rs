//! A workload as plain data: what a file says (dataset, steps with their parameters in
//! canonical form, sweep defaults, storage profiles, a dataset variant), checked when it is
//! read, with an identity hashed from its canonical form. A spec can be printed, stored in a
//! manifest and handed to another process; [`crate::workload::Workload::build`] makes the
//! runnable pipeline from it.

mod dataset;
mod model;
mod names;
mod sweep;
mod validate;
mod variant;
mod yaml;

#[cfg(test)]
pub(crate) mod tests;

pub use dataset::{DatasetSpec, DEFAULT_SAMPLES};
pub use model::{Origin, StepConfig, Strategy, WorkloadSpec, UNPROCESSED};
pub use names::{check_name, path_component, MAX_NAME_CHARS};
pub use sweep::SweepDefaults;
pub use variant::{Variant, WorkloadLabel};
pub use yaml::{check_yaml_shape, MAX_YAML_BYTES, MAX_YAML_NESTING};
