//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014): the one small, fast, seeded
//! generator of the library's draws, tests and fuzzing. A leaf module.

/// SplitMix64's output function of the state `z` after its increment:
/// 64 well-mixed bits of `z + γ` (γ the golden-ratio increment). A
/// stateless hash for draws keyed by (seed, rank, index).
pub fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The generator: its state advances by γ per draw.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let out = mix(self.0);
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        out
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in [0, 1), 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64_s() {
        // The first outputs of SplitMix64 seeded with 0 (the reference
        // implementation's `next()` after `x = 0`).
        let mut r = Rng::new(0);
        assert_eq!([r.next_u64(), r.next_u64()], [0xe220_a839_7b1d_cdaf, 0x6e78_9e6a_a1b9_65f4]);
        assert_eq!(mix(0), 0xe220_a839_7b1d_cdaf);
        assert!((0..100).all(|_| r.below(7) < 7));
    }
}
