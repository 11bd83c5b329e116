//! GPT-2 piece starts for 64 ASCII bytes at a time.
//!
//! The scanner of [`crate::stages::pre_tokenizers`] finds one piece per call and pays, for each
//! piece, a mispredicted branch on what kind of piece comes next. On ASCII text without surprises
//! the pieces of the GPT-2 pattern can instead be read off bit masks: with one bit per byte of a
//! 64-byte block for letters, digits, whitespace and the rest, a piece starts where a run of one
//! class starts, with three corrections, all mask operations:
//!
//! * `\s+(?!\S)` gives back the last character of a whitespace run of two or more followed by a
//!   non-space: that character starts a piece of its own;
//! * the optional space of ` ?\p{L}+`, ` ?\p{N}+` and ` ?[^\s\p{L}\p{N}]+`: a plain space that
//!   ends a whitespace run before a non-space starts the next piece, so the character after it
//!   does not;
//! * the contractions `'s|'t|'re|'ve|'m|'ll|'d`, tried first at a piece start: an apostrophe that
//!   starts a piece and is followed by one of them makes a piece of two or three bytes, after
//!   which a new piece starts whatever comes next.
//!
//! For example, in `"I'm  here"` the starts are at `I`, `'` (a contraction), the first space (a
//! whitespace run that gives its last space back) and the second space (which takes `here`):
//! `["I", "'m", " ", " here"]`.
//!
//! A block is read only when it and the two bytes after it are ASCII (the corrections look up to
//! two bytes ahead; a non-ASCII character could be a letter or a space); the scanner handles the
//! rest. Starts are exact for every byte of a block, so the pieces between them are final; the
//! last one may go on past the block, and the next block starts at it. Tested against the
//! piece-at-a-time scanner on random text.

/// The piece starts of the 64 bytes from `pos`, one bit per byte (bit `k` for byte `pos + k`),
/// given that a piece starts at `pos`. When the block cannot be read this way (fewer than 66
/// bytes left, or a non-ASCII byte among them), `Err(n)`: no block starting before `pos + n`
/// can be read either, so the caller need not try again sooner.
#[inline]
pub fn block_starts(bytes: &[u8], pos: usize) -> Result<u64, usize> {
    #[cfg(target_arch = "x86_64")]
    {
        let Some(window) = bytes.get(pos..pos + 66) else {
            return Err(usize::MAX);
        };
        // SAFETY: SSE2 is part of the x86_64 baseline; the window holds the 66 bytes read.
        unsafe { sse2::starts(window) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (bytes, pos);
        Err(usize::MAX)
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// The masks of one 64-byte stretch.
    struct Masks {
        letter: u64,
        digit: u64,
        space: u64,
        blank: u64,
        apostrophe: u64,
        non_ascii: u64,
    }

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

    /// The class masks of `s[0..64]`.
    #[inline(always)]
    unsafe fn masks(s: &[u8]) -> Masks {
        let mut m = Masks {
            letter: 0,
            digit: 0,
            space: 0,
            blank: 0,
            apostrophe: 0,
            non_ascii: 0,
        };
        for k in 0..4 {
            let v = _mm_loadu_si128(s.as_ptr().add(16 * k) as *const __m128i);
            let shift = 16 * k;
            let blank = equal(v, b' ');
            m.letter |= bits(between(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'z')) << shift;
            m.digit |= bits(between(v, b'0', b'9')) << shift;
            m.space |= bits(_mm_or_si128(between(v, 0x09, 0x0D), blank)) << shift;
            m.blank |= bits(blank) << shift;
            m.apostrophe |= bits(equal(v, b'\'')) << shift;
            m.non_ascii |= bits(v) << shift;
        }
        m
    }

    /// One bit per byte of `s[0..64]` equal to one of `set`.
    #[inline(always)]
    unsafe fn any_of(s: &[u8], set: &[u8]) -> u64 {
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

    /// See [`super::block_starts`]; `w` is the block and the two bytes after it.
    #[inline]
    pub(super) unsafe fn starts(w: &[u8]) -> Result<u64, usize> {
        let here = masks(&w[..64]);
        if here.non_ascii != 0 {
            return Err(here.non_ascii.trailing_zeros() as usize + 1);
        }
        if w[64] >= 0x80 {
            return Err(65);
        }
        if w[65] >= 0x80 {
            return Err(66);
        }
        // Whether the byte after each one is whitespace: the block's own mask moved down one,
        // and the byte after the block.
        let next_space = (here.space >> 1) | (u64::from(matches!(w[64], 0x09..=0x0D | b' ')) << 63);
        let other = !(here.letter | here.digit | here.space);
        let run_start = |m: u64| m & !(m << 1);
        let mut starts = run_start(here.letter)
            | run_start(here.digit)
            | run_start(here.space)
            | run_start(other)
            | 1;
        let space_end = here.space & !next_space;
        // `\s+(?!\S)` gives back the last character of a run of two or more.
        starts |= space_end & (here.space << 1);
        // A plain space before a non-space joins the piece after it.
        let joins = space_end & here.blank;
        starts &= !(joins << 1);
        if here.apostrophe != 0 {
            let after = |set: &[u8], by: usize| any_of(&w[by..by + 64], set);
            let short = here.apostrophe & after(b"stmd", 1);
            let long = here.apostrophe
                & ((after(b"rv", 1) & after(b"e", 2)) | (after(b"l", 1) & after(b"l", 2)));
            // Only where a piece starts (not inside a run of other characters, not after a
            // joining space) is a contraction tried.
            let (short, long) = (short & starts, long & starts);
            starts &= !((short << 1) | (long << 1) | (long << 2));
            starts |= (short << 2) | (long << 3);
        }
        Ok(starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let mut text = String::from("I'm  here");
        text.push_str(&" x".repeat(40));
        let starts = block_starts(text.as_bytes(), 0).unwrap();
        // I, 'm, the first space, " here", then " x" pieces.
        let expected = [0, 1, 3, 4, 9, 11, 13]
            .iter()
            .fold(0u64, |m, &k| m | 1 << k);
        assert_eq!(starts & 0x3fff, expected);
    }

    #[test]
    fn non_ascii_or_short_blocks_are_left_to_the_scanner() {
        let ascii = "a".repeat(66);
        assert!(block_starts(ascii.as_bytes(), 0).is_ok());
        assert_eq!(block_starts(ascii.as_bytes(), 1), Err(usize::MAX));
        let mut late = "a".repeat(65);
        late.push('é');
        assert_eq!(block_starts(late.as_bytes(), 0), Err(66));
        let early = format!("ab{}", "é".repeat(40));
        assert_eq!(block_starts(early.as_bytes(), 0), Err(3));
    }
}
