//! A small, version-stable seeded generator (SplitMix64) for random steps and data generators.
//! Its output for a given seed never changes across prepbench or dependency versions, which
//! keeps random crops and generated datasets reproducible forever.
//!
//! Reference: G. Steele, D. Lea, C. Flood, "Fast splittable pseudorandom number generators",
//! OOPSLA 2014 (the SplitMix64 finalizer constants).

#[derive(Clone, Debug)]
pub struct SeededRng {
    state: u64,
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SeededRng {
    pub fn new(seed: u64) -> SeededRng {
        SeededRng { state: mix(seed) }
    }

    /// A generator keyed by several values (e.g. seed, sample id, epoch).
    pub fn from_parts(parts: &[u64]) -> SeededRng {
        let state = parts.iter().fold(0x5eed_u64, |acc, p| {
            mix(acc ^ p.wrapping_add(0x9e37_79b9_7f4a_7c15))
        });
        SeededRng { state }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.state)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift with rejection); `n` must be > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// An index in `0..n`: the next draw modulo `n`, so uniform up to a bias under n / 2^64
    /// (2^-32 for the largest image side a step takes), as TensorFlow's integer
    /// `random.uniform` draws (modulo, with a larger bias). A random step draws its positions
    /// this way so that the tf-data loader computes them in one op per element, as the
    /// paper's `tf.image.random_crop` did (docs/decisions.md); `n` must be > 0.
    pub fn index(&mut self, n: u64) -> u64 {
        assert!(n > 0, "index(0)");
        self.next_u64() % n
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_pinned_so_generated_data_never_changes() {
        let mut r = SeededRng::new(0);
        // SplitMix64 seeded with mix(0) = 0: first outputs of the reference algorithm from 0.
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn index_is_the_draw_modulo_n_and_covers_the_range() {
        let (mut a, mut b) = (
            SeededRng::from_parts(&[3, 4]),
            SeededRng::from_parts(&[3, 4]),
        );
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            let i = a.index(7);
            assert_eq!(i, b.next_u64() % 7);
            seen[i as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (850..1150).contains(&n)), "{seen:?}");
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SeededRng::from_parts(&[1, 2, 3]);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|c| (800..1200).contains(c)), "{seen:?}");
    }

    #[test]
    fn different_parts_give_different_streams() {
        let a = SeededRng::from_parts(&[1, 2, 0]).next_u64();
        let b = SeededRng::from_parts(&[1, 2, 1]).next_u64();
        let c = SeededRng::from_parts(&[2, 1, 0]).next_u64();
        assert!(a != b && a != c && b != c);
    }
}
