//! prepbench's pipeline model: samples and their encoding, the step trait and registry, the
//! reference steps, and workload definitions (the reference ones are embedded from `defs/`).

pub mod consumer;
pub mod encoding;
pub mod error;
pub mod number;
pub mod op;
pub mod options;
pub mod python;
pub mod registry;
pub mod rng;
pub mod sample;
pub mod spec;
pub mod step;
pub mod steps;
pub mod storage;
pub mod suggest;
pub mod workload;

pub use consumer::ConsumerSpec;
pub use error::{StepError, WorkloadError};
pub use options::{CacheMode, Codec, OnError};
pub use sample::{DType, Field, Sample, Tensor, TensorData};
pub use spec::{
    check_name, path_component, Origin, StepConfig, Strategy, Variant, WorkloadLabel, WorkloadSpec,
    UNPROCESSED,
};
pub use step::{child_id, parent_of, Step, StepContext, CHILD_ID_BITS};
pub use storage::{ReadFiles, StorageProfile};
pub use workload::{StepDef, Workload};

/// The reference workloads shipped in `workloads/defs/`, by name.
pub static BUILTIN: &[(&str, &str)] = &[
    ("cv", include_str!("../defs/cv.yaml")),
    ("cv2-jpg", include_str!("../defs/cv2-jpg.yaml")),
    ("cv2-png", include_str!("../defs/cv2-png.yaml")),
    (
        "cv-greyscale-before",
        include_str!("../defs/cv-greyscale-before.yaml"),
    ),
    (
        "cv-greyscale-after",
        include_str!("../defs/cv-greyscale-after.yaml"),
    ),
    ("detection", include_str!("../defs/detection.yaml")),
    ("mp3", include_str!("../defs/mp3.yaml")),
    ("flac", include_str!("../defs/flac.yaml")),
    ("nlp", include_str!("../defs/nlp.yaml")),
    ("nilm", include_str!("../defs/nilm.yaml")),
    (
        "synthetic-reading",
        include_str!("../defs/synthetic-reading.yaml"),
    ),
    (
        "synthetic-processing",
        include_str!("../defs/synthetic-processing.yaml"),
    ),
];

/// Loads and builds a reference workload by name, or a workload file by path.
pub fn load(name_or_path: &str) -> Result<Workload, WorkloadError> {
    Workload::build(load_spec(name_or_path)?)
}

/// Reads the spec of a reference workload by name, or of a workload file by path.
pub fn load_spec(name_or_path: &str) -> Result<WorkloadSpec, WorkloadError> {
    match BUILTIN.iter().find(|(name, _)| *name == name_or_path) {
        Some((name, yaml)) => {
            WorkloadSpec::from_yaml(yaml, Origin::file(&format!("builtin:{name}"), None))
        }
        None => {
            let path = std::path::Path::new(name_or_path);
            if !path.exists() && !name_or_path.contains(['/', '.']) {
                let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                return Err(WorkloadError::Invalid {
                    file: name_or_path.to_string(),
                    line: None,
                    message: format!(
                        "no reference workload or file of that name{}; reference workloads: {}",
                        suggest::did_you_mean(name_or_path, names.iter().copied()),
                        names.join(", ")
                    ),
                });
            }
            WorkloadSpec::from_path(path)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_reference_workload_loads() {
        for (name, _) in super::BUILTIN {
            let w = super::load(name).unwrap();
            assert_eq!(&w.spec.name, name);
            assert!(w.spec.strategies().len() >= 2);
        }
        assert!(super::load("no-such-workload").is_err());
    }
}
