//! Hand-written scanners for the Split patterns of today's byte-level BPE families: a recognised
//! pattern string becomes a [`Scanner`] that finds exactly the matches Oniguruma (Hugging Face)
//! finds, in one forward pass that never backtracks over more than the run it is in.
//!
//! Every pattern here is an alternation tried leftmost-first. Each scanner answers "where does
//! the match starting at byte `i` end" ([`Scanner::match_at`]) by testing the alternatives in the
//! pattern's order on the classes of the next characters ([`crate::stages::scan_classes`]). The
//! only places a regex engine would backtrack are settled by remembering one position during a
//! run:
//!
//! * `\s+(?!\S)` gives back the last character of a whitespace run that is followed by a
//!   non-space (unless the run is one character: then `\s+` takes it);
//! * `\s*[\r\n]+` ends right after the last CR or LF of the whitespace run;
//! * o200k's `[UP]*[LO]+`, where Lm, Lo and marks are in both classes: when the character after
//!   the `UP` run is not in `LO`, the match ends after the last `UP` character that is also `LO`.
//!
//! So each scanner is linear in the text: a call reads at most the run it stops in plus one
//! character, and when it stops short of that run's end (the give-backs above) the rest of the run
//! holds none of what made it stop short, so the next call consumes it (each character is read at
//! most three times). Unknown patterns keep the regex route
//! ([`crate::stages::pre_tokenizers::Pattern`]).
//!
//! ```
//! use tinyllm::stages::scanners::Scanner;
//! let llama3 = Scanner::recognise(concat!(
//!     r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
//!     r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
//! )).unwrap();
//! let text = "I'LL pay 12345  now\n\n";
//! let mut pieces = Vec::new();
//! llama3.for_each_match(text, |a, b| -> Result<(), ()> { pieces.push(&text[a..b]); Ok(()) }).unwrap();
//! assert_eq!(pieces, ["I", "'LL", " pay", " ", "123", "45", " ", " now", "\n\n"]);
//! ```

use crate::stages::blocks::{self, PieceSink};
use crate::stages::scan_classes::{
    classes, Classes, LETTER, LOWERISH, MARK, NUMBER, PUNCT_SYMBOL, SPACE, UPPERISH,
};
use crate::text::ascii_runs;

/// GPT-2's pattern (ByteLevel's `use_regex`), and r50k's as tiktoken publishes it (`\s++$` there
/// adds nothing: `\s+(?!\S)` also takes a run that reaches the end).
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
const R50K: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";
pub(crate) const LLAMA3: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
const QWEN2: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
/// cl100k as `tinyllm convert` writes it (`\p{N}{1,3}`, see `tinyllm.tok.formats.tiktoken`).
const CL100K: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
);
/// cl100k as tiktoken publishes it: in Oniguruma's Ruby syntax `\p{N}{1,3}+` is
/// `(?:\p{N}{1,3})+`, a whole digit run.
const CL100K_TIKTOKEN: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
);
pub(crate) const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
const DIGIT_GROUPS: &str = r"\p{N}{1,3}";
/// DeepSeek-V3's CJK ideographs (U+4E00-U+9FA5) and kana (U+3040-U+30FF).
const DEEPSEEK_CJK: &str = "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+";
const DEEPSEEK_WORDS: &str = concat!(
    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"##,
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// Which family's pattern a scanner reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Gpt2,
    /// Llama-3, Qwen2, cl100k: `max_digits` per number piece; `ws_to_end` for cl100k's `\s++$`.
    Tiktoken {
        max_digits: usize,
        ws_to_end: bool,
    },
    O200k,
    DigitGroups,
    DeepSeekCjk,
    DeepSeekWords,
}

/// A recognised Split pattern and the scanner that matches it.
#[derive(Debug, Clone, Copy)]
pub struct Scanner {
    family: Family,
    name: &'static str,
}

/// The text and its class table, with the small cursor operations the scanners share.
struct Text<'a> {
    s: &'a [u8],
    t: &'static Classes,
}

const CASE_FOLD_S: u32 = 0x17F; // LATIN SMALL LETTER LONG S: `(?i)s` matches it.

