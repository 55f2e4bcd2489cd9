//! Free page reporting held off while prepbench measures (`--page-reporting hold`, the
//! default). On a VM whose virtio balloon negotiated free page reporting, the guest kernel
//! hands blocks of free memory of `page_reporting_order` and above back to the hypervisor; a
//! page handed back must be faulted in from the host before it is used again. A cold epoch
//! fills page cache from the free lists, so how long it takes depended on how much of what it
//! took had been handed back since the eviction, not on the store or the disk: a 1,500 MiB
//! file read cold after a drop took 1.02-1.39 s at once and 1.68-4.94 s after 15 s idle, three
//! of four with 4.2-4.5 s of kernel time (docs/measurement.md, "Cold reads on a VM"). With the
//! order set past the buddy allocator's largest (nothing is large enough to report), the same
//! read after 15 s idle took 0.92-1.08 s. A page already handed back stays so until first used; every page used
//! while the hold is alive stays backed.
//!
//! A hold sets the order past the largest one `/proc/buddyinfo` lists and, dropped, writes
//! back what it found. A hold taken where reporting is already off (an enclosing hold, or set
//! by hand) changes nothing and undoes nothing. Without the module's parameter (bare metal,
//! another hypervisor) there is nothing to hold; without permission (not root) reporting stays
//! on and the manifest says so. A hold that changed the setting forks a guardian, a process of
//! its own group that ignores the terminal's signals and waits on a pipe to prepbench: should
//! prepbench die without dropping the hold (SIGKILL, a crash), the pipe's end wakes the
//! guardian, which writes the setting back.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::results::system::PAGE_REPORTING_PARAMETERS as PARAMETERS;

const ORDER: &str = "page_reporting_order";
const BUDDYINFO: &str = "/proc/buddyinfo";

/// Whether measuring commands hold the free page reporter off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportingPolicy {
    /// Hold it off while the command runs, and set it back after (needs root).
    #[default]
    Hold,
    /// Leave it as the machine has it.
    Keep,
}

/// What a command's invocation ran under, for its manifest entry.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ReportingState {
    /// `page_reporting_order` when the command started.
    pub order_was: u32,
    /// `page_reporting_order` while it measured; above `largest_order`, nothing was reported.
    pub order_during: u32,
    /// The largest order of the buddy allocator (`/proc/buddyinfo`).
    pub largest_order: u32,
    /// Why reporting stayed on, where it did (`--page-reporting keep`, no permission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_on: Option<String>,
}

impl ReportingState {
    /// Whether nothing was reported while the command measured.
    pub fn off(&self) -> bool {
        self.order_during > self.largest_order
    }
}

/// The reporter's setting where this process found it, while alive; dropped, set back.
#[derive(Debug)]
pub struct Hold {
    /// The parameter file and what to write back, where this hold changed it.
    restore: Option<(PathBuf, String)>,
    /// What sets it back should this process die first.
    guardian: Option<Guardian>,
}

impl Hold {
    /// A hold that changed nothing and undoes nothing.
    fn none() -> Hold {
        Hold {
            restore: None,
            guardian: None,
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some((file, was)) = self.restore.take() {
            if let Err(e) = std::fs::write(&file, &was) {
                eprintln!(
                    "warning: could not set {} back to {} ({e}): set it by hand",
                    file.display(),
                    was.trim()
                );
            }
            *state_slot() = None;
        }
        if let Some(guardian) = self.guardian.take() {
            guardian.dismiss();
        }
    }
}

/// A forked process that writes a parameter back when the pipe from this process ends without
/// a word: this process died holding it.
#[derive(Debug)]
struct Guardian {
    pid: libc::pid_t,
    /// The pipe's write end: a byte written says "done, write nothing".
    done: libc::c_int,
}

impl Guardian {
    /// Forks the guardian of `file`, to write `was` back; `None` where it cannot be forked.
    fn spawn(file: &Path, was: &str) -> Option<Guardian> {
        use std::os::unix::ffi::OsStrExt;
        // Everything the child uses is made before the fork: after it, in a process that may
        // have threads, the child makes only async-signal-safe calls.
        let path = std::ffi::CString::new(file.as_os_str().as_bytes()).ok()?;
        let text = was.as_bytes();
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        let [read_end, write_end] = fds;
        // SAFETY: the child below calls only async-signal-safe functions and leaves by _exit.
        match unsafe { libc::fork() } {
            -1 => {
                // SAFETY: both descriptors are this process's, from pipe2 above.
                unsafe {
                    libc::close(read_end);
                    libc::close(write_end);
                }
                None
            }
            0 => {
                // SAFETY: async-signal-safe calls on memory made before the fork.
                unsafe {
                    libc::setpgid(0, 0);
                    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                        libc::signal(signal, libc::SIG_IGN);
                    }
                    for fd in 0..4096 {
                        if fd != read_end {
                            libc::close(fd);
                        }
                    }
                    let mut byte = 0u8;
                    let got = loop {
                        let n = libc::read(read_end, (&mut byte as *mut u8).cast(), 1);
                        if n >= 0 || *libc::__errno_location() != libc::EINTR {
                            break n;
                        }
                    };
                    if got == 0 {
                        let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                        if fd >= 0 {
                            libc::write(fd, text.as_ptr().cast(), text.len());
                            libc::close(fd);
                        }
                    }
                    libc::_exit(0)
                }
            }
            pid => {
                // SAFETY: the read end is the child's now.
                unsafe { libc::close(read_end) };
                Some(Guardian {
                    pid,
                    done: write_end,
                })
            }
        }
    }

