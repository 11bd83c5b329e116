//! Pre-tokenizers whose pieces stay text, for WordPiece and Unigram pipelines: `BertPreTokenizer`,
//! `WhitespaceSplit` (both in [`crate::stages::bert`]), `Metaspace`, `Whitespace`, `Punctuation`,
//! `CharDelimiterSplit`, `UnicodeScripts` (those four in [`crate::stages::char_splits`]), and a
//! `Sequence` of them, where each stage re-splits every piece of the stage before it. The pure-Python reference is
//! `tinyllm.tok.stages.pre_tokenizers`. (Byte-level BPE pipelines use
//! [`crate::stages::pre_tokenizers`], whose pieces are bytes.)
//!
//! Metaspace turns spaces into `▁`, puts one in front (scheme "always") and cuts before each:
//! `Hey  you` -> `▁Hey` `▁` `▁you`. The scheme "first" puts one only in front of the piece that
//! begins the whole input: not after an added token, not after leading text an earlier stage
//! dropped or a prefix it added. So every piece travels with that one flag
//! ([`TextPreTokenizer::for_each_piece_at`]), as the reference's `at_text_start` does.

use crate::spec::Spec;
use crate::stages::bert::{bert_pre_tokenize, whitespace_split};
use crate::stages::char_splits::CharSplit;
use crate::stages::pre_tokenizers::Stage;
use crate::Error;

/// Metaspace's `prepend_scheme`: whether a piece gets the replacement in front.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Prepend {
    Always,
    /// Only the piece that begins the whole input.
    First,
    Never,
}

impl Prepend {
    /// Whether a piece that does not start with the replacement gets one, given whether it
    /// begins the input.
    pub fn applies(self, at_text_start: bool) -> bool {
        match self {
            Prepend::Always => true,
            Prepend::First => at_text_start,
            Prepend::Never => false,
        }
    }
}

/// The pre-tokenizer stage of a text pipeline.
pub enum TextPreTokenizer {
    Bert,
    WhitespaceSplit,
    Metaspace {
        replacement: char,
        prepend: Prepend,
        split: bool,
    },
    /// Whitespace, Punctuation, CharDelimiterSplit or UnicodeScripts.
    Chars(CharSplit),
    /// Digits, or a Split on a literal or on a pattern a hand-written scanner knows (those
    /// cannot fail; a Split on fancy-regex stays on the reference).
    Stage(Stage),
    Sequence(Vec<TextPreTokenizer>),
}

impl TextPreTokenizer {
    /// Build from a `pre_tokenizer` object of tokenizer.json; errors name the field under `name`.
    pub fn from_json(v: &serde_json::Value, name: &'static str) -> Result<Self, Error> {
        Self::from_spec(Spec::root(v, name))
    }

