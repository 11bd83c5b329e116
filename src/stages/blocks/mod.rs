//! Piece starts of Split patterns read 64 plain-ASCII bytes at a time, from bit masks of the
//! bytes' classes ([`crate::text::ascii_masks`]), for the patterns whose pieces follow from the
//! classes of a byte and of its neighbours: [`gpt2`] (GPT-2, r50k) and [`tiktoken`] (Llama-3,
//! Qwen2, cl100k, o200k).
//!
//! A scanner that finds one piece per call pays, for each piece, a mispredicted branch on what
//! kind of piece comes next; a block's starts cost a few dozen mask operations for 64 bytes.
//! Blocks with a non-ASCII byte go to the piece-at-a-time scanners, which stay the definition:
//! tests hold each block reader equal to them on random texts.

use crate::text::ascii_masks::Masks;

pub mod gpt2;
pub mod tiktoken;

/// What every block reader starts from: the 64 bytes from `pos` with the two after them (the
/// readers look up to two bytes ahead) and the block's class masks, when all 66 bytes are ASCII
/// (a non-ASCII character could be a letter or a space). Otherwise `Err(n)`: no block starting
/// before `pos + n` can be read either (`usize::MAX` within 66 bytes of the end).
#[inline(always)]
fn ascii_window(bytes: &[u8], pos: usize) -> Result<(&[u8], Masks), usize> {
    let Some(w) = bytes.get(pos..pos + 66) else {
        return Err(usize::MAX);
    };
    let m = Masks::of(w);
    if m.non_ascii != 0 {
        return Err(m.non_ascii.trailing_zeros() as usize + 1);
    }
    if w[64] >= 0x80 {
        return Err(65);
    }
    if w[65] >= 0x80 {
        return Err(66);
    }
    Ok((w, m))
}

/// Where a scanner's pieces go: `piece(start, end)` for each, in order, until one gives an error.
///
/// Every closure `FnMut(usize, usize) -> Result<(), E>` is one. A type of its own whose `piece`
/// is `#[inline(always)]` gets its whole per-piece work placed in the scanner's loop: LLVM does
/// not inline a closure of more than a few dozen instructions into a loop that calls it from two
/// places, and the call then costs a piece a frame of saved registers (a fifth of the
/// instructions of a cached piece, `benches/bench_instructions.py`).
pub trait PieceSink<E> {
    fn piece(&mut self, start: usize, end: usize) -> Result<(), E>;
}

impl<E, F: FnMut(usize, usize) -> Result<(), E>> PieceSink<E> for F {
    #[inline(always)]
    fn piece(&mut self, start: usize, end: usize) -> Result<(), E> {
        self(start, end)
    }
}

/// Call `f(start, end)` for each piece of `bytes`, in order: from blocks where `block` reads them
/// (`block(bytes, pos)` gives the starts of the 64 bytes from a piece start `pos`, or `Err(n)`
/// when no block before `pos + n` can be read), one at a time with `piece_end(start)` elsewhere.
///
/// The pieces of a block up to its last start are final; the last one may go on, and the next
/// block starts there.
#[inline(always)]
pub fn for_each_piece<E>(
    bytes: &[u8],
    block: impl Fn(&[u8], usize) -> Result<u64, usize>,
    piece_end: impl Fn(usize) -> usize,
    mut f: impl PieceSink<E>,
) -> Result<(), E> {
    let (mut i, mut blocks_from) = (0, 0);
    while i < bytes.len() {
        if i >= blocks_from {
            match block(bytes, i) {
                Ok(starts) if starts > 1 => {
                    let (mut rest, mut start) = (starts & !1, i);
                    while rest != 0 {
                        let next = i + rest.trailing_zeros() as usize;
                        f.piece(start, next)?;
                        start = next;
                        rest &= rest - 1;
                    }
                    i = start;
                    continue;
                }
                Ok(_) => {}
                Err(skip) => blocks_from = i.saturating_add(skip),
            }
        }
        let end = piece_end(i);
        f.piece(i, end)?;
        i = end;
    }
    Ok(())
}

/// Long texts, mostly ASCII, dense in what the block masks correct for: runs of spaces and other
/// whitespace with and without CR/LF, contractions in both cases (and near misses), symbols before
/// letters, digit runs, punctuation; now and then a non-ASCII character, so that blocks and single
/// pieces take turns. Deterministic.
#[cfg(test)]
pub(crate) fn mixed_texts(count: usize) -> impl Iterator<Item = String> {
    const WORDS: &[&str] = &[
        "a",
        "Zq",
        "the",
        "don't",
        "I'm",
        "we're",
        "it'll",
        "you've",
        "'d",
        "'s",
        "'t",
        "'S",
        "'LL",
        "'Re",
        "'vE",
        "'D",
        "'rx",
        "'l",
        "''",
        "x'",
        "'hello",
        "(a",
        "\"Q",
        " (",
        " ",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\r\n",
        " \n",
        "\n ",
        ".\n",
        "\n\n",
        "\u{0b}",
        "\u{0c}",
        "\u{1c}",
        "12",
        "7",
        "3.14",
        "1234567",
        "!",
        "...",
        "(",
        ")",
        "-",
        "\u{7f}",
        "\u{0}",
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnop",
        "é",
        "\u{a0}",
        "\u{85}",
        "日本",
        "’s",
    ];
    let mut state = 0x0123_4567_89AB_CDEFu64;
    (0..count).map(move |round| {
        let mut text = String::new();
        while text.len() < 70 + round % 200 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Non-ASCII words (the last five) only one time in eight.
            let span = if state % 8 == 0 {
                WORDS.len()
            } else {
                WORDS.len() - 5
            };
            text.push_str(WORDS[(state >> 8) as usize % span]);
        }
        text
    })
}
