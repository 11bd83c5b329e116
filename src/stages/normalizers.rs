//! Normalizers (text -> text, before pre-tokenization): the [`Normalizer`] of a WordPiece or
//! Unigram pipeline, read from its tokenizer.json object, and Hugging Face's `Replace` and `Strip`.
//! The pure-Python reference is `tinyllm.tok.stages.normalizers`.
//!
//! A [`Normalizer`] is one of `BertNormalizer` ([`crate::stages::bert`]), `Precompiled`
//! ([`crate::stages::precompiled`]), `NFD`, `NFKD`, `StripAccents` ([`crate::stages::decompose`]),
//! `NFC`, `NFKC` ([`crate::stages::compose`]), `Prepend`, `Replace`, `Strip`, or a `Sequence` of them run in order;
//! any other type is [`Error::Unsupported`] and the Python reference runs the pipeline.
//!
//! `Replace` finds matches left to right without overlap, the way the `onig` crate's `find_iter`
//! does for HF: an empty match right where the previous match ended is skipped. Regexes compile
//! with the `regex` crate in multi-line mode, because in Oniguruma's Ruby syntax `^` and `$`
//! always match at line breaks; patterns the `regex` crate cannot compile (look-around,
//! back-references) are an error here, and constructs whose meaning differs between Oniguruma and
//! the `regex` crate (`\h`, `\H`, `\Z`, the inline flag `m`, POSIX classes like `[:alpha:]`, which
//! are ASCII-only in the `regex` crate, and `^`, which in Oniguruma does not match after a final
//! newline) are rejected with `Error::Unsupported`: the Python reference handles those patterns.

use crate::spec::Spec;
use crate::stages::bert::BertNormalizer;
use crate::stages::compose::compose;
use crate::stages::decompose::{decompose, strip_marks};
use crate::stages::precompiled::Precompiled;
use crate::stages::spm_normalizer::SpmNormalizer;
use crate::text::base64::decode_base64;
use crate::Error;

/// The normalizer stage of a text pipeline.
pub enum Normalizer {
    Bert(BertNormalizer),
    // Boxed: the charsmap tables dwarf the other variants.
    Precompiled(Box<Precompiled>),
    Replace(Replace),
    Strip(Strip),
    Nfd,
    Nfkd,
    Nfc,
    Nfkc,
    StripAccents,
    /// Each character's full lowercase mapping, one character at a time (Rust's
    /// `char::to_lowercase`, which Hugging Face calls too: no final-sigma rule).
    Lowercase,
    /// Put this in front of a non-empty text.
    Prepend(String),
    Sequence(Vec<Normalizer>),
    // SentencePiece `.model` normalization (tinyllm's own JSON type "SentencePieceNormalizer").
    SentencePiece(Box<SpmNormalizer>),
}

impl Normalizer {
    /// Build from a `normalizer` object of tokenizer.json; errors name the field under `name`
    /// (e.g. `normalizer_json.normalizers[1].pattern`).
    pub fn from_json(v: &serde_json::Value, name: &'static str) -> Result<Self, Error> {
        Self::from_spec(Spec::root(v, name))
    }

    pub fn from_spec(v: Spec<'_, '_>) -> Result<Self, Error> {
        Ok(match v.type_name()? {
            "BertNormalizer" => Normalizer::Bert(BertNormalizer::new(
                v.bool_or("clean_text", true)?,
                v.bool_or("handle_chinese_chars", true)?,
                v.opt_bool("strip_accents")?,
                v.bool_or("lowercase", true)?,
            )),
            "Precompiled" => {
                let blob = v.with_field("precompiled_charsmap", |c| {
                    decode_base64(c.as_str()?).map_err(|e| c.error(&format!("base64 ({e})")))
                })?;
                Normalizer::Precompiled(Box::new(Precompiled::from_bytes(&blob)?))
            }
            "Replace" => {
                let (source, is_regex) = v.with_field("pattern", |p| {
                    p.get("String")?; // an object
                    let raw = p.value();
                    match (raw.get("String"), raw.get("Regex")) {
                        (Some(_), None) => Ok((p.str("String")?, false)),
                        (None, Some(_)) => Ok((p.str("Regex")?, true)),
                        _ => Err(p.error("an object with one key, \"String\" or \"Regex\"")),
                    }
                })?;
                Normalizer::Replace(Replace::new(source, is_regex, v.str("content")?)?)
            }
            "Strip" => Normalizer::Strip(Strip::new(
                v.bool_or("strip_left", true)?,
                v.bool_or("strip_right", true)?,
            )),
            "NFD" => Normalizer::Nfd,
            "NFKD" => Normalizer::Nfkd,
            "NFC" => Normalizer::Nfc,
            "NFKC" => Normalizer::Nfkc,
            "StripAccents" => Normalizer::StripAccents,
            "Lowercase" => Normalizer::Lowercase,
            "Prepend" => Normalizer::Prepend(v.str("prepend")?.to_owned()),
            "Sequence" => Normalizer::Sequence(
                v.with_field("normalizers", |list| list.each_item(Normalizer::from_spec))?,
            ),
            "SentencePieceNormalizer" => {
                Normalizer::SentencePiece(Box::new(SpmNormalizer::from_spec(v)?))
            }
            other => {
                return Err(Error::Unsupported(format!(
                    "{}.type = {other:?}: the fast path runs BertNormalizer, Precompiled, NFD, \
                     NFKD, NFC, NFKC, StripAccents, Lowercase, Prepend, Replace, Strip, \
                     SentencePieceNormalizer and Sequence",
                    v.path()
                )))
            }
        })
    }

