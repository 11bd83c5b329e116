//! BERT's text stages as Hugging Face `tokenizers` runs them: `BertNormalizer`,
//! `BertPreTokenizer` and `WhitespaceSplit`. The pure-Python reference, with the rules spelled
//! out, is `tinyllm.tok.stages.bert`.
//!
//! The normalizer's stages, each only when its flag is on: clean_text (delete controls, turn
//! whitespace into ' '), handle_chinese_chars (a space on each side of a CJK ideograph),
//! strip_accents (NFD, then delete nonspacing marks; unset means "as lowercase"), lowercase (per
//! code point).
//!
//! Every character fact comes from [`crate::stages::bert_tables`], measured from HF by
//! `tools/gen_bert_tables.py`, never from Rust's std: std's Unicode version moves with the compiler,
//! and HF's crates carry their own older ones.
//!
//! Speed: a run of ASCII goes through a 128-entry map into a stack buffer; any other character
//! costs one lookup in a two-level flags table built once from the ranges, runs of characters that
//! the settings leave alone are copied as one slice, and only flagged characters pay for a binary
//! search (decomposition, lowercase, combining class). Nothing is allocated per character; marks
//! waiting to be put in canonical order share one buffer per call.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::stages::bert_tables as tables;
use crate::stages::unicode_tables;

const REMOVE: u16 = 1 << 0;
const TO_SPACE: u16 = 1 << 1;
const CJK: u16 = 1 << 2;
pub(crate) const DECOMPOSES: u16 = 1 << 3;
pub(crate) const NONSTARTER: u16 = 1 << 4;
const STRIP: u16 = 1 << 5;
const LOWER: u16 = 1 << 6;
const WHITESPACE: u16 = 1 << 7;
pub(crate) const PUNCTUATION: u16 = 1 << 8;
// Flags of the other Unicode stages ([`crate::stages::decompose`], [`crate::stages::char_splits`]),
// kept in the same table so that every stage pays one lookup per character.
/// Has a compatibility decomposition (HF's NFKD differs from its NFD).
pub(crate) const COMPAT: u16 = 1 << 9;
/// A combining mark that StripAccents deletes.
pub(crate) const MARK: u16 = 1 << 10;
/// Whitespace's `\w`.
pub(crate) const WORD: u16 = 1 << 11;
/// Whitespace's `\s`.
pub(crate) const RE_SPACE: u16 = 1 << 12;
/// May join the starter before it in NFC / NFKC (second of a composition pair, a Hangul vowel or trail).
pub(crate) const JOINS_BACK: u16 = 1 << 13;
/// NFC changes it even alone: it decomposes and is not a primary composite.
pub(crate) const NFC_CHANGES: u16 = 1 << 14;

const BLOCK_BITS: u32 = 7;
const BLOCK_MASK: u32 = (1 << BLOCK_BITS) - 1;
const CODE_POINTS: usize = 0x11_0000;

const HANGUL_FIRST: u32 = 0xAC00;
const HANGUL_LAST: u32 = 0xD7A3;

/// Marks an ASCII byte that clean_text deletes, in [`Flags::ascii`].
const DROP: u8 = 0xFF;

struct Flags {
    /// Block number of each 128-code-point block; identical blocks are stored once.
    index: Vec<u16>,
    blocks: Vec<u16>,
    /// What an ASCII byte becomes, for each (clean_text, lowercase) pair: `ascii[clean * 2 + lower]`.
    ascii: [[u8; 128]; 4],
}

fn mark(all: &mut [u16], ranges: &[(u32, u32)], flag: u16) {
    for &(lo, hi) in ranges {
        for cp in lo..=hi {
            if let Some(slot) = all.get_mut(cp as usize) {
                *slot |= flag;
            }
        }
    }
}

