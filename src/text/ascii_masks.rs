//! One bit per byte of a 64-byte stretch for each ASCII class the block scanners use (SSE2 on
//! x86_64, a byte loop elsewhere).
//!
//! Bit `k` of a mask stands for byte `k`. The classes are those of the scanners' class table
//! for ASCII ([`crate::stages::scan_classes`]): letters `A-Za-z`, digits `0-9`, whitespace
//! U+0009-U+000D and the space; everything else in ASCII is a symbol. A byte of 0x80 or more is
//! in no class here and is flagged in `non_ascii`: the block scanners leave such stretches to the
//! character-at-a-time scanners.
//!
//! ```
//! use tinyllm::text::ascii_masks::Masks;
//! let text = format!("It's 42!\n{}", " ".repeat(60));
//! let m = Masks::of(text.as_bytes());
//! assert_eq!(m.letter & 0xff, 0b0000_1011); // I, t, s
//! assert_eq!(m.digit & 0xff, 0b0110_0000); // 4, 2
//! assert_eq!(m.newline & 0x3ff, 1 << 8);
//! assert_eq!(m.apostrophe & 0xff, 1 << 2);
//! ```

/// The class masks of 64 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Masks {
    pub letter: u64,
    /// `A-Z` (the other letters are lowercase).
    pub upper: u64,
    pub digit: u64,
    /// `\s` in ASCII: U+0009-U+000D and the space.
    pub space: u64,
    /// The space U+0020 alone.
    pub blank: u64,
    /// CR and LF.
    pub newline: u64,
    pub apostrophe: u64,
    pub non_ascii: u64,
}

impl Masks {
    /// The masks of `s[..64]` (`s` must hold at least 64 bytes).
    #[inline(always)]
    pub fn of(s: &[u8]) -> Masks {
        assert!(s.len() >= 64);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86_64 baseline; the 64 bytes read are inside `s`.
        return unsafe { sse2::masks(s) };
        #[cfg(not(target_arch = "x86_64"))]
        return bytewise::masks(s);
    }

    /// Symbols: ASCII bytes that are neither letters, digits nor whitespace.
    #[inline(always)]
    pub fn symbol(&self) -> u64 {
        !(self.letter | self.digit | self.space | self.non_ascii)
    }
}

/// Whether an ASCII byte is whitespace (`\s`), as in [`Masks::space`].
#[inline(always)]
pub fn is_space(b: u8) -> bool {
    matches!(b, 0x09..=0x0D | b' ')
}

/// One bit per byte of `s[..64]` equal to one of `set` (`s` must hold at least 64 bytes).
#[inline(always)]
pub fn any_of(s: &[u8], set: &[u8]) -> u64 {
    assert!(s.len() >= 64);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline; the 64 bytes read are inside `s`.
    return unsafe { sse2::any_of(s, set) };
    #[cfg(not(target_arch = "x86_64"))]
    return bytewise::any_of(s, set);
}

/// The first bit of each run of ones in `m`.
#[inline(always)]
pub fn run_starts(m: u64) -> u64 {
    m & !(m << 1)
}

/// The last bit of each run of ones in `m`, given whether the run at bit 63 goes on (`more`).
#[inline(always)]
pub fn run_ends(m: u64, more: bool) -> u64 {
    m & !((m >> 1) | (u64::from(more) << 63))
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    use super::Masks;

    /// One bit per byte of `v`: its high bit (all ones or all zeros after a compare).
    #[inline(always)]
    unsafe fn bits(v: __m128i) -> u64 {
        _mm_movemask_epi8(v) as u16 as u64
    }

    #[inline(always)]
    unsafe fn between(v: __m128i, lo: u8, hi: u8) -> __m128i {
        // Signed compares: bytes >= 0x80 are negative and fall outside every ASCII range.
        _mm_and_si128(
            _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
            _mm_cmplt_epi8(v, _mm_set1_epi8(hi as i8 + 1)),
        )
    }

    #[inline(always)]
    unsafe fn equal(v: __m128i, b: u8) -> __m128i {
        _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))
    }

    #[inline(always)]
    pub(super) unsafe fn masks(s: &[u8]) -> Masks {
        let mut m = Masks {
            letter: 0,
            upper: 0,
            digit: 0,
            space: 0,
            blank: 0,
            newline: 0,
            apostrophe: 0,
            non_ascii: 0,
        };
        for k in 0..4 {
            let v = _mm_loadu_si128(s.as_ptr().add(16 * k) as *const __m128i);
            let shift = 16 * k;
            let blank = equal(v, b' ');
            m.letter |= bits(between(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'z')) << shift;
            m.upper |= bits(between(v, b'A', b'Z')) << shift;
            m.digit |= bits(between(v, b'0', b'9')) << shift;
            m.space |= bits(_mm_or_si128(between(v, 0x09, 0x0D), blank)) << shift;
            m.blank |= bits(blank) << shift;
            m.newline |= bits(_mm_or_si128(equal(v, b'\r'), equal(v, b'\n'))) << shift;
            m.apostrophe |= bits(equal(v, b'\'')) << shift;
            m.non_ascii |= bits(v) << shift;
        }
        m
    }

    #[inline(always)]
    pub(super) unsafe fn any_of(s: &[u8], set: &[u8]) -> u64 {
        let mut out = 0;
        for k in 0..4 {
            let v = _mm_loadu_si128(s.as_ptr().add(16 * k) as *const __m128i);
            let mut hit = _mm_setzero_si128();
            for &b in set {
                hit = _mm_or_si128(hit, equal(v, b));
            }
            out |= bits(hit) << (16 * k);
        }
        out
    }
}

