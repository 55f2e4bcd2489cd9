//! The step registry: every step op by name, with its documented parameters and a builder that
//! deserializes typed parameters straight from the workload YAML (so errors keep their line).
//! Adding a step: one module implementing [`Step`] plus one line in [`REGISTRY`].

use serde::de::DeserializeOwned;

use crate::step::Step;
use crate::steps;

/// One documented parameter of a step, as `prepbench list steps` prints it.
#[derive(Debug)]
pub struct ParamDoc {
    pub name: &'static str,
    pub kind: &'static str,
    /// `None` when the parameter is required.
    pub default: Option<&'static str>,
    pub doc: &'static str,
}

/// Builds a step from its YAML parameters.
pub type BuildFn =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Box<dyn Step>, erased_serde::Error>;

/// What the harness needs to know about a step beyond its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepFacts {
    /// Random steps are always run online; a split after one is refused.
    pub random: bool,
    /// The step emits several samples per input ([`Step::apply_many`]), e.g. windows of a
    /// recording. A workload may have at most one such step.
    pub fan_out: bool,
    /// The step reads files from storage: its time counts as I/O, not computation.
    pub reads_files: bool,
    /// The step makes audio: a two-dimensional field after it is a spectrogram, drawn as one.
    pub audio: bool,
}

impl StepFacts {
    /// A deterministic one-to-one computation: the facts of most steps.
    pub const PURE: StepFacts = StepFacts {
        random: false,
        fan_out: false,
        reads_files: false,
        audio: false,
    };
}

/// A registered step op.
#[derive(Debug)]
pub struct StepSpec {
    pub op: &'static str,
    pub summary: &'static str,
    pub facts: StepFacts,
    pub params: &'static [ParamDoc],
    pub build: BuildFn,
}

/// Every step op prepbench knows, in the order `list steps` shows them.
pub static REGISTRY: &[&StepSpec] = &[
    &steps::read_file::SPEC,
    &steps::decode_jpeg::SPEC,
    &steps::decode_png::SPEC,
    &steps::resize_shorter::SPEC,
    &steps::resize_longer_pad::SPEC,
    &steps::grayscale::SPEC,
    &steps::brightness::SPEC,
    &steps::normalize::SPEC,
    &steps::pixel_center::SPEC,
    &steps::random_crop::SPEC,
    &steps::random_hflip::SPEC,
    &steps::decode_audio::SPEC,
    &steps::resample::SPEC,
    &steps::stft::SPEC,
    &steps::magnitude::SPEC,
    &steps::mel::SPEC,
    &steps::log::SPEC,
    &steps::read_cream_hour::SPEC,
    &steps::window::SPEC,
    &steps::nilm_features::SPEC,
    &steps::extract_text::SPEC,
    &steps::bpe_encode::SPEC,
    &steps::embed::SPEC,
    &steps::pad_truncate::SPEC,
    &steps::decode_npy::SPEC,
    &steps::rms_periods::SPEC,
];

pub fn find_step(op: &str) -> Option<&'static StepSpec> {
    REGISTRY.iter().copied().find(|s| s.op == op)
}

pub fn step_ops() -> Vec<&'static str> {
    REGISTRY.iter().map(|s| s.op).collect()
}

/// The body of every [`StepSpec::build`]: deserialize `P` strictly, then validate and build.
pub fn build_step<P, S>(
    de: &mut dyn erased_serde::Deserializer<'_>,
    new: fn(P) -> Result<S, String>,
) -> Result<Box<dyn Step>, erased_serde::Error>
where
    P: DeserializeOwned,
    S: Step + 'static,
{
    let params: P = erased_serde::deserialize(de)?;
    new(params)
        .map(|s| Box::new(s) as Box<dyn Step>)
        .map_err(<erased_serde::Error as serde::de::Error>::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_unique_and_documented() {
        let mut ops = step_ops();
        ops.sort();
        ops.dedup();
        assert_eq!(ops.len(), REGISTRY.len());
        for spec in REGISTRY {
            assert!(!spec.summary.is_empty(), "{} has no summary", spec.op);
        }
        assert!(find_step("random_crop").unwrap().facts.random);
        assert!(!find_step("decode_jpeg").unwrap().facts.random);
        assert!(find_step("read_file").unwrap().facts.reads_files);
        assert!(find_step("window").unwrap().facts.fan_out);
        assert!(find_step("nope").is_none());
    }
}