impl Text<'_> {
    /// (code point, class bits, byte length) of the character at `i < len`.
    #[inline(always)]
    fn at(&self, i: usize) -> (u32, u8, usize) {
        let s = self.s;
        let b0 = s[i] as u32;
        let (cp, n) = if b0 < 0x80 {
            (b0, 1)
        } else if b0 < 0xE0 {
            (((b0 & 0x1F) << 6) | (s[i + 1] as u32 & 0x3F), 2)
        } else if b0 < 0xF0 {
            (
                ((b0 & 0x0F) << 12) | ((s[i + 1] as u32 & 0x3F) << 6) | (s[i + 2] as u32 & 0x3F),
                3,
            )
        } else {
            (
                ((b0 & 0x07) << 18)
                    | ((s[i + 1] as u32 & 0x3F) << 12)
                    | ((s[i + 2] as u32 & 0x3F) << 6)
                    | (s[i + 3] as u32 & 0x3F),
                4,
            )
        };
        (cp, self.t.of(cp), n)
    }

    /// Class bits of the character at `i`, or 0 past the end.
    #[inline(always)]
    fn class(&self, i: usize) -> u8 {
        if i < self.s.len() {
            self.at(i).1
        } else {
            0
        }
    }

    /// End of the run from `i` of characters with any bit of `mask`.
    #[inline(always)]
    fn run(&self, i: usize, mask: u8) -> usize {
        // ASCII letters eight at a time: every lowercase letter has the class bits of `a`, every
        // uppercase one those of `A` (tested), so the ones in the run are the members of `mask`.
        let lower = self.t.of_ascii(b'a') & mask != 0;
        let upper = self.t.of_ascii(b'A') & mask != 0;
        let ascii = self.s.get(i).is_some_and(|&b| b < 0x80);
        let mut i = if (lower | upper) & ascii {
            ascii_runs::letters_end(self.s, i, lower, upper)
        } else {
            i
        };
        while i < self.s.len() {
            let b = self.s[i];
            if b < 0x80 {
                if self.t.of_ascii(b) & mask == 0 {
                    break;
                }
                i += 1;
                continue;
            }
            let (_, k, n) = self.at(i);
            if k & mask == 0 {
                break;
            }
            i += n;
        }
        i
    }

    /// End of the run from `i` of characters with none of the bits of `mask` (and not at the end).
    #[inline(always)]
    fn run_without(&self, mut i: usize, mask: u8) -> usize {
        while i < self.s.len() {
            let (_, k, n) = self.at(i);
            if k & mask != 0 {
                break;
            }
            i += n;
        }
        i
    }

    /// End of the run from `i` of bytes in `set` (ASCII only).
    #[inline(always)]
    fn ascii_run(&self, mut i: usize, set: impl Fn(u8) -> bool) -> usize {
        while i < self.s.len() && set(self.s[i]) {
            i += 1;
        }
        i
    }

    /// `\p{N}{1,max}` from `i` (`i` is a number).
    #[inline(always)]
    fn digits(&self, mut i: usize, max: usize) -> usize {
        let mut count = 0;
        while i < self.s.len() && count < max {
            let (_, k, n) = self.at(i);
            if k & NUMBER == 0 {
                break;
            }
            i += n;
            count += 1;
        }
        i
    }

    /// A contraction `'s|'t|'re|'ve|'m|'ll|'d` at `i` (case-insensitively when `fold`): its end.
    #[inline(always)]
    fn contraction(&self, i: usize, fold: bool) -> Option<usize> {
        let s = self.s;
        if s.get(i) != Some(&b'\'') {
            return None;
        }
        let lower = |k: usize| -> Option<u8> {
            let b = *s.get(k)?;
            Some(if fold { b.to_ascii_lowercase() } else { b })
        };
        match lower(i + 1) {
            Some(b's' | b't' | b'm' | b'd') => return Some(i + 2),
            Some(b'r' | b'v') if lower(i + 2) == Some(b'e') => return Some(i + 3),
            Some(b'l') if lower(i + 2) == Some(b'l') => return Some(i + 3),
            _ => {}
        }
        if fold && i + 1 < s.len() && self.at(i + 1).0 == CASE_FOLD_S {
            return Some(i + 3);
        }
        None
    }

    /// The whitespace alternatives at `i` (a space): `\s++$` when `ws_to_end`, then
    /// `\s*[\r\n]+` when `crlf`, then `\s+(?!\S)|\s+`.
    #[inline(always)]
    fn whitespace(&self, i: usize, ws_to_end: bool, crlf: bool) -> usize {
        let s = self.s;
        let (mut j, mut last_start, mut after_crlf) = (i, i, None);
        while j < s.len() {
            let (cp, k, n) = self.at(j);
            if k & SPACE == 0 {
                break;
            }
            if cp == u32::from(b'\r') || cp == u32::from(b'\n') {
                after_crlf = Some(j + 1);
            }
            last_start = j;
            j += n;
        }
        if j == s.len() && ws_to_end {
            return j;
        }
        if crlf {
            if let Some(end) = after_crlf {
                return end;
            }
        }
        if j == s.len() || last_start == i {
            j
        } else {
            last_start
        }
    }
}

