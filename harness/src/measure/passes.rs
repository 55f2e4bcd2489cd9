//! The passes of an epoch served from a cache: it reads its input again until it has lasted
//! the floor (`OnlineJob::min_s`, docs/measurement.md).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Passes of a cached epoch beyond this many are not started, whatever the time.
const MAX_PASSES: u64 = 10_000;

/// The passes the workers of one epoch make. The first worker to finish pass `k` decides for
/// all, from the time spent, whether there is a pass `k + 1`; every worker then makes the same
/// number of passes over its own part, so the epoch ends with one tail, as a single pass does.
pub struct Passes {
    target: AtomicU64,
    min_s: Option<f64>,
    start: std::time::Instant,
}

impl Passes {
    /// The passes decided so far (all of them, once the workers are done).
    pub fn made(&self) -> u64 {
        self.target.load(Ordering::SeqCst)
    }

    pub fn new(min_s: Option<f64>) -> Passes {
        Passes {
            target: AtomicU64::new(1),
            min_s,
            start: std::time::Instant::now(),
        }
    }

    /// Whether a worker that has made `done` passes makes another.
    pub fn another(&self, done: u64, stop: &AtomicBool) -> bool {
        let Some(min_s) = self.min_s else {
            return false;
        };
        loop {
            if stop.load(Ordering::Relaxed) || done >= MAX_PASSES {
                return false;
            }
            let target = self.target.load(Ordering::SeqCst);
            if done < target {
                return true;
            }
            if self.start.elapsed().as_secs_f64() >= min_s {
                return false;
            }
            if self
                .target
                .compare_exchange(target, done + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_are_decided_once_for_every_worker_and_end_at_the_floor() {
        let stop = AtomicBool::new(false);
        // One pass without a floor, or once the floor has passed.
        assert!(!Passes::new(None).another(1, &stop));
        assert!(!Passes::new(Some(0.0)).another(1, &stop));
        // The first worker to finish pass 1 before the floor starts pass 2 for all; the
        // others follow without deciding again.
        let p = Passes::new(Some(60.0));
        assert!(p.another(1, &stop));
        assert_eq!(p.target.load(Ordering::SeqCst), 2);
        assert!(p.another(1, &stop));
        assert_eq!(p.target.load(Ordering::SeqCst), 2);
        assert!(p.another(2, &stop));
        assert_eq!(p.target.load(Ordering::SeqCst), 3);
        // A stopped run, or one at the pass limit, makes no more.
        assert!(!p.another(MAX_PASSES, &stop));
        stop.store(true, Ordering::Relaxed);
        assert!(!p.another(1, &stop));
    }
}
