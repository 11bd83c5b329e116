//! Llama-3, Qwen2, cl100k and o200k piece starts for 64 ASCII bytes at a time.
//!
//! The Llama-3 pattern (Qwen2 has `\p{N}` where the others have `\p{N}{1,3}`):
//!
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
//! |\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//!
//! As in [`super::gpt2`], the pieces of a plain-ASCII block are read off bit masks of its classes
//! (letters L, digits N, whitespace S, CR/LF, symbols P = the rest): a piece starts where a run
//! of L, N or P starts, where whitespace starts, and then
//!
//! * **whitespace**: the last character of a whitespace run always starts a piece unless it is
//!   CR or LF (it is a run of one, or the one `\s+(?!\S)` gives back), and it joins the letters
//!   after it (`[^\r\n\p{L}\p{N}]?\p{L}+`), or the symbols after it if it is a plain space
//!   (` ?[^\s...]+`); a run holding CR or LF also starts a piece right after its last one
//!   (`\s*[\r\n]+`); CR and LF right after a symbol belong to the symbols' piece (`[\r\n]*`);
//! * **a lone symbol** that starts a piece joins the letters after it (`"(hello"` is one piece),
//!   unless a space began its piece (`" (hello"` is `" ("`, `"hello"`) or it is the apostrophe
//!   of a contraction;
//! * **contractions**, case-insensitive, where an apostrophe starts a piece: `'s` and `'LL` are
//!   pieces of their own, and a new piece starts after them whatever follows;
//! * **digits** come in groups of at most `max_digits`, counted from the start of their run.
//!
//! For example `"It's  (fine)\n\n 42"` is `["It", "'s", " ", " (", "fine", ")\n\n", " ", "42"]`.
//!
//! o200k's pattern differs in three places, all handled here too:
//!
//! ```text
//! [^\r\n\p{L}\p{N}]?[UP]*[LO]+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?[UP]+[LO]*(?i:'s|...)?|\p{N}{1,3}
//! | ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//!
//! * in ASCII a letter piece is a run of capitals then a run of small letters, so a piece also
//!   starts at a capital after a small letter (`"helloWorld"` is `"hello"`, `"World"`);
//! * contractions are only suffixes of a letter piece (`"don't"` is one piece, `"'s"` at a piece
//!   start is a symbol joining its letters);
//! * `[\r\n/]*` after symbols also takes a `/` after their CR/LF; such a stretch (and a suffix
//!   right after a suffix, as in `"it's's"`) is left to the piece-at-a-time scanner.
//!
//! A block is read only when it and the two bytes after it are ASCII. The starts are exact for
//! every byte of the block except inside a whitespace run that goes on past it (where its last
//! CR/LF is, and so its pieces, depend on what follows): such a run's starts are left out, so the
//! caller, which goes on from the block's last start, reads it again with the next block.

use crate::text::ascii_masks::{any_of, is_space, run_ends, run_starts};

/// The piece starts of the 64 bytes from `pos`, one bit per byte (bit `k` for byte `pos + k`),
/// given that a piece starts at `pos`; digits are grouped by at most `max_digits` (`usize::MAX`:
/// no limit). When the block cannot be read this way (fewer than 66 bytes left, or a non-ASCII
/// byte among them), `Err(n)`: no block starting before `pos + n` can be read either.
#[inline]
pub fn block_starts(bytes: &[u8], pos: usize, max_digits: usize) -> Result<u64, usize> {
    starts::<false>(bytes, pos, max_digits)
}

/// [`block_starts`] for o200k's pattern (digits by three). `Err(n)` also when the block holds a
/// stretch left to the piece scanner (see the module's notes); `n` then passes it.
#[inline]
pub fn o200k_block_starts(bytes: &[u8], pos: usize) -> Result<u64, usize> {
    starts::<true>(bytes, pos, 3)
}

