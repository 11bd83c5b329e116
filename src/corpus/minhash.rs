//! MinHash signatures of word k-shingles: the fast path of `tinyllm.corpus.minhash`.
//!
//! Defined bit for bit like `reference_signature` in the Python reference:
//!
//! * words are Python's `str.split()`: maximal runs of characters that are not Python whitespace
//!   ([`is_python_space`], which is Unicode `White_Space` plus U+001C..U+001F, the four
//!   information separators Python counts as spaces and Rust's `char::is_whitespace` does not);
//! * a shingle is `k` consecutive words joined by one space; a text of fewer than `k` words
//!   (but at least one) has one shingle, all its words; a text with no words has none;
//! * a shingle's 64-bit hash is [`SplitMix64::mix`] of the FNV-1a 64 of its UTF-8 bytes;
//! * permutation `i` maps a hash x to `(a_i * x + b_i) mod (2^61 - 1)`, with
//!   `a_i = 1 + u mod (2^61 - 2)` and `b_i = v mod (2^61 - 1)` for the next two outputs u, v of
//!   `SplitMix64::new(seed)` (drawn a_0, b_0, a_1, b_1, ...);
//! * signature entry `i` is the least permuted hash over the shingles, or [`EMPTY`] (2^64 - 1, above
//!   every permuted value) when the text has no shingles.
//!
//! ```
//! use tinyllm::corpus::minhash::{signatures, EMPTY};
//! let sigs = signatures(&["The cat sleeps.", "The cat sleeps.", ""], 4, 0, 2).unwrap();
//! assert_eq!(sigs[0..4], sigs[4..8]);
//! assert_eq!(sigs[8..12], [EMPTY; 4]);
//! ```

use rayon::prelude::*;

use crate::models::random::SplitMix64;
use crate::Error;

/// The Mersenne prime 2^61 - 1: the modulus of the permutations.
pub const MERSENNE_61: u64 = (1 << 61) - 1;

/// The signature entry of a text without shingles: above every permuted hash.
pub const EMPTY: u64 = u64::MAX;

const FNV_OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01B3;

/// Whether Python's `str.isspace()` (hence `str.split()`) treats `c` as whitespace (Unicode 14 to
/// 17: the `White_Space` property is stable). Pinned against Python over every code point by the
/// Python tests.
#[inline]
pub fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1C}'..='\u{20}'
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// The words of `text` as Python's `text.split()` gives them.
pub fn python_split(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_python_space).filter(|w| !w.is_empty())
}

#[inline]
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The 64-bit hash of the shingle `words.join(" ")`, computed without joining.
pub fn shingle_hash(words: &[&str]) -> u64 {
    let mut h = FNV_OFFSET;
    for (n, word) in words.iter().enumerate() {
        if n > 0 {
            h = fnv1a(h, b" ");
        }
        h = fnv1a(h, word.as_bytes());
    }
    SplitMix64::mix(h)
}

/// The hashes of the shingles of `text` (see the module docs), sorted and without repeats.
pub fn shingle_hashes(text: &str, k: usize) -> Vec<u64> {
    let words: Vec<&str> = python_split(text).collect();
    let mut hashes: Vec<u64> = if words.is_empty() {
        Vec::new()
    } else if words.len() < k {
        vec![shingle_hash(&words)]
    } else {
        words.windows(k).map(shingle_hash).collect()
    };
    // Repeats change no minimum; dropping them saves num_perm products each.
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// `y mod (2^61 - 1)` for `y < 2^125`, by folding the bits above 61 back onto the low ones.
#[inline(always)]
fn mod_mersenne(y: u128) -> u64 {
    let p = MERSENNE_61 as u128;
    let r = (y & p) + (y >> 61);
    let mut r = ((r & p) + (r >> 61)) as u64;
    if r >= MERSENNE_61 {
        r -= MERSENNE_61;
    }
    r
}

/// The `num_perm` permutations `x -> (a_i x + b_i) mod (2^61 - 1)` drawn from `seed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutations {
    pub a: Vec<u64>,
    pub b: Vec<u64>,
}

impl Permutations {
    pub fn new(num_perm: usize, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let (mut a, mut b) = (Vec::with_capacity(num_perm), Vec::with_capacity(num_perm));
        for _ in 0..num_perm {
            a.push(1 + rng.next_u64() % (MERSENNE_61 - 1));
            b.push(rng.next_u64() % MERSENNE_61);
        }
        Self { a, b }
    }

    /// The signature of `text` with `k`-word shingles, written into `out` (one entry per permutation).
    pub fn signature_into(&self, text: &str, k: usize, out: &mut [u64]) {
        out.fill(EMPTY);
        for h in shingle_hashes(text, k) {
            let x = mod_mersenne(h as u128) as u128;
            for ((slot, &a), &b) in out.iter_mut().zip(&self.a).zip(&self.b) {
                let v = mod_mersenne(a as u128 * x + b as u128);
                if v < *slot {
                    *slot = v;
                }
            }
        }
    }
}

fn check(num_perm: usize, k: usize) -> Result<(), Error> {
    let field = |field: &str, found: usize| Error::Field {
        field: field.into(),
        expected: "an integer >= 1".into(),
        found: found.to_string(),
    };
    if num_perm == 0 {
        return Err(field("minhash: num_perm", num_perm));
    }
    if k == 0 {
        return Err(field("minhash: k", k));
    }
    Ok(())
}

