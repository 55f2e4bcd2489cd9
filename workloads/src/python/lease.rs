//! A thread's hold on one worker of a chain for a pass, with samples queued in it.

use std::collections::VecDeque;
use std::sync::Arc;

use super::chain::{Chain, ChainError};
use super::worker::{Gone, Worker};
use crate::sample::Sample;

/// A sample queued in a [`Lease`].
struct Queued {
    sample: Sample,
    seeds: Vec<u64>,
    epoch: u64,
    /// Sent to the current worker (and not answered yet).
    sent: bool,
}

/// What a [`Lease`] gives back for one sample, in the order they were queued.
pub struct Finished {
    /// The sample's id (its output may be an error).
    pub id: u64,
    /// Each link's own time, as [`Chain::apply`] gives it.
    pub inside_ns: Vec<u64>,
    /// The time spent moving the sample to the worker and back (both sides' own work, not
    /// waiting for the other).
    pub moving_ns: u64,
    pub sample: Result<Sample, ChainError>,
}

/// One thread's hold on a worker of a chain for a pass, with up to two samples queued in it:
/// the worker goes from one sample to the next without waiting to be woken, and waking the
/// thread for a reply happens while the worker runs the next sample (as a DataLoader keeps
/// `prefetch_factor` samples queued per worker). A worker that dies fails the sample it was
/// running; the samples queued behind it are sent again to a new worker. Dropped, it waits for
/// the replies still due and gives the worker back.
pub struct Lease {
    chain: Arc<Chain>,
    worker: Option<Worker>,
    /// Why the last worker ended while samples sent to it were queued (they fail with it).
    gone: Option<Gone>,
    queue: VecDeque<Queued>,
}

impl Lease {
    /// A lease on `chain` (its worker taken when the first sample is queued).
    pub fn new(chain: Arc<Chain>) -> Lease {
        Lease {
            chain,
            worker: None,
            gone: None,
            queue: VecDeque::new(),
        }
    }

    /// Samples queued and not given back yet.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Queues `sample` (at most two wait: take one back with [`Lease::oldest`] first).
    pub fn push(&mut self, sample: Sample, seeds: Vec<u64>, epoch: u64) {
        debug_assert!(self.queue.len() < 2, "a lease queues two samples at most");
        self.queue.push_back(Queued {
            sample,
            seeds,
            epoch,
            sent: false,
        });
        // A worker that cannot start is reported by `oldest`, for the sample it could not take.
        let _ = self.send_queued();
    }

    /// Sends the queued samples not sent yet, taking a worker when there is none. Nothing is
    /// sent while samples sent to a worker that ended wait to be reported (they come first).
    fn send_queued(&mut self) -> Result<(), ChainError> {
        if self.worker.is_none() {
            if self.queue.iter().any(|q| q.sent) {
                return Ok(());
            }
            self.worker = Some(self.chain.take()?);
        }
        let worker = self.worker.as_mut().expect("taken above");
        for queued in self.queue.iter_mut().filter(|q| !q.sent) {
            let request = self
                .chain
                .request(&queued.sample, &queued.seeds, queued.epoch);
            if let Err(gone) = worker.submit(&request) {
                self.worker = None;
                self.gone = Some(gone);
                return Ok(());
            }
            queued.sent = true;
        }
        Ok(())
    }

    /// The oldest queued sample's outcome, waiting for it; `None` when nothing is queued.
    pub fn oldest(&mut self) -> Option<Finished> {
        if !self.queue.front()?.sent {
            if let Err(error) = self.send_queued() {
                let queued = self.queue.pop_front()?;
                return Some(Finished::failed(queued.sample.id, error));
            }
        }
        let queued = self.queue.pop_front()?;
        let id = queued.sample.id;
        let Some(worker) = self.worker.as_mut().filter(|_| queued.sent) else {
            // Sent to a worker that ended before answering (or sent to none: its new
            // worker took no request either).
            let gone = self.gone.take().unwrap_or(Gone {
                link: 0,
                message: "the Python worker process took no request".into(),
            });
            return Some(Finished::failed(id, self.chain.died(gone)));
        };
        Some(match worker.receive() {
            Ok(reply) => {
                let ran = reply.inside_ns.len();
                Finished {
                    id,
                    sample: self.chain.finish(queued.sample, reply.outcome, ran),
                    inside_ns: reply.inside_ns,
                    moving_ns: reply.moving_ns,
                }
            }
            Err(gone) => {
                // The worker ended on this sample; those behind it, never started, go to a
                // new worker.
                self.worker = None;
                for q in self.queue.iter_mut() {
                    q.sent = false;
                }
                Finished::failed(id, self.chain.died(gone))
            }
        })
    }
}

impl Finished {
    fn failed(id: u64, error: ChainError) -> Finished {
        Finished {
            id,
            inside_ns: Vec::new(),
            moving_ns: 0,
            sample: Err(error),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(mut worker) = self.worker.take() else {
            return;
        };
        while worker.in_flight() > 0 {
            if worker.receive().is_err() {
                return;
            }
        }
        self.chain.give_back(worker);
    }
}
