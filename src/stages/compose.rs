//! Unicode composition as Hugging Face's `NFC` and `NFKC` normalizers give it. The pure-Python
//! reference is `tinyllm.tok.stages.compose`.
//!
//! NFC is NFD ([`crate::stages::decompose`]) followed by canonical composition: walking the
//! decomposed text, a character joins the last starter unless something between them blocks it
//! (a starter, or a mark of a class >= its own) and the pair has a primary composite
//! ([`unicode_tables::COMPOSITION`], measured from HF; Hangul is computed). NFKC is the same after
//! NFKD. `e` U+0301 U+0323 -> `e` U+0323 U+0301 -> U+1EB9 U+0301.
//!
//! Speed: most text is already composed, so only segments are worked on. A character is unsafe
//! when it is not a starter, may join the starter before it, changes by itself (decomposes and is
//! not a primary composite) or, for NFKC, has a compatibility mapping; a segment is a run of
//! unsafe characters plus the safe character just before it (the starter its marks may join).
//! Everything between segments is copied as one slice; the flags come from the shared table of
//! [`crate::stages::bert`], one lookup per non-ASCII character, and ASCII is never unsafe.
//! Each step is linear: a megabyte of one combining mark is one segment, decomposed and ordered
//! (already in order: the stable sort does one pass) and composed in one pass each.

use crate::stages::bert::{
    char_flags, combining_class, decomposition, COMPAT, JOINS_BACK, NFC_CHANGES, NONSTARTER,
};
use crate::stages::decompose::{compat_decomposition, decompose};
use crate::stages::unicode_tables::COMPOSITION;

const S_FIRST: u32 = 0xAC00;
const L_FIRST: u32 = 0x1100;
const V_FIRST: u32 = 0x1161;
/// One before the first trailing consonant: a syllable's trail index 0 means "no trail".
const T_FIRST: u32 = 0x11A7;
const L_COUNT: u32 = 19;
const V_COUNT: u32 = 21;
const T_COUNT: u32 = 28;
const S_COUNT: u32 = L_COUNT * V_COUNT * T_COUNT;

/// The primary composite of `first` and `second`, if they have one.
fn composite(first: char, second: char) -> Option<char> {
    let (a, b) = (first as u32, second as u32);
    if (L_FIRST..L_FIRST + L_COUNT).contains(&a) && (V_FIRST..V_FIRST + V_COUNT).contains(&b) {
        return char::from_u32(S_FIRST + ((a - L_FIRST) * V_COUNT + b - V_FIRST) * T_COUNT);
    }
    if (S_FIRST..S_FIRST + S_COUNT).contains(&a)
        && (a - S_FIRST) % T_COUNT == 0
        && b > T_FIRST
        && b < T_FIRST + T_COUNT
    {
        return char::from_u32(a + b - T_FIRST);
    }
    let i = COMPOSITION
        .binary_search_by_key(&(a, b), |&(x, y, _)| (x, y))
        .ok()?;
    char::from_u32(COMPOSITION[i].2)
}

fn unsafe_flags(compat: bool) -> u16 {
    NFC_CHANGES | JOINS_BACK | NONSTARTER | if compat { COMPAT } else { 0 }
}

/// Buffers reused by every segment of one call.
#[derive(Default)]
struct Scratch {
    decomposed: String,
    kept: Vec<char>,
}

/// Append HF's NFC (`compat` false) or NFKC (`compat` true) of `text` to `out`.
pub fn compose(text: &str, compat: bool, out: &mut String) {
    out.reserve(text.len());
    let unsafe_mask = unsafe_flags(compat);
    let is_unsafe = |c: char| !c.is_ascii() && char_flags(c) & unsafe_mask != 0;
    let bytes = text.as_bytes();
    let mut scratch = Scratch::default();
    let (mut copied, mut at) = (0, 0);
    while at < text.len() {
        if bytes[at] < 0x80 {
            at += 1;
            continue;
        }
        let c = text[at..].chars().next().unwrap_or_default();
        if !is_unsafe(c) {
            at += c.len_utf8();
            continue;
        }
        // Everything in copied..at is safe: its last character is the starter marks may join.
        let start = if at > copied {
            previous_char_start(bytes, at)
        } else {
            at
        };
        let mut end = at + c.len_utf8();
        for d in text[end..].chars().take_while(|&d| is_unsafe(d)) {
            end += d.len_utf8();
        }
        out.push_str(&text[copied..start]);
        compose_segment(&text[start..end], compat, &mut scratch, out);
        (copied, at) = (end, end);
    }
    out.push_str(&text[copied..]);
}

fn previous_char_start(bytes: &[u8], at: usize) -> usize {
    let mut i = at - 1;
    while bytes[i] & 0xC0 == 0x80 {
        i -= 1;
    }
    i
}

/// Decompose `segment`, then compose it (UAX #15's canonical composition).
fn compose_segment(segment: &str, compat: bool, scratch: &mut Scratch, out: &mut String) {
    let Scratch { decomposed, kept } = scratch;
    decomposed.clear();
    decompose(segment, compat, decomposed);
    kept.clear();
    // Index in `kept` of the last starter; the class of the last character kept after it (None:
    // the starter is the last character kept).
    let mut starter: Option<usize> = None;
    let mut last_class: Option<u8> = None;
    for c in decomposed.chars() {
        let flags = char_flags(c);
        let class = if flags & NONSTARTER != 0 {
            combining_class(c as u32)
        } else {
            0
        };
        if let Some(s) = starter {
            let blocked = matches!(last_class, Some(l) if l == 0 || l >= class);
            if !blocked && flags & JOINS_BACK != 0 {
                if let Some(joined) = composite(kept[s], c) {
                    kept[s] = joined;
                    continue;
                }
            }
        }
        if class == 0 {
            (starter, last_class) = (Some(kept.len()), None);
        } else if starter.is_some() {
            last_class = Some(class);
        }
        kept.push(c);
    }
    out.extend(kept.iter());
}

