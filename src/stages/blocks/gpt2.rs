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

use crate::text::ascii_masks::{any_of, is_space, run_ends, run_starts};

/// The piece starts of the 64 bytes from `pos`, one bit per byte (bit `k` for byte `pos + k`),
/// given that a piece starts at `pos`. When the block cannot be read this way (fewer than 66
/// bytes left, or a non-ASCII byte among them), `Err(n)`: no block starting before `pos + n`
/// can be read either, so the caller need not try again sooner.
#[inline]
pub fn block_starts(bytes: &[u8], pos: usize) -> Result<u64, usize> {
    let (w, here) = super::ascii_window(bytes, pos)?;
    let mut starts = run_starts(here.letter)
        | run_starts(here.digit)
        | run_starts(here.space)
        | run_starts(here.symbol())
        | 1;
    // The last character of each whitespace run (the byte after the block says whether the run
    // at its end goes on).
    let space_end = run_ends(here.space, is_space(w[64]));
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