    pub fn from_spec(v: Spec<'_, '_>) -> Result<Self, Error> {
        Ok(match v.type_name()? {
            "BertPreTokenizer" => TextPreTokenizer::Bert,
            "WhitespaceSplit" => TextPreTokenizer::WhitespaceSplit,
            "Metaspace" => {
                let replacement = v.with_field("replacement", |r| {
                    let mut chars = r.as_str()?.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => Ok(c),
                        _ => Err(r.error("one character")),
                    }
                })?;
                let prepend = match v.get("prepend_scheme")? {
                    None => Prepend::Always,
                    Some(_) => match v.str("prepend_scheme")? {
                        "always" => Prepend::Always,
                        "first" => Prepend::First,
                        "never" => Prepend::Never,
                        other => {
                            return Err(Error::Unsupported(format!(
                                "{}.prepend_scheme = {other:?}: expected \"always\", \"first\" \
                                 or \"never\"",
                                v.path()
                            )))
                        }
                    },
                };
                TextPreTokenizer::Metaspace {
                    replacement,
                    prepend,
                    split: v.bool_or("split", true)?,
                }
            }
            "Sequence" => TextPreTokenizer::Sequence(v.with_field("pretokenizers", |list| {
                list.each_item(TextPreTokenizer::from_spec)
            })?),
            other => {
                if let Some(split) = CharSplit::from_spec(&v)? {
                    return Ok(TextPreTokenizer::Chars(split));
                }
                if let Some(stage) = Stage::digits_or_split(&v)? {
                    if !stage.cannot_fail() {
                        return Err(Error::Unsupported(format!(
                            "{}.pattern: a regex that no hand-written scanner knows; the fast \
                             path of WordPiece, Unigram and WordLevel pipelines runs literal \
                             Splits and the common patterns (GPT-2, Llama-3, Qwen2, o200k, ...)",
                            v.path()
                        )));
                    }
                    return Ok(TextPreTokenizer::Stage(stage));
                }
                return Err(Error::Unsupported(format!(
                    "{}.type = {other:?}: the fast path runs BertPreTokenizer, WhitespaceSplit, \
                     Metaspace, Whitespace, Punctuation, CharDelimiterSplit, UnicodeScripts, \
                     Digits, Split and Sequence",
                    v.path()
                )));
            }
        })
    }

    /// Call `f` with each piece of `text`, which begins the input.
    pub fn for_each_piece(&self, text: &str, f: &mut dyn FnMut(&str)) {
        self.for_each_piece_at(text, true, f);
    }

    /// Call `f` with each piece of `text`; `at_text_start` says whether `text` begins the whole
    /// input (false after an added token). Only Metaspace's "first" scheme reads it.
    pub fn for_each_piece_at(&self, text: &str, at_text_start: bool, f: &mut dyn FnMut(&str)) {
        self.pieces(text, at_text_start, &mut |piece, _, _| f(piece));
    }

    /// [`Self::for_each_piece_at`], each piece given as `(buffer, start, end)`: the bytes it lies
    /// in (the text, or the one the stage wrote its pieces into) and where it is there. A word
    /// cache key reads whole words from the buffer past a short piece's end
    /// ([`crate::engines::look_ahead::Ahead::push`]); from a piece on its own it has to build
    /// the key byte by byte (a tenth of a BERT encode of multilingual text).
    pub fn for_each_span_at(
        &self,
        text: &str,
        at_text_start: bool,
        f: &mut dyn FnMut(&[u8], usize, usize),
    ) {
        self.pieces(text, at_text_start, &mut |piece, buffer, _| {
            // Every stage hands out slices of the buffer it names; a piece that were not one
            // would go on its own rather than as a wrong span.
            let start = (piece.as_ptr() as usize).checked_sub(buffer.as_ptr() as usize);
            match start.filter(|&s| s + piece.len() <= buffer.len()) {
                Some(start) => f(buffer.as_bytes(), start, start + piece.len()),
                None => f(piece.as_bytes(), 0, piece.len()),
            }
        });
    }

    /// Each piece with the buffer it is a slice of, and whether it still begins the input: it
    /// starts where `text` does, `text` did, and no prefix was put in front of it.
    fn pieces(&self, text: &str, at_text_start: bool, f: &mut dyn FnMut(&str, &str, bool)) {
        // These stages hand out slices of `text`: the first begins the input if it starts
        // where `text` starts.
        let mut slice = |p: &str| f(p, text, at_text_start && p.as_ptr() == text.as_ptr());
        match self {
            TextPreTokenizer::Bert => bert_pre_tokenize(text, &mut slice),
            TextPreTokenizer::WhitespaceSplit => whitespace_split(text, &mut slice),
            TextPreTokenizer::Metaspace {
                replacement,
                prepend,
                split,
            } => metaspace(
                text,
                *replacement,
                prepend.applies(at_text_start),
                *split,
                &mut |p, buffer, first| f(p, buffer, first && at_text_start),
            ),
            TextPreTokenizer::Chars(split) => {
                for (start, end) in split.spans(text) {
                    slice(&text[start..end]);
                }
            }
            TextPreTokenizer::Stage(stage) => {
                for (start, end) in stage.pieces(text) {
                    slice(&text[start..end]);
                }
            }
            TextPreTokenizer::Sequence(stages) => {
                let mut pieces = vec![(text.to_string(), at_text_start)];
                for stage in stages {
                    let mut next = Vec::new();
                    for (piece, at) in &pieces {
                        stage.pieces(piece, *at, &mut |p, _, at| next.push((p.to_string(), at)));
                    }
                    pieces = next;
                }
                for (piece, at) in &pieces {
                    f(piece, piece, *at);
                }
            }
        }
    }
}