/// See [`block_starts`] (`O200K`: [`o200k_block_starts`]).
#[inline]
fn starts<const O200K: bool>(bytes: &[u8], pos: usize, max_digits: usize) -> Result<u64, usize> {
    let (w, m) = super::ascii_window(bytes, pos)?;
    let after = w[64];
    let (letter, space, symbol) = (m.letter, m.space, m.symbol());
    // The class of the byte after each one: the block's mask moved down one, and the byte after
    // the block at the top.
    let next = |mask: u64, top: bool| (mask >> 1) | (u64::from(top) << 63);
    let next_letter = next(letter, after.is_ascii_alphabetic());
    let after_is_symbol = !(after.is_ascii_alphanumeric() || is_space(after));
    let next_symbol = next(symbol, after_is_symbol);

    // Whitespace: the last character of a run, unless CR/LF, starts a piece and may join the
    // piece after it.
    let last_space = run_ends(space, is_space(after)) & !m.newline;
    let space_joins_letters = last_space & next_letter;
    let space_joins_symbols = last_space & m.blank & next_symbol;
    let folded = |set: &[u8], by: usize| any_of(&w[by..by + 64], set);
    let contraction = || {
        let short = folded(b"sStTmMdD", 1);
        let long = (folded(b"rRvV", 1) & folded(b"eE", 2)) | (folded(b"lL", 1) & folded(b"lL", 2));
        (m.apostrophe & short, m.apostrophe & long)
    };
    // o200k: a contraction right after letters ends their piece.
    let (suffix_short, suffix_long) = if O200K && m.apostrophe & (letter << 1) != 0 {
        let (short, long) = contraction();
        let after_letter = letter << 1;
        let (short, long) = (short & after_letter, long & after_letter);
        let chained = (short | long) & ((short << 2) | (long << 3));
        if chained != 0 {
            return Err(chained.trailing_zeros() as usize + 1);
        }
        (short, long)
    } else {
        (0, 0)
    };
    // A run of symbols starts a piece unless a space began it (or, in o200k, it is a suffix).
    let symbols = run_starts(symbol) & !(space_joins_symbols << 1) & !(suffix_short | suffix_long);
    // Llama-3: a contraction where an apostrophe starts a piece.
    let (short, long) = if !O200K && m.apostrophe & symbols != 0 {
        let (short, long) = contraction();
        (short & symbols, long & symbols)
    } else {
        (suffix_short, suffix_long)
    };
    let symbol_joins_letters = symbols & next_letter & !(short | long);
    // CR/LF right after a symbol belong to the symbols' piece: fill each such run from its first
    // byte (the carry of the addition runs through the run and stops after it).
    let seeds = (symbol << 1) & m.newline;
    let taken = (m.newline.wrapping_add(seeds) ^ m.newline) & m.newline;
    if O200K && taken != 0 {
        // `[\r\n/]*` would go on over a `/` after them.
        let slash_after = (taken << 1) & !m.newline & folded(b"/", 0);
        if slash_after != 0 {
            return Err(slash_after.trailing_zeros() as usize + 1);
        }
    }
    let rest = space & !taken;

    let mut starts = (run_starts(letter) & !((space_joins_letters | symbol_joins_letters) << 1))
        | symbols
        | run_starts(rest)
        | last_space
        | digit_starts(m.digit, max_digits)
        | 1;
    if O200K {
        // A capital after a small letter.
        starts |= m.upper & ((letter & !m.upper) << 1);
    }
    // Inside a contraction no piece starts (not even o200k's capital after a small letter, as
    // in `'vE`); after it one does.
    starts &= !((short << 1) | (long << 1) | (long << 2));
    starts |= (short << 2) | (long << 3);

    // `\s*[\r\n]+`: a piece starts after the last CR/LF of a whitespace run (unless the run ends
    // there: what follows starts a piece anyway).
    let mut newlines = rest & m.newline;
    while newlines != 0 {
        let first = newlines.trailing_zeros();
        let len = (!(rest >> first)).trailing_zeros();
        let run = (u64::MAX >> (64 - len)) << first;
        let last = 63 - (newlines & run).leading_zeros();
        if last + 1 < first + len {
            starts |= 1 << (last + 1);
        }
        newlines &= !run;
    }

    // A whitespace run that goes on past the block: leave it to the next block.
    if space >> 63 == 1 && is_space(after) {
        let from = 64 - (!space).leading_zeros();
        starts &= !(u64::MAX << from);
    }
    Ok(starts | 1)
}