    /// Whether this normalizer leaves every ASCII text as it is: the Unicode forms (no ASCII
    /// character decomposes, composes or is a compatibility character) and StripAccents (ASCII
    /// has no marks), alone or in a Sequence. Engines then skip it on ASCII text (Qwen2's NFC on
    /// English or code) instead of copying the text through it.
    pub fn keeps_ascii(&self) -> bool {
        match self {
            Normalizer::Nfc
            | Normalizer::Nfkc
            | Normalizer::Nfd
            | Normalizer::Nfkd
            | Normalizer::StripAccents => true,
            Normalizer::Sequence(stages) => stages.iter().all(Normalizer::keeps_ascii),
            _ => false,
        }
    }

    /// Write the normalized `text` into `out` (cleared first); `spare` is scratch for sequences.
    pub fn run(&self, text: &str, out: &mut String, spare: &mut String) {
        out.clear();
        match self {
            Normalizer::Bert(n) => n.normalize(text, out),
            Normalizer::Precompiled(n) => n.normalize(text, out),
            Normalizer::Replace(n) => n.normalize(text, out),
            Normalizer::Strip(n) => n.normalize(text, out),
            Normalizer::SentencePiece(n) => n.normalize(text, out),
            Normalizer::Nfd => decompose(text, false, out),
            Normalizer::Nfkd => decompose(text, true, out),
            Normalizer::Nfc => compose(text, false, out),
            Normalizer::Nfkc => compose(text, true, out),
            Normalizer::StripAccents => strip_marks(text, out),
            Normalizer::Lowercase => out.extend(text.chars().flat_map(char::to_lowercase)),
            // HF's rule: an empty text stays empty.
            Normalizer::Prepend(prefix) if !text.is_empty() => {
                out.push_str(prefix);
                out.push_str(text);
            }
            Normalizer::Prepend(_) => {}
            Normalizer::Sequence(stages) => {
                out.push_str(text);
                for stage in stages {
                    let mut inner_spare = String::new();
                    stage.run(out, spare, &mut inner_spare);
                    std::mem::swap(out, spare);
                }
            }
        }
    }
}

enum Matcher {
    Literal(String),
    Regex(regex::Regex),
}

/// Replace every match of a literal string or a regex with fixed content.
pub struct Replace {
    matcher: Matcher,
    content: String,
}

impl Replace {
    pub fn new(pattern: &str, is_regex: bool, content: &str) -> Result<Self, Error> {
        let matcher = if is_regex {
            reject_oniguruma_divergence(pattern)?;
            let compiled = regex::RegexBuilder::new(pattern)
                .multi_line(true)
                .build()
                .map_err(|e| Error::Regex(format!("Replace pattern {pattern:?}: {e}")))?;
            Matcher::Regex(compiled)
        } else {
            Matcher::Literal(pattern.to_owned())
        };
        Ok(Replace {
            matcher,
            content: content.to_owned(),
        })
    }

