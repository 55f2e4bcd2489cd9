//! What a worker hands the consumer: samples made or served from the application cache,
//! alone or in batches of those made quickly one after another.

use workloads::Sample;

use crate::measure::errors::RunError;

/// What a worker hands the consumer: samples in the order made, each with its content hash (0
/// unless hashing), or the error that stops the epoch.
pub(super) type Message = Result<Vec<(Delivered, u64)>, RunError>;

/// A sample handed to the consumer: one the online steps made, or one the application cache
/// serves as it holds it (shared, not copied: no online step follows the split), as tf.data's
/// `cache()` hands on the tensors it keeps.
pub(super) enum Delivered {
    Made(Sample),
    Cached(std::sync::Arc<Vec<Sample>>, usize),
}

impl Delivered {
    pub(super) fn sample(&self) -> &Sample {
        match self {
            Delivered::Made(sample) => sample,
            Delivered::Cached(part, i) => &part[*i],
        }
    }
}

/// A sample made within this long of the last one sent joins a batch rather than going alone:
/// a queue handing over one tiny sample at a time spends more on waking the consumer than on
/// the sample (NILM `aggregated`'s 12 KB samples: about a third of the epoch's CPU in futex
/// waits and wake-ups). A slower sample, or the first, goes at once.
pub(super) const BATCH_GAP: std::time::Duration = std::time::Duration::from_micros(100);
/// A batch is sent once it holds this many samples, this many bytes, or its first sample has
/// waited [`BATCH_GAP`]: a sample waits at most about that long for the consumer.
pub(super) const BATCH_SAMPLES: usize = 64;
pub(super) const BATCH_BYTES: usize = 1 << 20;

/// The samples a worker has made and not yet sent.
pub(super) struct Batch {
    pub(super) samples: Vec<(Delivered, u64)>,
    bytes: usize,
    /// When its first sample was made.
    first: std::time::Instant,
    /// When the last sample was handed over (held, or sent once the queue took it): the next
    /// sample's making starts. `None` before the first.
    pub(super) ready: Option<std::time::Instant>,
    /// Samples a batch may hold: 1 when a simulated training step takes them, whose queue
    /// counts samples.
    most: usize,
}

impl Batch {
    pub(super) fn new(most: usize) -> Batch {
        Batch {
            samples: Vec::new(),
            bytes: 0,
            first: std::time::Instant::now(),
            ready: None,
            most,
        }
    }

    /// Adds a sample made at `now`; whether the batch should go now: the sample came slowly
    /// (or first), or the batch is full.
    pub(super) fn add(&mut self, sample: Delivered, hash: u64, now: std::time::Instant) -> bool {
        let quick = self
            .ready
            .is_some_and(|r| now.saturating_duration_since(r) < BATCH_GAP);
        if self.samples.is_empty() {
            self.first = now;
        }
        self.bytes += sample.sample().size_bytes();
        self.samples.push((sample, hash));
        !quick
            || self.samples.len() >= self.most
            || self.bytes >= BATCH_BYTES
            || now.saturating_duration_since(self.first) >= BATCH_GAP
    }

    /// The samples held, leaving the batch empty.
    pub(super) fn take(&mut self) -> Vec<(Delivered, u64)> {
        self.bytes = 0;
        std::mem::replace(&mut self.samples, Vec::with_capacity(self.most.min(16)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use workloads::{Field, Sample};

    use super::{Batch, Delivered, BATCH_BYTES, BATCH_GAP, BATCH_SAMPLES};

    fn tiny(id: u64) -> Sample {
        Sample::new(id).with("x", Field::Bytes(vec![0; 100]))
    }

    /// Adds samples made `every` apart, the batch sent whenever it says so (the time of the
    /// send itself taken as nothing); the sizes of the messages sent.
    fn messages(mut batch: Batch, samples: Vec<Sample>, every: Duration) -> Vec<usize> {
        let start = Instant::now();
        let mut sent = Vec::new();
        for (i, sample) in samples.into_iter().enumerate() {
            let now = start + every * (i as u32 + 1);
            if batch.add(Delivered::Made(sample), 0, now) {
                sent.push(batch.take().len());
            }
            batch.ready = Some(now);
        }
        sent.push(batch.take().len());
        sent.retain(|n| *n > 0);
        sent
    }

    #[test]
    fn samples_made_quickly_go_together_and_every_sample_goes_once() {
        let sent = messages(
            Batch::new(BATCH_SAMPLES),
            (0..1000).map(tiny).collect(),
            Duration::from_micros(1),
        );
        assert_eq!(sent.iter().sum::<usize>(), 1000);
        // The first alone (nothing before it to judge its pace by), then full batches.
        assert_eq!(sent[0], 1);
        assert!(
            sent[1..sent.len() - 1].iter().all(|n| *n == BATCH_SAMPLES),
            "{sent:?}"
        );
    }

    #[test]
    fn a_sample_waits_at_most_the_gap_for_the_rest_of_its_batch() {
        let every = BATCH_GAP / 4;
        let sent = messages(
            Batch::new(BATCH_SAMPLES),
            (0..100).map(tiny).collect(),
            every,
        );
        assert_eq!(sent.iter().sum::<usize>(), 100);
        // Its first sample made at t, the batch goes with the one made at t + gap.
        assert!(sent[1..sent.len() - 1].iter().all(|n| *n == 5), "{sent:?}");
    }

    #[test]
    fn slow_samples_large_samples_and_a_training_steps_queue_go_one_by_one() {
        let slow = messages(
            Batch::new(BATCH_SAMPLES),
            (0..20).map(tiny).collect(),
            BATCH_GAP * 2,
        );
        assert_eq!(slow, vec![1; 20]);
        let large = (0..5)
            .map(|id| Sample::new(id).with("x", Field::Bytes(vec![0; BATCH_BYTES])))
            .collect();
        let large = messages(Batch::new(BATCH_SAMPLES), large, Duration::from_micros(1));
        assert_eq!(large, vec![1; 5]);
        let trained = messages(Batch::new(1), (0..20).map(tiny).collect(), Duration::ZERO);
        assert_eq!(trained, vec![1; 20]);
    }
}
