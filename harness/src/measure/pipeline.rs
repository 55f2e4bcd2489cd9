//! Applying a range of a workload's steps to one sample, with errors that name the sample, its
//! file and the step.

use std::ops::Range;

use datasets::Source;
use thiserror::Error;
use workloads::encoding::EncodingError;
use workloads::{Sample, StepContext, Workload};

use crate::results::{Skipped, StageName};
use crate::store::StoreError;

/// Why a run stopped.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("sample {sample} ({file}), step `{step}` (op {op}): {message}")]
    Step {
        /// The sample id, or for an output of a fan-out step "ITEM, part J".
        sample: String,
        file: String,
        step: String,
        op: &'static str,
        message: String,
        /// A Python step's traceback, for errors.csv (boxed: the error stays small).
        detail: Option<Box<String>>,
    },
    #[error("{shard}: record {record}: {source}")]
    Decode {
        shard: String,
        record: u64,
        source: EncodingError,
    },
    #[error(
        "{shard}: record {record} holds sample id {id}, beyond the {samples} samples of this run"
    )]
    UnknownSample {
        shard: String,
        record: u64,
        id: u64,
        samples: usize,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    #[error("a worker thread panicked: {0}")]
    Panic(String),
    #[error("starting step `{step}`: {message}")]
    Start { step: String, message: String },
    #[error("could not start {what} thread {index} of {count}: {source} (lower --threads, or raise the process's thread limit)")]
    Spawn {
        what: &'static str,
        index: usize,
        count: usize,
        source: std::io::Error,
    },
}

