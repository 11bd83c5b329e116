//! Bit sets kept as `u64` words: bit `i` is bit `i % 64` of word `i / 64`. The byte sets of the
//! character starts and of the Precompiled skips (`[u64; 4]`, one bit per byte value), and the
//! code-point bitmaps of the Precompiled skips and of the word count, all read and set here.
//!
//! ```
//! use tinyllm::text::bits::{has, set};
//! let mut bytes = [0u64; 4];
//! set(&mut bytes, 0xCC);
//! assert!(has(&bytes, 0xCC) && !has(&bytes, 0xCD));
//! ```

/// Whether bit `i` is set. Inlined, so that a byte index into a `[u64; 4]` needs no bounds check.
#[inline(always)]
pub fn has(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 != 0
}

/// Set bit `i`.
#[inline(always)]
pub fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}