fn build_flags() -> Flags {
    let mut all = vec![0u16; CODE_POINTS];
    mark(&mut all, tables::CLEAN_REMOVED, REMOVE);
    mark(&mut all, tables::CLEAN_TO_SPACE, TO_SPACE);
    mark(&mut all, tables::CJK, CJK);
    mark(&mut all, tables::STRIP_REMOVED, STRIP);
    mark(&mut all, tables::WHITESPACE, WHITESPACE);
    mark(&mut all, tables::PUNCTUATION, PUNCTUATION);
    mark(&mut all, &[(HANGUL_FIRST, HANGUL_LAST)], DECOMPOSES);
    for &(cp, _) in tables::DECOMPOSITION {
        mark(&mut all, &[(cp, cp)], DECOMPOSES);
    }
    for &(cp, _) in unicode_tables::COMPAT_DECOMPOSITION {
        mark(&mut all, &[(cp, cp)], COMPAT);
    }
    mark(&mut all, unicode_tables::COMBINING_MARKS, MARK);
    mark(&mut all, unicode_tables::WORD, WORD);
    mark(&mut all, unicode_tables::SPACE, RE_SPACE);
    for &(cp, _) in tables::LOWERCASE {
        mark(&mut all, &[(cp, cp)], LOWER);
    }
    for &(lo, hi, _) in tables::COMBINING_CLASS {
        mark(&mut all, &[(lo, hi)], NONSTARTER);
    }
    for &(cp, _) in tables::DECOMPOSITION {
        mark(&mut all, &[(cp, cp)], NFC_CHANGES);
    }
    for &(_, second, composite) in unicode_tables::COMPOSITION {
        mark(&mut all, &[(second, second)], JOINS_BACK);
        all[composite as usize] &= !NFC_CHANGES;
    }
    // Hangul vowels and trailing consonants (U+11A7 is "no trail", and joins nothing).
    mark(&mut all, &[(0x1161, 0x1175), (0x11A8, 0x11C2)], JOINS_BACK);

    let mut index = Vec::with_capacity(CODE_POINTS >> BLOCK_BITS);
    let mut blocks = Vec::new();
    let mut seen: HashMap<&[u16], u16> = HashMap::new();
    for block in all.chunks(1 << BLOCK_BITS) {
        let next = seen.len() as u16; // at most 8704 blocks, so this never wraps
        let id = *seen.entry(block).or_insert_with(|| {
            blocks.extend_from_slice(block);
            next
        });
        index.push(id);
    }

    let mut ascii = [[0u8; 128]; 4];
    for (variant, map) in ascii.iter_mut().enumerate() {
        let (clean, lower) = (variant & 2 != 0, variant & 1 != 0);
        for (byte, slot) in map.iter_mut().enumerate() {
            let flags = all[byte];
            *slot = if clean && flags & REMOVE != 0 {
                DROP
            } else if clean && flags & TO_SPACE != 0 {
                b' '
            } else if lower && flags & LOWER != 0 {
                // The tables map ASCII only to ASCII (a unit test checks it).
                lowercase(byte as u32)
                    .and_then(|s| s.bytes().next())
                    .unwrap_or(byte as u8)
            } else {
                byte as u8
            };
        }
    }
    Flags {
        index,
        blocks,
        ascii,
    }
}

fn flags_table() -> &'static Flags {
    static FLAGS: OnceLock<Flags> = OnceLock::new();
    FLAGS.get_or_init(build_flags)
}

/// All the flags of `c` (one table lookup).
#[inline]
pub(crate) fn char_flags(c: char) -> u16 {
    flags_of(flags_table(), c)
}

#[inline]
fn flags_of(table: &Flags, c: char) -> u16 {
    let cp = c as u32;
    // A char is below 0x110000, so its block exists; identical blocks are shared.
    let block = table.index[(cp >> BLOCK_BITS) as usize] as usize;
    table.blocks[(block << BLOCK_BITS) | (cp & BLOCK_MASK) as usize]
}

pub(crate) fn decomposition(cp: u32) -> Option<&'static str> {
    let i = tables::DECOMPOSITION
        .binary_search_by_key(&cp, |&(k, _)| k)
        .ok()?;
    Some(tables::DECOMPOSITION[i].1)
}

fn lowercase(cp: u32) -> Option<&'static str> {
    let i = tables::LOWERCASE
        .binary_search_by_key(&cp, |&(k, _)| k)
        .ok()?;
    Some(tables::LOWERCASE[i].1)
}

pub(crate) fn combining_class(cp: u32) -> u8 {
    let i = tables::COMBINING_CLASS.partition_point(|&(lo, _, _)| lo <= cp);
    match i.checked_sub(1).map(|j| tables::COMBINING_CLASS[j]) {
        Some((_, hi, class)) if cp <= hi => class,
        _ => 0,
    }
}

