//! Which of prepbench's steps the tf-data loader runs in TensorFlow ops, as the paper's
//! pipelines wrote them (`prepbench/_tf_steps.py`), and which parameters it refuses. Each
//! takes and gives the fields its native step does, so a store made natively feeds it at any
//! split point.

use workloads::StepDef;

use super::super::process::{audio_refusal, form_refusal};

/// prepbench's ops the tf-data loader runs; `OPS` in `prepbench/_tf_steps.py` is the same
/// list (a test ties them).
pub const OPS: &[&str] = &[
    "read_file",
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

/// Why step `def`, with its canonical `params`, cannot run under the tf-data loader; `None`
/// when it can.
pub fn refusal(def: &StepDef, params: &serde_json::Value) -> Option<String> {
    form_refusal(
        def,
        params,
        ("tf-data", OPS, "in TensorFlow ops"),
        audio_refusal,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn audio_parameters_without_a_form_are_refused_and_the_papers_are_not() {
        let refused = |op: &str, params: serde_json::Value| audio_refusal(op, &params);
        // The paper's MP3 and FLAC chains, canonical parameters as the spec gives them.
        let decode = json!({"dtype": "int16", "mono": true, "sample_rate": null});
        assert_eq!(refused("decode_audio", decode), None);
        assert_eq!(refused("magnitude", json!({"power": 1.0})), None);
        assert_eq!(refused("mel", json!({"filterbank": "tf"})), None);
        for (op, params, says) in [
            ("decode_audio", json!({"sample_rate": 16000}), "resamples"),
            ("decode_audio", json!({"mono": false}), "channels"),
            ("magnitude", json!({"power": 2.0}), "power"),
            ("mel", json!({"filterbank": "slaney"}), "filterbank"),
        ] {
            let why = refused(op, params).unwrap_or_default();
            assert!(why.contains(says), "{op}: {why}");
        }
    }
}
