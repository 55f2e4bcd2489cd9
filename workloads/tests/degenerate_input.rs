//! No step panics on what a user's data can hand it. Every step of every reference workload, and
//! every registered step built with extreme parameters, is given samples whose fields are empty,
//! zero-sized in any dimension, of every dtype, or bytes and text that are truncated, garbage or
//! deeply nested; each must return a sample or an error (which `--on-error skip` absorbs),
//! never panic.

use std::panic::{catch_unwind, AssertUnwindSafe};

use workloads::op::StepSpec;
use workloads::registry::REGISTRY;
use workloads::{Field, Sample, Step, StepContext, Tensor, TensorData, BUILTIN};

/// Every field name a step reads by default or a reference workload names, so that each step
/// finds its input whatever it is called.
fn field_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "image",
        "data",
        "text",
        "tokens",
        "audio",
        "signal",
        "spectrogram",
        "array",
        "boxes",
        "labels",
        "sample_rate",
        "path",
        "bytes",
        "html",
        "length",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for spec in REGISTRY {
        for p in spec.params {
            if let Some(d) = p.default {
                if !d.is_empty() && d.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    names.push(d.to_string());
                }
            }
        }
    }
    for (_, yaml) in BUILTIN {
        let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).unwrap();
        for step in value["steps"].as_sequence().unwrap() {
            if let Some(params) = step["params"].as_mapping() {
                for v in params.values() {
                    if let Some(s) = v.as_str() {
                        names.push(s.to_string());
                    }
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

fn tensor(shape: &[usize], dtype: usize) -> Field {
    let n: usize = shape.iter().product();
    let data = match dtype {
        0 => TensorData::U8(vec![7; n]),
        1 => TensorData::U16(vec![7; n]),
        2 => TensorData::I16(vec![-7; n]),
        3 => TensorData::I32(vec![50_000; n]),
        4 => TensorData::F32(vec![0.5; n]),
        _ => TensorData::F64(vec![f64::NAN; n]),
    };
    Field::Tensor(Tensor::new(shape.to_vec(), data).unwrap())
}

/// A few of [`variants`]: tensors with and without a zero-sized dimension, broken media.
fn light_variants() -> Vec<(String, Field)> {
    let mut out = Vec::new();
    for shape in [
        &[0][..],
        &[500, 0],
        &[2, 2, 3],
        &[1, 1, 4],
        &[2, 2],
        &[4, 1],
    ] {
        for dtype in [0, 4, 5] {
            out.push((
                format!("tensor {shape:?} dtype {dtype}"),
                tensor(shape, dtype),
            ));
        }
    }
    out.push(("empty bytes".into(), Field::Bytes(Vec::new())));
    out.push((
        "JPEG start".into(),
        Field::Bytes(vec![0xff, 0xd8, 0xff, 0xe0, 0, 16]),
    ));
    out.push(("empty text".into(), Field::Text(String::new())));
    out
}

/// What one field may hold: degenerate tensors of every dtype, broken media, hostile text.
fn variants() -> Vec<(String, Field)> {
    let shapes: &[&[usize]] = &[
        &[],
        &[0],
        &[1],
        &[3],
        &[500, 0],
        &[0, 3],
        &[0, 4],
        &[1, 0, 3],
        &[0, 0, 3],
        &[2, 0, 3],
        &[0, 2, 3],
        &[3, 3, 0],
        &[1, 1, 1],
        &[2, 2, 3],
        &[1, 1, 4],
        &[2, 2],
        &[2, 2, 2, 2],
        &[1, 2],
        &[4, 1],
        &[1, 2, 2],
    ];
    let mut out = Vec::new();
    for shape in shapes {
        for dtype in 0..6 {
            out.push((
                format!("tensor {shape:?} dtype {dtype}"),
                tensor(shape, dtype),
            ));
        }
    }
    // Deep enough to overflow a recursive walk of the tree (html5ever itself takes time
    // quadratic in the depth, so deeper costs the test seconds).
    let nested = "<div>".repeat(30_000);
    let shallow = "<div>".repeat(1_000);
    let bytes: Vec<(&str, Vec<u8>)> = vec![
        ("empty bytes", Vec::new()),
        ("zero bytes", vec![0; 64]),
        ("JPEG start", vec![0xff, 0xd8, 0xff, 0xe0, 0, 16]),
        ("PNG signature", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        ("FLAC marker", b"fLaC\0\0\0\x22".to_vec()),
        ("ID3 tag", b"ID3\x04\0\0\0\0\0\0".to_vec()),
        (
            "WAV header",
            b"RIFF\x24\0\0\0WAVEfmt \x10\0\0\0\x01\0\0\0".to_vec(),
        ),
        (
            "npy header",
            b"\x93NUMPY\x01\0\x20\0{'descr': '<f4', 'shape': (500, 0), }".to_vec(),
        ),
        ("HDF5 signature", b"\x89HDF\r\n\x1a\n\0\0\0\0".to_vec()),
        ("deep HTML bytes", nested.clone().into_bytes()),
        ("invalid UTF-8", vec![0xff, 0xfe, 0xc3]),
    ];
    for (what, b) in bytes {
        out.push((what.to_string(), Field::Bytes(b)));
    }
    for (what, t) in [
        ("empty text", String::new()),
        ("nested HTML text", shallow),
        (
            "non-ASCII text",
            "photo_café 東京 \u{0} \u{202e}".repeat(50),
        ),
        ("unclosed tag", "<".repeat(10_000)),
    ] {
        out.push((what.to_string(), Field::Text(t)));
    }
    out
}

/// Applies `step` to a sample with every field set to each of `variants`, in two epochs;
/// returns what panicked.
fn panics_of(
    label: &str,
    step: &dyn Step,
    names: &[String],
    variants: &[(String, Field)],
) -> Vec<String> {
    let mut found = Vec::new();
    for (what, field) in variants {
        let mut sample = Sample::new(1);
        for name in names {
            sample.set(name, field.clone());
        }
        for epoch in 0..2 {
            let ctx = StepContext {
                epoch,
                ..StepContext::FIRST
            };
            let result = catch_unwind(AssertUnwindSafe(|| {
                let mut out = Vec::new();
                let _ = step.apply_many(sample.clone(), &ctx, &mut out);
            }));
            if let Err(panic) = result {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                found.push(format!("{label} on {what}: {message}"));
                break;
            }
        }
    }
    found
}

fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = f();
    std::panic::set_hook(hook);
    out
}

#[test]
fn no_reference_step_panics_on_degenerate_fields() {
    let names = field_names();
    let variants = variants();
    let mut found = Vec::new();
    quietly(|| {
        for (name, _) in BUILTIN {
            let workload = workloads::load(name).unwrap();
            for def in &workload.steps {
                let label = format!("{name}/{} ({})", def.name, def.spec.op);
                found.extend(panics_of(&label, def.step.as_ref(), &names, &variants));
            }
        }
    });
    assert!(
        found.is_empty(),
        "{} panics:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Builds `spec` with its defaults and `name: value` (required parameters get small values).
fn build(spec: &StepSpec, name: &str, value: &str) -> Option<Box<dyn Step>> {
    let mut yaml = String::from("{");
    for p in spec.params {
        if p.name == name {
            yaml.push_str(&format!("{}: {value}, ", p.name));
        } else if p.default.is_none() {
            let small = match p.kind {
                "float" | "integer" | "integer 0-255" => "2",
                "bool" => "false",
                "list of floats" => "[0.5, 0.5, 0.5]",
                _ => "x",
            };
            yaml.push_str(&format!("{}: {small}, ", p.name));
        }
    }
    yaml.push('}');
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    let mut de = <dyn erased_serde::Deserializer>::erase(value);
    (spec.build)(&mut de).ok()
}

#[test]
fn no_step_panics_or_aborts_with_extreme_parameters() {
    let names = field_names();
    let variants = light_variants();
    let extremes = [
        "0",
        "1",
        "-1",
        "1.0e-300",
        "1.0e12",
        "1000000000000",
        "4294967295",
        "18446744073709551615",
        ".nan",
        ".inf",
    ];
    let mut found = Vec::new();
    let mut built = 0;
    quietly(|| {
        for spec in REGISTRY {
            for p in spec.params {
                if !matches!(p.kind, "float" | "integer" | "integer 0-255") {
                    continue;
                }
                for value in extremes {
                    let built_step = catch_unwind(AssertUnwindSafe(|| build(spec, p.name, value)));
                    let step = match built_step {
                        Ok(Some(step)) => step,
                        Ok(None) => continue,
                        Err(_) => {
                            found
                                .push(format!("{} {}={value}: building panicked", spec.op, p.name));
                            continue;
                        }
                    };
                    built += 1;
                    let label = format!("{} {}={value}", spec.op, p.name);
                    found.extend(panics_of(&label, step.as_ref(), &names, &variants));
                }
            }
        }
    });
    assert!(built > 50, "only {built} steps built");
    assert!(
        found.is_empty(),
        "{} panics:\n{}",
        found.len(),
        found.join("\n")
    );
}