/// Hugging Face's Metaspace: spaces become the replacement, one is put in front (when `prefix`
/// and the text does not start with one) and the text is cut before every replacement
/// (MergedWithNext). `f` gets each piece, the buffer it is a slice of, and whether it is the
/// first one and has no prefix.
fn metaspace(
    text: &str,
    replacement: char,
    prefix: bool,
    split: bool,
    f: &mut dyn FnMut(&str, &str, bool),
) {
    if text.is_empty() {
        return;
    }
    let mut buf = String::with_capacity(text.len() + text.len() / 4 + 4);
    let starts_with = text.starts_with(replacement) || text.starts_with(' ');
    let added = prefix && !starts_with;
    if added {
        buf.push(replacement);
    }
    // Whole runs between spaces are copied, and the cuts found by a byte search for the
    // replacement: a char-by-char rewrite was an eighth of a Unigram encode of multilingual text.
    let mut utf8 = [0u8; 4];
    let replacement_str: &str = replacement.encode_utf8(&mut utf8);
    let mut copied = 0;
    for space in memchr::memchr_iter(b' ', text.as_bytes()) {
        buf.push_str(&text[copied..space]);
        buf.push_str(replacement_str);
        copied = space + 1;
    }
    buf.push_str(&text[copied..]);
    if !split {
        f(&buf, &buf, !added);
        return;
    }
    // The replacement's lead byte is rare in text (▁'s is 0xE2), where its last byte, which a
    // char search looks for, is a common continuation byte (Cyrillic's).
    let (bytes, wanted) = (buf.as_bytes(), replacement_str.as_bytes());
    let mut start = 0;
    for i in memchr::memchr_iter(wanted[0], bytes) {
        if i > start && bytes[i..].starts_with(wanted) {
            f(&buf[start..i], &buf, start == 0 && !added);
            start = i;
        }
    }
    f(&buf[start..], &buf, start == 0 && !added);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, prepend: Prepend) -> Vec<String> {
        let mut out = Vec::new();
        metaspace(
            text,
            '▁',
            prepend.applies(true),
            true,
            &mut |p, buffer, _| {
                // A slice of the buffer it names.
                let at = p.as_ptr() as usize - buffer.as_ptr() as usize;
                assert_eq!(&buffer[at..at + p.len()], p);
                out.push(p.to_string())
            },
        );
        out
    }

    /// The pieces, checked to be what the span form gives as well.
    fn pieces_of(spec: serde_json::Value, text: &str, at_text_start: bool) -> Vec<String> {
        let pre = TextPreTokenizer::from_json(&spec, "pre").unwrap();
        let mut out = Vec::new();
        pre.for_each_piece_at(text, at_text_start, &mut |p| out.push(p.to_string()));
        let mut spans = Vec::new();
        pre.for_each_span_at(text, at_text_start, &mut |buffer, start, end| {
            spans.push(String::from_utf8(buffer[start..end].to_vec()).unwrap())
        });
        assert_eq!(spans, out, "{spec} on {text:?}");
        out
    }

    /// The rule char by char, as Hugging Face states it: the text with spaces replaced (and
    /// the prefix), cut before every replacement that is not at the start.
    fn metaspace_by_chars(text: &str, replacement: char, prefix: bool) -> Vec<(String, bool)> {
        if text.is_empty() {
            return Vec::new();
        }
        let added = prefix && !text.starts_with(replacement) && !text.starts_with(' ');
        let mut chars: Vec<char> = text
            .chars()
            .map(|c| if c == ' ' { replacement } else { c })
            .collect();
        if added {
            chars.insert(0, replacement);
        }
        let mut out: Vec<(String, bool)> = Vec::new();
        for (k, &c) in chars.iter().enumerate() {
            if (c == replacement && k > 0) || out.is_empty() {
                out.push((String::new(), k == 0 && !added));
            }
            out.last_mut().unwrap().0.push(c);
        }
        out
    }

    #[test]
    fn the_span_form_gives_every_stage_s_pieces() {
        let text = "Héllo, wörld! 12 345 中文 ab\tcd  ▁x";
        for spec in [
            serde_json::json!({"type": "BertPreTokenizer"}),
            serde_json::json!({"type": "WhitespaceSplit"}),
            serde_json::json!({"type": "Whitespace"}),
            serde_json::json!({"type": "Digits", "individual_digits": true}),
            serde_json::json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}),
            serde_json::json!({"type": "Sequence", "pretokenizers": [
                {"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": false}]}),
        ] {
            for at_text_start in [true, false] {
                assert!(
                    !pieces_of(spec.clone(), text, at_text_start).is_empty(),
                    "{spec}"
                );
            }
        }
    }

    #[test]
    fn byte_search_cuts_where_the_char_by_char_rule_does() {
        // Replacements that share a lead byte with other letters (é and è: 0xC3), an ASCII one,
        // and ▁, over texts mixing them with spaces, Cyrillic (whose continuation bytes include
        // ▁'s last byte, 0x81) and CJK.
        let alphabet = ['é', 'è', '▁', '_', ' ', ' ', 'a', 'с', '中', '\u{1F600}'];
        let mut state = 7u64;
        for replacement in ['▁', 'é', '_', '中'] {
            for len in 0..40 {
                for _ in 0..20 {
                    let text: String = (0..len)
                        .map(|_| {
                            state = state
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            alphabet[(state >> 33) as usize % alphabet.len()]
                        })
                        .collect();
                    for (prefix, split) in [(true, true), (false, true), (true, false)] {
                        let mut got = Vec::new();
                        metaspace(&text, replacement, prefix, split, &mut |p, _, first| {
                            got.push((p.to_string(), first))
                        });
                        let mut want = metaspace_by_chars(&text, replacement, prefix);
                        if !split && !want.is_empty() {
                            let whole: String = want.iter().map(|(p, _)| p.as_str()).collect();
                            want = vec![(whole, want[0].1)];
                        }
                        assert_eq!(
                            got, want,
                            "{text:?} {replacement:?} prefix={prefix} split={split}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn first_scheme_prefixes_only_the_piece_that_begins_the_input() {
        let first =
            serde_json::json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"});
        assert_eq!(pieces_of(first.clone(), "Hey you", true), ["▁Hey", "▁you"]);
        assert_eq!(pieces_of(first.clone(), "Hey you", false), ["Hey", "▁you"]); // after an added token
                                                                                 // An earlier stage that drops the leading spaces moves the first piece off the start;
                                                                                 // one that keeps it there leaves the prefix on.
        let after = |stage: serde_json::Value| serde_json::json!({"type": "Sequence", "pretokenizers": [stage, first.clone()]});
        assert_eq!(
            pieces_of(
                after(serde_json::json!({"type": "WhitespaceSplit"})),
                "  a b",
                true
            ),
            ["a", "b"]
        );
        assert_eq!(
            pieces_of(
                after(serde_json::json!({"type": "WhitespaceSplit"})),
                "a b",
                true
            ),
            ["▁a", "b"]
        );
        // A prefix added by an earlier Metaspace counts as text before the piece.
        let twice = serde_json::json!({"type": "Sequence", "pretokenizers": [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false},
            {"type": "Metaspace", "replacement": "_", "prepend_scheme": "first", "split": false}]});
        assert_eq!(pieces_of(twice, "x", true), ["▁x"]);
    }

    #[test]
    fn metaspace_matches_hugging_face_examples() {
        assert_eq!(pieces("Hey  you", Prepend::Always), ["▁Hey", "▁", "▁you"]);
        assert_eq!(pieces("a▁▁b", Prepend::Always), ["▁a", "▁", "▁b"]);
        assert_eq!(pieces(" x", Prepend::Always), ["▁x"]);
        assert_eq!(pieces("x y", Prepend::Never), ["x", "▁y"]);
        assert!(pieces("", Prepend::Always).is_empty());
    }

    #[test]
    fn char_splits_from_json_in_a_sequence() {
        let spec = serde_json::json!({"type": "Sequence", "pretokenizers": [
            {"type": "Whitespace"}, {"type": "Punctuation", "behavior": "MergedWithNext"},
            {"type": "UnicodeScripts"}, {"type": "CharDelimiterSplit", "delimiter": "x"}]});
        let pre = TextPreTokenizer::from_json(&spec, "pre").unwrap();
        let mut out = Vec::new();
        pre.for_each_piece("a,b αxβ 日本 ab..", &mut |p| out.push(p.to_string()));
        assert_eq!(out, ["a", ",", "b", "α", "β", "日本", "ab", ".", "."]);
        let punct = serde_json::json!({"type": "Punctuation"}); // HF's default: Isolated
        let mut out = Vec::new();
        TextPreTokenizer::from_json(&punct, "pre")
            .unwrap()
            .for_each_piece("a,b", &mut |p| out.push(p.to_string()));
        assert_eq!(out, ["a", ",", "b"]);
        for bad in [
            serde_json::json!({"type": "CharDelimiterSplit", "delimiter": ""}),
            serde_json::json!({"type": "Punctuation", "behavior": "Sideways"}),
        ] {
            assert!(TextPreTokenizer::from_json(&bad, "pre").is_err(), "{bad}");
        }
    }
}
