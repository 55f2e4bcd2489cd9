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

/// A step's parameter table, derived from its `Params` struct with `#[derive(ParamDocs)]`: each
/// field's name, its type's [`ParamKind`], its default and its doc comment.
pub trait ParamDocs {
    const DOCS: &'static [ParamDoc];
}

pub use workloads_derive::ParamDocs;

/// How `list steps` names the kind of value a parameter takes.
pub trait ParamKind {
    const KIND: &'static str;
}

macro_rules! param_kinds {
    ($($kind:literal: $($ty:ty),+;)+) => {
        $($(impl ParamKind for $ty {
            const KIND: &'static str = $kind;
        })+)+
    };
}

param_kinds! {
    "float": f32, f64;
    "integer": u16, u32, u64, usize, i32, i64;
    "integer 0-255": u8;
    "bool": bool;
    "string": String, crate::sample::FieldName;
    "list of floats": Vec<f32>, Vec<f64>;
    "list or map of arguments": serde_yaml_ng::Value;
}

/// An optional parameter takes the kind of its value.
impl<T: ParamKind> ParamKind for Option<T> {
    const KIND: &'static str = T::KIND;
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
    /// The fields the step writes are known only when it runs (a Python callable's dict, a
    /// WebDataset sample's members): `validate` checks no field after it.
    pub fields_at_run_time: bool,
}

impl StepFacts {
    /// A deterministic one-to-one computation: the facts of most steps.
    pub const PURE: StepFacts = StepFacts {
        random: false,
        fan_out: false,
        reads_files: false,
        audio: false,
        fields_at_run_time: false,
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
    &steps::read_webdataset::SPEC,
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
    &steps::python::SPEC,
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

    #[test]
    fn parameter_docs_come_from_the_params_structs() {
        let brightness = find_step("brightness").unwrap().params;
        let names: Vec<&str> = brightness.iter().map(|p| p.name).collect();
        assert_eq!(names, ["field", "factor"]);
        assert_eq!(
            (brightness[0].kind, brightness[0].default),
            ("string", Some("image"))
        );
        assert_eq!((brightness[1].kind, brightness[1].default), ("float", None));
        assert!(brightness[1].doc.starts_with("What every value"));
        // Implied defaults and the kinds of options and enums.
        let crop = find_step("random_crop").unwrap().params;
        let boxes = crop.iter().find(|p| p.name == "boxes").unwrap();
        assert_eq!((boxes.kind, boxes.default), ("string", Some("none")));
        let stft = find_step("stft").unwrap().params;
        let window = stft.iter().find(|p| p.name == "window").unwrap();
        assert!(window.kind.contains("hann"), "{}", window.kind);
        for spec in REGISTRY {
            for p in spec.params {
                assert!(
                    !p.doc.is_empty() && !p.kind.is_empty(),
                    "{}.{}",
                    spec.op,
                    p.name
                );
            }
        }
    }
}
