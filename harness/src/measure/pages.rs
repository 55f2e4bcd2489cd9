//! A file's pages in the page cache: the page size and mincore(2) over a read-only mapping
//! (mapping does not fault pages in, so looking does not change what it sees).

use std::fs::File;
use std::os::fd::AsRawFd;

pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// One byte per page of the first `len` bytes of `file`, its low bit set where the page is in
/// the page cache: mincore(2) over a read-only shared mapping.
pub fn resident_pages(file: &File, len: usize) -> std::io::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let mut vec = vec![0u8; len.div_ceil(page_size())];
    // SAFETY: we map `len` bytes of a file the caller holds open, read-only and shared, check
    // the result, pass mincore a vector of one byte per page of the mapping, and unmap before
    // returning.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(addr, len);
        if rc != 0 {
            return Err(err);
        }
    }
    Ok(vec)
}
