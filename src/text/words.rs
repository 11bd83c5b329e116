//! Reference word counts for fertility (tokens per word): the fast path of
//! `tinyllm.eval.words.uax29_word_counts`.
//!
//! A *word* is a UAX #29 word segment (`unicode-segmentation`'s `split_word_bounds`, the crate
//! Hugging Face uses) that contains at least one letter (`\p{L}`), number (`\p{N}`) or ideograph
//! (`\p{Ideographic}`). So "can't", "3.14" and "foo_bar" are one word each, "e-mail" is two,
//! spaces, punctuation and emoji are none, and each Han ideograph is a word of its own.
//!
//! The three classes come from [`crate::text::word_tables`], generated from the Python `regex`
//! module's tables by `tools/gen_word_tables.py`: Unicode 17, like unicode-segmentation 1.13's word
//! boundaries and the Python reference (`regex-syntax`'s tables, read by
//! [`crate::text::unicode_class`], are Unicode 16 and would miss the letters new in 17). They
//! are read once per process into a bitset over all code points.
//!
//! ```
//! use tinyllm::text::words::{word_count, word_counts};
//! assert_eq!(word_count("Hello, world! It's 3.14 -- e-mail foo_bar"), 7);
//! assert_eq!(word_counts(&["a:b a.b 1,2 1.a __", ""]), vec![5, 0]);
//! ```

use std::sync::OnceLock;

use rayon::prelude::*;
use unicode_segmentation::UnicodeSegmentation;

use crate::text::bits;
use crate::text::word_tables::WORD_CHARS;

/// One bit per code point (0 to 0x10FFFF): set for `[\p{L}\p{N}\p{Ideographic}]`.
struct Wordish {
    bits: Vec<u64>,
}

impl Wordish {
    #[inline(always)]
    fn has(&self, c: char) -> bool {
        bits::has(&self.bits, c as usize)
    }
}

fn wordish() -> &'static Wordish {
    static TABLE: OnceLock<Wordish> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = vec![0u64; 0x110000 / 64];
        for &(lo, hi) in WORD_CHARS {
            for cp in lo as usize..=hi as usize {
                bits::set(&mut table, cp);
            }
        }
        Wordish { bits: table }
    })
}

/// Whether `c` is a letter, a number or an ideograph: the characters that make a segment a word.
pub fn is_word_char(c: char) -> bool {
    wordish().has(c)
}

/// The number of words in `text`: UAX #29 word segments holding a letter, number or ideograph.
///
/// A text of more than a few hundred kilobytes is cut after line feeds into pieces counted in
/// parallel; see [`count_serial`] for why the cuts change nothing.
pub fn word_count(text: &str) -> usize {
    if text.len() < 2 * PIECE {
        return count_serial(text);
    }
    pieces(text)
        .par_iter()
        .map(|piece| count_serial(piece))
        .sum()
}

/// `word_count` of each of `texts`, in order, counted in parallel.
pub fn word_counts(texts: &[&str]) -> Vec<usize> {
    texts.par_iter().map(|text| word_count(text)).collect()
}

/// Bytes per piece of a long text counted in parallel.
const PIECE: usize = 1 << 17;

/// `text` cut just after a line feed every `PIECE` bytes or so (a text without line feeds stays whole).
fn pieces(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(text.len() / PIECE + 1);
    let mut start = 0;
    while text.len() - start > PIECE {
        match bytes[start + PIECE..].iter().position(|&b| b == b'\n') {
            Some(at) => {
                let end = start + PIECE + at + 1;
                out.push(&text[start..end]);
                start = end;
            }
            None => break,
        }
    }
    out.push(&text[start..]);
    out
}

