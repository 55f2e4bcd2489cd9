//! The step registry: every step op by name. Adding a step: one module implementing [`Step`]
//! with its `step_spec!` (its [`StepSpec`]) plus one line in [`REGISTRY`].
//!
//! [`Step`]: crate::step::Step

use crate::op::StepSpec;
use crate::steps;

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
