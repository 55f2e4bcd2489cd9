//! The shared memory file a worker and prepbench exchange samples through: an anonymous memfd
//! (nothing on any filesystem), mapped by both, grown by whichever side has more to write.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Bytes at the start of the memory kept for the running link's index; payloads follow.
pub const HEADER: usize = 64;
/// The size a worker's memory starts at.
const INITIAL: usize = 1 << 20;

pub struct Memory {
    fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone on prepbench's side; the worker process
// writes to it only between a request and its reply, while the thread owning the Memory waits.
unsafe impl Send for Memory {}

impl Memory {
    /// A new shared memory file of the initial size, mapped.
    pub fn new() -> io::Result<Memory> {
        // SAFETY: a valid C string; the flags are memfd_create's.
        let fd = unsafe { libc::memfd_create(c"prepbench-python".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a descriptor this process now owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut memory = Memory {
            fd,
            ptr: std::ptr::null_mut(),
            len: 0,
        };
        memory.grow(INITIAL)?;
        Ok(memory)
    }

    /// The descriptor the worker maps (handed to it across exec).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The mapped size.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Makes the file at least `need` bytes (doubling, so that growing is rare) and maps it.
    pub fn grow(&mut self, need: usize) -> io::Result<()> {
        if need <= self.len {
            return Ok(());
        }
        let size = need.max(self.len * 2);
        // SAFETY: ftruncate on a descriptor this value owns.
        if unsafe { libc::ftruncate(self.fd.as_raw_fd(), size as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        self.map(size)
    }

    /// Maps `size` bytes after the worker grew the file to that size: refused (so that no
    /// access can fault past the file's end) when the file is smaller.
    pub fn follow(&mut self, size: usize) -> io::Result<()> {
        if size == self.len {
            return Ok(());
        }
        // SAFETY: fstat fills a zeroed struct for a descriptor this value owns.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(self.fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if (stat.st_size as u64) < size as u64 || size < HEADER {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the worker said its memory holds {size} bytes; the file holds {}",
                    stat.st_size
                ),
            ));
        }
        self.map(size)
    }

    fn map(&mut self, size: usize) -> io::Result<()> {
        self.unmap();
        // SAFETY: a fresh shared mapping of a file at least `size` bytes long.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        self.ptr = ptr.cast();
        self.len = size;
        Ok(())
    }

    fn unmap(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: the mapping made by `map`, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
            self.ptr = std::ptr::null_mut();
            self.len = 0;
        }
    }

    /// The mapped bytes (read while the worker waits for a request).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes are mapped at `ptr`; the worker does not write while prepbench
        // reads (it has replied and waits for the next request).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The mapped bytes, to write a request into.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`; `&mut self` makes this the only view on prepbench's side.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        self.unmap();
    }
}
