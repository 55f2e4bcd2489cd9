//! A child process's output read so that the child's end is the end of its output. A pipe
//! reaches end-of-file only when every process holding its write end has closed it, and a
//! user's step may start helpers that hold it (`os.fork()` inherits every descriptor; a
//! helper started without closing them does too): prepbench would then wait for the helper,
//! possibly for ever, after the process it talks to has gone. Reads here wait for data or for
//! the child's exit, whichever comes first; the child is not reaped, so its `Child` still
//! reports how it ended. The child runs in a process group of its own, and [`end_group`] ends
//! what it left behind.

use std::io::{self, Read};
use std::os::fd::AsRawFd;

/// How often a read that waits looks whether the child has ended.
const LOOK_MS: i32 = 100;

/// Whether process `pid` (a child of this process) has ended, without reaping it.
pub fn ended(pid: u32) -> bool {
    // SAFETY: waitid writes into the siginfo it is given; WNOWAIT leaves the child waitable.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let found = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        // An error (no such child: already reaped) counts as ended too.
        found != 0 || info.si_pid() != 0
    }
}

/// Ends every process left in the process group `pid` leads (the child's helpers).
pub fn end_group(pid: u32) {
    // SAFETY: killpg sends a signal to a process group; a group that no longer exists is an
    // error that is ignored.
    unsafe {
        libc::killpg(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// A pipe from the child `pid`, read until the child ends (see the module's text).
#[derive(Debug)]
pub struct Watched<R> {
    pub pipe: R,
    pub pid: u32,
}

impl<R: Read + AsRawFd> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut poll = libc::pollfd {
            fd: self.pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: poll reads and writes the one pollfd it is given.
            let ready = unsafe { libc::poll(&mut poll, 1, LOOK_MS) };
            if ready > 0 {
                return self.pipe.read(buf);
            }
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if ended(self.pid) {
                // What it wrote before it ended is still read; then the end.
                // SAFETY: as above, without waiting.
                if unsafe { libc::poll(&mut poll, 1, 0) } > 0 {
                    return self.pipe.read(buf);
                }
                return Ok(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A child that leaves a helper holding its output ends the reading when it ends, not when
    /// the helper does; the helper goes with its group.
    #[test]
    fn the_childs_end_ends_its_output_whoever_else_holds_the_pipe() {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sh")
            .args(["-c", "echo hello; sleep 30 & exit 0"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut out = Watched {
            pipe: child.stdout.take().unwrap(),
            pid,
        };
        let began = std::time::Instant::now();
        let mut text = String::new();
        out.read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello\n");
        assert!(began.elapsed().as_secs() < 10, "waited for the helper");
        assert!(
            child.wait().unwrap().success(),
            "the child is still waitable"
        );
        end_group(pid);
    }
}