/// `word_count` on one thread: the segments of `split_word_bounds` that hold a word character.
///
/// UAX #29 always breaks after a line feed (WB3a), and no rule looks across one (a line feed is
/// neither a letter, a number, a Mid* character nor ignorable under WB4), so the segments of a
/// text are the segments of its runs of lines, counted each alone. Runs of ASCII lines go through
/// the crate's ASCII word iterator (`unicode_words`, which takes its ASCII path on ASCII text: the
/// same segments as `split_word_bounds`, keeping those with an ASCII letter or digit, which in
/// ASCII are exactly `\p{L}` and `\p{N}`), a few times faster than the general one; the other
/// runs through `split_word_bounds` and the word-character table.
fn count_serial(text: &str) -> usize {
    if text.is_ascii() {
        return text.unicode_words().count();
    }
    let bytes = text.as_bytes();
    let mut count = 0;
    let (mut run, mut run_ascii) = (0, true);
    let mut line = 0;
    while line < bytes.len() {
        let end = match bytes[line..].iter().position(|&b| b == b'\n') {
            Some(at) => line + at + 1,
            None => bytes.len(),
        };
        let ascii = bytes[line..end].is_ascii();
        if ascii != run_ascii {
            count += count_run(&text[run..line], run_ascii);
            (run, run_ascii) = (line, ascii);
        }
        line = end;
    }
    count + count_run(&text[run..], run_ascii)
}

fn count_run(run: &str, ascii: bool) -> usize {
    if ascii {
        run.unicode_words().count()
    } else {
        count_segments(run)
    }
}