    /// Tells the guardian the setting is back, and waits for it to end.
    fn dismiss(self) {
        // SAFETY: `done` is this process's pipe end and `pid` its child.
        unsafe {
            libc::write(self.done, [1u8].as_ptr().cast(), 1);
            libc::close(self.done);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

fn state_slot() -> std::sync::MutexGuard<'static, Option<ReportingState>> {
    static STATE: std::sync::Mutex<Option<ReportingState>> = std::sync::Mutex::new(None);
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Holds the machine's free page reporter off under `policy` where it has one (a balloon that
/// negotiated free page reporting, and the module's parameter), saying what it did through
/// `note`. Elsewhere nothing is written, even where the module is built in.
pub fn hold(policy: ReportingPolicy, note: &dyn Fn(&str)) -> Hold {
    if !crate::results::system::reports_free_pages() {
        return Hold::none();
    }
    let write = |file: &Path, text: &str| std::fs::write(file, text);
    hold_at(
        Path::new(PARAMETERS),
        Path::new(BUDDYINFO),
        policy,
        note,
        &write,
    )
}

/// Writes a parameter file (a test's stands in for the kernel refusing).
type Write<'a> = &'a dyn Fn(&Path, &str) -> std::io::Result<()>;

fn hold_at(
    parameters: &Path,
    buddyinfo: &Path,
    policy: ReportingPolicy,
    note: &dyn Fn(&str),
    write: Write,
) -> Hold {
    let file = parameters.join(ORDER);
    let (Some(was), Some(largest)) = (read_order(&file), largest_order(buddyinfo)) else {
        return Hold::none();
    };
    let mut state = ReportingState {
        order_was: was,
        order_during: was,
        largest_order: largest,
        left_on: None,
    };
    if state.off() {
        record(state);
        return Hold::none();
    }
    if policy == ReportingPolicy::Keep {
        state.left_on = Some("--page-reporting keep".into());
        record(state);
        return Hold::none();
    }
    let off = largest + 1;
    match write(&file, &off.to_string()) {
        Ok(()) => {
            note(&format!(
                "free page reporting held off while this runs ({} {was} -> {off}), so that cold \
                 epochs do not wait on memory the hypervisor took back; it is set back when the \
                 command ends (by hand: echo {was} > {})",
                ORDER,
                file.display()
            ));
            state.order_during = off;
            record(state);
            let was = format!("{was}\n");
            Hold {
                guardian: Guardian::spawn(&file, &was),
                restore: Some((file, was)),
            }
        }
        Err(e) => {
            let why = format!("could not write {} ({e})", file.display());
            note(&format!(
                "free page reporting stays on: {why}; cold epochs may pay faults into the \
                 hypervisor (docs/measurement.md, \"Cold reads on a VM\")"
            ));
            state.left_on = Some(why);
            record(state);
            Hold::none()
        }
    }
}

fn record(state: ReportingState) {
    let mut slot = state_slot();
    // An enclosing hold's record stands: it knows what the order was before any of them.
    let enclosed = slot
        .as_ref()
        .is_some_and(|s| s.off() && state.order_was == s.order_during);
    if !enclosed {
        *slot = Some(state);
    }
}

/// What the reporter ran under in this process, where it has one (for the manifest).
pub fn state() -> Option<ReportingState> {
    state_slot().clone()
}

/// Whether the free page reporter is off now: its order past every order the allocator has.
pub fn off_now() -> bool {
    match (
        read_order(&Path::new(PARAMETERS).join(ORDER)),
        largest_order(Path::new(BUDDYINFO)),
    ) {
        (Some(order), Some(largest)) => order > largest,
        _ => false,
    }
}

fn read_order(file: &Path) -> Option<u32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// The buddy allocator's largest order: `/proc/buddyinfo` has a count per order 0, 1, ... after
/// `Node N, zone NAME`.
fn largest_order(buddyinfo: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(buddyinfo).ok()?;
    let counts = text
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("zone")?;
            let mut fields = rest.split_whitespace();
            fields.next()?;
            Some(fields.filter(|f| f.parse::<u64>().is_ok()).count())
        })
        .max()?;
    (counts > 0).then(|| counts as u32 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDDY: &str = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
                         Node 0, zone   Normal    107      2      2      2      2      1      4      3      1      0   1772 \n";

    fn machine(order: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let params = dir.path().join("parameters");
        std::fs::create_dir(&params).unwrap();
        std::fs::write(params.join(ORDER), order).unwrap();
        let buddy = dir.path().join("buddyinfo");
        std::fs::write(&buddy, BUDDY).unwrap();
        (dir, params, buddy)
    }

    fn order(params: &Path) -> String {
        std::fs::read_to_string(params.join(ORDER)).unwrap()
    }

    #[test]
    fn the_guardian_writes_back_when_its_holder_dies_and_nothing_when_dismissed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(ORDER);
        std::fs::write(&file, "11").unwrap();
        Guardian::spawn(&file, "9\n").unwrap().dismiss();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "11");
        let guardian = Guardian::spawn(&file, "9\n").unwrap();
        // The holder's death as the kernel makes it: its end of the pipe closes, no word said.
        // SAFETY: the guardian's pipe end and child, as `dismiss` uses them.
        unsafe {
            libc::close(guardian.done);
            libc::waitpid(guardian.pid, std::ptr::null_mut(), 0);
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "9\n");
    }