/// The same masks a byte at a time: where there is no SSE2, and in the tests as the definition.
#[cfg(any(test, not(target_arch = "x86_64")))]
mod bytewise {
    use super::{is_space, Masks};

    pub(super) fn masks(s: &[u8]) -> Masks {
        let bits =
            |keep: &dyn Fn(u8) -> bool| (0..64).fold(0u64, |m, k| m | (u64::from(keep(s[k])) << k));
        Masks {
            letter: bits(&|b| b.is_ascii_alphabetic()),
            upper: bits(&|b| b.is_ascii_uppercase()),
            digit: bits(&|b| b.is_ascii_digit()),
            space: bits(&is_space),
            blank: bits(&|b| b == b' '),
            newline: bits(&|b| b == b'\r' || b == b'\n'),
            apostrophe: bits(&|b| b == b'\''),
            non_ascii: bits(&|b| b >= 0x80),
        }
    }

    pub(super) fn any_of(s: &[u8], set: &[u8]) -> u64 {
        (0..64).fold(0u64, |m, k| m | (u64::from(set.contains(&s[k])) << k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::scan_classes::{classes, LETTER, NUMBER, SPACE};

    #[test]
    fn every_ascii_byte_has_the_class_of_the_scanners_table() {
        let table = classes();
        for start in (0u8..128).step_by(64) {
            let bytes: Vec<u8> = (start..start + 64).collect();
            let m = Masks::of(&bytes);
            for (k, &b) in bytes.iter().enumerate() {
                let class = table.of_ascii(b);
                let bit = |mask: u64| mask >> k & 1 == 1;
                assert_eq!(bit(m.letter), class & LETTER != 0, "byte {b:#x}");
                assert_eq!(bit(m.upper), b.is_ascii_uppercase(), "byte {b:#x}");
                assert_eq!(bit(m.digit), class & NUMBER != 0, "byte {b:#x}");
                assert_eq!(bit(m.space), class & SPACE != 0, "byte {b:#x}");
                assert_eq!(bit(m.space), is_space(b), "byte {b:#x}");
                assert_eq!(
                    bit(m.symbol()),
                    class & (LETTER | NUMBER | SPACE) == 0,
                    "byte {b:#x}"
                );
                assert_eq!(bit(m.newline), b == b'\r' || b == b'\n');
                assert_eq!(bit(m.blank), b == b' ');
            }
            assert_eq!(m.non_ascii, 0);
        }
        let high: Vec<u8> = (128u8..=255).take(64).collect();
        let m = Masks::of(&high);
        assert_eq!(m.non_ascii, u64::MAX);
        assert_eq!(m.letter | m.digit | m.space | m.symbol(), 0);
    }

    #[test]
    fn masks_equal_the_bytewise_definition() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            let window: Vec<u8> = (0..64)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly ASCII, every byte value now and then.
                    if state % 5 == 0 {
                        (state >> 8) as u8
                    } else {
                        (state >> 8) as u8 & 0x7f
                    }
                })
                .collect();
            assert_eq!(Masks::of(&window), bytewise::masks(&window));
            for set in [&b"/"[..], b"sStTmMdD", b"eE"] {
                assert_eq!(any_of(&window, set), bytewise::any_of(&window, set));
            }
        }
    }

    #[test]
    fn runs() {
        let m = 0b0111_0110u64;
        assert_eq!(run_starts(m), 0b0001_0010);
        assert_eq!(run_ends(m, false), 0b0100_0100);
        assert_eq!(run_ends(u64::MAX, true), 0);
        assert_eq!(run_ends(u64::MAX, false), 1 << 63);
    }
}
