//! A chain of consecutive Python steps run by one worker per thread, and the pools of chains a
//! workload keeps.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex, RwLock};

use super::link::Link;
use super::worker::{Gone, Outcome, Request, Worker};
use crate::error::StepError;
use crate::sample::{FieldName, Sample};

/// Why a chain failed on a sample: the link (its index in the chain) and the error.
#[derive(Debug)]
pub struct ChainError {
    pub link: usize,
    pub error: StepError,
}

/// Consecutive Python steps and the idle workers that run them.
pub struct Chain {
    links: Vec<Link>,
    /// A link takes every field: all are sent. Otherwise only the fields a link reads are,
    /// and the others by name (the worker keeps their order; prepbench keeps their values).
    send_all: bool,
    reads: Vec<String>,
    idle: Mutex<Vec<Worker>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain").field("links", &self.links).finish()
    }
}

impl Chain {
    pub fn new(links: Vec<Link>) -> Chain {
        let send_all = links.iter().any(|l| l.from.is_none());
        let mut reads: Vec<String> = links.iter().filter_map(|l| l.from.clone()).collect();
        reads.sort();
        reads.dedup();
        Chain {
            links,
            send_all,
            reads,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// A worker that could not start (its message names the callable) as the chain's error.
    fn not_started(&self, gone: Gone) -> ChainError {
        ChainError {
            link: gone.link.min(self.links.len().saturating_sub(1)),
            error: StepError::new(gone.message),
        }
    }

    /// A worker that died on a sample, named with the callable it was running.
    fn died(&self, gone: Gone) -> ChainError {
        let link = gone.link.min(self.links.len().saturating_sub(1));
        ChainError {
            link,
            error: StepError::new(format!(
                "{} failed: {}",
                self.links[link].described(),
                gone.message
            )),
        }
    }

    /// A new worker.
    fn start(&self) -> Result<Worker, ChainError> {
        Worker::start(&self.links).map_err(|g| self.not_started(g))
    }

    /// Starts workers until `threads` are idle, before a timed phase: starting an interpreter
    /// is not charged to a sample, and an import error stops the run before anything is timed.
    pub fn start_workers(&self, threads: usize) -> Result<(), ChainError> {
        let idle = self.idle.lock().map(|i| i.len()).unwrap_or(0);
        let started: Vec<Worker> = (idle..threads)
            .map(|_| self.start())
            .collect::<Result<_, _>>()?;
        if let Ok(mut idle) = self.idle.lock() {
            idle.extend(started);
        }
        Ok(())
    }

    /// Ends the idle workers (a phase that runs other chains has begun).
    pub fn retire(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }

    /// Runs every link on `sample` in one worker, seeding link k with `seeds[k]`; each link's
    /// own time (inside its callable, and the seeding of a random one) is appended to
    /// `inside_ns` (also when a link fails).
    pub fn apply(
        &self,
        sample: Sample,
        seeds: &[u64],
        epoch: u64,
        inside_ns: &mut Vec<u64>,
    ) -> Result<Sample, ChainError> {
        let mut worker = self.take()?;
        // A worker that is gone is dropped here; a new one serves the next sample.
        let reply = worker
            .call(&self.request(&sample, seeds, epoch))
            .map_err(|g| self.died(g))?;
        self.give_back(worker);
        inside_ns.extend(&reply.inside_ns);
        self.finish(sample, reply.outcome, reply.inside_ns.len())
    }

    /// An idle worker, or a new one.
    fn take(&self) -> Result<Worker, ChainError> {
        match self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            Some(worker) => Ok(worker),
            None => self.start(),
        }
    }

    fn give_back(&self, worker: Worker) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(worker);
        }
    }

    /// What a worker is sent for `sample`: the fields the links read (all when one takes the
    /// whole sample), the others by name.
    fn request<'a>(&self, sample: &'a Sample, seeds: &'a [u64], epoch: u64) -> Request<'a> {
        Request {
            id: sample.id,
            epoch,
            seeds,
            fields: sample
                .fields()
                .iter()
                .map(|(name, field)| {
                    let sent = self.send_all || self.reads.iter().any(|r| r == name);
                    (name.as_str(), sent.then_some(field))
                })
                .collect(),
        }
    }

    /// The sample a chain's outcome makes of `old` (`ran`: the links run), or its error.
    fn finish(&self, old: Sample, outcome: Outcome, ran: usize) -> Result<Sample, ChainError> {
        let last = ran.saturating_sub(1);
        let link = &self.links[last.min(self.links.len() - 1)];
        match outcome {
            Outcome::Done(fields) => {
                let mut old = old;
                let mut out = Sample::new(old.id);
                for (name, field) in fields {
                    let named = |message: String| ChainError {
                        link: last,
                        error: StepError::new(format!(
                            "{} returned field {name:?}: {message}",
                            link.described()
                        )),
                    };
                    FieldName::try_from(name.clone()).map_err(named)?;
                    let field = match field {
                        Some(field) => field,
                        None => old.remove(&name).ok_or_else(|| {
                            named("the worker kept a field the sample does not have".into())
                        })?,
                    };
                    out.set(&name, field);
                }
                Ok(out)
            }
            Outcome::Raised { message, traceback } => Err(ChainError {
                link: last,
                error: StepError::with_detail(
                    format!("{} raised {message}", link.described()),
                    traceback,
                ),
            }),
            Outcome::Missing { names } => Err(ChainError {
                link: last,
                error: StepError::new(format!(
                    "no field `{}` to give {}; the sample has: {names}",
                    link.from.as_deref().unwrap_or_default(),
                    link.described()
                )),
            }),
        }
    }
}

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