/// The Hangul syllable's jamo (Unicode 3.12), computed rather than listed; `None` past the block.
pub(crate) fn hangul_jamo(cp: u32) -> Option<[Option<char>; 3]> {
    if !(HANGUL_FIRST..=HANGUL_LAST).contains(&cp) {
        return None;
    }
    let index = cp - HANGUL_FIRST;
    let lead = char::from_u32(0x1100 + index / (21 * 28));
    let vowel = char::from_u32(0x1161 + (index % (21 * 28)) / 28);
    let trail = index % 28;
    let trail = if trail == 0 {
        None
    } else {
        char::from_u32(0x11A7 + trail)
    };
    Some([lead, vowel, trail])
}

/// HF's BertNormalizer. `strip_accents: None` strips exactly when `lowercase` is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BertNormalizer {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    pub strip_accents: Option<bool>,
    pub lowercase: bool,
}

impl Default for BertNormalizer {
    fn default() -> Self {
        Self::new(true, true, None, true)
    }
}

impl BertNormalizer {
    pub fn new(
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: Option<bool>,
        lowercase: bool,
    ) -> Self {
        Self {
            clean_text,
            handle_chinese_chars,
            strip_accents,
            lowercase,
        }
    }

    /// Whether the strip_accents stage runs.
    pub fn strips_accents(&self) -> bool {
        self.strip_accents.unwrap_or(self.lowercase)
    }

    /// Append the normalized form of `text` to `out`.
    pub fn normalize(&self, text: &str, out: &mut String) {
        let table = flags_table();
        let ascii = &table.ascii[usize::from(self.clean_text) * 2 + usize::from(self.lowercase)];
        out.reserve(text.len());
        let mut sink = Sink {
            table,
            out,
            pending: Vec::new(),
            strip: self.strips_accents(),
            lowercase: self.lowercase,
        };
        let mask = self.flags_that_matter();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] < 0x80 {
                // ASCII characters are class-0 starters: the marks before them are complete.
                sink.flush();
                i = copy_ascii_run(text, i, ascii, sink.out);
                continue;
            }
            let (end, flagged) = plain_run(text, i, table, mask);
            if end > i {
                sink.flush();
                sink.out.push_str(&text[i..end]);
            }
            i = end;
            if let Some((c, flags)) = flagged {
                i += c.len_utf8();
                self.push_char(c, flags, &mut sink);
            }
        }
        sink.flush();
    }

    /// The flags that make a character differ from a verbatim copy under these settings.
    fn flags_that_matter(&self) -> u16 {
        let mut mask = 0;
        if self.clean_text {
            mask |= REMOVE | TO_SPACE;
        }
        if self.handle_chinese_chars {
            mask |= CJK;
        }
        if self.strips_accents() {
            mask |= DECOMPOSES | NONSTARTER | STRIP;
        }
        if self.lowercase {
            mask |= LOWER;
        }
        mask
    }

    /// Stages 1 and 2 for one non-ASCII character; stages 3 and 4 happen in the sink.
    fn push_char(&self, c: char, flags: u16, sink: &mut Sink<'_>) {
        if self.clean_text && flags & REMOVE != 0 {
            return;
        }
        if self.clean_text && flags & TO_SPACE != 0 {
            sink.push(' ');
        } else if self.handle_chinese_chars && flags & CJK != 0 {
            if flags & (DECOMPOSES | NONSTARTER | STRIP | LOWER) == 0 {
                // The common ideograph: a starter that no later stage touches, nor its spaces.
                sink.flush();
                sink.out.extend([' ', c, ' ']);
            } else {
                sink.push(' ');
                sink.push(c);
                sink.push(' ');
            }
        } else {
            sink.push(c);
        }
    }
}

/// From byte `start` (not ASCII), the end of the run of non-ASCII characters that normalize to
/// themselves under `mask`, and the flagged character that ended it, if that is what ended it.
fn plain_run(text: &str, start: usize, table: &Flags, mask: u16) -> (usize, Option<(char, u16)>) {
    for (offset, c) in text[start..].char_indices() {
        if c.is_ascii() {
            return (start + offset, None);
        }
        let flags = flags_of(table, c);
        if flags & mask != 0 {
            return (start + offset, Some((c, flags)));
        }
    }
    (text.len(), None)
}

