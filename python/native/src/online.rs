//! What a loader written in Python (the `torch` loader, `prepbench/_loader.py`) needs of a
//! workload to run its online phase as prepbench's own engine does: the raw items read by the
//! workload's read step (prepbench's Rust, as for every loader), the Python steps as the
//! driver runs them (their links and each sample's seeds), and a hash of an output sample that
//! `--verify` compares with the native engine's.

use std::path::PathBuf;

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use workloads::{DType, Field, Sample, StepContext, Tensor, TensorData, Workload, WorkloadSpec};

use crate::{record, Record};

pyo3::create_exception!(
    _native,
    StepFailed,
    PyException,
    "A step failed on a sample (the message names the step, the sample and its file)."
);

/// The workload's online phase from `split`, for a loader in Python.
#[pyclass(frozen, module = "prepbench._native")]
pub struct Online {
    workload: Workload,
    source: Option<datasets::Source>,
    split: usize,
    seed: u64,
    /// The Python steps' indices among the workload's steps.
    python: Vec<usize>,
    /// The latest items' outputs of the fan-out step: a loader asks for the references of an
    /// item's outputs one by one (NILM's 360 windows of an hour), and each would otherwise
    /// parse and cut the hour again.
    fanned: std::sync::Mutex<Fanned>,
}

/// The fan-out step's outputs of the items asked for last, by (item, epoch), the newest last:
/// a loader reading several files at once (tf.data's parallel reads, DataLoader's workers)
/// interleaves their outputs, so keeping one item would cut each hour again for every window.
/// At most [`FANNED_ITEMS`] items holding at most [`FANNED_BYTES`] together; the newest is kept
/// whatever its size.
#[derive(Default)]
struct Fanned(std::collections::VecDeque<(usize, u64, Vec<Sample>)>);

/// Items whose fan-out outputs are kept: more than a loader's parallel reads at 2-8 threads.
const FANNED_ITEMS: usize = 8;
/// Bytes of fan-out outputs kept (a CREAM hour's windows are about 370 MB as float64).
const FANNED_BYTES: usize = 1 << 30;

impl Fanned {
    /// Output `child` of `item` in `epoch` if its outputs are kept (`Some(None)`: kept, but it
    /// has no such output).
    fn get(&self, (item, epoch): (usize, u64), child: usize) -> Option<Option<Sample>> {
        (self.0.iter())
            .find(|(i, e, _)| (*i, *e) == (item, epoch))
            .map(|(_, _, out)| out.get(child).cloned())
    }

    /// Keeps `out`, the outputs of `item` in `epoch`, dropping the oldest past the bounds.
    fn keep(&mut self, (item, epoch): (usize, u64), out: Vec<Sample>) {
        self.0.retain(|(i, e, _)| (*i, *e) != (item, epoch));
        self.0.push_back((item, epoch, out));
        let bytes = |v: &Vec<Sample>| v.iter().map(Sample::size_bytes).sum::<usize>();
        let mut total: usize = self.0.iter().map(|(_, _, out)| bytes(out)).sum();
        while self.0.len() > 1 && (self.0.len() > FANNED_ITEMS || total > FANNED_BYTES) {
            if let Some((_, _, old)) = self.0.pop_front() {
                total -= bytes(&old);
            }
        }
    }
}

#[pymethods]
impl Online {
    /// `spec`: the workload spec as JSON; `root`: the dataset's folder, for raw input (split
    /// 0); `items`: how many of its items to open; `loader`: the loader whose forms of
    /// prepbench's steps will run the online steps (refused, naming the step, where it has
    /// none).
    #[new]
    #[pyo3(signature = (spec, split, seed, root=None, items=0, loader="torch"))]
    fn new(
        py: Python<'_>,
        spec: &str,
        split: usize,
        seed: u64,
        root: Option<PathBuf>,
        items: usize,
        loader: &str,
    ) -> PyResult<Online> {
        let spec: WorkloadSpec = serde_json::from_str(spec)
            .map_err(|e| PyValueError::new_err(format!("workload spec: {e}")))?;
        let workload = Workload::build(spec).map_err(|e| PyValueError::new_err(e.to_string()))?;
        if split > workload.steps.len() {
            return Err(PyValueError::new_err(format!(
                "split {split} of a workload of {} steps",
                workload.steps.len()
            )));
        }
        let engine = harness::measure::online::engine(loader)
            .ok_or_else(|| PyValueError::new_err(format!("no loader `{loader}`")))?;
        if let Some(why) = engine.step_refusal(&workload, split) {
            return Err(PyValueError::new_err(why));
        }
        // `items` counts raw items (files); a dataset kind counts samples, several per file
        // for some (CREAM: 360 windows an hour).
        let per_file =
            datasets::find_kind(&workload.spec.dataset.kind).map_or(1, |k| k.samples_per_file);
        let source = match root {
            None => None,
            Some(root) => Some(
                py.detach(|| {
                    let request = datasets::GenerateRequest {
                        root,
                        samples: items.saturating_mul(per_file),
                        seed: workload.spec.dataset.seed,
                        threads: 1,
                        options: workload.spec.dataset.options.clone(),
                    };
                    datasets::open_named(
                        &datasets::files::local(),
                        &workload.spec.dataset.kind,
                        &request,
                    )
                })
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            ),
        };
        let python = (split.max(1)..workload.steps.len()).collect();
        Ok(Online {
            workload,
            source,
            split,
            seed,
            python,
            fanned: Default::default(),
        })
    }