#[inline(always)]
fn is_crlf(cp: u32) -> bool {
    cp == u32::from(b'\r') || cp == u32::from(b'\n')
}

impl Scanner {
    /// The scanner of `pattern` if it is, byte for byte, one of the patterns this module knows.
    pub fn recognise(pattern: &str) -> Option<Self> {
        let (family, name) = match pattern {
            GPT2 => (Family::Gpt2, "gpt2"),
            R50K => (Family::Gpt2, "r50k"),
            LLAMA3 => (tiktoken(3, false), "llama3"),
            QWEN2 => (tiktoken(1, false), "qwen2"),
            CL100K => (tiktoken(3, true), "cl100k"),
            CL100K_TIKTOKEN => (tiktoken(usize::MAX, true), "cl100k-tiktoken"),
            O200K => (Family::O200k, "o200k"),
            DIGIT_GROUPS => (Family::DigitGroups, "digit-groups"),
            DEEPSEEK_CJK => (Family::DeepSeekCjk, "deepseek-cjk"),
            DEEPSEEK_WORDS => (Family::DeepSeekWords, "deepseek-words"),
            _ => return None,
        };
        Some(Scanner { family, name })
    }

    /// The scanner's name (the pattern's family), as `_core.pre_tokenizer_routes` reports it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether every character of every text lies in a match (GPT-2, Llama-3, Qwen2, cl100k and
    /// o200k end in `\s+`, and their alternatives cover every class), so the matches alone are
    /// the pieces.
    pub fn leaves_no_gaps(&self) -> bool {
        matches!(
            self.family,
            Family::Gpt2 | Family::Tiktoken { .. } | Family::O200k
        )
    }

    /// Call `f(start, end)` for each match of the pattern in `s`, in order, as Oniguruma's
    /// iteration finds them (no pattern here matches the empty string).
    pub fn for_each_match<E>(&self, s: &str, mut f: impl PieceSink<E>) -> Result<(), E> {
        let text = Text {
            s: s.as_bytes(),
            t: classes(),
        };
        // Every character starts or continues a match of these: no gaps to skip.
        let piece_end = |i| self.match_at(&text, i).unwrap_or(i + text.at(i).2);
        match self.family {
            Family::Tiktoken { max_digits, .. } => {
                return blocks::for_each_piece(
                    text.s,
                    |bytes, pos| blocks::tiktoken::block_starts(bytes, pos, max_digits),
                    piece_end,
                    f,
                )
            }
            Family::O200k => {
                return blocks::for_each_piece(
                    text.s,
                    blocks::tiktoken::o200k_block_starts,
                    piece_end,
                    f,
                )
            }
            _ => {}
        }
        let mut i = 0;
        while i < s.len() {
            match self.match_at(&text, i) {
                Some(end) => {
                    f.piece(i, end)?;
                    i = end;
                }
                None => i = self.next_candidate(&text, i),
            }
        }
        Ok(())
    }

