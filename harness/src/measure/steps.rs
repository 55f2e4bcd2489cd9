//! Applying a range of a workload's steps to one sample, with errors that name the sample, its
//! file and the step: what the offline phase, the native online engine, `verify` and `show`
//! share.

use std::ops::Range;

use datasets::Source;
use workloads::{Sample, StepContext, Workload};

use crate::measure::errors::{panic_message, RunError};

/// Where [`apply_steps`] adds each step's wall time, and (when given) a Python step's time
/// outside its callable; with `ahead`, the samples a thread keeps queued in a Python chain's
/// worker (online epochs).
pub struct StepSeconds<'a> {
    pub wall: &'a mut [f64],
    pub transfer: Option<&'a mut [f64]>,
    pub ahead: Option<&'a mut Lookahead>,
}

impl<'a> StepSeconds<'a> {
    /// Wall time only.
    pub fn wall(wall: &'a mut [f64]) -> StepSeconds<'a> {
        StepSeconds {
            wall,
            transfer: None,
            ahead: None,
        }
    }
}

/// A thread's samples queued in the worker of the first Python chain of its steps, two at a
/// time, so that the worker runs one while the next waits (see [`workloads::python::Lease`]):
/// [`apply_steps`] queues a sample that reaches the chain and finishes the oldest (the rest of
/// its steps, then `emit`) once two wait; [`Lookahead::finish_next`] finishes the others at
/// the end of a pass. A chain's time is then its links' own time and the time spent moving
/// the sample (both sides' work); waking the worker and the thread happens while the worker
/// runs the other sample, off the sample's path.
#[derive(Default)]
pub struct Lookahead {
    /// The lease, the chain's steps, and the end of the steps the samples then go through.
    lease: Option<(workloads::python::Lease, Range<usize>, usize)>,
}

/// Samples queued per worker: one running, one waiting.
const AHEAD: usize = 2;

impl Lookahead {
    /// Finishes the oldest queued sample: its chain's time, then the rest of its steps and
    /// `emit`. `None` when nothing is queued.
    pub fn finish_next(
        &mut self,
        workload: &Workload,
        source: &Source,
        base: StepContext,
        seconds: StepSeconds,
        emit: &mut dyn FnMut(Sample) -> Result<bool, RunError>,
    ) -> Option<Result<bool, RunError>> {
        let (lease, chain, end) = self.lease.as_mut()?;
        let (chain, end) = (chain.clone(), *end);
        let done = lease.oldest()?;
        let StepSeconds {
            wall, mut transfer, ..
        } = seconds;
        for (k, ns) in done.inside_ns.iter().enumerate() {
            if let Some(slot) = wall.get_mut(chain.start + k) {
                *slot += *ns as f64 / 1e9;
            }
        }
        let moving = done.moving_ns as f64 / 1e9;
        wall[chain.start] += moving;
        if let Some(transfer) = transfer.as_deref_mut() {
            transfer[chain.start] += moving;
        }
        Some(match done.sample {
            Err(e) => Err(step_failed(
                workload,
                source,
                done.id,
                chain.start + e.link,
                e.error,
            )),
            Ok(sample) => apply_steps(
                workload,
                chain.end..end,
                sample,
                source,
                base,
                StepSeconds {
                    wall,
                    transfer,
                    ahead: None,
                },
                emit,
            ),
        })
    }
}

/// The error of `workload`'s step `at` on sample `id` (an item, or a part of one after a
/// fan-out), naming its source file.
pub(crate) fn step_failed(
    workload: &Workload,
    source: &Source,
    id: u64,
    at: usize,
    error: workloads::StepError,
) -> RunError {
    let item = workload.item_of(id, at);
    let label = if item == id {
        id.to_string()
    } else {
        format!("{item}, part {}", workloads::parent_of(id).1)
    };
    let def = &workload.steps[at];
    RunError::Step {
        sample: label,
        // A store larger than its source cycles over it: item i is source item i mod len.
        file: source
            .items
            .get(item as usize % source.items.len().max(1))
            .map(|i| i.path.display().to_string())
            .unwrap_or_else(|| "?".into()),
        step: def.name.clone(),
        op: def.spec.op,
        message: error.message,
        detail: error.detail.map(Box::new),
    }
}

/// Runs `apply`, turning a panic (a bug: steps return errors) into a step error, so that
/// `--on-error skip` absorbs it like any other and the run goes on.
fn guarded<T>(
    apply: impl FnOnce() -> Result<T, workloads::StepError>,
) -> Result<T, workloads::StepError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(apply)) {
        Ok(result) => result,
        Err(payload) => {
            let RunError::Panic(text) = panic_message(payload) else {
                unreachable!("panic_message makes a panic")
            };
            Err(workloads::StepError::new(format!(
                "the step panicked ({text}); this is a bug in prepbench, please report it with \
                 this file"
            )))
        }
    }
}

