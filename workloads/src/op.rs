//! What the harness knows of a step op besides its code: its parameter table (derived from its
//! `Params` struct), its facts, and the functions that check its parameters and build it. Each
//! step module makes one [`StepSpec`] with `step_spec!`; the registry lists them.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::step::Step;

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
    /// The parameters whose value names a field the step reads (`#[param(reads)]`).
    const READS: &'static [&'static str];
    /// The parameters whose value names a field the step writes (`#[param(writes)]`).
    const WRITES: &'static [&'static str];
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

/// Builds a step from its parameters (YAML as written, or their canonical form).
pub type BuildFn =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Box<dyn Step>, erased_serde::Error>;

/// Reads a step's parameters strictly into its `Params` type and writes them back as JSON, every
/// default filled in: the canonical form a workload spec keeps and its identity hashes.
pub type CanonicalFn =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<serde_json::Value, erased_serde::Error>;

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
    /// Fields the step writes whatever its parameters say (the sample rate of audio).
    pub also_writes: &'static [&'static str],
}

impl StepFacts {
    /// A deterministic one-to-one computation: the facts of most steps.
    pub const PURE: StepFacts = StepFacts {
        random: false,
        fan_out: false,
        reads_files: false,
        audio: false,
        fields_at_run_time: false,
        also_writes: &[],
    };
}

/// A registered step op.
#[derive(Debug)]
pub struct StepSpec {
    pub op: &'static str,
    pub summary: &'static str,
    pub facts: StepFacts,
    pub params: &'static [ParamDoc],
    /// The parameters naming the fields it reads and writes (a value may be unset: none).
    pub reads: &'static [&'static str],
    pub writes: &'static [&'static str],
    pub canonical: CanonicalFn,
    pub build: BuildFn,
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

/// The body of every [`StepSpec::canonical`]: deserialize `P` strictly, then serialize it.
pub fn canonical_params<P>(
    de: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<serde_json::Value, erased_serde::Error>
where
    P: DeserializeOwned + Serialize,
{
    let params: P = erased_serde::deserialize(de)?;
    serde_json::to_value(&params).map_err(<erased_serde::Error as serde::de::Error>::custom)
}