    /// Append `text` with every match replaced to `out`.
    pub fn normalize(&self, text: &str, out: &mut String) {
        // HF's pattern search reports no match at all in an empty string.
        if text.is_empty() {
            return;
        }
        let mut copied = 0;
        let mut emit = |start: usize, end: usize, out: &mut String| {
            out.push_str(&text[copied..start]);
            out.push_str(&self.content);
            copied = end;
        };
        match &self.matcher {
            // An empty pattern matches at every char boundary, both ends included.
            Matcher::Literal(p) if p.is_empty() => {
                for (at, _) in text.char_indices() {
                    emit(at, at, out);
                }
                emit(text.len(), text.len(), out);
            }
            Matcher::Literal(p) => {
                for (at, found) in text.match_indices(p.as_str()) {
                    emit(at, at + found.len(), out);
                }
            }
            Matcher::Regex(re) => {
                let mut search_from = 0;
                let mut last_end = None;
                while search_from <= text.len() {
                    let Some(m) = re.find_at(text, search_from) else {
                        break;
                    };
                    if m.is_empty() && last_end == Some(m.end()) {
                        search_from =
                            m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8);
                        continue;
                    }
                    emit(m.start(), m.end(), out);
                    search_from = m.end();
                    last_end = Some(m.end());
                }
            }
        }
        out.push_str(&text[copied..]);
    }
}

