//! Which of a workload's steps a loader in Python has forms of: your Python steps under every
//! such loader, prepbench's ops where the loader has a form of them with these parameters.

use workloads::Workload;

/// A loader's check of one of prepbench's steps with its canonical parameters: why it has no
/// form of it (`None`: it has).
pub type OpCheck = fn(&workloads::StepDef, &serde_json::Value) -> Option<String>;

/// Why the online steps `[split, n)` of `workload` cannot run under a loader in Python whose
/// forms of steps `ops` judges (your Python steps among them); `None` when they can. For raw
/// input (split 0) the read step runs in prepbench's Rust when `native_read`, else in the
/// loader's own form.
pub fn step_refusal(
    workload: &Workload,
    split: usize,
    (loader, native_read): (&str, bool),
    ops: OpCheck,
) -> Option<String> {
    let first = if split == 0 {
        let read = &workload.steps[0];
        if read.step.python_link().is_some() || read.spec.facts.fan_out {
            return Some(format!(
                "step `{}` (op {}) cannot read the raw items under the {loader} loader",
                read.name, read.spec.op
            ));
        }
        usize::from(native_read)
    } else {
        split
    };
    let first = first.min(workload.steps.len());
    workload.steps[first..]
        .iter()
        .zip(&workload.spec.steps[first..])
        .find_map(|(def, config)| ops(def, &config.params))
}

/// Why step `def` (with its canonical `params`) has no form under `loader`, whose forms of
/// prepbench's ops are `ops`, written `as_` ("as torchvision and NumPy"); `extra` adds the
/// loader's own refusals of parameters. Your Python steps run under every such loader; no form
/// moves a boxes field or resizes with a filter other than bilinear yet. `None`: it has one.
pub fn form_refusal(
    def: &workloads::StepDef,
    params: &serde_json::Value,
    (loader, ops, as_): (&str, &[&str], &str),
    extra: fn(&str, &serde_json::Value) -> Option<&'static str>,
) -> Option<String> {
    let op = def.spec.op;
    if def.step.python_link().is_some() {
        return None;
    }
    if !ops.contains(&op) {
        return Some(format!(
            "step `{}` (op {op}) has no implementation under the {loader} loader, which runs \
             your Python steps (op python) and, {as_}, {}; the rest run under --loader native",
            def.name,
            ops.join(", ")
        ));
    }
    let param = |name: &str| params.get(name).filter(|v| !v.is_null());
    let why = if param("boxes").is_some() {
        Some("moves a boxes field, which its form here does not")
    } else if op == "resize_shorter" && param("filter").and_then(|f| f.as_str()) != Some("bilinear")
    {
        Some("resizes with a filter other than bilinear, which its form here does not")
    } else {
        extra(op, params)
    };
    why.map(|why| {
        format!(
            "step `{}` (op {op}) {why} under the {loader} loader; run it under --loader native",
            def.name
        )
    })
}

/// The audio steps' parameters that no form in another loader (TensorFlow's, PyTorch's) takes
/// yet.
pub fn audio_refusal(op: &str, params: &serde_json::Value) -> Option<&'static str> {
    let param = |name: &str| params.get(name).filter(|v| !v.is_null());
    match op {
        "decode_audio" if param("sample_rate").is_some() => {
            Some("resamples (sample_rate), which its form here does not")
        }
        "decode_audio" if param("mono").and_then(|v| v.as_bool()) == Some(false) => {
            Some("keeps the channels (mono: false), whose rank varies with the file")
        }
        "magnitude" if param("power").and_then(|v| v.as_f64()).unwrap_or(1.0) != 1.0 => {
            Some("raises the magnitude to a power other than 1, which its form here does not")
        }
        "mel" if param("filterbank").and_then(|v| v.as_str()).unwrap_or("tf") != "tf" => {
            Some("uses a filterbank other than tf.signal's, which its form here does not")
        }
        _ => None,
    }
}