/// Runs `steps[range]` of `workload` on `sample` at `epoch` and hands every output to `emit`
/// (one, or after a fan-out step any number; each child numbered by [`workloads::child_id`]).
/// `emit` returns false when nobody wants more samples, which ends the work early. Each step's
/// wall time is added to `step_seconds[step_index]` (the time inside `emit` is not), and a
/// Python step's time outside its callable (moving the sample to and from its worker) also to
/// `transfer_seconds[step_index]` when given. Consecutive Python steps run as one chain in one
/// worker: each gets the time inside its callable, and the chain's first step also the
/// chain's one round trip (its transfer). `base` gives the seed, epoch and file reader; its
/// `step_index` is set per step.
pub fn apply_steps(
    workload: &Workload,
    range: Range<usize>,
    mut sample: Sample,
    source: &Source,
    base: StepContext,
    seconds: StepSeconds,
    emit: &mut dyn FnMut(Sample) -> Result<bool, RunError>,
) -> Result<bool, RunError> {
    let StepSeconds {
        wall,
        mut transfer,
        mut ahead,
    } = seconds;
    let mut step_index = range.start;
    while step_index < range.end {
        let def = &workload.steps[step_index];
        if def.step.python_link().is_some() {
            let steps = workload.python_run(step_index, range.end);
            let seeds = chain_seeds(base, steps.clone(), sample.id);
            // The first chain a thread's samples reach (the same for all of them) queues them;
            // any other runs one sample at a time.
            let queued = ahead.as_deref_mut().filter(|a| {
                a.lease
                    .as_ref()
                    .is_none_or(|(_, s, to)| s.start == step_index && *to == range.end)
            });
            if let Some(ahead) = queued {
                let lease = &mut ahead
                    .lease
                    .get_or_insert_with(|| {
                        let chain = workload.python_chain(steps.clone());
                        (workloads::python::Lease::new(chain), steps, range.end)
                    })
                    .0;
                lease.push(sample, seeds, base.epoch);
                if lease.len() < AHEAD {
                    return Ok(true);
                }
                let seconds = StepSeconds {
                    wall,
                    transfer,
                    ahead: None,
                };
                return ahead
                    .finish_next(workload, source, base, seconds, emit)
                    .unwrap_or(Ok(true));
            }
            sample = run_chain(
                workload,
                source,
                base,
                steps.clone(),
                sample,
                &seeds,
                wall,
                transfer.as_deref_mut(),
            )?;
            step_index = steps.end;
            continue;
        }
        if def.spec.facts.fan_out {
            let seconds = StepSeconds {
                wall,
                transfer,
                ahead,
            };
            return fan_out(
                workload,
                step_index..range.end,
                sample,
                source,
                base,
                seconds,
                emit,
            );
        }
        let start = std::time::Instant::now();
        let ctx = StepContext { step_index, ..base };
        let id = sample.id;
        sample = guarded(|| def.step.apply(sample, &ctx))
            .map_err(|e| step_failed(workload, source, id, step_index, e))?;
        wall[step_index] += start.elapsed().as_secs_f64();
        step_index += 1;
    }
    emit(sample)
}