/// Raise for syntax that Oniguruma's Ruby grammar and the `regex` crate read differently.
fn reject_oniguruma_divergence(pattern: &str) -> Result<(), Error> {
    let unsupported = |what: &str| {
        Err(Error::Unsupported(format!(
            "Replace pattern {pattern:?}: {what}; expected a pattern without it"
        )))
    };
    let mut chars = pattern.char_indices().peekable();
    let mut in_class = false;
    while let Some((at, ch)) = chars.next() {
        match ch {
            '\\' => {
                if let Some((_, escaped @ ('h' | 'H' | 'Z'))) = chars.next() {
                    return unsupported(&format!(
                        "\\{escaped} means something else in Oniguruma (Hugging Face) than here"
                    ));
                }
            }
            '[' if in_class && pattern[at..].starts_with("[:") => {
                return unsupported(
                    "POSIX classes such as [:alpha:] are Unicode in Oniguruma (Hugging Face) but ASCII in the regex crate",
                );
            }
            '[' => in_class = true,
            ']' => in_class = false,
            '^' if !in_class => {
                return unsupported(
                    "^ does not match after a final newline in Oniguruma (Hugging Face) but does in the regex crate",
                );
            }
            '(' if !in_class && pattern[at..].starts_with("(?") => {
                let flags: String = pattern[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
                    .collect();
                let closes = pattern[at + 2 + flags.len()..].starts_with([':', ')']);
                if closes && flags.contains('m') {
                    return unsupported(
                        "the inline flag 'm' means dot-all in Oniguruma (Hugging Face) but multi-line here",
                    );
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Remove leading and/or trailing whitespace (Rust's `char::is_whitespace`, as HF uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strip {
    left: bool,
    right: bool,
}

impl Strip {
    pub fn new(left: bool, right: bool) -> Self {
        Strip { left, right }
    }

    /// Append `text` with the chosen ends stripped to `out`.
    pub fn normalize(&self, text: &str, out: &mut String) {
        let mut kept = text;
        if self.left {
            kept = kept.trim_start_matches(char::is_whitespace);
        }
        if self.right {
            kept = kept.trim_end_matches(char::is_whitespace);
        }
        out.push_str(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(pattern: &str, is_regex: bool, content: &str, text: &str) -> String {
        let mut out = String::new();
        Replace::new(pattern, is_regex, content)
            .unwrap()
            .normalize(text, &mut out);
        out
    }

    #[test]
    fn lowercase_maps_each_character_alone() {
        let n = Normalizer::from_json(&serde_json::json!({"type": "Lowercase"}), "n").unwrap();
        let (mut out, mut spare) = (String::new(), String::new());
        n.run("ΟΔΟΣ İ", &mut out, &mut spare);
        assert_eq!(out, "οδοσ i\u{307}"); // no final sigma; İ has a two-character lowercase
    }

    #[test]
    fn replace_collapses_space_runs() {
        assert_eq!(replace(" {2,}", true, " ", "a   b    c "), "a b c ");
    }

    #[test]
    fn replace_skips_empty_match_after_a_match() {
        // Expected values are what HF gives (Oniguruma iteration).
        assert_eq!(replace("x*", true, "-", "abxd"), "-a-b-d-");
        assert_eq!(replace("a|", true, "-", "baab"), "-b--b-");
        assert_eq!(replace("", true, "-", "ab"), "-a-b-");
        assert_eq!(replace("", true, "-", ""), "");
        assert_eq!(replace("(?:)", true, "-", "é"), "-é-");
    }

    #[test]
    fn replace_dollar_matches_at_line_breaks() {
        assert_eq!(replace("$", true, "!", "a\nb"), "a!\nb!");
        assert_eq!(replace("$", true, "!", "a\n"), "a!\n!");
    }

    #[test]
    fn replace_literal_is_not_a_regex() {
        assert_eq!(replace("a.", false, "-", "a.ba"), "-ba");
        assert_eq!(replace("aa", false, "b", "aaaaa"), "bba");
        assert_eq!(replace("", false, "-", "ab"), "-a-b-");
        assert_eq!(replace("", false, "-", ""), "");
    }

    #[test]
    fn replace_rejects_divergent_or_invalid_patterns() {
        for p in [
            r"\h",
            r"a\Z",
            "(?m)a.b",
            "(?im:a)",
            "^a",
            "a|(^)",
            "[[:alpha:]]+",
            "[x[:digit:]]",
        ] {
            assert!(
                matches!(Replace::new(p, true, ""), Err(Error::Unsupported(_))),
                "{p}"
            );
        }
        assert!(matches!(Replace::new("(", true, ""), Err(Error::Regex(_))));
        assert!(Replace::new(r"\\h[(?m)^]", true, "").is_ok());
        assert!(Replace::new("(", false, "").is_ok());
    }

    #[test]
    fn strip_uses_unicode_white_space() {
        let strip = |l, r, t| {
            let mut out = String::new();
            Strip::new(l, r).normalize(t, &mut out);
            out
        };
        assert_eq!(strip(true, true, "\u{3000} a \u{85}"), "a");
        assert_eq!(strip(true, false, " a "), "a ");
        assert_eq!(strip(false, true, " a "), " a");
        assert_eq!(strip(true, true, "\u{1c}a\u{200b}"), "\u{1c}a\u{200b}");
        assert_eq!(strip(true, true, " \t "), "");
    }

    #[test]
    fn decomposition_stages_and_prepend_from_json() {
        let spec = serde_json::json!({"type": "Sequence", "normalizers": [
            {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Prepend", "prepend": "▁"}]});
        let n = Normalizer::from_json(&spec, "normalizer").unwrap();
        let run = |text: &str| {
            let (mut out, mut spare) = (String::new(), String::new());
            n.run(text, &mut out, &mut spare);
            out
        };
        assert_eq!(run("ﬁé ệ"), "▁fie e");
        assert_eq!(run(""), "");
        assert_eq!(run("\u{301}"), ""); // the mark goes first, so nothing is prepended
        let nfd = Normalizer::from_json(&serde_json::json!({"type": "NFD"}), "n").unwrap();
        let (mut out, mut spare) = (String::new(), String::new());
        nfd.run("ﬁé", &mut out, &mut spare);
        assert_eq!(out, "ﬁe\u{301}");
        let err = Normalizer::from_json(&serde_json::json!({"type": "Prepend"}), "normalizer");
        assert!(err.is_err_and(|e| e.to_string().contains("normalizer.prepend")));
    }

    #[test]
    fn keeps_ascii_only_where_every_ascii_text_is_unchanged() {
        let of = |spec: serde_json::Value| Normalizer::from_json(&spec, "normalizer").unwrap();
        let keepers = [
            serde_json::json!({"type": "NFC"}),
            serde_json::json!({"type": "NFKC"}),
            serde_json::json!({"type": "NFD"}),
            serde_json::json!({"type": "NFKD"}),
            serde_json::json!({"type": "StripAccents"}),
            serde_json::json!({"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"}]}),
        ];
        // Every ASCII character, alone and in every pair (so any composition would show).
        let mut texts: Vec<String> = (0u8..0x80).map(|b| (b as char).to_string()).collect();
        for a in 0u8..0x80 {
            texts.push((0u8..0x80).flat_map(|b| [a as char, b as char]).collect());
        }
        let (mut out, mut spare) = (String::new(), String::new());
        for spec in keepers {
            let n = of(spec.clone());
            assert!(n.keeps_ascii(), "{spec}");
            for text in &texts {
                n.run(text, &mut out, &mut spare);
                assert_eq!(&out, text, "{spec}");
            }
        }
        for spec in [
            serde_json::json!({"type": "Lowercase"}),
            serde_json::json!({"type": "Prepend", "prepend": "▁"}),
            serde_json::json!({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}),
        ] {
            assert!(!of(spec.clone()).keeps_ascii(), "{spec}");
        }
    }
}