/// Copy the ASCII run starting at `start` through `map`; returns where the run ends.
fn copy_ascii_run(text: &str, start: usize, map: &[u8; 128], out: &mut String) -> usize {
    // Mapped bytes go through a small stack buffer, appended a buffer at a time: cheaper than
    // a String push per byte, and ASCII is always valid UTF-8.
    let mut buf = [0u8; 256];
    let mut n = 0;
    let bytes = text.as_bytes();
    let mut i = start;
    while let Some(&b) = bytes.get(i) {
        if b >= 0x80 {
            break;
        }
        let mapped = map[b as usize];
        buf[n] = mapped;
        n += usize::from(mapped != DROP);
        i += 1;
        if n == buf.len() {
            out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
            n = 0;
        }
    }
    out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or_default());
    i
}

/// Stages 3 (NFD and mark deletion) and 4 (lowercase), one character at a time.
struct Sink<'o> {
    table: &'static Flags,
    out: &'o mut String,
    /// Marks (class, char) of the current run of non-starters, not yet in canonical order.
    pending: Vec<(u8, char)>,
    strip: bool,
    lowercase: bool,
}

impl Sink<'_> {
    fn push(&mut self, c: char) {
        if !self.strip {
            let flags = flags_of(self.table, c);
            self.finish(c, flags);
            return;
        }
        let flags = flags_of(self.table, c);
        if flags & DECOMPOSES == 0 {
            self.order(c, flags);
        } else if let Some(jamo) = hangul_jamo(c as u32) {
            // Conjoining jamo are starters that nothing strips or lowercases (a test checks it).
            self.flush();
            self.out.extend(jamo.into_iter().flatten());
        } else if let Some(parts) = decomposition(c as u32) {
            for d in parts.chars() {
                self.order(d, flags_of(self.table, d));
            }
        } else {
            self.order(c, flags);
        }
    }

    /// Canonical ordering: hold non-starters until the run ends, then emit them sorted by class.
    fn order(&mut self, c: char, flags: u16) {
        if flags & NONSTARTER != 0 {
            self.pending.push((combining_class(c as u32), c));
        } else {
            self.flush();
            self.strip_or_finish(c, flags);
        }
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut run = std::mem::take(&mut self.pending);
        // Stable, so equal classes keep their order; a sort (not insertion) keeps a long run of
        // marks O(n log n).
        run.sort_by_key(|&(class, _)| class);
        for &(_, c) in &run {
            let flags = flags_of(self.table, c);
            self.strip_or_finish(c, flags);
        }
        run.clear();
        self.pending = run;
    }

    fn strip_or_finish(&mut self, c: char, flags: u16) {
        if flags & STRIP == 0 {
            self.finish(c, flags);
        }
    }

    fn finish(&mut self, c: char, flags: u16) {
        if self.lowercase && flags & LOWER != 0 {
            if let Some(lower) = lowercase(c as u32) {
                self.out.push_str(lower);
                return;
            }
        }
        self.out.push(c);
    }
}

/// Call `f` with each piece of HF's BertPreTokenizer, in order (whitespace dropped, punctuation
/// isolated).
pub fn bert_pre_tokenize<'a>(text: &'a str, f: &mut dyn FnMut(&'a str)) {
    split_words(text, WHITESPACE, PUNCTUATION, f);
}

/// HF's WhitespaceSplit: the pieces between runs of whitespace.
pub fn whitespace_split<'a>(text: &'a str, f: &mut dyn FnMut(&'a str)) {
    split_words(text, WHITESPACE, 0, f);
}