/// Starts worker `index` of `count` in `scope`: a start the system refuses (its thread or
/// memory limit) is an error naming it, where `scope.spawn` would panic.
pub fn spawn_worker<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    builder: std::thread::Builder,
    (what, index, count): (&'static str, usize, usize),
    work: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, RunError> {
    builder
        .name(format!("{what}-{index}"))
        .spawn_scoped(scope, work)
        .map_err(|source| RunError::Spawn {
            what,
            index,
            count,
            source,
        })
}

impl RunError {
    /// The error as a skipped sample, when it concerns one sample or record (bad input); `None`
    /// for errors of the machine or the program (I/O, a panic), which always stop the run.
    pub fn skipped(&self) -> Option<Skipped> {
        Some(match self {
            RunError::Step {
                sample,
                file,
                step,
                message,
                detail,
                ..
            } => Skipped {
                sample: sample.clone(),
                file: file.clone(),
                stage: StageName::Step(step.clone()),
                count: 1,
                message: message.clone(),
                detail: detail.as_deref().cloned().unwrap_or_default(),
            },
            RunError::Decode {
                shard,
                record,
                source,
            } => Skipped {
                sample: format!("record {record}"),
                file: shard.clone(),
                stage: StageName::Deserialize,
                count: 1,
                message: source.to_string(),
                detail: String::new(),
            },
            RunError::UnknownSample {
                shard, record, id, ..
            } => Skipped {
                sample: format!("record {record}"),
                file: shard.clone(),
                stage: StageName::Deserialize,
                count: 1,
                message: format!("holds sample id {id}, beyond this run's samples"),
                detail: String::new(),
            },
            RunError::Store(StoreError::Corrupt {
                shard,
                record,
                offset,
                what,
                ..
            }) => Skipped {
                sample: format!("record {record}"),
                file: shard.clone(),
                stage: StageName::Read,
                count: 1,
                message: format!("{what} at byte {offset}"),
                detail: String::new(),
            },
            _ => return None,
        })
    }
}

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
fn step_failed(
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
        wall: step_seconds,
        transfer: mut transfer_seconds,
        mut ahead,
    } = seconds;
    let mut step_index = range.start;
    while step_index < range.end {
        let def = &workload.steps[step_index];
        let ctx = StepContext { step_index, ..base };
        let id = sample.id;
        let failed =
            |at: usize, error: workloads::StepError| step_failed(workload, source, id, at, error);
        let start = std::time::Instant::now();
        if def.step.python_link().is_some() {
            let end = workload.python_run(step_index, range.end).end;
            let chain = workload.python_chain(step_index..end);
            let seeds: Vec<u64> = (step_index..end)
                .map(|i| {
                    StepContext {
                        step_index: i,
                        ..base
                    }
                    .rng(id)
                    .next_u64()
                })
                .collect();
            // The first chain a thread's samples reach (the same for all of them) queues them;
            // any other runs one sample at a time.
            let queued = ahead.as_deref_mut().filter(|a| {
                a.lease
                    .as_ref()
                    .is_none_or(|(_, steps, to)| steps.start == step_index && *to == range.end)
            });
            if let Some(ahead) = queued {
                let lease = &mut ahead
                    .lease
                    .get_or_insert_with(|| {
                        (
                            workloads::python::Lease::new(chain.clone()),
                            step_index..end,
                            range.end,
                        )
                    })
                    .0;
                lease.push(sample, seeds, base.epoch);
                if lease.len() < AHEAD {
                    return Ok(true);
                }
                return ahead
                    .finish_next(
                        workload,
                        source,
                        base,
                        StepSeconds {
                            wall: step_seconds,
                            transfer: transfer_seconds,
                            ahead: None,
                        },
                        emit,
                    )
                    .unwrap_or(Ok(true));
            }
            let mut inside_ns = Vec::with_capacity(end - step_index);
            let mut at = step_index;
            sample = guarded(|| {
                chain
                    .apply(sample, &seeds, base.epoch, &mut inside_ns)
                    .map_err(|e| {
                        at = step_index + e.link;
                        e.error
                    })
            })
            .map_err(|e| failed(at, e))?;
            let elapsed = start.elapsed().as_secs_f64();
            let inside: Vec<f64> = inside_ns.iter().map(|ns| *ns as f64 / 1e9).collect();
            let later: f64 = inside.iter().skip(1).sum();
            for (k, seconds) in inside.iter().enumerate().skip(1) {
                step_seconds[step_index + k] += seconds;
            }
            step_seconds[step_index] += (elapsed - later).max(0.0);
            if let Some(transfer) = transfer_seconds.as_deref_mut() {
                transfer[step_index] += (elapsed - later - inside.first().unwrap_or(&0.0)).max(0.0);
            }
            step_index = end;
            continue;
        }
        if def.spec.facts.fan_out {
            let mut children = Vec::new();
            guarded(|| def.step.apply_many(sample, &ctx, &mut children))
                .map_err(|e| failed(step_index, e))?;
            step_seconds[step_index] += start.elapsed().as_secs_f64();
            for (j, mut child) in children.into_iter().enumerate() {
                child.id = workloads::child_id(id, j).map_err(|e| failed(step_index, e))?;
                let rest = step_index + 1..range.end;
                let more = apply_steps(
                    workload,
                    rest,
                    child,
                    source,
                    base,
                    StepSeconds {
                        wall: step_seconds,
                        transfer: transfer_seconds.as_deref_mut(),
                        ahead: ahead.as_deref_mut(),
                    },
                    emit,
                )?;
                if !more {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        sample = guarded(|| def.step.apply(sample, &ctx)).map_err(|e| failed(step_index, e))?;
        step_seconds[step_index] += start.elapsed().as_secs_f64();
        step_index += 1;
    }
    emit(sample)
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

/// Turns a worker's panic payload into an error instead of unwinding through the harness.
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> RunError {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    RunError::Panic(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_the_system_refuses_is_an_error_naming_it() {
        std::thread::scope(|scope| {
            // No system maps a petabyte stack: the start fails as under a thread limit.
            let huge = std::thread::Builder::new().stack_size(1 << 50);
            let err = spawn_worker(scope, huge, ("online worker", 3, 8), || ()).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("online worker thread 3 of 8"), "{text}");
            assert!(text.contains("lower --threads"), "{text}");
            let fine = spawn_worker(scope, std::thread::Builder::new(), ("w", 0, 1), || 7);
            assert_eq!(fine.unwrap().join().unwrap(), 7);
        });
    }
}
