//! Python worker processes for `op: python` steps: one persistent interpreter per worker thread
//! (as PyTorch's DataLoader keeps its workers). Consecutive Python steps of one phase form a
//! chain that one worker runs in a single round trip, so a sample crosses to Python once and
//! back once however many Python steps it passes through. Samples cross through a shared
//! memory file; the pipes carry only 16-byte messages. The interpreter is the user's:
//! `--python`, else `PREPBENCH_PYTHON`, else `python3`. The protocol is described in
//! `driver.py`, which is sent to the interpreter with `-c` (nothing is written to disk).

mod chain;
mod interpreter;
mod lease;
mod link;
mod memory;
mod pools;
pub mod watch;
mod wire;
mod worker;

pub use chain::{Chain, ChainError};
pub use interpreter::{
    check, end_unless_answered, interpreter, no_answer, set_interpreter, start_timeout,
    worker_pids, DRIVER, WORKER_ENV,
};
pub(crate) use interpreter::{in_workload_dir, workload_dir};
pub use lease::{Finished, Lease};
pub use link::Link;
pub use pools::Pools;