    /// Where a match could start after a failed try at `i`: the next character, or for the
    /// patterns that leave gaps, the next character that can start one (skipping by lead byte:
    /// ASCII digits and non-ASCII for `\p{N}`, the lead bytes of U+3000-U+9FFF for the CJK run).
    #[inline(always)]
    fn next_candidate(&self, t: &Text<'_>, i: usize) -> usize {
        let s = t.s;
        let mut j = i + t.at(i).2;
        match self.family {
            Family::DigitGroups => {
                while j < s.len()
                    && (s[j] < 0x80 && !s[j].is_ascii_digit() || (0x80..0xC0).contains(&s[j]))
                {
                    j += 1;
                }
            }
            Family::DeepSeekCjk => {
                while j < s.len() && !(0xE3..=0xE9).contains(&s[j]) {
                    j += 1;
                }
            }
            _ => {}
        }
        j
    }

    /// The end of the leftmost-first match that starts at `i`, if one does.
    #[inline(always)]
    fn match_at(&self, t: &Text<'_>, i: usize) -> Option<usize> {
        match self.family {
            Family::Gpt2 => Some(gpt2(t, i)),
            Family::Tiktoken {
                max_digits,
                ws_to_end,
            } => Some(tiktoken_like(t, i, max_digits, ws_to_end)),
            Family::O200k => Some(o200k(t, i)),
            Family::DigitGroups => (t.class(i) & NUMBER != 0).then(|| t.digits(i, 3)),
            Family::DeepSeekCjk => {
                let end = cjk_run(t, i);
                (end > i).then_some(end)
            }
            Family::DeepSeekWords => deepseek_words(t, i),
        }
    }
}

