//! A chain of consecutive Python steps run by one worker per thread: its idle workers, and one
//! sample's round trip through them.

use std::sync::Mutex;

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
    pub(super) fn died(&self, gone: Gone) -> ChainError {
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
    pub(super) fn take(&self) -> Result<Worker, ChainError> {
        match self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            Some(worker) => Ok(worker),
            None => self.start(),
        }
    }

    pub(super) fn give_back(&self, worker: Worker) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(worker);
        }
    }

    /// What a worker is sent for `sample`: the fields the links read (all when one takes the
    /// whole sample), the others by name.
    pub(super) fn request<'a>(
        &self,
        sample: &'a Sample,
        seeds: &'a [u64],
        epoch: u64,
    ) -> Request<'a> {
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
    pub(super) fn finish(
        &self,
        old: Sample,
        outcome: Outcome,
        ran: usize,
    ) -> Result<Sample, ChainError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::lease::Lease;
    use crate::sample::Field;
    use std::sync::Arc;

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
