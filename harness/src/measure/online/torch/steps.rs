//! Which of prepbench's own steps the torch loader runs, as a PyTorch user writes them
//! (`prepbench/_torch_steps.py`: torchvision's JPEG decoder and resize, Pillow for PNG, tensor
//! arithmetic for the rest; `prepbench/_torch_audio.py`: soundfile, `torch.fft`), and which parameters it refuses. Each takes and gives the fields
//! its native step does, so a store made natively feeds it at any split point; `--verify`
//! compares its outputs with native processing within the differences each op states.

use workloads::StepDef;

use super::super::process::{audio_refusal, form_refusal};

/// prepbench's ops the torch loader runs; `OPS` in `prepbench/_torch_steps.py` is the same
/// list (a test ties them).
pub const OPS: &[&str] = &[
    "decode_jpeg",
    "decode_png",
    "decode_npy",
    "resize_shorter",
    "pixel_center",
    "grayscale",
    "normalize",
    "random_crop",
    "random_hflip",
    "decode_audio",
    "stft",
    "magnitude",
    "mel",
    "log",
    "read_cream_hour",
    "window",
    "nilm_features",
    "extract_text",
    "bpe_encode",
    "embed",
];

/// Why step `def`, with its canonical `params`, cannot run under the torch loader; `None` when
/// it can.
pub fn refusal(def: &StepDef, params: &serde_json::Value) -> Option<String> {
    let extra = |op: &str, params: &serde_json::Value| {
        let keeps_16_bit = params.get("to_uint8").and_then(|v| v.as_bool()) == Some(false);
        (op == "decode_png" && keeps_16_bit)
            .then_some(
                "keeps 16-bit samples (to_uint8: false), which its torch form (Pillow) does not",
            )
            .or_else(|| audio_refusal(op, params))
    };
    form_refusal(
        def,
        params,
        ("torch", OPS, "as torchvision and NumPy"),
        extra,
    )
}

#[cfg(test)]
mod tests {
    use crate::measure::online::{torch::Torch, Engine};

    fn workload(steps: &str) -> workloads::Workload {
        let yaml = format!(
            "name: t\ndataset: {{kind: imagenet, samples: 4}}\nsteps:\n  - name: concatenated\n    \
             op: read_file\n  - name: decoded\n    op: decode_jpeg\n{steps}"
        );
        workloads::Workload::from_yaml(&yaml, "t.yaml").unwrap()
    }

    #[test]
    fn the_papers_image_audio_text_and_nilm_chains_run_and_what_has_no_torch_form_is_refused_by_name(
    ) {
        for name in [
            "cv",
            "cv2-jpg",
            "cv2-png",
            "cv-greyscale-before",
            "cv-greyscale-after",
            "mp3",
            "flac",
            "nlp",
            "nilm",
        ] {
            let cv = workloads::load(name).unwrap();
            for split in 0..cv.steps.len() {
                assert_eq!(Torch.step_refusal(&cv, split), None, "{name} split {split}");
            }
        }
        {
            let w = workloads::load("detection").unwrap();
            let why = Torch.step_refusal(&w, 0).unwrap();
            assert!(
                why.contains("no implementation under the torch loader"),
                "{why}"
            );
            assert!(why.contains("decode_jpeg, decode_png"), "{why}");
        }
        for (steps, says) in [
            (
                "  - name: r\n    op: resize_shorter\n    params: {size: 64, filter: bicubic}\n",
                "filter other than bilinear",
            ),
            (
                "  - name: c\n    op: random_crop\n    params: {height: 8, width: 8, boxes: boxes}\n",
                "boxes",
            ),
        ] {
            let why = Torch.step_refusal(&workload(steps), 1).unwrap();
            assert!(why.contains(says) && why.contains("--loader native"), "{why}");
        }
        let why = Torch.step_refusal(
            &workload("  - name: r\n    op: resize_shorter\n    params: {size: 64}\n"),
            1,
        );
        assert_eq!(why, None);
    }
}