/// The chains a workload's phases run, by the range of steps they cover.
#[derive(Default)]
pub struct Pools {
    /// Looked up for every sample by every thread: read-locked, written once per chain.
    chains: RwLock<HashMap<(usize, usize), Arc<Chain>>>,
}

impl std::fmt::Debug for Pools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.chains.read().map(|c| c.len()).unwrap_or(0);
        write!(f, "Pools {{ {count} chains }}")
    }
}

impl Pools {
    /// The chain of steps `range`, made from `links` the first time.
    pub fn get(&self, range: Range<usize>, links: impl FnOnce() -> Vec<Link>) -> Arc<Chain> {
        let key = (range.start, range.end);
        if let Some(chain) = self
            .chains
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return chain.clone();
        }
        let mut chains = self.chains.write().unwrap_or_else(|e| e.into_inner());
        chains
            .entry(key)
            .or_insert_with(|| Arc::new(Chain::new(links())))
            .clone()
    }

    /// Ends the idle workers of every chain but `keep`'s, so that the workers of phases run
    /// before do not stay alive beside this one's.
    pub fn retire_others(&self, keep: &[Range<usize>]) {
        let chains = self.chains.read().unwrap_or_else(|e| e.into_inner());
        for ((start, end), chain) in chains.iter() {
            if !keep.iter().any(|r| r.start == *start && r.end == *end) {
                chain.retire();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Field;

    /// Standard library only (bytes and str), so that any `python3` runs it.
    const MODULE: &str = r#"
def split(sample):
    return {"b": sample["data"].upper(), "a": sample["data"], "label": sample["label"]}


def join(a):
    return {"c": a + b"!", "a2": a}


def lower(b):
    return b.lower()


def size(sample):
    return "|".join(sample)


def shout(data):
    return data.upper()


def fail(c):
    raise ValueError("no " + c.decode())


class Suffix:
    def __init__(self, text, twice=False):
        self.text = text.encode() * (2 if twice else 1)

    def __call__(self, data):
        return data + self.text
"#;

    fn python3() -> bool {
        let ok = std::process::Command::new(super::super::interpreter())
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("skipped: no python3 to run Python steps with");
        }
        ok
    }

    fn link(dir: &std::path::Path, function: &str, from: Option<&str>, to: &str) -> Link {
        Link {
            function: format!("chained:{function}"),
            search_path: dir.to_path_buf(),
            from: from.map(String::from),
            to: to.into(),
            random: false,
            init: None,
        }
    }

    fn sample() -> Sample {
        Sample::new(5)
            .with("label", Field::Text("cat".into()))
            .with("data", Field::Bytes(b"Hello".to_vec()))
            .with("extra", Field::Bytes(vec![1, 2, 3]))
    }

    /// A chain gives what its links give one after another, each alone: the same fields in
    /// the same order, fields it does not read kept in place, a dict without `from` replacing
    /// the sample, one value going to `to`.
    #[test]
    fn a_chain_gives_what_its_links_give_one_by_one() {
        if !python3() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chained.py"), MODULE).unwrap();
        let d = dir.path();
        for links in [
            vec![
                link(d, "split", None, "data"),
                link(d, "join", Some("a"), "a"),
                link(d, "lower", Some("b"), "d"),
                link(d, "size", None, "data"),
            ],
            vec![
                link(d, "shout", Some("data"), "data"),
                link(d, "lower", Some("data"), "low"),
            ],
            vec![link(d, "shout", Some("data"), "loud")],
        ] {
            let seeds: Vec<u64> = (0..links.len() as u64).collect();
            let mut inside = Vec::new();
            let chained = Chain::new(links.clone())
                .apply(sample(), &seeds, 0, &mut inside)
                .unwrap();
            assert_eq!(inside.len(), links.len());
            let mut one_by_one = sample();
            for (k, l) in links.iter().enumerate() {
                one_by_one = Chain::new(vec![l.clone()])
                    .apply(one_by_one, &seeds[k..=k], 0, &mut Vec::new())
                    .unwrap();
            }
            assert_eq!(chained, one_by_one, "{links:?}");
        }
        // The fields not read stay where they were.
        let kept = Chain::new(vec![link(d, "shout", Some("data"), "data")])
            .apply(sample(), &[0], 0, &mut Vec::new())
            .unwrap();
        let names: Vec<&str> = kept.fields().iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["label", "extra", "data"],
            "`from` is replaced at the end"
        );
        assert_eq!(kept.get("data"), Some(&Field::Bytes(b"HELLO".to_vec())));
        // A failure names the link it happened in; a missing field names what the sample has.
        let chain = Chain::new(vec![
            link(d, "join", Some("data"), "data"),
            link(d, "fail", Some("c"), "c"),
            link(d, "shout", Some("data"), "data"),
        ]);
        let mut inside = Vec::new();
        let err = chain
            .apply(sample(), &[0, 1, 2], 0, &mut inside)
            .unwrap_err();
        assert_eq!(err.link, 1);
        assert_eq!(inside.len(), 2, "the failed call's time is kept");
        assert!(
            err.error.message.contains("chained:fail")
                && err.error.message.contains("ValueError: no Hello!"),
            "{}",
            err.error.message
        );
        assert!(err.error.detail.unwrap().contains("Traceback"));
        let err = Chain::new(vec![
            link(d, "shout", Some("data"), "data"),
            link(d, "lower", Some("nothere"), "x"),
        ])
        .apply(sample(), &[0, 1], 0, &mut Vec::new())
        .unwrap_err();
        assert_eq!(err.link, 1);
        assert!(
            err.error.message.contains("no field `nothere`")
                && err.error.message.contains("label, extra, data"),
            "{}",
            err.error.message
        );
        // A transform class is made once per worker from `init`: keywords or positional.
        for (init, expected) in [
            (r#"{"text": "!", "twice": true}"#, "Hello!!"),
            (r#"["?"]"#, "Hello?"),
        ] {
            let made = Chain::new(vec![Link {
                init: Some(init.into()),
                ..link(d, "Suffix", Some("data"), "data")
            }])
            .apply(sample(), &[0], 0, &mut Vec::new())
            .unwrap();
            assert_eq!(
                made.get("data"),
                Some(&Field::Bytes(expected.as_bytes().to_vec()))
            );
        }
        // An import error names the link that does not import.
        let err = Chain::new(vec![
            link(d, "shout", Some("data"), "data"),
            link(d, "absent", Some("data"), "data"),
        ])
        .start_workers(1)
        .unwrap_err();
        assert_eq!(err.link, 1);
        assert!(
            err.error.message.contains("absent"),
            "{}",
            err.error.message
        );
    }

    /// A lease keeps two samples in its worker and gives them back in order: a sample whose
    /// callable raises fails alone; a worker killed on a sample fails that sample, and the one
    /// queued behind it runs on a new worker; dropped, it gives its worker back.
    #[test]
    fn a_lease_gives_samples_back_in_order_through_errors_and_a_killed_worker() {
        if !python3() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("leased.py"),
            "import os\n\
             def mark(data):\n    \
                 if data == b'raise':\n        raise ValueError('asked to')\n    \
                 if data == b'die':\n        os.kill(os.getpid(), 9)\n    \
                 return data + b'!'\n",
        )
        .unwrap();
        let chain = Arc::new(Chain::new(vec![Link {
            function: "leased:mark".into(),
            ..link(dir.path(), "", Some("data"), "data")
        }]));
        let mut lease = Lease::new(chain.clone());
        let inputs = ["a", "raise", "b", "die", "c", "d"];
        let mut out = Vec::new();
        for (id, data) in inputs.iter().enumerate() {
            let sample =
                Sample::new(id as u64).with("data", Field::Bytes(data.as_bytes().to_vec()));
            lease.push(sample, vec![0], 0);
            if lease.len() == 2 {
                out.push(lease.oldest().unwrap());
            }
        }
        while let Some(done) = lease.oldest() {
            out.push(done);
        }
        let ids: Vec<u64> = out.iter().map(|d| d.id).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
        for (done, data) in out.iter().zip(inputs) {
            match (&done.sample, data) {
                (Err(e), "raise") => assert!(
                    e.error.message.contains("raised ValueError: asked to"),
                    "{}",
                    e.error.message
                ),
                (Err(e), "die") => assert!(
                    e.error.message.contains("killed (SIGKILL"),
                    "{}",
                    e.error.message
                ),
                (Ok(sample), _) => {
                    assert_eq!(
                        sample.get("data"),
                        Some(&Field::Bytes(format!("{data}!").into_bytes()))
                    );
                    assert_eq!(done.inside_ns.len(), 1);
                    assert!(done.moving_ns > 0);
                }
                (Err(e), _) => panic!("{data}: {}", e.error.message),
            }
        }
        drop(lease);
        assert_eq!(
            chain.idle.lock().unwrap().len(),
            1,
            "the worker is given back"
        );
    }
}