    /// Raw items the dataset holds (0 without raw input).
    #[getter]
    fn source_items(&self) -> usize {
        self.source.as_ref().map_or(0, |s| s.len())
    }

    /// The online steps after the read as (step name, kind, arguments): kind `python`, the
    /// driver's link (search path, `module:callable`, from field or "", to field, "1" for a
    /// random step or "0", init arguments as JSON or ""); kind `op`, one of prepbench's ops
    /// for `prepbench/_torch_steps.py` (op, canonical parameters as JSON, step index).
    fn links(&self) -> Vec<(String, &'static str, Vec<String>)> {
        self.python
            .iter()
            .map(|&i| {
                let def = &self.workload.steps[i];
                let Some(link) = def.step.python_link() else {
                    let params = self.workload.spec.steps[i].params.to_string();
                    let args = vec![def.spec.op.to_string(), params, i.to_string()];
                    return (def.name.clone(), "op", args);
                };
                // Seeded only when the workload marks the step random, as the native engine's
                // chains are.
                let link = workloads::python::Link {
                    random: def.random,
                    ..link.clone()
                };
                let args = link
                    .args()
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                (def.name.clone(), "python", args)
            })
            .collect()
    }

    /// The generator step `step_index` draws from for sample `sample_id` in `epoch`, as the
    /// native step does.
    fn rng(&self, epoch: u64, sample_id: u64, step_index: usize) -> Rng {
        Rng(StepContext {
            seed: self.seed,
            epoch,
            step_index,
            files: None,
        }
        .rng(sample_id))
    }

    /// Sample `sample_id` (raw item `sample_id`, cycling over the source) processed fully
    /// online by prepbench's own steps, as `--verify`'s reference makes it; `None` when a step
    /// is Python (run by the driver's workers, not here).
    fn reference(&self, py: Python<'_>, sample_id: usize, epoch: u64) -> PyResult<Option<Record>> {
        if self
            .workload
            .steps
            .iter()
            .any(|def| def.step.python_link().is_some())
        {
            return Ok(None);
        }
        self.native(py, sample_id, epoch, self.workload.steps.len())
            .map(Some)
    }

    /// The index of the workload's fan-out step (NILM's `window`), if it has one: its outputs'
    /// ids are child ids (parent item << CHILD_ID_BITS | output).
    #[getter]
    fn fan_out(&self) -> Option<usize> {
        self.workload.fan_out_step()
    }

    /// How far a sample's id is shifted right to give its raw item when it enters step
    /// `next_step`: past the fan-out step, a child id's output bits; else 0 (as
    /// `Workload::item_of`).
    fn item_shift(&self, next_step: usize) -> u32 {
        match self.workload.fan_out_step() {
            Some(f) if f < next_step => workloads::CHILD_ID_BITS,
            _ => 0,
        }
    }

    /// Whether `--verify` compares sample `sample_id` with its reference: its raw item (a
    /// fan-out step's output's parent) lies in the source's first cycle, the items the native
    /// check compares.
    fn compared(&self, sample_id: u64) -> bool {
        let item = self.workload.item_of(sample_id, self.workload.steps.len());
        item < self.source_items() as u64
    }

    /// The seed of each Python step for sample `sample_id` in `epoch`: the draws the native
    /// engine hands the driver.
    fn seeds(&self, epoch: u64, sample_id: u64) -> Vec<u64> {
        self.python
            .iter()
            .map(|&step_index| {
                StepContext {
                    seed: self.seed,
                    epoch,
                    step_index,
                    files: None,
                }
                .rng(sample_id)
                .next_u64()
            })
            .collect()
    }

