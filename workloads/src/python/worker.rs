//! One worker process running one chain of links, and the encoding of what crosses to it.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::{Arc, Mutex};

use super::interpreter::{cannot_start, driver, interpreter, LIVE};
use super::link::Link;
use super::memory::{Memory, HEADER};
use super::wire::{bounded, encoded_len, invalid, In, Out, MAX_FIELDS, MAX_MEMORY, MAX_TEXT};
use crate::sample::Field;

/// Lines of a worker's stderr kept to explain its death.
const STDERR_LINES: usize = 20;

/// What a worker is sent for one sample.
pub struct Request<'a> {
    pub id: u64,
    pub epoch: u64,
    /// One seed per link.
    pub seeds: &'a [u64],
    /// The sample's fields in order; `None`: a field the chain does not read (its name only).
    pub fields: Vec<(&'a str, Option<&'a Field>)>,
}

/// How a chain ended on one sample.
pub enum Outcome {
    /// Every link ran: the sample's fields in order (`None`: keep prepbench's own).
    Done(Vec<(String, Option<Field>)>),
    /// The last link run raised (or returned what cannot cross): `Type: message`, traceback.
    Raised { message: String, traceback: String },
    /// The last link's `from` field is missing: the names the sample has.
    Missing { names: String },
}

/// A worker's reply: nanoseconds of each link run (its call, after seeding a random one), the
/// worker's and prepbench's own time moving the sample, and the outcome.
pub struct Reply {
    pub inside_ns: Vec<u64>,
    /// Nanoseconds spent moving the sample: prepbench writing the request and reading the
    /// reply, and the worker's time on it outside the links (reading, the code between calls,
    /// writing the reply). Not the time either side waited for the other.
    pub moving_ns: u64,
    pub outcome: Outcome,
}

/// A worker that could not start (`link`: the one that did not import), or died.
pub struct Gone {
    pub link: usize,
    pub message: String,
}

