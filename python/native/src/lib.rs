//! `prepbench._native`, the part of the Python package written in Rust: a materialized store
//! read at the speed of prepbench's own reader (`harness::store::OpenStore`: every codec,
//! every checksum, damaged records named), and the command line, run in the interpreter's
//! process by the package's `prepbench` command (maturin puts one artifact in a wheel, so the
//! CLI travels inside the module rather than beside it).
//!
//! A record crosses as its payload (one owned buffer, which NumPy arrays view in place through
//! the buffer protocol) and a description of its fields (name, kind, dtype, shape, where its
//! bytes lie); `prepbench/store.py` makes the arrays, bytes and strings of that description.

mod online;

use std::path::PathBuf;
use std::sync::Mutex;

use harness::store::{InOrder, OpenStore, ShardReader, DEFAULT_CACHE_BYTES};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyIndexError};
use pyo3::ffi;
use pyo3::prelude::*;
use workloads::encoding::SampleView;
use workloads::DType;

create_exception!(
    _native,
    StoreError,
    PyException,
    "A store that cannot be read: not a complete store, or a damaged shard or record (the \
     message names the file and the record)."
);

fn store_error(e: impl std::fmt::Display) -> PyErr {
    StoreError::new_err(e.to_string())
}

/// A store's error as `StoreError`; a corrupt record's with what names it as prepbench's own
/// reader does (`shard`, `record`, `offset`, `compressed`, `what`), for the torch loader to
/// report it so.
fn read_error(py: Python<'_>, e: harness::store::StoreError) -> PyErr {
    let err = store_error(&e);
    if let harness::store::StoreError::Corrupt {
        shard,
        record,
        offset,
        compressed,
        what,
    } = e
    {
        let value = err.value(py);
        let named = [
            value.setattr("shard", shard),
            value.setattr("record", record),
            value.setattr("offset", offset),
            value.setattr("compressed", compressed),
            value.setattr("what", what),
        ];
        if let Some(Err(failed)) = named.into_iter().find(Result::is_err) {
            return failed;
        }
    }
    err
}