/// The definition itself: `split_word_bounds` segments that hold a word character.
fn count_segments(text: &str) -> usize {
    let table = wordish();
    text.split_word_bounds()
        .filter(|segment| segment.chars().any(|c| table.has(c)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_examples() {
        assert_eq!(word_count("can't"), 1);
        assert_eq!(word_count("3.14"), 1);
        assert_eq!(word_count("foo_bar"), 1);
        assert_eq!(word_count("x2"), 1);
        assert_eq!(word_count("e-mail"), 2);
        // WB4: the combining acute belongs to the `e`, and WB6/7 look through it.
        assert_eq!(word_count("e\u{301}:a"), 1);
        assert_eq!(word_count("Hello, world! It's 3.14 -- e-mail foo_bar"), 7);
        assert_eq!(word_count("naïve café, 3.14 d'accord"), 4);
        assert_eq!(word_count("a:b a.b 1,2 1.a __"), 5);
        assert_eq!(word_count("a\u{301} b\u{308}c"), 2); // ASCII letters with combining marks
    }

    #[test]
    fn each_han_ideograph_is_a_word_katakana_runs_stay_together() {
        assert_eq!(word_count("你好"), 2);
        assert_eq!(word_count("中文字"), 3);
        assert_eq!(word_count("\u{20000}\u{2A700}"), 2); // CJK extensions B and C, astral
        assert_eq!(word_count("〇〆"), 2); // ideographic, not both letters
        assert_eq!(word_count("ひらがな"), 4);
        assert_eq!(word_count("カタカナ"), 1);
        assert_eq!(word_count("你好 カタカナ 🦙 ..."), 3);
    }

    #[test]
    fn spaces_punctuation_and_emoji_are_not_words() {
        for text in [
            "",
            " ",
            "\n\r\n\t",
            "...",
            "--",
            "__",
            "🦙",
            "👩\u{200d}💻",
            "\u{301}",
            "!?",
        ] {
            assert_eq!(word_count(text), 0, "{text:?}");
        }
        // A combining mark after a newline starts a segment of its own (WB3a, WB4).
        assert_eq!(word_count("a\n\u{301}b"), 2);
    }

    #[test]
    fn the_table_follows_unicode_classes() {
        for c in [
            'a',
            'Z',
            '7',
            'é',
            'Ⅷ',
            '中',
            '\u{3007}',
            '\u{1D400}',
            '\u{20000}',
        ] {
            assert!(is_word_char(c), "{c:?}");
        }
        for c in [
            ' ',
            '_',
            '.',
            '\u{301}',
            'Ⓐ',
            '😀',
            '\u{200d}',
            '\u{10FFFF}',
        ] {
            assert!(!is_word_char(c), "{c:?}");
        }
    }

    #[test]
    fn the_table_is_regex_syntax_classes_plus_unicode_17() {
        // Unicode 16 (regex-syntax) and 17 (the table) agree on every code point assigned in 16,
        // and both versions match unicode-segmentation's.
        assert_eq!(unicode_segmentation::UNICODE_VERSION, (17, 0, 0));
        let old = crate::text::unicode_class::ranges(r"[\p{L}\p{N}\p{Ideographic}]");
        let assigned = crate::text::unicode_class::ranges(r"\P{Cn}");
        let inside =
            |ranges: &[(u32, u32)], cp: u32| ranges.iter().any(|&(lo, hi)| lo <= cp && cp <= hi);
        let mut new_in_17 = 0;
        for &(lo, hi) in WORD_CHARS {
            for cp in lo..=hi {
                if !inside(&old, cp) {
                    assert!(
                        !inside(&assigned, cp),
                        "U+{cp:04X} is assigned in Unicode 16, yet not a word character"
                    );
                    new_in_17 += 1;
                }
            }
        }
        for &(lo, hi) in &old {
            for cp in lo..=hi {
                assert!(is_word_char(char::from_u32(cp).unwrap()), "U+{cp:04X}");
            }
        }
        assert!(new_in_17 > 0);
        assert!(is_word_char('\u{31350}')); // CJK Unified Ideographs Extension J (Unicode 17)
    }

    /// A small deterministic generator (xorshift) for the equivalence tests below.
    fn random_text(seed: &mut u64, alphabet: &[&str], len: usize) -> String {
        let mut out = String::new();
        for _ in 0..len {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            out.push_str(alphabet[(*seed % alphabet.len() as u64) as usize]);
        }
        out
    }

    const ASCII: &[&str] = &[
        "a", "Z", "x", "0", "7", "_", ".", ",", ";", ":", "'", "\"", "-", " ", "  ", "\n", "\r",
        "\r\n", "\t", "\u{b}", "\u{c}", "/", "!",
    ];
    const MIXED: &[&str] = &[
        "é",
        "\u{301}",
        "\u{200d}",
        "\u{ad}",
        "🦙",
        "中",
        "カ",
        "ｶﾞ",
        "\u{5d0}",
        "٣",
        "\u{85}",
        "\u{2028}",
        "\u{1F1E6}",
        "’",
        "\u{3000}",
    ];

    #[test]
    fn the_ascii_path_and_the_cuts_count_the_definition() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mixed: Vec<&str> = ASCII.iter().chain(MIXED.iter()).copied().collect();
        for round in 0..3000 {
            let alphabet: &[&str] = if round % 2 == 0 { ASCII } else { &mixed };
            let text = random_text(&mut seed, alphabet, 1 + round % 80);
            assert_eq!(count_serial(&text), count_segments(&text), "{text:?}");
            // Lines of each kind side by side.
            let lines = format!("{text}\n{}\n{text}", random_text(&mut seed, ASCII, 30));
            assert_eq!(count_serial(&lines), count_segments(&lines), "{lines:?}");
        }
    }

    #[test]
    fn long_texts_are_cut_after_line_feeds() {
        let mut seed = 7u64;
        let mixed: Vec<&str> = ASCII.iter().chain(MIXED.iter()).copied().collect();
        let text = random_text(&mut seed, &mixed, 3 * PIECE);
        let cut = pieces(&text);
        assert!(cut.len() > 2);
        assert_eq!(cut.concat(), text);
        assert!(cut[..cut.len() - 1].iter().all(|p| p.ends_with('\n')));
        assert_eq!(word_count(&text), count_segments(&text));
        let one_line = "ab ".repeat(PIECE);
        assert_eq!(pieces(&one_line), vec![one_line.as_str()]);
        assert_eq!(word_count(&one_line), PIECE);
    }

    #[test]
    fn word_counts_keep_order() {
        let texts: Vec<String> = (0..1000).map(|k| "w ".repeat(k % 37)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let expected: Vec<usize> = (0..1000).map(|k| k % 37).collect();
        assert_eq!(word_counts(&refs), expected);
        assert_eq!(word_counts(&[]), Vec::<usize>::new());
    }
}
