//! The random numbers of BPE-dropout and Unigram sampling: splitmix64, one counter per stream.
//!
//! Defined bit for bit like `SplitMix64` in the Python reference (`tinyllm.tok.stochastic`),
//! so both draw the same pieces for the same key. A stream's generator depends only on the key and
//! the stream's index (pre-token k of a text draws from `SplitMix64::for_stream(key, k)`), never on
//! threads or on how many streams ran before.
//!
//! ```
//! use tinyllm::models::random::SplitMix64;
//! let mut rng = SplitMix64::new(1234567);
//! assert_eq!(rng.next_u64(), 6457827717110365317);
//! ```

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64 ("splitmix64/v1"; Steele, Lea & Flood 2014). The state is a counter: each step adds
/// `0x9E3779B97F4A7C15` and returns [`SplitMix64::mix`] of the new state. A float in [0, 1) is the
/// top 53 bits of one output times 2^-53. Identical to `SplitMix64` in the Python reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    pub state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The output finalizer (a bijection of u64).
    pub fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Output `k` (0-based) of `SplitMix64::new(seed)`, computed directly: a key for stream `k`
    /// (one per text of a batch, say) that does not depend on how many streams ran before.
    pub fn stream_seed(seed: u64, k: u64) -> u64 {
        Self::mix(seed.wrapping_add(k.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        Self::mix(self.state)
    }

    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// The generator of stream `k` under `key`: seeded with [`SplitMix64::stream_seed`]`(key, k)`
    /// (Python: `tinyllm.tok.stochastic.piece_rng`).
    pub fn for_stream(key: u64, k: u64) -> Self {
        Self::new(Self::stream_seed(key, k))
    }

    /// Advance past `k` outputs without computing them (the state is a counter).
    pub fn skip(&mut self, k: u64) {
        self.state = self.state.wrapping_add(k.wrapping_mul(GOLDEN_GAMMA));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_published_sequence() {
        let mut rng = SplitMix64::new(1234567);
        let got: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            [
                6457827717110365317,
                3203168211198807973,
                9817491932198370423
            ]
        );
        assert_eq!(SplitMix64::stream_seed(1234567, 2), 9817491932198370423);
        let mut rng = SplitMix64::new(0);
        let f = rng.next_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
