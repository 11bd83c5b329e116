//! One byte of class bits per code point for the hand-written split scanners
//! ([`crate::stages::scanners`]): the Unicode classes the tiktoken-style patterns are made of.
//!
//! The classes come from `regex-syntax`'s Unicode tables (those the regex engines use), which
//! agree with the Oniguruma of Hugging Face tokenizers 0.23.3 on every code point (checked by
//! `benches/sweep_pretokenizer.py --family ...` and, CI-sized, by
//! `tests/tok/stages/test_split_scanners.py`). `\s` is Unicode White_Space (`char::is_whitespace`).
//! The table is two-level (256-code-point blocks, identical blocks shared), built once per process.
//!
//! ```
//! use tinyllm::stages::scan_classes::{classes, LETTER, UPPERISH, LOWERISH};
//! let k = classes().of('ǅ' as u32); // U+01C5, a titlecase letter: `\p{Lt}`
//! assert!(k & LETTER != 0 && k & UPPERISH != 0 && k & LOWERISH == 0);
//! ```

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::text::unicode_class::ranges;

/// `\p{L}`
pub const LETTER: u8 = 1;
/// `\p{N}`
pub const NUMBER: u8 = 2;
/// `\s`: White_Space.
pub const SPACE: u8 = 4;
/// `\p{M}`
pub const MARK: u8 = 8;
/// `[\p{P}\p{S}]`
pub const PUNCT_SYMBOL: u8 = 16;
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
pub const UPPERISH: u8 = 32;
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
pub const LOWERISH: u8 = 64;

const BLOCK: usize = 256;

/// The last White_Space code point (U+3000, the ideographic space).
const LAST_SPACE: u32 = 0x3000;

/// The class bits of every code point (surrogates and unassigned ones have none).
pub struct Classes {
    index: Vec<u16>,
    blocks: Vec<u8>,
    /// The first block again, indexed by a byte: one load for ASCII, the common case.
    ascii: [u8; 256],
}

impl Classes {
    /// The class bits of code point `cp` (at most 0x10FFFF).
    #[inline(always)]
    pub fn of(&self, cp: u32) -> u8 {
        if cp < 0x80 {
            return self.ascii[cp as usize];
        }
        let block = self.index[(cp as usize) >> 8] as usize;
        self.blocks[block * BLOCK + (cp as usize & (BLOCK - 1))]
    }

    /// The class bits of an ASCII byte `b` (< 0x80).
    #[inline(always)]
    pub fn of_ascii(&self, b: u8) -> u8 {
        self.ascii[b as usize]
    }
}

fn build() -> Classes {
    let mut flat = vec![0u8; 0x110000];
    let classes: [(&str, u8); 6] = [
        (r"\p{L}", LETTER),
        (r"\p{N}", NUMBER),
        (r"\p{M}", MARK),
        (r"[\p{P}\p{S}]", PUNCT_SYMBOL),
        (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UPPERISH),
        (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LOWERISH),
    ];
    for (class, bit) in classes {
        for (lo, hi) in ranges(class) {
            for slot in &mut flat[lo as usize..=hi as usize] {
                *slot |= bit;
            }
        }
    }
    // White_Space has no code point above U+3000 (the test below checks every one).
    for (cp, slot) in flat[..=LAST_SPACE as usize].iter_mut().enumerate() {
        if char::from_u32(cp as u32).is_some_and(char::is_whitespace) {
            *slot |= SPACE;
        }
    }
    let mut index = Vec::with_capacity(flat.len() / BLOCK);
    let mut blocks: Vec<u8> = Vec::new();
    // FxHash: the table is built at a process's first encode, and SipHash over its 1.1 MB was
    // most of the 2 ms that took.
    let mut seen: FxHashMap<&[u8], u16> = FxHashMap::default();
    for chunk in flat.chunks(BLOCK) {
        let id = *seen.entry(chunk).or_insert_with(|| {
            blocks.extend_from_slice(chunk);
            (blocks.len() / BLOCK - 1) as u16
        });
        index.push(id);
    }
    let mut ascii = [0u8; 256];
    ascii[..0x80].copy_from_slice(&flat[..0x80]);
    Classes {
        index,
        blocks,
        ascii,
    }
}

/// The table, built on first use.
pub fn classes() -> &'static Classes {
    static TABLE: OnceLock<Classes> = OnceLock::new();
    TABLE.get_or_init(build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_white_space_lies_past_the_last_one_the_table_marks() {
        let past = (LAST_SPACE + 1..=0x10FFFF)
            .filter_map(char::from_u32)
            .find(|c| c.is_whitespace());
        assert_eq!(past, None);
        assert!(classes().of(LAST_SPACE) & SPACE != 0);
    }

    #[test]
    fn classes_of_known_code_points() {
        let t = classes();
        let of = |c: char| t.of(c as u32);
        assert_eq!(of('a'), LETTER | LOWERISH);
        assert_eq!(of('A'), LETTER | UPPERISH);
        assert_eq!(of('ǅ'), LETTER | UPPERISH); // Lt
        assert_eq!(of('ʰ'), LETTER | UPPERISH | LOWERISH); // Lm
        assert_eq!(of('日'), LETTER | UPPERISH | LOWERISH); // Lo
        assert_eq!(of('\u{301}'), MARK | UPPERISH | LOWERISH);
        assert_eq!(of('7'), NUMBER);
        assert_eq!(of('Ⅷ'), NUMBER);
        assert_eq!(of('!'), PUNCT_SYMBOL);
        assert_eq!(of('$'), PUNCT_SYMBOL);
        assert_eq!(of('😀'), PUNCT_SYMBOL);
        assert_eq!(of(' '), SPACE);
        assert_eq!(of('\u{85}'), SPACE);
        assert_eq!(of('\u{3000}'), SPACE);
        assert_eq!(of('\u{1c}'), 0);
        assert_eq!(of('\u{200b}'), 0);
        assert_eq!(t.of(0xD800), 0);
        assert_eq!(of('\u{1D400}'), LETTER | UPPERISH); // mathematical bold A
        assert_eq!(of('\u{10FFFF}'), 0);
    }

    /// `Text::run` in the scanners reads ASCII letters eight at a time on this promise.
    #[test]
    fn every_ascii_letter_has_the_class_of_a_or_of_capital_a() {
        let t = classes();
        for b in b'a'..=b'z' {
            assert_eq!(t.of_ascii(b), t.of_ascii(b'a'));
            assert_eq!(t.of_ascii(b.to_ascii_uppercase()), t.of_ascii(b'A'));
        }
    }
}