/// The seed of each Python step of `steps` for sample `id`: the draws a Rust step at that
/// position would start from.
fn chain_seeds(base: StepContext, steps: Range<usize>, id: u64) -> Vec<u64> {
    steps
        .map(|i| {
            StepContext {
                step_index: i,
                ..base
            }
            .rng(id)
            .next_u64()
        })
        .collect()
}

/// Runs the chain of Python steps `steps` on one sample in one round trip: each step gets the
/// time inside its callable, the chain's first step the rest of the round trip (its transfer,
/// also added to `transfer` when given).
#[allow(clippy::too_many_arguments)]
fn run_chain(
    workload: &Workload,
    source: &Source,
    base: StepContext,
    steps: Range<usize>,
    sample: Sample,
    seeds: &[u64],
    wall: &mut [f64],
    transfer: Option<&mut [f64]>,
) -> Result<Sample, RunError> {
    let start = std::time::Instant::now();
    let (first, id) = (steps.start, sample.id);
    let chain = workload.python_chain(steps.clone());
    let mut inside_ns = Vec::with_capacity(steps.len());
    let mut at = first;
    let sample = guarded(|| {
        chain
            .apply(sample, seeds, base.epoch, &mut inside_ns)
            .map_err(|e| {
                at = first + e.link;
                e.error
            })
    })
    .map_err(|e| step_failed(workload, source, id, at, e))?;
    let elapsed = start.elapsed().as_secs_f64();
    let inside: Vec<f64> = inside_ns.iter().map(|ns| *ns as f64 / 1e9).collect();
    let later: f64 = inside.iter().skip(1).sum();
    for (k, seconds) in inside.iter().enumerate().skip(1) {
        wall[first + k] += seconds;
    }
    wall[first] += (elapsed - later).max(0.0);
    if let Some(transfer) = transfer {
        transfer[first] += (elapsed - later - inside.first().unwrap_or(&0.0)).max(0.0);
    }
    Ok(sample)
}

/// Runs the fan-out step at `range.start` on `sample`, then the rest of `range` on each of its
/// children (numbered by [`workloads::child_id`]); `Ok(false)` when nobody wants more.
fn fan_out(
    workload: &Workload,
    range: Range<usize>,
    sample: Sample,
    source: &Source,
    base: StepContext,
    seconds: StepSeconds,
    emit: &mut dyn FnMut(Sample) -> Result<bool, RunError>,
) -> Result<bool, RunError> {
    let StepSeconds {
        wall,
        mut transfer,
        mut ahead,
    } = seconds;
    let (step_index, id) = (range.start, sample.id);
    let def = &workload.steps[step_index];
    let failed = |error| step_failed(workload, source, id, step_index, error);
    let ctx = StepContext { step_index, ..base };
    let start = std::time::Instant::now();
    let mut children = Vec::new();
    guarded(|| def.step.apply_many(sample, &ctx, &mut children)).map_err(failed)?;
    wall[step_index] += start.elapsed().as_secs_f64();
    for (j, mut child) in children.into_iter().enumerate() {
        child.id = workloads::child_id(id, j).map_err(failed)?;
        let more = apply_steps(
            workload,
            step_index + 1..range.end,
            child,
            source,
            base,
            StepSeconds {
                wall,
                transfer: transfer.as_deref_mut(),
                ahead: ahead.as_deref_mut(),
            },
            emit,
        )?;
        if !more {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Starts what the steps `range` of `workload` need on `threads` threads (the workers of its
/// Python chains) before a timed phase.
pub fn start_workers(
    workload: &Workload,
    range: Range<usize>,
    threads: usize,
) -> Result<(), RunError> {
    workload
        .start_python(range, threads)
        .map_err(|(index, e)| RunError::Start {
            step: workload.steps[index].name.clone(),
            message: e.message,
        })
}