/// One record's bytes, owned by this object; arrays made of it with `numpy.frombuffer` view
/// them in place and keep it alive. Writable: every record read is its own copy, so changing
/// one sample's array in place changes nothing else.
#[pyclass(frozen, module = "prepbench._native")]
pub(crate) struct Payload {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned by this object alone; Rust reads it only to free it on drop.
unsafe impl Send for Payload {}
unsafe impl Sync for Payload {}

impl Payload {
    fn new(bytes: Vec<u8>) -> Payload {
        let boxed = bytes.into_boxed_slice();
        let len = boxed.len();
        Payload {
            ptr: Box::into_raw(boxed) as *mut u8,
            len,
        }
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` come from `Box::into_raw` of a boxed slice in `new`.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.ptr, self.len,
            )));
        }
    }
}

#[pymethods]
impl Payload {
    /// The buffer protocol: one contiguous, writable run of bytes.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let (ptr, len) = (slf.get().ptr, slf.get().len);
        // SAFETY: `view` is the caller's buffer struct; the bytes live as long as `slf`, which
        // the view holds a reference to.
        let done = unsafe {
            ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr.cast(), len as isize, 0, flags)
        };
        if done == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    fn __len__(&self) -> usize {
        self.len
    }
}

/// How one field of a record is laid out: (name, "tensor" | "bytes" | "text", NumPy dtype or
/// None, shape, byte offset in the payload, byte length).
type FieldLayout = (
    String,
    &'static str,
    Option<&'static str>,
    Vec<usize>,
    usize,
    usize,
);

/// (payload, sample id, fields).
pub(crate) type Record = (Payload, u64, Vec<FieldLayout>);

/// (record number in the store, payload, sample id, fields).
type Numbered = (u64, Payload, u64, Vec<FieldLayout>);

fn numpy_dtype(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "<u1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    }
}

/// Parses a payload (every length and offset checked) into its record; `place` names the
/// record in an error.
pub(crate) fn record(payload: Vec<u8>, place: impl FnOnce() -> String) -> PyResult<Record> {
    let view = SampleView::parse(&payload).map_err(|e| store_error(format!("{}: {e}", place())))?;
    let base = payload.as_ptr() as usize;
    let fields = view
        .fields
        .iter()
        .map(|f| {
            let kind = match (f.dtype, f.is_text) {
                (Some(_), _) => "tensor",
                (None, true) => "text",
                (None, false) => "bytes",
            };
            (
                f.name.to_string(),
                kind,
                f.dtype.map(numpy_dtype),
                f.shape.clone(),
                f.data.as_ptr() as usize - base,
                f.data.len(),
            )
        })
        .collect();
    let id = view.id;
    Ok((Payload::new(payload), id, fields))
}

/// A complete store opened for reading by record number (`prepbench.open_store` wraps it).
#[pyclass(frozen, module = "prepbench._native")]
struct Store {
    inner: Mutex<OpenStore>,
    manifest: String,
    shard_records: Vec<u64>,
    shard_files: Vec<PathBuf>,
    len: u64,
}

#[pymethods]
impl Store {
    /// Opens the store folder `path`; decompressed shards read by record number are kept up
    /// to `cache_bytes` (default 1 GiB).
    #[new]
    #[pyo3(signature = (path, cache_bytes=None))]
    fn new(py: Python<'_>, path: PathBuf, cache_bytes: Option<u64>) -> PyResult<Store> {
        let budget = cache_bytes.unwrap_or(DEFAULT_CACHE_BYTES);
        let store = py
            .detach(|| OpenStore::open(&path, budget))
            .map_err(store_error)?;
        let manifest = serde_json::to_string(store.manifest()).map_err(store_error)?;
        let shard_records = store.manifest().shards.iter().map(|s| s.records).collect();
        let shard_files = store
            .manifest()
            .shards
            .iter()
            .map(|s| store.dir().join(&s.file))
            .collect();
        Ok(Store {
            len: store.len(),
            inner: Mutex::new(store),
            manifest,
            shard_records,
            shard_files,
        })
    }

    fn __len__(&self) -> usize {
        self.len as usize
    }

    /// The store's `store.json`, as JSON text.
    #[getter]
    fn manifest(&self) -> &str {
        &self.manifest
    }

    /// Records in each shard, in shard order.
    #[getter]
    fn shard_records(&self) -> Vec<u64> {
        self.shard_records.clone()
    }

    /// Record `index` (0 to len - 1, in shard order): (payload, sample id, fields).
    fn read(&self, py: Python<'_>, index: u64) -> PyResult<Record> {
        if index >= self.len {
            return Err(PyIndexError::new_err(format!(
                "record {index} of a store holding {}",
                self.len
            )));
        }
        let payload = py.detach(|| {
            let mut store = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            store.read(index)
        });
        let payload = payload.map_err(store_error)?;
        record(payload, || self.place(index))
    }

    /// Shard `shard`'s records in order, streamed (any codec, nothing kept): an iterator of
    /// (record number, payload, sample id, fields); with `records`, of its first `records`
    /// only, an uncompressed shard read ahead no further than they need.
    #[pyo3(signature = (shard, records=None))]
    fn shard(&self, py: Python<'_>, shard: usize, records: Option<u64>) -> PyResult<ShardIter> {
        if shard >= self.shard_records.len() {
            return Err(PyIndexError::new_err(format!(
                "shard {shard} of a store of {}",
                self.shard_records.len()
            )));
        }
        let reader = py.detach(|| {
            let store = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let start = store.shard_start(shard);
            match store.in_order(shard)? {
                Some(mut positioned) => {
                    if let Some(n) = records {
                        positioned.stop_after(n);
                    }
                    Ok((Records::Positioned(positioned), start))
                }
                None => store
                    .shard_reader(shard)
                    .map(|r| (Records::Streamed(r, Vec::new()), start)),
            }
        });
        let (records, start) = reader.map_err(store_error)?;
        Ok(ShardIter {
            records: Mutex::new(records),
            file: self.shard_files[shard].clone(),
            start,
        })
    }
}

impl Store {
    /// "SHARD-FILE: record N", for record `index`.
    fn place(&self, index: u64) -> String {
        let store = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match store.locate(index) {
            Some((shard, local)) => {
                format!("{}: record {local}", self.shard_files[shard].display())
            }
            None => format!("record {index}"),
        }
    }
}

/// How a shard is read in order: uncompressed by positioned reads, compressed streamed.
enum Records {
    Positioned(InOrder),
    Streamed(ShardReader, Vec<u8>),
}

impl Records {
    /// Whether reading may go on after an error (past a record whose payload failed its
    /// checksum).
    fn can_continue(&self) -> bool {
        match self {
            Records::Positioned(records) => records.can_continue(),
            Records::Streamed(reader, _) => reader.can_continue(),
        }
    }

    /// After an error reading cannot step past, goes on at the shard's next restart: the
    /// record read next, if it can.
    fn resume(&mut self) -> Option<u64> {
        match self {
            Records::Positioned(records) => records.resume(),
            Records::Streamed(reader, _) => reader.resume().ok().flatten(),
        }
    }

    fn next(&mut self) -> Result<Option<(u64, Vec<u8>)>, harness::store::StoreError> {
        match self {
            Records::Positioned(records) => records.next_record(),
            Records::Streamed(reader, buf) => {
                let local = reader.record_index();
                Ok(reader.next_into(buf)?.then(|| (local, std::mem::take(buf))))
            }
        }
    }
}

/// One shard read in order (`Store.shard`).
#[pyclass(module = "prepbench._native")]
struct ShardIter {
    records: Mutex<Records>,
    file: PathBuf,
    /// Global number of the shard's first record.
    start: u64,
}

#[pymethods]
impl ShardIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Whether the next record can still be read after an error: only past a record whose
    /// payload failed its checksum (its frame intact).
    #[getter]
    fn can_continue(&self) -> bool {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .can_continue()
    }

    /// The next record; a damaged one raises `StoreError` with where it broke, and with
    /// `resumed_at`, the record of the shard reading goes on at (the shard's next
    /// restart) where reading could not step past it, else None.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Numbered>> {
        let got = py.detach(|| {
            let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
            records.next().map_err(|e| {
                let resumed = match records.can_continue() {
                    true => None,
                    false => records.resume(),
                };
                (e, resumed)
            })
        });
        let got = got.map_err(|(e, resumed)| {
            let err = read_error(py, e);
            match err.value(py).setattr("resumed_at", resumed) {
                Ok(()) => err,
                Err(failed) => failed,
            }
        })?;
        let Some((local, payload)) = got else {
            return Ok(None);
        };
        let (payload, id, fields) = record(payload, || {
            format!("{}: record {local}", self.file.display())
        })?;
        Ok(Some((self.start + local, payload, id, fields)))
    }
}

/// Runs the prepbench command line `argv` (the program's name first) in this process and
/// returns its exit status; the interpreter's lock is released meanwhile.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| harness::cli::entry::main(argv).0)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Store>()?;
    m.add_class::<Payload>()?;
    m.add_class::<ShardIter>()?;
    m.add("StoreError", m.py().get_type::<StoreError>())?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_class::<online::Online>()?;
    m.add_class::<online::Rng>()?;
    m.add("StepFailed", m.py().get_type::<online::StepFailed>())?;
    m.add_function(wrap_pyfunction!(online::verify_hash, m)?)?;
    // The Python steps' driver, whose chain the torch loader runs as the native engine's
    // workers do.
    m.add("DRIVER", workloads::python::DRIVER)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    // A fan-out step's output j of item p has id p << CHILD_ID_BITS | j, as natively.
    m.add("CHILD_ID_BITS", workloads::CHILD_ID_BITS)?;
    Ok(())
}
