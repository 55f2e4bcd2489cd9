//! Python worker processes for `op: python` steps: one persistent interpreter per worker thread
//! (as PyTorch's DataLoader keeps its workers), fed samples over a pipe. The interpreter is the
//! user's: `--python`, else `PREPBENCH_PYTHON`, else `python3`. The protocol is described in
//! `driver.py`, which is sent to the interpreter with `-c` (nothing is written to disk).

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use crate::sample::{DType, Field, Sample, Tensor, TensorData};

/// The worker's source, run with `python -c`.
pub const DRIVER: &str = include_str!("driver.py");

/// Lines of a worker's stderr kept to explain its death.
const STDERR_LINES: usize = 20;
/// Largest field or message a worker may send (as the decoders' tensor budget).
const MAX_FIELD_BYTES: u64 = crate::steps::MAX_TENSOR_BYTES;
/// Most fields in one reply.
const MAX_FIELDS: u32 = 4096;

static INTERPRETER: OnceLock<PathBuf> = OnceLock::new();

/// Sets the interpreter Python steps use (the CLI's `--python`); the first call wins.
pub fn set_interpreter(path: PathBuf) {
    let _ = INTERPRETER.set(path);
}

/// The interpreter Python steps run: `--python`, else `PREPBENCH_PYTHON`, else `python3`.
pub fn interpreter() -> PathBuf {
    INTERPRETER
        .get()
        .cloned()
        .or_else(|| std::env::var_os("PREPBENCH_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// Process ids of the live workers, for CPU accounting (their time is this run's).
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The process ids of every live Python worker.
pub fn worker_pids() -> Vec<u32> {
    LIVE.lock().map(|l| l.clone()).unwrap_or_default()
}

thread_local! {
    /// The folder of the workload file being loaded on this thread: a Python step's module
    /// search path is relative to it.
    static WORKLOAD_DIR: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
    /// Nanoseconds the last Python call on this thread spent inside the user's callable.
    static INSIDE_NS: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `load` with `dir` as the folder Python steps' paths are relative to.
pub(crate) fn in_workload_dir<T>(dir: &Path, load: impl FnOnce() -> T) -> T {
    let before = WORKLOAD_DIR.with(|d| d.replace(Some(dir.to_path_buf())));
    let out = load();
    WORKLOAD_DIR.with(|d| *d.borrow_mut() = before);
    out
}

/// The folder of the workload file being loaded (the current folder for a built-in or
/// in-memory workload).
pub(crate) fn workload_dir() -> PathBuf {
    WORKLOAD_DIR
        .with(|d| d.borrow().clone())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Takes the time the last Python step on this thread spent inside its callable (seconds);
/// `None` when the last step was not a Python step. The rest of the step's time is transfer.
pub fn take_inside_seconds() -> Option<f64> {
    INSIDE_NS.with(|c| c.take()).map(|ns| ns as f64 / 1e9)
}

/// What a call of the user's callable gave back.
pub enum Reply {
    /// A dict of fields.
    Fields(Vec<(String, Field)>),
    /// One value.
    Value(Field),
    /// The callable raised (or returned what cannot cross): `Type: message` and the traceback.
    Raised { message: String, traceback: String },
}

/// One worker process serving one callable.
pub struct Worker {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// How a worker is started.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// `module:callable`.
    pub function: String,
    /// Folder put first on the module search path.
    pub search_path: PathBuf,
    /// The one field the callable gets; `None`: a dict of all fields.
    pub from: Option<String>,
}

/// Why a worker could not serve: it failed to start or import, or died.
#[derive(Debug)]
pub struct WorkerError(pub String);

fn read_u8(r: &mut impl Read) -> std::io::Result<u8> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(b[0])
}

fn read_u16(r: &mut impl Read) -> std::io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_le_bytes(b))
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// `len`, when a worker may send that many bytes in one field (bounded, so a broken worker
/// cannot make prepbench allocate at will).
fn bounded(len: u64) -> std::io::Result<u64> {
    if len > MAX_FIELD_BYTES {
        return Err(invalid(format!(
            "a field of {len} bytes, beyond the {MAX_FIELD_BYTES}-byte limit"
        )));
    }
    Ok(len)
}

/// Reads `len` bytes, [`bounded`].
fn read_bytes(r: &mut impl Read, len: u64) -> std::io::Result<Vec<u8>> {
    let len = bounded(len)?;
    let mut data = vec![0u8; len as usize];
    r.read_exact(&mut data)?;
    Ok(data)
}

fn read_text(r: &mut impl Read, len: u64) -> std::io::Result<String> {
    Ok(String::from_utf8_lossy(&read_bytes(r, len)?).into_owned())
}

/// Reads `n` elements of `dtype` straight into typed storage (one copy, from the pipe).
fn read_elements(r: &mut impl Read, dtype: DType, n: usize) -> std::io::Result<TensorData> {
    fn typed<T: bytemuck::Pod + Default>(r: &mut impl Read, n: usize) -> std::io::Result<Vec<T>> {
        let mut v = vec![T::default(); n];
        r.read_exact(bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    }
    Ok(match dtype {
        DType::U8 => TensorData::U8(typed(r, n)?),
        DType::U16 => TensorData::U16(typed(r, n)?),
        DType::I16 => TensorData::I16(typed(r, n)?),
        DType::I32 => TensorData::I32(typed(r, n)?),
        DType::F32 => TensorData::F32(typed(r, n)?),
        DType::F64 => TensorData::F64(typed(r, n)?),
    })
}

/// Widens a pipe to 1 MiB (the usual unprivileged maximum), so that a sample of a few hundred
/// KB crosses in one or two writes instead of sixteen 64 KiB round trips between the two
/// processes; where the system refuses, the pipe stays as it is.
fn widen(fd: std::os::fd::RawFd) {
    // SAFETY: fcntl on a descriptor this process owns; F_SETPIPE_SZ takes an int.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
    }
}

fn write_field(w: &mut impl Write, name: &str, field: &Field) -> std::io::Result<()> {
    let name = name.as_bytes();
    w.write_all(&(name.len() as u16).to_le_bytes())?;
    w.write_all(name)?;
    match field {
        Field::Bytes(b) => {
            w.write_all(&[0])?;
            w.write_all(&(b.len() as u64).to_le_bytes())?;
            w.write_all(b)
        }
        Field::Text(t) => {
            w.write_all(&[1])?;
            w.write_all(&(t.len() as u64).to_le_bytes())?;
            w.write_all(t.as_bytes())
        }
        Field::Tensor(t) => {
            let code = DType::ALL
                .iter()
                .position(|d| *d == t.dtype())
                .expect("every dtype is listed") as u8;
            w.write_all(&[2, code, t.shape().len() as u8])?;
            for dim in t.shape() {
                w.write_all(&(*dim as u64).to_le_bytes())?;
            }
            let data = t.data().as_bytes();
            w.write_all(&(data.len() as u64).to_le_bytes())?;
            w.write_all(data)
        }
    }
}

fn read_field(r: &mut impl Read) -> std::io::Result<(String, Field)> {
    let name_len = read_u16(r)?;
    let name = read_text(r, name_len as u64)?;
    let field = match read_u8(r)? {
        0 => {
            let len = read_u64(r)?;
            Field::Bytes(read_bytes(r, len)?)
        }
        1 => {
            let len = read_u64(r)?;
            Field::Text(read_text(r, len)?)
        }
        2 => {
            let code = read_u8(r)?;
            let dtype = *DType::ALL
                .get(code as usize)
                .ok_or_else(|| invalid(format!("unknown dtype code {code}")))?;
            let ndim = read_u8(r)?;
            let mut shape = Vec::with_capacity(ndim as usize);
            for _ in 0..ndim {
                shape.push(read_u64(r)? as usize);
            }
            let len = bounded(read_u64(r)?)?;
            let elements = shape
                .iter()
                .try_fold(1usize, |n, d| n.checked_mul(*d))
                .filter(|n| n.checked_mul(dtype.size_bytes()) == Some(len as usize))
                .ok_or_else(|| {
                    invalid(format!(
                        "field `{name}`: shape {shape:?} of {dtype} does not match {len} bytes"
                    ))
                })?;
            let tensor = Tensor::new(shape, read_elements(r, dtype, elements)?)
                .map_err(|e| invalid(e.message))?;
            Field::Tensor(tensor)
        }
        tag => return Err(invalid(format!("unknown field tag {tag}"))),
    };
    Ok((name, field))
}

impl Worker {
    /// Starts a worker and waits for its import of the callable: an import error is the
    /// error's message, with the traceback.
    pub fn start(spec: &WorkerSpec) -> Result<Worker, WorkerError> {
        let python = interpreter();
        let mut child = Command::new(&python)
            .arg("-c")
            .arg(DRIVER)
            .arg("serve")
            .arg(&spec.search_path)
            .arg(&spec.function)
            .arg(spec.from.as_deref().unwrap_or(""))
            // Python writes no __pycache__ into the user's folders: prepbench writes only in
            // its own.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| WorkerError(cannot_start(&python, &e)))?;
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
        let (stdin, stdout) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
        );
        {
            use std::os::fd::AsRawFd;
            widen(stdin.as_raw_fd());
            widen(stdout.as_raw_fd());
        }
        let input = BufWriter::with_capacity(1 << 16, stdin);
        let output = BufReader::with_capacity(1 << 16, stdout);
        let pid = child.id();
        let mut worker = Worker {
            child,
            input,
            output,
            stderr,
        };
        if let Ok(mut live) = LIVE.lock() {
            live.push(pid);
        }
        match worker.read_greeting() {
            Ok(Ok(())) => {}
            Ok(Err((message, traceback))) => {
                return Err(WorkerError(format!(
                    "cannot import `{}` (module search path {}): {message}\n{traceback}",
                    spec.function,
                    spec.search_path.display()
                )))
            }
            Err(e) => return Err(worker.died(&e)),
        }
        Ok(worker)
    }

    /// Reads the reply to the import: done (the module's file, which is not needed, is read
    /// past), or the import's error and traceback.
    fn read_greeting(&mut self) -> std::io::Result<Result<(), (String, String)>> {
        let status = read_u8(&mut self.output)?;
        let _ = read_u64(&mut self.output)?;
        let len = read_u32(&mut self.output)?;
        let first = read_text(&mut self.output, len as u64)?;
        match status {
            0 => Ok(Ok(())),
            2 => {
                let len = read_u32(&mut self.output)?;
                Ok(Err((first, read_text(&mut self.output, len as u64)?)))
            }
            other => Err(invalid(format!("unknown greeting status {other}"))),
        }
    }

    /// Reads one reply to a sample.
    fn read_reply(&mut self) -> std::io::Result<Reply> {
        let status = read_u8(&mut self.output)?;
        let inside = read_u64(&mut self.output)?;
        match status {
            0 | 1 => {
                let count = read_u32(&mut self.output)?;
                if count > MAX_FIELDS {
                    return Err(invalid(format!("{count} fields in one reply")));
                }
                let mut fields = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    fields.push(read_field(&mut self.output)?);
                }
                INSIDE_NS.with(|c| c.set(Some(inside)));
                Ok(if status == 0 {
                    Reply::Fields(fields)
                } else {
                    Reply::Value(
                        fields
                            .pop()
                            .map(|f| f.1)
                            .ok_or_else(|| invalid("a one-value reply without its value".into()))?,
                    )
                })
            }
            2 => {
                let len = read_u32(&mut self.output)?;
                let message = read_text(&mut self.output, len as u64)?;
                let len = read_u32(&mut self.output)?;
                let traceback = read_text(&mut self.output, len as u64)?;
                INSIDE_NS.with(|c| c.set(Some(inside)));
                Ok(Reply::Raised { message, traceback })
            }
            other => Err(invalid(format!("unknown reply status {other}"))),
        }
    }

    /// Sends one sample and reads the reply. An `Err` means the worker is gone (died, or
    /// broke the protocol): drop it.
    pub fn call(
        &mut self,
        sample: &Sample,
        seed: u64,
        epoch: u64,
        only: Option<&str>,
    ) -> Result<Reply, WorkerError> {
        let sent = (|| {
            let fields: Vec<&(String, Field)> = sample
                .fields()
                .iter()
                .filter(|(name, _)| only.is_none_or(|o| o == name))
                .collect();
            self.input.write_all(&sample.id.to_le_bytes())?;
            self.input.write_all(&epoch.to_le_bytes())?;
            self.input.write_all(&seed.to_le_bytes())?;
            self.input.write_all(&(fields.len() as u32).to_le_bytes())?;
            for (name, field) in fields {
                write_field(&mut self.input, name, field)?;
            }
            self.input.flush()
        })();
        sent.and_then(|()| self.read_reply())
            .map_err(|e| self.died(&e))
    }

    /// The error of a worker that stopped answering: how it ended, and its last stderr lines.
    fn died(&mut self, cause: &std::io::Error) -> WorkerError {
        let _ = self.child.kill();
        let status = self.child.wait().ok();
        let how = match status {
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
        if cause.kind() == std::io::ErrorKind::InvalidData {
            message.push_str(&format!(" after a malformed reply: {cause}"));
        }
        if !tail.is_empty() {
            message.push_str(&format!("; its last output:\n{}", tail.join("\n")));
        }
        WorkerError(message)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let pid = self.child.id();
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|p| *p != pid);
        }
    }
}

/// Why `python` did not start, and how to name another.
fn cannot_start(python: &Path, e: &std::io::Error) -> String {
    format!(
        "cannot start the Python interpreter `{}`: {e} (set it with --python or \
         PREPBENCH_PYTHON)",
        python.display()
    )
}

/// Checks, without running anything else, that `function` imports from `search_path` and is
/// callable: `Ok(module file)` or the Python error.
pub fn check(function: &str, search_path: &Path) -> Result<(), String> {
    let python = interpreter();
    let out = Command::new(&python)
        .arg("-c")
        .arg(DRIVER)
        .arg("check")
        .arg(search_path)
        .arg(function)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| cannot_start(&python, &e))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(err.lines().last().unwrap_or("failed").to_string())
    }
}