/// Pieces of `text`: characters with `drop` flags end a piece and vanish, characters with
/// `isolate` flags end a piece and form one of their own.
fn split_words<'a>(text: &'a str, drop: u16, isolate: u16, f: &mut dyn FnMut(&'a str)) {
    let table = flags_table();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let flags = flags_of(table, c);
        if flags & (drop | isolate) == 0 {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            f(&text[s..i]);
        }
        if flags & drop == 0 {
            f(&text[i..i + c.len_utf8()]);
        }
    }
    if let Some(s) = start {
        f(&text[s..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalize(n: BertNormalizer, text: &str) -> String {
        let mut out = String::new();
        n.normalize(text, &mut out);
        out
    }

    type Split = fn(&str, &mut dyn FnMut(&str));

    fn pieces(split: Split, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        split(text, &mut |p| out.push(p.to_string()));
        out
    }

    fn bert_pieces(text: &str) -> Vec<String> {
        pieces(|t, f| bert_pre_tokenize(t, f), text)
    }

    fn ws_pieces(text: &str) -> Vec<String> {
        pieces(|t, f| whitespace_split(t, f), text)
    }

    const ALL_FLAGS: [bool; 2] = [false, true];
    const STRIP_FLAGS: [Option<bool>; 3] = [None, Some(false), Some(true)];

    fn every_normalizer() -> Vec<BertNormalizer> {
        let mut all = Vec::new();
        for clean in ALL_FLAGS {
            for cjk in ALL_FLAGS {
                for strip in STRIP_FLAGS {
                    for lower in ALL_FLAGS {
                        all.push(BertNormalizer::new(clean, cjk, strip, lower));
                    }
                }
            }
        }
        all
    }

    #[test]
    fn bert_normalizer_matches_golden_cases_from_hf() {
        for &(text, (clean, cjk, strip, lower), expected) in tables::GOLDEN {
            let n = BertNormalizer::new(clean, cjk, strip, lower);
            assert_eq!(normalize(n, text), expected, "{n:?} on {text:?}");
        }
    }

    #[test]
    fn bert_normalizer_default_cleans_spaces_cjk_strips_and_lowercases() {
        let n = BertNormalizer::default();
        assert_eq!(
            normalize(n, "Héllo\u{a0}WÖRLD\u{0}! 中文"),
            "hello world!  中  文 "
        );
        assert_eq!(normalize(n, "a\u{7f}b\u{fffd}c\u{85}d"), "abcd");
        assert_eq!(normalize(n, "x\ty\r\nz"), "x y  z");
        assert_eq!(normalize(n, "ΟΔΟΣ"), "οδοσ");
        assert_eq!(normalize(n, "İ"), "i");
        assert_eq!(normalize(n, "cafe\u{301}"), "cafe");
        assert_eq!(normalize(n, ""), "");
    }

    #[test]
    fn bert_normalizer_flags_switch_stages_off() {
        let keep_accents = BertNormalizer::new(true, true, Some(false), true);
        assert_eq!(normalize(keep_accents, "İ"), "i\u{307}");
        assert_eq!(normalize(keep_accents, "Cafe\u{301}"), "cafe\u{301}");
        let no_lower = BertNormalizer::new(true, true, None, false);
        assert_eq!(normalize(no_lower, "Café"), "Café");
        let strip_only = BertNormalizer::new(false, false, Some(true), false);
        assert_eq!(normalize(strip_only, "Café\u{0}中"), "Cafe\u{0}中");
        let nothing = BertNormalizer::new(false, false, Some(false), false);
        assert_eq!(normalize(nothing, "Ä\u{0}\u{85}中"), "Ä\u{0}\u{85}中");
    }

    #[test]
    fn bert_normalizer_keeps_format_chars_newer_than_hf_tables() {
        let n = BertNormalizer::new(true, false, Some(false), false);
        assert_eq!(
            normalize(n, "\u{890}\u{8e2}\u{110cd}\u{13430}"),
            "\u{890}\u{8e2}\u{110cd}\u{13430}"
        );
        assert_eq!(normalize(n, "\u{200b}\u{feff}\u{e000}"), "");
    }

    #[test]
    fn bert_normalizer_orders_marks_before_stripping() {
        // ccc: U+0345 240, U+0301 230, U+0316 220, U+0334 1. NFD sorts them; then Mn go.
        let nfd_only = BertNormalizer::new(false, false, Some(true), false);
        assert_eq!(normalize(nfd_only, "ệ"), "e");
        assert_eq!(normalize(nfd_only, "한"), "\u{1112}\u{1161}\u{11ab}");
        // U+1D165 (Mc, class 216) survives stripping and moves before U+1D16D (class 226).
        assert_eq!(
            normalize(nfd_only, "a\u{1d16d}\u{301}\u{1d165}"),
            "a\u{1d165}\u{1d16d}"
        );
        // A long run of marks stays linear-time and correct.
        let zalgo: String = std::iter::once('a')
            .chain(std::iter::repeat_n('\u{1d16d}', 50_000))
            .chain(['\u{1d165}'])
            .collect();
        let out = normalize(nfd_only, &zalgo);
        assert!(out.starts_with("a\u{1d165}\u{1d16d}") && out.chars().count() == 50_002);
    }

    #[test]
    fn bert_normalizer_ascii_fast_path_equals_the_general_path() {
        let table = flags_table();
        for n in every_normalizer() {
            for b in 0u8..0x80 {
                let c = b as char;
                let flags = flags_of(table, c);
                assert_eq!(
                    flags & (CJK | DECOMPOSES | NONSTARTER | STRIP),
                    0,
                    "ASCII {b:#x} needs the slow path"
                );
                let mut general = String::new();
                let mut sink = Sink {
                    table,
                    out: &mut general,
                    pending: Vec::new(),
                    strip: n.strips_accents(),
                    lowercase: n.lowercase,
                };
                n.push_char(c, flags, &mut sink);
                sink.flush();
                assert_eq!(normalize(n, &c.to_string()), general, "{n:?} on {b:#x}");
            }
        }
    }

    #[test]
    fn bert_normalizer_handles_every_code_point_under_every_flag() {
        let all: String = (0..0x11_0000u32).filter_map(char::from_u32).collect();
        for n in every_normalizer() {
            let out = normalize(n, &all);
            if n.clean_text {
                assert!(!out.contains('\u{0}') && !out.contains('\u{fffd}') && !out.contains('\t'));
            }
            if n.strips_accents() {
                assert!(!out.contains('\u{301}') && !out.contains('é'));
            }
        }
    }

    #[test]
    fn bert_pre_tokenize_drops_whitespace_and_isolates_punctuation() {
        assert_eq!(
            bert_pieces("Hey friend!     How are you?!?"),
            ["Hey", "friend", "!", "How", "are", "you", "?", "!", "?"]
        );
        assert_eq!(
            bert_pieces("a$b+c|d`e¿f「g」"),
            ["a", "$", "b", "+", "c", "|", "d", "`", "e", "¿", "f", "「", "g", "」"]
        );
        assert_eq!(bert_pieces("x\u{85}y\u{3000}z\u{a0}"), ["x", "y", "z"]);
        assert_eq!(bert_pieces(" \t\n"), Vec::<String>::new());
        assert_eq!(bert_pieces(""), Vec::<String>::new());
        assert_eq!(bert_pieces("野口 里佳"), ["野口", "里佳"]);
    }

    #[test]
    fn whitespace_split_keeps_punctuation_attached() {
        assert_eq!(ws_pieces("Hey, man, Good?"), ["Hey,", "man,", "Good?"]);
        assert_eq!(
            ws_pieces("  a\u{b}b\u{c}c\u{2028}d\u{1c}e "),
            ["a", "b", "c", "d\u{1c}e"]
        );
        assert_eq!(ws_pieces(""), Vec::<String>::new());
    }

    #[test]
    fn flags_table_agrees_with_the_ranges() {
        let table = flags_table();
        for &(ranges, flag) in &[
            (tables::CLEAN_REMOVED, REMOVE),
            (tables::WHITESPACE, WHITESPACE),
            (tables::PUNCTUATION, PUNCTUATION),
            (tables::CJK, CJK),
        ] {
            let mut next = ranges.iter().peekable();
            for cp in 0..0x11_0000u32 {
                while next.peek().is_some_and(|&&(_, hi)| hi < cp) {
                    next.next();
                }
                let inside = next.peek().is_some_and(|&&(lo, _)| lo <= cp);
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                assert_eq!(flags_of(table, c) & flag != 0, inside, "U+{cp:04X}");
            }
        }
        for &(cp, expected) in tables::LOWERCASE {
            let c = char::from_u32(cp).unwrap_or('\0');
            assert_ne!(flags_of(table, c) & LOWER, 0);
            if cp < 0x80 {
                assert!(
                    expected.len() == 1 && expected.is_ascii(),
                    "ASCII lowercase must stay ASCII"
                );
            }
        }
        for cp in (0x1100..=0x1112)
            .chain(0x1161..=0x1175)
            .chain(0x11A8..=0x11C2)
        {
            let c = char::from_u32(cp).unwrap_or('\0');
            assert_eq!(
                flags_of(table, c) & (DECOMPOSES | NONSTARTER | STRIP | LOWER),
                0,
                "jamo U+{cp:04X}"
            );
        }
        assert_eq!(combining_class(0x301), 230);
        assert_eq!(combining_class(0x41), 0);
        assert_eq!(combining_class(0x10_FFFF), 0);
    }
}
