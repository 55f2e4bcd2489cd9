//! Sample bytes through every decoding step (JPEG, PNG, MP3/FLAC/WAV/Ogg, .npy, HTML, CREAM's
//! HDF5) with its default limits: a sample or an error, never a panic, a stack overflow or an
//! allocation beyond `max_pixels`, `max_expansion` or the tensor budget.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use workloads::registry::find_step;
use workloads::{Field, Sample, Step, StepContext};

const OPS: &[&str] = &[
    "decode_jpeg",
    "decode_png",
    "decode_audio",
    "decode_npy",
    "extract_text",
    "read_cream_hour",
];

fn steps() -> &'static [Box<dyn Step>] {
    static STEPS: OnceLock<Vec<Box<dyn Step>>> = OnceLock::new();
    STEPS.get_or_init(|| {
        OPS.iter()
            .map(|op| {
                let spec = find_step(op).unwrap();
                let empty = serde_yaml_ng::Value::Mapping(Default::default());
                (spec.build)(&mut <dyn erased_serde::Deserializer>::erase(empty)).unwrap()
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    let step = &steps()[which as usize % OPS.len()];
    let sample = Sample::new(0).with("data", Field::Bytes(bytes.to_vec()));
    let mut out = Vec::new();
    let _ = step.apply_many(sample, &StepContext::FIRST, &mut out);
});
