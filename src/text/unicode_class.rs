//! Character classes for hand-written pre-tokenizers: `\p{L}`, `\p{N}` and `\s`.
//!
//! The letter and number sets come from `regex-syntax`'s Unicode tables (the same tables the
//! regex engines use), never from `char::is_alphabetic`, which is a different property (it counts
//! Ⅷ and Ⓐ as alphabetic; `\p{L}` does not). `\s` is Unicode White_Space, which is exactly
//! `char::is_whitespace`. ASCII and the rest of the BMP are answered from a table; astral code
//! points by binary search.

use std::sync::OnceLock;

pub const LETTER: u8 = 1;
pub const NUMBER: u8 = 2;
pub const SPACE: u8 = 4;

struct Tables {
    bmp: Vec<u8>,
    letters: Vec<(u32, u32)>,
    numbers: Vec<(u32, u32)>,
}

/// The code point ranges of a `\p{..}`-style class as the `regex` crates read it (empty if
/// `class` is not a Unicode class).
pub(crate) fn ranges(class: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    // The class names are literals of this module; parsing them cannot fail.
    let hir = match regex_syntax::parse(class) {
        Ok(h) => h,
        Err(_) => return Vec::new(),
    };
    match hir.kind() {
        HirKind::Class(Class::Unicode(cls)) => cls
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        _ => Vec::new(),
    }
}

fn in_ranges(ranges: &[(u32, u32)], c: u32) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let letters = ranges(r"\p{L}");
        let numbers = ranges(r"\p{N}");
        let mut bmp = vec![0u8; 0x10000];
        for &(lo, hi) in &letters {
            for c in lo..=hi.min(0xFFFF) {
                bmp[c as usize] |= LETTER;
            }
        }
        for &(lo, hi) in &numbers {
            for c in lo..=hi.min(0xFFFF) {
                bmp[c as usize] |= NUMBER;
            }
        }
        for (c, slot) in bmp.iter_mut().enumerate() {
            if char::from_u32(c as u32).is_some_and(char::is_whitespace) {
                *slot |= SPACE;
            }
        }
        Tables {
            bmp,
            letters,
            numbers,
        }
    })
}

/// The class bits of `c`: any of LETTER, NUMBER, SPACE, or 0 for everything else.
#[inline]
pub fn class_of(c: char) -> u8 {
    let code = c as u32;
    let t = tables();
    if code < 0x10000 {
        return t.bmp[code as usize];
    }
    let mut bits = 0;
    if in_ranges(&t.letters, code) {
        bits |= LETTER;
    }
    if in_ranges(&t.numbers, code) {
        bits |= NUMBER;
    }
    if c.is_whitespace() {
        bits |= SPACE;
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_numbers_and_spaces_follow_unicode_not_is_alphabetic() {
        assert_eq!(class_of('a'), LETTER);
        assert_eq!(class_of('é'), LETTER);
        assert_eq!(class_of('7'), NUMBER);
        assert_eq!(class_of('Ⅷ'), NUMBER); // a letter number, not a letter
        assert_eq!(class_of('Ⓐ'), 0); // alphabetic, yet not \p{L}
        assert_eq!(class_of('\u{1100}'), LETTER); // Hangul Jamo
        assert_eq!(class_of('\u{0301}'), 0); // a combining mark
        for ws in [
            '\u{0b}', '\u{0c}', '\u{85}', '\u{a0}', '\u{2028}', ' ', '\t',
        ] {
            assert_eq!(class_of(ws), SPACE, "{ws:?}");
        }
        for not_ws in ['\u{1c}', '\u{1f}', '\u{200b}'] {
            assert_eq!(class_of(not_ws), 0, "{not_ws:?}");
        }
        assert_eq!(class_of('\u{1D400}'), LETTER); // mathematical bold A, astral
        assert_eq!(class_of('😀'), 0);
    }
}