/// One worker process serving one chain, through two slots of shared memory: one sample can
/// wait in one while the worker runs the other.
pub struct Worker {
    child: Child,
    input: ChildStdin,
    /// Replies, read until the worker ends even when a helper it started holds the pipe.
    output: super::watch::Watched<ChildStdout>,
    memory: [Memory; 2],
    /// The slots holding requests not answered yet, oldest first, with the nanoseconds
    /// prepbench spent writing each.
    in_flight: VecDeque<(usize, u64)>,
    links: usize,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// A string of random length (0 to 4080 bytes, in steps of 16) for a worker's environment.
///
/// Where a process's stack and first heap objects land depends on the size of its environment,
/// and native code in the user's steps can run at very different speeds from one layout to
/// another (measured: Pillow's JPEG decode in a worker took 2.7 or 4.4 ms of CPU per 0.5 MP
/// image as the environment grew by 700 bytes; see docs/measurement.md). Each worker draws its
/// own layout, so that a run's workers and a sweep's trials sample layouts instead of all
/// inheriting one by chance.
fn layout_pad() -> String {
    use std::hash::{BuildHasher, Hasher};
    // Every RandomState has keys of its own (random per thread, then incremented per state).
    let draw = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    "x".repeat(16 * (draw % 256) as usize)
}

impl Worker {
    /// Starts a worker for `links` and waits for its imports: an import error names the link.
    pub fn start(links: &[Link]) -> Result<Worker, Gone> {
        let gone = |message: String| Gone { link: 0, message };
        let memory = [Memory::new(), Memory::new()];
        let memory = match memory {
            [Ok(a), Ok(b)] => [a, b],
            [Err(e), _] | [_, Err(e)] => {
                return Err(gone(format!(
                    "cannot make the shared memory a Python worker uses: {e}"
                )))
            }
        };
        let fds = [memory[0].raw_fd(), memory[1].raw_fd()];
        let mut command = driver(&["serve", &fds[0].to_string(), &fds[1].to_string()], links);
        command
            .env("PREPBENCH_LAYOUT_PAD", layout_pad())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        {
            use std::os::unix::process::CommandExt;
            // In a process group of its own, so that what its steps start ends with it.
            command.process_group(0);
            // SAFETY: runs in the child between fork and exec and calls only fcntl, which is
            // async-signal-safe: the memories' descriptors (close-on-exec in prepbench, so
            // other children do not inherit them) stay open in this child alone.
            unsafe {
                command.pre_exec(move || {
                    for fd in fds {
                        if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                            return Err(io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let mut child = command
            .spawn()
            .map_err(|e| gone(cannot_start(&interpreter(), &e)))?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
            let tail = stderr.clone();
            let _ = std::thread::Builder::new()
                .name("python-stderr".into())
                .spawn(move || {
                    for line in BufReader::new(err).lines() {
                        let Ok(line) = line else { break };
                        if let Ok(mut tail) = tail.lock() {
                            if tail.len() == STDERR_LINES {
                                tail.pop_front();
                            }
                            tail.push_back(line);
                        }
                    }
                });
        }
        let pid = child.id();
        let mut worker = Worker {
            input: child.stdin.take().expect("piped"),
            output: super::watch::Watched {
                pipe: child.stdout.take().expect("piped"),
                pid,
            },
            child,
            memory,
            in_flight: VecDeque::new(),
            links: links.len(),
            stderr,
        };
        if let Ok(mut live) = LIVE.lock() {
            live.push(pid);
        }
        // An interpreter that never greets (a `--python` wrapper that does not start Python,
        // an import that blocks) is ended after the start timeout rather than waited for.
        let limit = super::interpreter::start_timeout();
        let (greeted, watch) =
            super::interpreter::end_unless_answered(-(pid as libc::pid_t), limit);
        let greeting = worker.read_greeting();
        drop(greeted);
        if watch.join().unwrap_or(false) && greeting.is_err() {
            let _ = worker.child.wait();
            return Err(gone(super::interpreter::no_answer(&interpreter(), limit)));
        }
        match greeting {
            Ok(Ok(())) => Ok(worker),
            Ok(Err((link, message, traceback))) => {
                let link = link.min(links.len().saturating_sub(1));
                Err(Gone {
                    link,
                    message: format!(
                        "cannot import `{}` (module search path {}): {message}\n{traceback}",
                        links[link].function,
                        links[link].search_path.display()
                    ),
                })
            }
            Err(e) => Err(worker.died(&e)),
        }
    }

    /// Reads the reply to the imports: done, or the failing link, its error and traceback.
    fn read_greeting(&mut self) -> io::Result<Result<(), (usize, String, String)>> {
        let mut status = [0u8; 1];
        self.output.read_exact(&mut status)?;
        match status[0] {
            0 => Ok(Ok(())),
            2 => {
                let mut head = [0u8; 8];
                self.output.read_exact(&mut head)?;
                let link = u32::from_le_bytes(head[..4].try_into().expect("4")) as usize;
                let len = bounded(
                    u32::from_le_bytes(head[4..].try_into().expect("4")) as u64,
                    MAX_TEXT,
                )?;
                let mut message = vec![0u8; len];
                self.output.read_exact(&mut message)?;
                let mut len = [0u8; 4];
                self.output.read_exact(&mut len)?;
                let len = bounded(u32::from_le_bytes(len) as u64, MAX_TEXT)?;
                let mut traceback = vec![0u8; len];
                self.output.read_exact(&mut traceback)?;
                Ok(Err((
                    link,
                    String::from_utf8_lossy(&message).into_owned(),
                    String::from_utf8_lossy(&traceback).into_owned(),
                )))
            }
            other => Err(invalid(format!("unknown greeting status {other}"))),
        }
    }

    /// Runs the chain on one sample. An `Err` means the worker is gone (died, or broke the
    /// protocol), naming the link it was running: drop it.
    pub fn call(&mut self, request: &Request) -> Result<Reply, Gone> {
        self.submit(request)?;
        self.receive()
    }

    /// How many requests wait for their reply.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Sends a request into a free slot without waiting for its reply (at most two wait).
    pub fn submit(&mut self, request: &Request) -> Result<(), Gone> {
        self.send(request).map_err(|e| self.died(&e))
    }

    /// The reply to the oldest request waiting.
    pub fn receive(&mut self) -> Result<Reply, Gone> {
        self.read_reply().map_err(|e| self.died(&e))
    }

    fn send(&mut self, request: &Request) -> io::Result<()> {
        let began = std::time::Instant::now();
        let slot = match (self.in_flight.len(), self.in_flight.front()) {
            (0, _) => 0,
            (1, Some((busy, _))) => 1 - busy,
            _ => {
                return Err(io::Error::other(
                    "two requests already wait for a Python worker",
                ))
            }
        };
        let len = 8
            + 8
            + 4
            + 8 * request.seeds.len()
            + 4
            + request
                .fields
                .iter()
                .map(|(name, field)| encoded_len(name, *field))
                .sum::<usize>();
        let memory = &mut self.memory[slot];
        memory.grow(HEADER + len)?;
        let size = memory.len();
        let buf = memory.bytes_mut();
        buf[..4].copy_from_slice(&0u32.to_le_bytes());
        let mut out = Out {
            buf: &mut buf[HEADER..],
            pos: 0,
        };
        out.put(&request.id.to_le_bytes());
        out.put(&request.epoch.to_le_bytes());
        out.put(&(request.seeds.len() as u32).to_le_bytes());
        for seed in request.seeds {
            out.put(&seed.to_le_bytes());
        }
        out.put(&(request.fields.len() as u32).to_le_bytes());
        for (name, field) in &request.fields {
            out.field(name, *field);
        }
        debug_assert_eq!(out.pos, len);
        let mut message = [0u8; 24];
        message[..8].copy_from_slice(&(slot as u64).to_le_bytes());
        message[8..16].copy_from_slice(&(len as u64).to_le_bytes());
        message[16..].copy_from_slice(&(size as u64).to_le_bytes());
        let writing = began.elapsed().as_nanos() as u64;
        self.in_flight.push_back((slot, writing));
        self.input.write_all(&message)
    }

    fn read_reply(&mut self) -> io::Result<Reply> {
        let Some(&(slot, writing)) = self.in_flight.front() else {
            return Err(io::Error::other("no request waits for a reply"));
        };
        let mut message = [0u8; 24];
        self.output.read_exact(&mut message)?;
        let began = std::time::Instant::now();
        let word = |i: usize| u64::from_le_bytes(message[8 * i..8 * i + 8].try_into().expect("8"));
        if word(0) != slot as u64 {
            return Err(invalid(format!(
                "a reply for slot {} where slot {slot} was due",
                word(0)
            )));
        }
        let len = word(1);
        let size = bounded(word(2), MAX_MEMORY)?;
        let memory = &mut self.memory[slot];
        memory.follow(size)?;
        let end = HEADER as u64 + len;
        if end > size as u64 {
            return Err(invalid(format!(
                "a reply of {len} bytes in {size} bytes of memory"
            )));
        }
        let mut reply = In {
            buf: &memory.bytes()[HEADER..end as usize],
        };
        let status = reply.u8()?;
        let ran = reply.u32()? as usize;
        if ran > self.links || (status != 0 && ran == 0) {
            return Err(invalid(format!(
                "a reply for {ran} links of a chain of {}",
                self.links
            )));
        }
        let handled = reply.u64()?;
        let inside_ns: Vec<u64> = (0..ran).map(|_| reply.u64()).collect::<io::Result<_>>()?;
        let outcome = match status {
            0 => {
                let count = reply.u32()?;
                if count > MAX_FIELDS {
                    return Err(invalid(format!("{count} fields in one reply")));
                }
                Outcome::Done(
                    (0..count)
                        .map(|_| reply.field())
                        .collect::<io::Result<_>>()?,
                )
            }
            2 => {
                let len = reply.u32()?;
                let message = reply.text(len as u64)?;
                let len = reply.u32()?;
                let traceback = reply.text(len as u64)?;
                Outcome::Raised { message, traceback }
            }
            3 => {
                let len = reply.u32()?;
                Outcome::Missing {
                    names: reply.text(len as u64)?,
                }
            }
            other => return Err(invalid(format!("unknown reply status {other}"))),
        };
        self.in_flight.pop_front();
        let worker_own = handled.saturating_sub(inside_ns.iter().sum());
        let reading = began.elapsed().as_nanos() as u64;
        Ok(Reply {
            inside_ns,
            moving_ns: writing + worker_own + reading,
            outcome,
        })
    }

    /// The link a worker was running (from the memory's header), how it ended, and its last
    /// stderr lines.
    fn died(&mut self, cause: &io::Error) -> Gone {
        // The group first (the worker, and any helper its steps left), then the worker reaped:
        // its process id names the group only while it is not.
        super::watch::end_group(self.child.id());
        let status = self.child.wait().ok();
        let slot = self.in_flight.front().map_or(0, |(slot, _)| *slot);
        let link = self.memory[slot]
            .bytes()
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4")) as usize)
            .min(self.links.saturating_sub(1));
        let how = match status {
            // prepbench ended it (the kill above), having read what it must not accept.
            _ if cause.kind() == io::ErrorKind::InvalidData => {
                format!("sent a malformed reply ({cause}), so prepbench ended it")
            }
            Some(s) => {
                use std::os::unix::process::ExitStatusExt;
                match (s.code(), s.signal()) {
                    (_, Some(9)) => {
                        "was killed (SIGKILL: out of memory, or killed by hand)".to_string()
                    }
                    (_, Some(11)) => {
                        "crashed (SIGSEGV: a segmentation fault in native code)".to_string()
                    }
                    (_, Some(sig)) => format!("was ended by signal {sig}"),
                    (Some(code), _) => format!("exited with status {code}"),
                    (None, None) => "ended".to_string(),
                }
            }
            None => format!("stopped answering ({cause})"),
        };
        // The stderr reader may lag the exit by a moment.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        let mut message = format!("the Python worker process {how}");
        if !tail.is_empty() {
            message.push_str(&format!("; its last output:\n{}", tail.join("\n")));
        }
        Gone { link, message }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let pid = self.child.id();
        // Helpers its steps started (a forked process that outlived it) end with it.
        super::watch::end_group(pid);
        let _ = self.child.wait();
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|p| *p != pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::layout_pad;

    #[test]
    fn layout_pads_are_whole_16_byte_steps_under_4_kib_and_vary() {
        let lengths: Vec<usize> = (0..32).map(|_| layout_pad().len()).collect();
        assert!(
            lengths.iter().all(|n| n % 16 == 0 && *n < 4096),
            "{lengths:?}"
        );
        // 32 draws from 256 values all equal: probability 256^-31.
        assert!(lengths.iter().any(|n| *n != lengths[0]), "{lengths:?}");
    }
}