/// The signature of one text.
pub fn signature(text: &str, num_perm: usize, seed: u64, k: usize) -> Result<Vec<u64>, Error> {
    check(num_perm, k)?;
    let mut out = vec![EMPTY; num_perm];
    Permutations::new(num_perm, seed).signature_into(text, k, &mut out);
    Ok(out)
}

/// The signatures of `texts`, row after row (`texts.len() * num_perm` entries), computed in
/// parallel; each row depends only on its text, so the result is the same on any number of threads.
pub fn signatures(texts: &[&str], num_perm: usize, seed: u64, k: usize) -> Result<Vec<u64>, Error> {
    check(num_perm, k)?;
    let perms = Permutations::new(num_perm, seed);
    let mut out = vec![EMPTY; texts.len() * num_perm];
    out.par_chunks_mut(num_perm)
        .zip(texts.par_iter())
        .for_each(|(row, text)| perms.signature_into(text, k, row));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_matches_python_on_its_separators() {
        // Python: "a\x1cb\x85c\u3000 d\te\u200bf".split() == ["a", "b", "c", "d", "e\u200bf"]
        let words: Vec<&str> = python_split("a\x1cb\u{85}c\u{3000} d\te\u{200B}f").collect();
        assert_eq!(words, ["a", "b", "c", "d", "e\u{200B}f"]);
        assert_eq!(python_split("  \n ").count(), 0);
    }

    #[test]
    fn python_space_is_white_space_plus_the_information_separators() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let separator = ('\u{1C}'..='\u{1F}').contains(&c);
            assert_eq!(is_python_space(c), c.is_whitespace() || separator, "{c:?}");
        }
    }

    #[test]
    fn fnv1a_matches_its_published_vectors() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xAF63_DC4C_8601_EC8C);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_F739_67E8);
    }

    #[test]
    fn shingle_hash_hashes_the_joined_words() {
        let joined = SplitMix64::mix(fnv1a(FNV_OFFSET, b"The cat"));
        assert_eq!(shingle_hash(&["The", "cat"]), joined);
        assert_eq!(shingle_hashes("The cat sleeps.", 2).len(), 2);
        assert_eq!(shingle_hashes("The", 2), vec![shingle_hash(&["The"])]);
        assert_eq!(shingle_hashes("a b a b a b", 2).len(), 2); // "a b" and "b a"
    }

    #[test]
    fn mersenne_reduction_equals_the_remainder() {
        let p = MERSENNE_61 as u128;
        let mut rng = SplitMix64::new(7);
        for _ in 0..10_000 {
            let a = (rng.next_u64() % MERSENNE_61) as u128;
            let x = (rng.next_u64() % MERSENNE_61) as u128;
            let b = (rng.next_u64() % MERSENNE_61) as u128;
            assert_eq!(mod_mersenne(a * x + b) as u128, (a * x + b) % p);
        }
        for y in [
            0,
            p - 1,
            p,
            p + 1,
            2 * p,
            (p - 1) * (p - 1) + p - 1,
            u64::MAX as u128,
        ] {
            assert_eq!(mod_mersenne(y) as u128, y % p, "{y}");
        }
    }

    #[test]
    fn permutations_are_drawn_from_splitmix64() {
        let perms = Permutations::new(2, 1234567);
        // SplitMix64(1234567)'s first outputs (tinyllm.tok.stochastic's doctest).
        assert_eq!(perms.a[0], 1 + 6457827717110365317 % (MERSENNE_61 - 1));
        assert_eq!(perms.b[0], 3203168211198807973 % MERSENNE_61);
        assert_eq!(perms.a[1], 1 + 9817491932198370423 % (MERSENNE_61 - 1));
    }

    #[test]
    fn identical_texts_share_signatures_and_empty_texts_get_the_sentinel() {
        let sigs = signatures(&["x y z", "x  y\tz", " ", "w"], 8, 3, 2).unwrap();
        assert_eq!(sigs[0..8], sigs[8..16]);
        assert_eq!(sigs[16..24], [EMPTY; 8]);
        assert!(sigs[24..32].iter().all(|&v| v < MERSENNE_61));
        assert_eq!(signature("x y z", 8, 3, 2).unwrap(), sigs[0..8]);
    }

    #[test]
    fn the_estimate_tracks_the_jaccard_similarity() {
        // 100 shared shingles of 200 in all: J = 1/2.
        let a: Vec<String> = (0..150).map(|i| format!("w{i}")).collect();
        let b: Vec<String> = (50..200).map(|i| format!("w{i}")).collect();
        let (a, b) = (a.join(" "), b.join(" "));
        let sigs = signatures(&[a.as_str(), b.as_str()], 512, 0, 1).unwrap();
        let equal = (0..512).filter(|&i| sigs[i] == sigs[512 + i]).count();
        assert!((equal as f64 / 512.0 - 0.5).abs() < 0.07, "{equal}");
    }

    #[test]
    fn bad_parameters_are_errors_naming_them() {
        let err = signatures(&["a"], 0, 0, 2).unwrap_err().to_string();
        assert!(err.contains("num_perm") && err.contains("found 0"), "{err}");
        let err = signature("a", 4, 0, 0).unwrap_err().to_string();
        assert!(err.contains("minhash: k"), "{err}");
    }
}