/// Whether a piece of text may start at `c`: its decomposition starts with a starter that joins
/// nothing before it, so NFC of the text is NFC of the part before `c` then NFC of the rest.
fn starts_piece(c: char, compat: bool) -> bool {
    let flags = char_flags(c);
    let first = if compat && flags & COMPAT != 0 {
        compat_decomposition(c as u32).and_then(|d| d.chars().next())
    } else {
        decomposition(c as u32).and_then(|d| d.chars().next())
    };
    // A Hangul syllable starts with a leading consonant: a starter that joins nothing.
    let first = first.unwrap_or(c);
    let first_flags = char_flags(first);
    first_flags & JOINS_BACK == 0
        && (first_flags & NONSTARTER == 0 || combining_class(first as u32) == 0)
}

/// HF's NFC (NFKC when `compat`) of `text` and, per output character, the span of `text`
/// (character positions) it came from: the text is cut before every character that
/// [`starts_piece`], and every character a piece gives maps to the whole piece (as the
/// reference's `compose.align`).
pub fn compose_aligned(text: &str, compat: bool) -> (String, Vec<(usize, usize)>) {
    let mut out = String::with_capacity(text.len());
    let mut spans = Vec::with_capacity(text.len());
    let mut scratch = Scratch::default();
    let (mut piece_byte, mut piece_char) = (0, 0);
    let mut finish = |end_byte: usize, end_char: usize, from: (usize, usize), out: &mut String| {
        let before = out.len();
        compose_segment(&text[from.0..end_byte], compat, &mut scratch, out);
        let made = out[before..].chars().count();
        spans.extend(std::iter::repeat_n((from.1, end_char), made));
    };
    for (k, (at, c)) in text.char_indices().enumerate() {
        if k > 0 && starts_piece(c, compat) {
            finish(at, k, (piece_byte, piece_char), &mut out);
            (piece_byte, piece_char) = (at, k);
        }
    }
    let count = piece_char + text[piece_byte..].chars().count();
    if !text.is_empty() {
        finish(text.len(), count, (piece_byte, piece_char), &mut out);
    }
    (out, spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nfc(text: &str) -> String {
        let mut out = String::new();
        compose(text, false, &mut out);
        out
    }

    fn nfkc(text: &str) -> String {
        let mut out = String::new();
        compose(text, true, &mut out);
        out
    }

    // Expected values are what HF tokenizers 0.23.3 gives (tests/tok/stages/test_compose.py).
    #[test]
    fn nfc_composes_after_ordering_marks() {
        assert_eq!(nfc("e\u{301}"), "é");
        assert_eq!(nfc("e\u{301}\u{323}"), "\u{1eb9}\u{301}");
        assert_eq!(nfc("a\u{301}\u{301}"), "á\u{301}");
        assert_eq!(nfc("\u{301}a"), "\u{301}a");
        assert_eq!(nfc("e\u{300}\u{301}\u{302}"), "è\u{301}\u{302}");
        assert_eq!(nfc("\u{212b}\u{2126}é"), "ÅΩé"); // singletons decompose away
        assert_eq!(nfc("plain ascii"), "plain ascii");
        assert_eq!(nfc(""), "");
    }

    #[test]
    fn nfc_composes_hangul_jamo() {
        assert_eq!(nfc("\u{1100}\u{1161}\u{11a8}"), "각");
        assert_eq!(nfc("가\u{11a8}"), "각");
        assert_eq!(nfc("가\u{11a7}"), "가\u{11a7}"); // U+11A7 is no trailing consonant
        assert_eq!(nfc("각\u{11a8}"), "각\u{11a8}");
    }

    #[test]
    fn nfc_keeps_hf_unicode_version() {
        // Unicode 13 composes these (Dives Akuru); HF's tables predate it.
        assert_eq!(nfc("\u{11935}\u{11930}"), "\u{11935}\u{11930}");
    }

    #[test]
    fn nfkc_maps_compatibility_then_composes() {
        assert_eq!(nfkc("ﬁ\u{301}"), "fí");
        assert_eq!(nfkc("Ｆｉｌｅ①"), "File1");
        assert_eq!(nfkc("\u{1100}\u{3150}"), "개"); // a compatibility vowel joins the jamo before it
    }

    #[test]
    fn ascii_is_never_unsafe() {
        for b in 0u8..0x80 {
            assert_eq!(char_flags(char::from(b)) & unsafe_flags(true), 0, "{b}");
        }
    }

    #[test]
    fn long_mark_runs_are_one_segment() {
        let marks = "\u{301}".repeat(100_000);
        assert_eq!(nfc(&marks), marks);
        let accented = "e\u{301}".repeat(100_000);
        assert_eq!(nfc(&accented), "é".repeat(100_000));
    }

    #[test]
    fn aligned_spans_cover_pieces() {
        let (text, spans) = compose_aligned("xe\u{301}\u{301}", false);
        assert_eq!(text, "xé\u{301}");
        assert_eq!(spans, vec![(0, 1), (1, 4), (1, 4)]);
        assert_eq!(compose_aligned("", false), (String::new(), vec![]));
        let (text, spans) = compose_aligned("\u{301}ﬁ", true);
        assert_eq!(text, "\u{301}fi");
        assert_eq!(spans, vec![(0, 1), (1, 2), (1, 2)]);
    }
}