fn tiktoken(max_digits: usize, ws_to_end: bool) -> Family {
    Family::Tiktoken {
        max_digits,
        ws_to_end,
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
fn gpt2(t: &Text<'_>, i: usize) -> usize {
    if let Some(end) = t.contraction(i, false) {
        return end;
    }
    let (cp, k, n) = t.at(i);
    let (j, k) = if cp == u32::from(b' ') && i + n < t.s.len() {
        (i + n, t.class(i + n))
    } else {
        (i, k)
    };
    if k & LETTER != 0 {
        return t.run(j, LETTER);
    }
    if k & NUMBER != 0 {
        return t.run(j, NUMBER);
    }
    if k & SPACE == 0 {
        return t.run_without(j, LETTER | NUMBER | SPACE);
    }
    t.whitespace(i, false, false)
}

/// Llama-3 (`max_digits` 3), Qwen2 (1) and cl100k (3, `ws_to_end`):
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*`
/// `|\s*[\r\n]+|\s+(?!\S)|\s+` (cl100k's possessives change nothing here: what they forbid giving
/// back could never have matched what follows).
fn tiktoken_like(t: &Text<'_>, i: usize, max_digits: usize, ws_to_end: bool) -> usize {
    if let Some(end) = t.contraction(i, true) {
        return end;
    }
    let (cp, k, n) = t.at(i);
    if k & LETTER != 0 {
        return t.run(i, LETTER);
    }
    if k & NUMBER == 0 && !is_crlf(cp) && t.class(i + n) & LETTER != 0 {
        return t.run(i + n, LETTER);
    }
    if k & NUMBER != 0 {
        return t.digits(i, max_digits);
    }
    if let Some(end) = symbols(t, i, cp, k, n, LETTER | NUMBER | SPACE) {
        return t.ascii_run(end, |b| b == b'\r' || b == b'\n');
    }
    t.whitespace(i, ws_to_end, true)
}

/// ` ?[^...]+` at `i`: the end of the run of characters with none of the bits of `outside`, after
/// an optional space (taken only when the run can start after it, as the regex would).
#[inline(always)]
fn symbols(t: &Text<'_>, i: usize, cp: u32, k: u8, n: usize, outside: u8) -> Option<usize> {
    let j = if cp == u32::from(b' ') && i + n < t.s.len() && t.class(i + n) & outside == 0 {
        i + n
    } else if k & outside == 0 {
        i
    } else {
        return None;
    };
    Some(t.run_without(j, outside))
}

/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` at `j`: its end, if it
/// matches. The `UP*` run is greedy; when the character after it is not `LO`, the regex gives
/// back `UP` characters until the last one that is also `LO`, which then ends the match.
#[inline(always)]
fn upper_then_lower(t: &Text<'_>, j: usize) -> Option<usize> {
    let mut u = j;
    let mut last_lower_end = None;
    while u < t.s.len() {
        let (_, k, n) = t.at(u);
        if k & UPPERISH == 0 {
            if k & LOWERISH != 0 {
                return Some(t.run(u, LOWERISH));
            }
            break;
        }
        u += n;
        if k & LOWERISH != 0 {
            last_lower_end = Some(u);
        }
    }
    last_lower_end
}

/// o200k's `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `e`.
#[inline(always)]
fn o200k_suffix(t: &Text<'_>, e: usize) -> usize {
    t.contraction(e, true).unwrap_or(e)
}

/// o200k: `[^\r\n\p{L}\p{N}]?[UP]*[LO]+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?[UP]+[LO]*(?i:'s|...)?`
/// `|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
fn o200k(t: &Text<'_>, i: usize) -> usize {
    let (cp, k, n) = t.at(i);
    let prefix = k & (LETTER | NUMBER) == 0 && !is_crlf(cp) && i + n < t.s.len();
    // First alternative, with the optional prefix character, then without it.
    if prefix {
        if let Some(e) = upper_then_lower(t, i + n) {
            return o200k_suffix(t, e);
        }
    }
    if k & (UPPERISH | LOWERISH) != 0 {
        if let Some(e) = upper_then_lower(t, i) {
            return o200k_suffix(t, e);
        }
    }
    // Second alternative: `UP+` then `LO*`.
    if prefix && t.class(i + n) & UPPERISH != 0 {
        return o200k_suffix(t, t.run(t.run(i + n, UPPERISH), LOWERISH));
    }
    if k & UPPERISH != 0 {
        return o200k_suffix(t, t.run(t.run(i, UPPERISH), LOWERISH));
    }
    if k & NUMBER != 0 {
        return t.digits(i, 3);
    }
    if let Some(end) = symbols(t, i, cp, k, n, LETTER | NUMBER | SPACE) {
        return t.ascii_run(end, |b| b == b'\r' || b == b'\n' || b == b'/');
    }
    t.whitespace(i, false, true)
}

/// DeepSeek-V3's `[一-龥\u3040-ゟ゠-ヿ]+` at `i`: the end of the run (`i` when there is none).
fn cjk_run(t: &Text<'_>, mut i: usize) -> usize {
    while i < t.s.len() {
        let (cp, _, n) = t.at(i);
        if !matches!(cp, 0x4E00..=0x9FA5 | 0x3040..=0x30FF) {
            break;
        }
        i += n;
    }
    i
}

/// DeepSeek-V3's `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+`
/// `| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`; None where nothing matches (a number, a
/// control or format character not before a letter).
fn deepseek_words(t: &Text<'_>, i: usize) -> Option<usize> {
    let s = t.s;
    if s[i].is_ascii_punctuation() && s.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
        return Some(t.ascii_run(i + 1, |b| b.is_ascii_alphabetic()));
    }
    let (cp, k, n) = t.at(i);
    if k & (LETTER | PUNCT_SYMBOL) == 0 && !is_crlf(cp) && t.class(i + n) & (LETTER | MARK) != 0 {
        return Some(t.run(i + n, LETTER | MARK));
    }
    if k & (LETTER | MARK) != 0 {
        return Some(t.run(i, LETTER | MARK));
    }
    let j = if cp == u32::from(b' ') && t.class(i + n) & PUNCT_SYMBOL != 0 {
        i + n
    } else {
        i
    };
    if t.class(j) & PUNCT_SYMBOL != 0 {
        let end = t.run(j, PUNCT_SYMBOL);
        return Some(t.ascii_run(end, |b| b == b'\r' || b == b'\n'));
    }
    (k & SPACE != 0).then(|| t.whitespace(i, false, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiktoken_and_o200k_blocks_give_the_pieces_of_the_piece_scanner() {
        for (pattern, name) in [
            (LLAMA3, "llama3"),
            (QWEN2, "qwen2"),
            (CL100K, "cl100k"),
            (CL100K_TIKTOKEN, "cl100k-tiktoken"),
            (O200K, "o200k"),
        ] {
            let scanner = Scanner::recognise(pattern).unwrap();
            let mut blocks = 0;
            for text in crate::stages::blocks::mixed_texts(4000) {
                let t = Text {
                    s: text.as_bytes(),
                    t: classes(),
                };
                let mut expected = Vec::new();
                let mut i = 0;
                while i < text.len() {
                    let end = scanner.match_at(&t, i).unwrap();
                    expected.push((i, end));
                    i = end;
                }
                let mut got = Vec::new();
                scanner
                    .for_each_match(&text, |a, b| -> Result<(), ()> {
                        got.push((a, b));
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(got, expected, "{name}: {text:?}");
                let bytes = text.as_bytes();
                let block = match scanner.family {
                    Family::Tiktoken { max_digits, .. } => {
                        crate::stages::blocks::tiktoken::block_starts(bytes, 0, max_digits)
                    }
                    _ => crate::stages::blocks::tiktoken::o200k_block_starts(bytes, 0),
                };
                blocks += usize::from(block.is_ok_and(|s| s > 1));
            }
            assert!(
                blocks > 800,
                "{name}: only {blocks} texts began with a readable block"
            );
        }
    }

    fn pieces<'a>(pattern: &str, s: &'a str) -> Vec<&'a str> {
        let scanner = Scanner::recognise(pattern).expect("a known pattern");
        let mut out = Vec::new();
        scanner
            .for_each_match(s, |a, b| -> Result<(), ()> {
                out.push(&s[a..b]);
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn unknown_patterns_are_not_recognised() {
        assert!(Scanner::recognise(r"\p{N}{1,2}").is_none());
        assert!(Scanner::recognise(&format!("{LLAMA3} ")).is_none());
    }

    #[test]
    fn llama3_and_cl100k_differ_only_at_the_end_of_the_text() {
        let s = "a \n  ";
        assert_eq!(pieces(LLAMA3, s), ["a", " \n", "  "]);
        assert_eq!(pieces(CL100K, s), ["a", " \n  "]);
        assert_eq!(pieces(QWEN2, "x 123"), ["x", " ", "1", "2", "3"]);
        assert_eq!(pieces(CL100K_TIKTOKEN, "x 12345"), ["x", " ", "12345"]);
        assert_eq!(
            pieces(LLAMA3, "'Ll\r\n\r\n  x"),
            ["'Ll", "\r\n\r\n", " ", " x"]
        );
        assert_eq!(pieces(LLAMA3, "!!\r\n"), ["!!\r\n"]);
        assert_eq!(pieces(LLAMA3, "\t(H"), ["\t", "(H"]);
    }

    #[test]
    fn o200k_gives_back_shared_letters() {
        // `ʰ` (Lm) is in both classes: "ABʰC" ends the first alternative after `ʰ`.
        assert_eq!(pieces(O200K, "ABʰC"), ["ABʰ", "C"]);
        assert_eq!(
            pieces(O200K, "HTTPRequest camelCase"),
            ["HTTPRequest", " camel", "Case"]
        );
        assert_eq!(pieces(O200K, "DON'T don's"), ["DON'T", " don's"]);
        assert_eq!(pieces(O200K, "a/b\n//\n"), ["a", "/b", "\n", "//\n"]);
        assert_eq!(pieces(O200K, " \u{301}x"), [" \u{301}x"]);
        assert_eq!(pieces(O200K, "\u{301} "), ["\u{301}", " "]);
        assert_eq!(pieces(O200K, "12345"), ["123", "45"]);
    }

    #[test]
    fn a_scanner_without_gaps_tiles_every_text() {
        // `leaves_no_gaps` lets the pre-tokenizer hand the matches over as the pieces: they must
        // run end to start over the whole text, whatever it holds.
        let mut texts: Vec<String> = crate::stages::blocks::mixed_texts(500).collect();
        texts.extend(
            [
                "\u{0}\u{1f}\u{7f}\u{85}\u{a0}\u{2028}\u{3000}x",
                "\u{301}a\u{301}1\u{301}",
            ]
            .map(String::from),
        );
        for pattern in [GPT2, R50K, LLAMA3, QWEN2, CL100K, CL100K_TIKTOKEN, O200K] {
            let scanner = Scanner::recognise(pattern).unwrap();
            assert!(scanner.leaves_no_gaps(), "{}", scanner.name());
            for text in &texts {
                let mut at = 0;
                scanner
                    .for_each_match(text, |a, b| -> Result<(), ()> {
                        assert_eq!((a, a < b), (at, true), "{}: {text:?}", scanner.name());
                        at = b;
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(at, text.len(), "{}: {text:?}", scanner.name());
            }
        }
        for pattern in [DIGIT_GROUPS, DEEPSEEK_CJK, DEEPSEEK_WORDS] {
            assert!(!Scanner::recognise(pattern).unwrap().leaves_no_gaps());
        }
    }

    #[test]
    fn deepseek_patterns_leave_gaps() {
        assert_eq!(pieces(DIGIT_GROUPS, "a1234b"), ["123", "4"]);
        assert_eq!(
            pieces(DEEPSEEK_CJK, "日本語とカタカナab"),
            ["日本語とカタカナ"]
        );
        assert_eq!(
            pieces(DEEPSEEK_WORDS, "1 .foo x.y(z) é\u{301}"),
            [" .", "foo", " x", ".y", "(z", ")", " é\u{301}"]
        );
    }

    #[test]
    fn worst_case_inputs_are_cut_in_one_pass() {
        // 1 MB of one repeated character, of whitespace, of text without whitespace, and of
        // o200k's give-back trap: every pattern finishes (each match scans its run at most three
        // times, see the module docs) and cuts as expected.
        let n = 1 << 20;
        let inputs = [
            ("a".repeat(n), "a"),
            (" ".repeat(n), "space"),
            ("\n".repeat(n), "newline"),
            (" \n".repeat(n / 2), "space-newline"),
            ("1".repeat(n), "digits"),
            ("ab1!.é日".repeat(n / 12), "no-space"),
            (format!("\u{2b0}{}", "A".repeat(n)), "lm-upper"),
        ];
        let all = [
            GPT2,
            R50K,
            LLAMA3,
            QWEN2,
            CL100K,
            CL100K_TIKTOKEN,
            O200K,
            DIGIT_GROUPS,
            DEEPSEEK_CJK,
            DEEPSEEK_WORDS,
        ];
        for pattern in all {
            let scanner = Scanner::recognise(pattern).unwrap();
            for (text, what) in &inputs {
                let (mut count, mut covered, mut last) = (0usize, 0usize, 0usize);
                scanner
                    .for_each_match(text, |a, b| -> Result<(), ()> {
                        assert!(a >= last && b > a, "{}: {what}: ({a}, {b})", scanner.name());
                        count += 1;
                        covered += b - a;
                        last = b;
                        Ok(())
                    })
                    .unwrap();
                let name = scanner.name();
                match (*what, name) {
                    ("a" | "space", "digit-groups" | "deepseek-cjk") => assert_eq!(count, 0),
                    ("a" | "space", _) => assert_eq!(count, 1, "{name}: {what}"),
                    ("newline", "gpt2" | "r50k" | "llama3" | "qwen2" | "cl100k") => {
                        assert_eq!(count, 1, "{name}: {what}")
                    }
                    ("digits", "digit-groups" | "llama3" | "o200k" | "cl100k") => {
                        assert_eq!(count, n.div_ceil(3), "{name}: {what}")
                    }
                    ("digits", "qwen2") => assert_eq!(count, n),
                    ("lm-upper", "o200k") => assert_eq!(count, 2),
                    _ => {}
                }
                let full_cover =
                    !matches!(name, "digit-groups" | "deepseek-cjk" | "deepseek-words");
                if full_cover {
                    assert_eq!(covered, text.len(), "{name}: {what}");
                }
            }
        }
    }
}
