//! Which of prepbench's steps the tf-data loader runs in TensorFlow ops, as the paper's
//! pipelines wrote them (`prepbench/_tf_steps.py`), and which parameters it refuses. Each
//! takes and gives the fields its native step does, so a store made natively feeds it at any
//! split point.

use workloads::StepDef;

/// prepbench's ops the tf-data loader runs; `OPS` in `prepbench/_tf_steps.py` is the same
/// list (a test ties them).
pub const OPS: &[&str] = &[
    "read_file",
    "decode_jpeg",
    "decode_png",
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
    let op = def.spec.op;
    if def.step.python_link().is_some() {
        return None; // your Python, through tf.numpy_function
    }
    if !OPS.contains(&op) {
        return Some(format!(
            "step `{}` (op {op}) has no implementation under the tf-data loader, which runs, \
             in TensorFlow ops, {}; the rest run under --loader native",
            def.name,
            OPS.join(", ")
        ));
    }
    let why = super::super::process::form_refusal(op, params);
    why.map(|why| {
        format!(
            "step `{}` (op {op}) {why} under the tf-data loader; run it under --loader native",
            def.name
        )
    })
}