/// The digits that start a group: every `max_digits`-th from the start of each run (all of them
/// for 1, only the first for `usize::MAX`).
#[inline(always)]
fn digit_starts(digit: u64, max_digits: usize) -> u64 {
    if max_digits == 1 {
        return digit;
    }
    let step = max_digits.min(64) as u32;
    let mut out = 0;
    let mut runs = run_starts(digit);
    while runs != 0 {
        let at = runs.trailing_zeros();
        let len = (!(digit >> at)).trailing_zeros();
        let mut k = 0;
        while k < len {
            out |= 1 << (at + k);
            k += step;
        }
        runs &= runs - 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, max_digits: usize) -> Vec<&str> {
        let padded = format!("{text}{}", "x".repeat(80));
        let starts = block_starts(padded.as_bytes(), 0, max_digits).unwrap();
        cut(text, starts)
    }

    fn o200k_pieces(text: &str) -> Result<Vec<&str>, usize> {
        let padded = format!("{text}{}", "x".repeat(80));
        Ok(cut(text, o200k_block_starts(padded.as_bytes(), 0)?))
    }

    fn cut(text: &str, starts: u64) -> Vec<&str> {
        let mut at: Vec<usize> = (0..64).filter(|k| starts >> k & 1 == 1).collect();
        at.retain(|&k| k < text.len());
        at.push(text.len());
        at.windows(2).map(|p| &text[p[0]..p[1]]).collect()
    }

    #[test]
    fn worked_example() {
        assert_eq!(
            pieces("It's  (fine)\n\n 42 ", 3),
            ["It", "'s", " ", " (", "fine", ")\n\n", " ", "42", " "]
        );
    }

    #[test]
    fn o200k_capitals_suffixes_and_slashes() {
        assert_eq!(
            o200k_pieces("helloWorld HTTPServer don'T 's(x ").unwrap(),
            [
                "hello",
                "World",
                " HTTPServer",
                " don'T",
                " '",
                "s",
                "(x",
                " "
            ]
        );
        // `[\r\n/]*` after symbols takes a slash after their newline; a suffix right after a
        // suffix: both left to the piece scanner.
        assert_eq!(o200k_pieces("ab;\n// c"), Err(5));
        assert_eq!(
            o200k_pieces("ab;\n  // c").unwrap(),
            ["ab", ";\n", " ", " //", " c"]
        );
        assert_eq!(o200k_pieces("it's's"), Err(5));
    }

    #[test]
    fn digits_group_by_three_from_each_run() {
        assert_eq!(
            pieces("1234567 89 ", 3),
            ["123", "456", "7", " ", "89", " "]
        );
        assert_eq!(pieces("12a3 ", 1), ["1", "2", "a", "3", " "]);
        assert_eq!(pieces("1234 ", usize::MAX), ["1234", " "]);
    }

    #[test]
    fn whitespace_with_newlines() {
        assert_eq!(
            pieces("a  \n  b.\n \nc", 3),
            ["a", "  \n", " ", " b", ".\n", " \n", "c"]
        );
        assert_eq!(pieces("a\t(b (c", 3), ["a", "\t", "(b", " (", "c"]);
    }

    #[test]
    fn a_whitespace_run_past_the_block_is_left_to_the_next() {
        let text = format!("{}{}", "ab ".repeat(20), " ".repeat(10));
        let starts = block_starts(text.as_bytes(), 0, 3).unwrap();
        // "ab", " ab", ..., " ab" at 56; the spaces from 59 go on past the block.
        assert_eq!(63 - starts.leading_zeros(), 56);
        assert_eq!(starts.count_ones(), 20);
    }
}
