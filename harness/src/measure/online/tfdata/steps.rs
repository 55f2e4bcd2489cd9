//! Which of prepbench's steps the tf-data loader runs in TensorFlow ops, as the paper's
//! pipelines wrote them (`prepbench/_tf_steps.py`), and which parameters it refuses. Each
//! takes and gives the fields its native step does, so a store made natively feeds it at any
//! split point.

use workloads::StepDef;

use super::super::process::form_refusal;

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
];

/// Why step `def`, with its canonical `params`, cannot run under the tf-data loader; `None`
/// when it can.
pub fn refusal(def: &StepDef, params: &serde_json::Value) -> Option<String> {
    form_refusal(
        def,
        params,
        ("tf-data", OPS, "in TensorFlow ops"),
        |_, _| None,
    )
}