    /// Step `step_index` (one of prepbench's ops) run here on sample `sample_id` of `fields`
    /// (as `verify_hash` takes them) in `epoch`: the sample's fields after it. A loader calls
    /// it for an op it runs in prepbench's own code from Python, as the paper's stack called
    /// Python per record (`tf.numpy_function`): HTML extraction and BPE.
    fn apply(
        &self,
        py: Python<'_>,
        step_index: usize,
        sample_id: u64,
        epoch: u64,
        fields: Vec<PyField>,
    ) -> PyResult<Record> {
        let def = self.workload.steps.get(step_index).ok_or_else(|| {
            PyValueError::new_err(format!(
                "step {step_index} of a workload of {} steps",
                self.workload.steps.len()
            ))
        })?;
        if def.step.python_link().is_some() || def.spec.facts.fan_out {
            return Err(PyValueError::new_err(format!(
                "step `{}` is not an op of one sample",
                def.name
            )));
        }
        let sample = self.step(
            py,
            step_index,
            sample_of(sample_id, fields)?,
            epoch,
            &|| format!("sample {sample_id}"),
        )?;
        record(workloads::encoding::encode(&sample), || {
            format!("sample {sample_id}")
        })
    }

    /// Raw item `index` (cycling over the source beyond its length) as the dataset gives it,
    /// before any step: its path and what its kind knows of it (a label).
    fn source(&self, index: usize) -> PyResult<Record> {
        let Some(source) = &self.source else {
            return Err(PyValueError::new_err(
                "no raw input: opened without a dataset root",
            ));
        };
        let payload = workloads::encoding::encode(&source.cycled_sample(index));
        record(payload, || format!("sample {index}"))
    }

    /// Raw item `index` (cycling over the source beyond its length) after the read step.
    fn read(&self, py: Python<'_>, index: usize, epoch: u64) -> PyResult<Record> {
        debug_assert_eq!(self.split, 0);
        self.native(py, index, epoch, 1)
    }
}

impl Online {
    /// Sample `id` after the first `steps` steps, run here from its raw item (cycling over the
    /// source): past a fan-out step among them, `id` is a child's (its parent item and its
    /// index among the step's outputs, as the native engine numbers them).
    fn native(&self, py: Python<'_>, id: usize, epoch: u64, steps: usize) -> PyResult<Record> {
        let Some(source) = &self.source else {
            return Err(PyValueError::new_err(
                "no raw input: opened without a dataset root",
            ));
        };
        let fan_out = self.workload.fan_out_step().filter(|&f| f < steps);
        let (item, child) = match fan_out {
            Some(_) => {
                let (parent, j) = workloads::parent_of(id as u64);
                (parent as usize, j as usize)
            }
            None => (id, 0),
        };
        let file = || {
            source
                .items
                .get(item % source.len().max(1))
                .map(|i| i.path.display().to_string())
                .unwrap_or_default()
        };
        let place = || format!("sample {id} ({})", file());
        let (mut sample, from) = match fan_out {
            Some(f) => (
                self.fanned_output(py, (item, child), epoch, f, &place)?,
                f + 1,
            ),
            None => (source.cycled_sample(item), 0),
        };
        sample.id = id as u64;
        for step_index in from..steps {
            sample = self.step(py, step_index, sample, epoch, &place)?;
        }
        let payload = workloads::encoding::encode(&sample);
        record(payload, || format!("sample {id}"))
    }

    /// Output `child` of the fan-out step (index `fan_out`) on raw item `item` in `epoch`: the
    /// steps up to it run here once per item and epoch while its outputs are kept ([`Fanned`]).
    fn fanned_output(
        &self,
        py: Python<'_>,
        (item, child): (usize, usize),
        epoch: u64,
        fan_out: usize,
        place: &dyn Fn() -> String,
    ) -> PyResult<Sample> {
        let lock = || self.fanned.lock().unwrap_or_else(|e| e.into_inner());
        let hit = lock().get((item, epoch), child);
        let found = match hit {
            Some(found) => found,
            None => {
                let source = self.source.as_ref().expect("checked by the caller");
                let mut sample = source.cycled_sample(item);
                for step_index in 0..fan_out {
                    sample = self.step(py, step_index, sample, epoch, place)?;
                }
                let out = self.guarded(py, fan_out, epoch, place, |def, ctx| {
                    let mut out = Vec::new();
                    def.step.apply_many(sample, ctx, &mut out).map(|()| out)
                })?;
                let found = out.get(child).cloned();
                lock().keep((item, epoch), out);
                found
            }
        };
        found.ok_or_else(|| {
            StepFailed::new_err(format!(
                "step `{}` made no output {child} of {}",
                self.workload.steps[fan_out].name,
                place()
            ))
        })
    }