    #[test]
    fn the_largest_order_is_the_last_column_of_buddyinfo() {
        let (_dir, _, buddy) = machine("9\n");
        assert_eq!(largest_order(&buddy), Some(10));
        std::fs::write(&buddy, "garbage\n").unwrap();
        assert_eq!(largest_order(&buddy), None);
    }

    // One test, not several: holds share the process's record of the state.
    #[test]
    fn a_hold_sets_the_order_past_the_largest_and_back_and_nested_or_kept_ones_change_nothing() {
        let (_dir, params, buddy) = machine("9\n");
        let notes = std::cell::RefCell::new(Vec::new());
        let note = |s: &str| notes.borrow_mut().push(s.to_string());
        let write = |file: &Path, text: &str| std::fs::write(file, text);
        let hold = |policy| hold_at(&params, &buddy, policy, &note, &write);
        {
            let _outer = hold(ReportingPolicy::Hold);
            assert_eq!(order(&params), "11");
            let seen = state().unwrap();
            assert!(seen.off(), "{seen:?}");
            assert_eq!((seen.order_was, seen.order_during), (9, 11));
            {
                // An enclosing hold: already off, nothing changed, the outer record stands.
                let _inner = hold(ReportingPolicy::Hold);
                assert_eq!(order(&params), "11");
                assert_eq!(state().unwrap().order_was, 9);
            }
            assert_eq!(order(&params), "11", "the inner hold must not set it back");
        }
        assert_eq!(order(&params), "9\n");
        assert_eq!(notes.borrow().len(), 1, "{:?}", notes.borrow());
        assert!(
            notes.borrow()[0].contains("echo 9 >"),
            "{:?}",
            notes.borrow()
        );

        let kept = hold(ReportingPolicy::Keep);
        assert_eq!(order(&params), "9\n");
        let seen = state().unwrap();
        assert!(!seen.off());
        assert_eq!(seen.left_on.as_deref(), Some("--page-reporting keep"));
        drop(kept);

        // No reporter: nothing to hold.
        let absent = hold_at(
            &params.join("absent"),
            &buddy,
            ReportingPolicy::Hold,
            &note,
            &write,
        );
        assert!(absent.restore.is_none());

        // The kernel refuses the write (not root): reporting stays on, and why is said.
        let refuse =
            |_: &Path, _: &str| Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        let refused = hold_at(&params, &buddy, ReportingPolicy::Hold, &note, &refuse);
        assert!(refused.restore.is_none());
        assert_eq!(order(&params), "9\n");
        let seen = state().unwrap();
        assert!(
            !seen.off()
                && seen
                    .left_on
                    .as_deref()
                    .is_some_and(|w| w.contains("could not write"))
        );
        assert!(
            notes.borrow().last().unwrap().contains("stays on"),
            "{:?}",
            notes.borrow()
        );

        // Set off by hand before the command: recorded as off, left as it is after.
        std::fs::write(params.join(ORDER), "11\n").unwrap();
        drop(hold(ReportingPolicy::Hold));
        assert_eq!(order(&params), "11\n");
        let seen = state().unwrap();
        assert!(seen.off() && (seen.order_was, seen.order_during) == (11, 11));
    }
}
