//! `prepbench show`: one sample of a workload after any step, written as `.npy` (every field
//! NumPy can hold) and drawn as a PNG where it is an image (with its boxes) or a spectrogram;
//! or, with `--list`, its fields after every step: where storage explodes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use workloads::{DType, Field, Sample, StepContext, Tensor, TensorData, Workload};

use crate::measure::steps::apply_steps;

/// What to show.
pub struct ShowOptions {
    pub workload: String,
    /// The source item (a file of the dataset), in source order.
    pub sample: usize,
    /// After a fan-out step (NILM's windows): which of the item's outputs.
    pub part: usize,
    /// A step name (or its op, or a unique prefix of a step name); default: the last step.
    pub after: Option<String>,
    /// Show the sample as this strategy stores it (after the steps before its split).
    pub strategy: Option<String>,
    /// The field to write to a `.npy` or `.png` file; default: the largest tensor field.
    pub field: Option<String>,
    pub out: Option<PathBuf>,
    pub list: bool,
    /// The user's dataset, in place of the workload's (`--dataset`).
    pub dataset: Option<PathBuf>,
    pub seed: u64,
    pub epoch: u64,
    pub data_dir: PathBuf,
}

/// Steps `[0, end)` of `workload` resolved from `--after` / `--strategy` (`end` = 0: the raw
/// sample).
pub fn resolve_end(
    workload: &Workload,
    after: Option<&str>,
    strategy: Option<&str>,
) -> anyhow::Result<usize> {
    let steps = &workload.steps;
    match (after, strategy) {
        (Some(_), Some(_)) => bail!("give --after or --strategy, not both"),
        (None, Some(name)) => Ok(workload
            .spec
            .strategy(name)
            .map_err(|e| anyhow::anyhow!("{}: {e}", workload.spec.origin))?
            .split),
        (None, None) => Ok(steps.len()),
        (Some(name), None) => {
            if let Some(i) = steps.iter().position(|d| d.name == name) {
                return Ok(i + 1);
            }
            if let Some(i) = steps.iter().position(|d| d.spec.op == name) {
                return Ok(i + 1);
            }
            let prefixed: Vec<usize> = (0..steps.len())
                .filter(|&i| steps[i].name.starts_with(name))
                .collect();
            match prefixed.as_slice() {
                [i] => Ok(i + 1),
                _ => bail!(
                    "{}: no step `{name}`; steps: {}",
                    workload.spec.origin,
                    steps
                        .iter()
                        .map(|d| format!("{} ({})", d.name, d.spec.op))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    }
}

/// Runs `steps` on `sample` (the sample as it enters the first of them), keeping output `part`
/// of a fan-out step among them.
fn run_steps(
    workload: &Workload,
    source: &datasets::Source,
    sample: Sample,
    steps: std::ops::Range<usize>,
    part: usize,
    ctx: StepContext,
) -> anyhow::Result<Sample> {
    // Without the fan-out step in the range, a sample stays one sample.
    let part = match workload.fan_out_step() {
        Some(i) if steps.contains(&i) => part,
        _ => 0,
    };
    let mut outputs = Vec::new();
    let mut seconds = vec![0.0; workload.steps.len()];
    apply_steps(
        workload,
        steps,
        sample,
        source,
        ctx,
        crate::measure::steps::StepSeconds::wall(&mut seconds),
        &mut |s| {
            outputs.push(s);
            Ok(outputs.len() <= part)
        },
    )?;
    let count = outputs.len();
    outputs.into_iter().nth(part).ok_or_else(|| {
        anyhow::anyhow!("the item has {count} outputs at that step; --part {part} is beyond them")
    })
}

fn describe(field: &Field) -> (String, String, String) {
    match field {
        Field::Tensor(t) => (
            "tensor".into(),
            t.dtype().name().into(),
            format!("{:?}", t.shape()),
        ),
        Field::Bytes(b) => ("bytes".into(), "-".into(), format!("[{}]", b.len())),
        Field::Text(s) => (
            "text".into(),
            "utf-8".into(),
            format!("{} chars", s.chars().count()),
        ),
    }
}

/// The `--list` table: the sample's fields after every step, with sizes.
fn list_table(
    workload: &Workload,
    source: &datasets::Source,
    opts: &ShowOptions,
    ctx: StepContext,
) -> anyhow::Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} sample {}{}: fields after every step (record = the encoded sample a store would hold)\n",
        workload.spec.label(),
        opts.sample,
        if workload.fan_out_step().is_some() {
            format!(", part {}", opts.part)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "| after | strategy | field | kind | dtype | shape | bytes | record bytes |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    // One pass: each step runs once, on the previous step's output.
    let mut sample = source.sample(opts.sample);
    for end in 0..=workload.steps.len() {
        if end > 0 {
            sample = run_steps(workload, source, sample, end - 1..end, opts.part, ctx)?;
        }
        let record = workloads::encoding::encode(&sample).len();
        let (after, strategy) = if end == 0 {
            ("(source)".to_string(), workloads::UNPROCESSED.to_string())
        } else {
            let def = &workload.steps[end - 1];
            let stored = workload
                .spec
                .strategies()
                .into_iter()
                .find(|s| s.split == end)
                .map_or("- (online only)".to_string(), |s| s.name);
            (format!("{} ({})", def.name, def.spec.op), stored)
        };
        for (i, (name, field)) in sample.fields().iter().enumerate() {
            let (kind, dtype, shape) = describe(field);
            let (a, s, r) = if i == 0 {
                (after.as_str(), strategy.as_str(), record.to_string())
            } else {
                ("", "", String::new())
            };
            let _ = writeln!(
                out,
                "| {a} | {s} | {name} | {kind} | {dtype} | {shape} | {} | {r} |",
                field.size_bytes()
            );
        }
    }
    Ok(out)
}

/// NPY 1.0 bytes of a tensor (C order).
pub fn npy_bytes(tensor: &Tensor) -> Vec<u8> {
    let descr = match tensor.dtype() {
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let shape = match tensor.shape() {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let mut out = Vec::with_capacity(total + tensor.size_bytes());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(tensor.data().as_bytes());
    out
}

/// A field as a tensor NumPy can load: bytes and text as uint8 vectors.
fn as_tensor(field: &Field) -> Tensor {
    match field {
        Field::Tensor(t) => t.clone(),
        Field::Bytes(b) => Tensor::new(vec![b.len()], TensorData::U8(b.clone())).expect("1-D"),
        Field::Text(s) => {
            Tensor::new(vec![s.len()], TensorData::U8(s.as_bytes().to_vec())).expect("1-D")
        }
    }
}

fn values_f64(t: &Tensor) -> Vec<f64> {
    match t.data() {
        TensorData::U8(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::U16(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::I16(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::I32(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::F32(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::F64(v) => v.clone(),
    }
}

/// Values scaled to 0-255: uint8 as they are, anything else min-max over its finite values.
fn to_u8(t: &Tensor) -> Vec<u8> {
    if let TensorData::U8(v) = t.data() {
        return v.clone();
    }
    let v = values_f64(t);
    let finite = v.iter().copied().filter(|x| x.is_finite());
    let (lo, hi) = finite.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let span = if hi > lo { hi - lo } else { 1.0 };
    v.iter()
        .map(|&x| {
            if x.is_finite() {
                ((x - lo) / span * 255.0).round() as u8
            } else {
                0
            }
        })
        .collect()
}

/// A viridis-like ramp (dark blue, teal, yellow) for spectrograms.
fn ramp(v: u8) -> [u8; 3] {
    let t = v as f32 / 255.0;
    let stops = [
        (0.0, [68.0, 1.0, 84.0]),
        (0.5, [33.0, 145.0, 140.0]),
        (1.0, [253.0, 231.0, 37.0]),
    ];
    let (a, b) = if t < 0.5 {
        (stops[0], stops[1])
    } else {
        (stops[1], stops[2])
    };
    let f = (t - a.0) / (b.0 - a.0);
    std::array::from_fn(|i| (a.1[i] + (b.1[i] - a.1[i]) * f).round() as u8)
}

/// Draws the outline of a COCO box (x, y, w, h) in red, two pixels wide.
fn draw_box(img: &mut image::RgbImage, b: [f32; 4]) {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let (x0, y0) = (b[0].round() as i64, b[1].round() as i64);
    let (x1, y1) = ((b[0] + b[2]).round() as i64, (b[1] + b[3]).round() as i64);
    let mut put = |x: i64, y: i64| {
        if (0..w).contains(&x) && (0..h).contains(&y) {
            img.put_pixel(x as u32, y as u32, image::Rgb([255, 0, 0]));
        }
    };
    for t in 0..2 {
        for x in x0..=x1 {
            put(x, y0 + t);
            put(x, y1 - t);
        }
        for y in y0..=y1 {
            put(x0 + t, y);
            put(x1 - t, y);
        }
    }
}

/// The field drawn as an image: [h, w, 3] or [h, w, 1] / [h, w] as a picture (with the
/// sample's `boxes`), [frames, bins] (or [frames, bins, 1]) as a spectrogram, time to the right
/// and low frequencies at the bottom.
fn render(
    sample: &Sample,
    name: &str,
    tensor: &Tensor,
    spectrogram: bool,
) -> anyhow::Result<image::RgbImage> {
    let shape = tensor.shape();
    if tensor.data().is_empty() {
        bail!(
            "field `{name}` of shape {shape:?} holds no values: nothing to draw; write it as .npy"
        );
    }
    let px = to_u8(tensor);
    let picture = |h: usize, w: usize, c: usize| -> image::RgbImage {
        image::RgbImage::from_fn(w as u32, h as u32, |x, y| {
            let i = (y as usize * w + x as usize) * c;
            if c == 3 {
                image::Rgb([px[i], px[i + 1], px[i + 2]])
            } else {
                image::Rgb([px[i]; 3])
            }
        })
    };
    let mut img = match (shape, spectrogram) {
        ([h, w, 3], false) => picture(*h, *w, 3),
        ([h, w, 1], false) | ([h, w], false) => picture(*h, *w, 1),
        ([frames, bins], _) | ([frames, bins, 1], _) => {
            let (frames, bins) = (*frames, *bins);
            image::RgbImage::from_fn(frames as u32, bins as u32, |x, y| {
                let bin = bins - 1 - y as usize;
                image::Rgb(ramp(px[x as usize * bins + bin]))
            })
        }
        _ => bail!(
            "field `{name}` of shape {shape:?} cannot be drawn (images are [h, w, 3], [h, w, 1] or [h, w]; spectrograms [frames, bins]); write it as .npy"
        ),
    };
    if !spectrogram {
        if let Some(Field::Tensor(boxes)) = sample.get("boxes") {
            if let (TensorData::F32(v), [_, 4]) = (boxes.data(), boxes.shape()) {
                for b in v.chunks_exact(4) {
                    draw_box(&mut img, [b[0], b[1], b[2], b[3]]);
                }
            }
        }
    }
    Ok(img)
}

/// Whether a 2-D field is better drawn as a spectrogram than as a grey picture: audio workloads.
fn is_spectrogram(workload: &Workload, tensor: &Tensor) -> bool {
    let audio = workload.steps.iter().any(|d| d.spec.facts.audio);
    audio && matches!(tensor.shape(), [_, _] | [_, _, 1])
}

/// The field to write: `--field`, else the largest tensor (the image, not its label), else the
/// first field.
fn pick_field<'a>(
    sample: &'a Sample,
    wanted: Option<&str>,
) -> anyhow::Result<(&'a str, &'a Field)> {
    let fields = sample.fields();
    if let Some(name) = wanted {
        return fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, f)| (n.as_str(), f))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "the sample has no field `{name}`; fields: {}",
                    fields
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
    }
    fields
        .iter()
        .filter_map(|(n, f)| match f {
            Field::Tensor(t) => Some((n, f, t.data().len())),
            _ => None,
        })
        .max_by_key(|(_, _, len)| *len)
        .map(|(n, f, _)| (n, f))
        .or_else(|| fields.first().map(|(n, f)| (n, f)))
        .map(|(n, f)| (n.as_str(), f))
        .ok_or_else(|| anyhow::anyhow!("the sample has no fields"))
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn write_png(path: &Path, img: &image::RgbImage) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut bytes),
        image::ImageFormat::Png,
    )
    .with_context(|| format!("encoding {}", path.display()))?;
    write_file(path, &bytes)
}

/// Whether `--out` names one file (`x.png`, `x.npy`: a name with an extension that is not an
/// existing folder) rather than a folder for every field.
fn picture_file(out: &Path) -> bool {
    out.extension().is_some() && !out.is_dir()
}

/// Writes what `opts.out` asks for; returns the paths written.
fn write_outputs(
    workload: &Workload,
    sample: &Sample,
    opts: &ShowOptions,
    out: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let extension = picture_file(out)
        .then(|| out.extension().and_then(|e| e.to_str()))
        .flatten()
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("npy") => {
            let (_, field) = pick_field(sample, opts.field.as_deref())?;
            write_file(out, &npy_bytes(&as_tensor(field)))?;
            Ok(vec![out.to_path_buf()])
        }
        Some("png") => {
            let (name, field) = pick_field(sample, opts.field.as_deref())?;
            let Field::Tensor(t) = field else {
                bail!(
                    "field `{name}` is {}, not a tensor: nothing to draw; write it as .npy",
                    field.kind_name()
                );
            };
            write_png(out, &render(sample, name, t, is_spectrogram(workload, t))?)?;
            Ok(vec![out.to_path_buf()])
        }
        Some(other) => bail!(
            "{}: cannot write .{other}; use .npy, .png, or a directory for every field",
            out.display()
        ),
        None => {
            // A directory: every field as NAME.npy, and NAME.png where it can be drawn.
            let mut written = Vec::new();
            for (name, field) in sample.fields() {
                let npy = out.join(format!("{name}.npy"));
                write_file(&npy, &npy_bytes(&as_tensor(field)))?;
                written.push(npy);
                if let Field::Tensor(t) = field {
                    if let Ok(img) = render(sample, name, t, is_spectrogram(workload, t)) {
                        let png = out.join(format!("{name}.png"));
                        write_png(&png, &img)?;
                        written.push(png);
                    }
                }
            }
            Ok(written)
        }
    }
}

/// `prepbench show`: the text to print.
pub fn show(opts: &ShowOptions) -> anyhow::Result<String> {
    let workload = crate::plan::settings::load_workload(&opts.workload, opts.dataset.as_deref())?;
    let end = resolve_end(&workload, opts.after.as_deref(), opts.strategy.as_deref())?;
    if !opts.list && opts.out.is_none() {
        bail!("say what to show: --out PATH (.npy, .png or a directory) or --list");
    }
    // Showing sample N generates the first N + 1 when the data is missing: only within the
    // workload's own samples, never a dataset far larger than asked for by a typo.
    let samples = workload.spec.dataset.samples;
    if opts.sample >= samples {
        bail!(
            "--sample {}: the workload `{}` has {samples} samples; show one from 0 to {}",
            opts.sample,
            workload.spec.label(),
            samples.saturating_sub(1)
        );
    }
    let source = crate::measure::session::open_dataset(
        &workload,
        &opts.data_dir,
        opts.sample + 1,
        crate::cli::default_threads(),
        &crate::progress::Progress { quiet: true },
    )?;
    if opts.sample >= source.len() {
        bail!(
            "sample {} is beyond the {} samples of {}",
            opts.sample,
            source.len(),
            source.root.display()
        );
    }
    for def in &workload.steps[..end] {
        def.step
            .prepare()
            .map_err(|e| anyhow::anyhow!("preparing step `{}`: {}", def.name, e.message))?;
    }
    let ctx = StepContext {
        seed: opts.seed,
        epoch: opts.epoch,
        step_index: 0,
        files: Some(source.files.as_read()),
    };
    if opts.list {
        return list_table(&workload, &source, opts, ctx);
    }
    let sample = run_steps(
        &workload,
        &source,
        source.sample(opts.sample),
        0..end,
        opts.part,
        ctx,
    )?;
    let out = opts.out.as_deref().expect("checked above");
    // A picture of a sample never lands in the dataset it came from, nor in a generated one.
    let root = crate::measure::session::dataset_root(&workload, &opts.data_dir)?;
    // Checked as the folder written into: `--out x.png` writes into x.png's folder.
    let folder = match picture_file(out) {
        true => out.parent().filter(|p| !p.as_os_str().is_empty()),
        false => Some(out),
    };
    let folder = folder.unwrap_or(Path::new("."));
    crate::measure::places::check_places(&[root.as_path()], &[("--out", folder)])?;
    if !picture_file(out) {
        // A folder of every field: only one that holds nothing but such pictures and arrays.
        crate::measure::places::check_own_folder("--out", out, |name| {
            name.ends_with(".npy") || name.ends_with(".png") || name.starts_with('.')
        })?;
    }
    let written = write_outputs(&workload, &sample, opts, out)?;
    let after = if end == 0 {
        "the source".to_string()
    } else {
        format!("step `{}`", workload.steps[end - 1].name)
    };
    let mut text = format!(
        "{} sample {} after {after}:\n",
        workload.spec.label(),
        opts.sample
    );
    for (name, field) in sample.fields() {
        let (kind, dtype, shape) = describe(field);
        let _ = writeln!(
            text,
            "  {name}: {kind} {dtype} {shape}, {} bytes",
            field.size_bytes()
        );
    }
    for path in written {
        let _ = writeln!(text, "wrote {}", path.display());
    }
    Ok(text)
}

impl From<crate::cli::ShowArgs> for ShowOptions {
    /// What `show` is asked for.
    fn from(args: crate::cli::ShowArgs) -> ShowOptions {
        ShowOptions {
            workload: args.workload,
            sample: args.sample,
            part: args.part,
            after: args.after,
            strategy: args.strategy,
            field: args.field,
            out: args.out,
            list: args.list,
            seed: args.seed,
            epoch: args.epoch,
            data_dir: args.data_dir,
            dataset: args.dataset,
        }
    }
}

#[cfg(test)]
mod tests;