    /// Step `step_index` run on `sample` in `epoch`, the GIL released; a failure or a panic
    /// named by the step and `place` (the sample, its file).
    fn step(
        &self,
        py: Python<'_>,
        step_index: usize,
        sample: Sample,
        epoch: u64,
        place: &dyn Fn() -> String,
    ) -> PyResult<Sample> {
        self.guarded(py, step_index, epoch, place, |def, ctx| {
            def.step.apply(sample, ctx)
        })
    }

    /// `run` on step `step_index` and its context in `epoch`, the GIL released; a failure or a
    /// panic named by the step and `place`.
    fn guarded<T: Send>(
        &self,
        py: Python<'_>,
        step_index: usize,
        epoch: u64,
        place: &dyn Fn() -> String,
        run: impl FnOnce(&workloads::StepDef, &StepContext) -> Result<T, workloads::StepError> + Send,
    ) -> PyResult<T> {
        let def = &self.workload.steps[step_index];
        let ctx = StepContext {
            seed: self.seed,
            epoch,
            step_index,
            files: None,
        };
        let done =
            py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(def, &ctx))));
        match done {
            Ok(Ok(sample)) => Ok(sample),
            Ok(Err(e)) => Err(StepFailed::new_err(format!(
                "step `{}` failed on {}: {}",
                def.name,
                place(),
                e.message
            ))),
            Err(_) => Err(StepFailed::new_err(format!(
                "step `{}` panicked on {}",
                def.name,
                place()
            ))),
        }
    }
}

/// A step's generator (prepbench's `SeededRng`), for a Python form of a random step to draw
/// what the native step draws.
#[pyclass(module = "prepbench._native")]
pub struct Rng(workloads::rng::SeededRng);

#[pymethods]
impl Rng {
    /// The generator of `seed`.
    #[new]
    fn new(seed: u64) -> Rng {
        Rng(workloads::rng::SeededRng::new(seed))
    }

    /// The generator a step draws from: `parts` are the run's seed, the sample, the epoch and
    /// the step's index.
    #[staticmethod]
    fn from_parts(parts: Vec<u64>) -> Rng {
        Rng(workloads::rng::SeededRng::from_parts(&parts))
    }

    /// The next raw 64-bit draw.
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// An index in `[0, n)`: the next draw modulo `n`, as a crop's corner is drawn.
    fn index(&mut self, n: u64) -> PyResult<u64> {
        if n == 0 {
            return Err(PyValueError::new_err("index(0)"));
        }
        Ok(self.0.index(n))
    }

    /// A uniform float in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        self.0.unit_f64()
    }
}

/// The `--verify` hash of a sample (`Sample::unordered_hash`) from its id and fields, each
/// (name, "tensor" | "bytes" | "text", NumPy dtype string or None, shape, bytes).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn verify_hash(id: u64, fields: Vec<PyField>) -> PyResult<u64> {
    Ok(sample_of(id, fields)?.unordered_hash())
}

/// A field as Python gives it: (name, "tensor" | "bytes" | "text", NumPy dtype string or
/// None, shape, bytes).
type PyField = (String, String, Option<String>, Vec<usize>, Vec<u8>);

/// Sample `id` of `fields`.
fn sample_of(id: u64, fields: Vec<PyField>) -> PyResult<Sample> {
    let mut sample = Sample::new(id);
    for (name, kind, dtype, shape, data) in fields {
        let field = match kind.as_str() {
            "bytes" => Field::Bytes(data),
            "text" => Field::Text(
                String::from_utf8(data)
                    .map_err(|_| PyValueError::new_err(format!("field `{name}` is not UTF-8")))?,
            ),
            "tensor" => {
                let dtype = dtype.as_deref().and_then(dtype_of).ok_or_else(|| {
                    PyValueError::new_err(format!("field `{name}`: dtype {dtype:?}"))
                })?;
                Field::Tensor(
                    Tensor::new(shape, TensorData::from_bytes(dtype, &data))
                        .map_err(|e| PyValueError::new_err(format!("field `{name}`: {e}")))?,
                )
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "field `{name}`: kind {other}"
                )))
            }
        };
        sample.set(&name, field);
    }
    Ok(sample)
}

fn dtype_of(numpy: &str) -> Option<DType> {
    Some(match numpy.trim_start_matches(['<', '|', '=']) {
        "u1" => DType::U8,
        "u2" => DType::U16,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return None,
    })
}
