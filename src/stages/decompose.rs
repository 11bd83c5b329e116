//! Unicode decomposition as Hugging Face's `NFD` and `NFKD` normalizers give it, and the deletion
//! of combining marks of its `StripAccents`. The pure-Python reference is
//! `tinyllm.tok.stages.decompose`.
//!
//! Every code point is decomposed fully in one step (the tables hold final decompositions: NFKD
//! looks in [`unicode_tables::COMPAT_DECOMPOSITION`] first, then both use the canonical table
//! of [`crate::stages::bert_tables`] and the Hangul arithmetic); then each run of non-starters is
//! sorted by combining class, keeping the original order among equal classes:
//! `ệ` -> `e` U+0323 (class 220) U+0302 (class 230).
//!
//! StripAccents deletes every combining mark (Mn, Mc, Me in HF's tables) where it stands; it does
//! not decompose first, so a precomposed `é` stays.
//!
//! Speed: ASCII, and runs of characters with no flag that matters, are copied as slices; the
//! character facts are one lookup in the shared flags table of [`crate::stages::bert`].

use crate::stages::bert::{
    char_flags, combining_class, decomposition, hangul_jamo, COMPAT, DECOMPOSES, MARK, NONSTARTER,
};
use crate::stages::unicode_tables;

pub(crate) fn compat_decomposition(cp: u32) -> Option<&'static str> {
    let table = unicode_tables::COMPAT_DECOMPOSITION;
    let i = table.binary_search_by_key(&cp, |&(k, _)| k).ok()?;
    Some(table[i].1)
}

/// Append HF's NFD (`compat` false) or NFKD (`compat` true) of `text` to `out`.
pub fn decompose(text: &str, compat: bool, out: &mut String) {
    out.reserve(text.len());
    let touched = DECOMPOSES | NONSTARTER | if compat { COMPAT } else { 0 };
    // Marks (class, char) of the current run of non-starters, not yet in canonical order.
    let mut pending: Vec<(u8, char)> = Vec::new();
    let mut copied = 0;
    for (at, c) in text.char_indices() {
        if c.is_ascii() {
            continue; // an ASCII character is a starter that decomposes to itself
        }
        let flags = char_flags(c);
        if flags & touched == 0 {
            continue;
        }
        // Everything since `copied` is starters left alone: the pending marks come before them.
        if at > copied {
            flush(&mut pending, out);
            out.push_str(&text[copied..at]);
        }
        copied = at + c.len_utf8();
        let cp = c as u32;
        let parts = if flags & COMPAT != 0 && compat {
            compat_decomposition(cp)
        } else if flags & DECOMPOSES != 0 {
            if let Some(jamo) = hangul_jamo(cp) {
                // Conjoining jamo are starters.
                flush(&mut pending, out);
                out.extend(jamo.into_iter().flatten());
                continue;
            }
            decomposition(cp)
        } else {
            None
        };
        match parts {
            Some(parts) => parts.chars().for_each(|d| order(d, &mut pending, out)),
            None => order(c, &mut pending, out),
        }
    }
    if copied < text.len() {
        flush(&mut pending, out);
        out.push_str(&text[copied..]);
    }
    flush(&mut pending, out);
}

/// Hold a non-starter until its run ends; write a starter after the run it ends.
fn order(c: char, pending: &mut Vec<(u8, char)>, out: &mut String) {
    if char_flags(c) & NONSTARTER != 0 {
        pending.push((combining_class(c as u32), c));
    } else {
        flush(pending, out);
        out.push(c);
    }
}

fn flush(pending: &mut Vec<(u8, char)>, out: &mut String) {
    if pending.is_empty() {
        return;
    }
    // Stable: equal classes keep their order.
    pending.sort_by_key(|&(class, _)| class);
    out.extend(pending.drain(..).map(|(_, c)| c));
}

/// Append `text` without its combining marks to `out` (HF's StripAccents).
pub fn strip_marks(text: &str, out: &mut String) {
    out.reserve(text.len());
    let mut copied = 0;
    for (at, c) in text.char_indices() {
        if !c.is_ascii() && char_flags(c) & MARK != 0 {
            out.push_str(&text[copied..at]);
            copied = at + c.len_utf8();
        }
    }
    out.push_str(&text[copied..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nfd(text: &str) -> String {
        let mut out = String::new();
        decompose(text, false, &mut out);
        out
    }

    fn nfkd(text: &str) -> String {
        let mut out = String::new();
        decompose(text, true, &mut out);
        out
    }

    fn strip(text: &str) -> String {
        let mut out = String::new();
        strip_marks(text, &mut out);
        out
    }

    // Expected values are what HF tokenizers 0.23.3 gives (tests/tok/stages/test_normalizers.py).
    #[test]
    fn nfd_decomposes_and_orders_marks() {
        assert_eq!(
            nfd("é\u{212b}한"),
            "e\u{301}A\u{30a}\u{1112}\u{1161}\u{11ab}"
        );
        assert_eq!(nfd("ệ"), "e\u{323}\u{302}");
        assert_eq!(nfd("a\u{302}\u{323}b"), "a\u{323}\u{302}b");
        // A mark run is ordered across a decomposed character that ends it.
        assert_eq!(nfd("\u{302}\u{323}é"), "\u{323}\u{302}e\u{301}");
        assert_eq!(nfd("ﬁ²"), "ﬁ²");
        assert_eq!(nfd(""), "");
        assert_eq!(nfd("plain ascii"), "plain ascii");
    }

    #[test]
    fn nfkd_uses_compatibility_mappings() {
        assert_eq!(nfkd("ﬁ²①ｶ\u{3000}"), "fi21カ ");
        assert_eq!(nfkd("\u{1e9b}\u{323}"), "s\u{323}\u{307}");
        assert_eq!(nfkd("é한"), "e\u{301}\u{1112}\u{1161}\u{11ab}");
    }

    #[test]
    fn strip_marks_deletes_mn_mc_me_only() {
        assert_eq!(strip("é"), "é");
        assert_eq!(strip("e\u{301}\u{903}\u{20dd}x"), "ex");
        assert_eq!(strip("\u{301}"), "");
        assert_eq!(strip("abc"), "abc");
    }
}
