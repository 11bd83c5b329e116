//! Pre-tokenizers whose pieces stay text, for WordPiece and Unigram pipelines: `BertPreTokenizer`,
//! `WhitespaceSplit` (both in [`crate::stages::bert`]), `Metaspace`, `Whitespace`, `Punctuation`,
//! `CharDelimiterSplit`, `UnicodeScripts` (those four in [`crate::stages::char_splits`]), and a
//! `Sequence` of them, where each stage re-splits every piece of the stage before it. The pure-Python reference is
//! `tinyllm.tok.stages.pre_tokenizers`. (Byte-level BPE pipelines use
//! [`crate::stages::pre_tokenizers`], whose pieces are bytes.)
//!
//! Metaspace turns spaces into `▁`, puts one in front (scheme "always") and cuts before each:
//! `Hey  you` -> `▁Hey` `▁` `▁you`. The scheme "first" needs each piece's position in the raw input,
//! which this fast path does not track; such files run on the Python reference.

use crate::spec::Spec;
use crate::stages::bert::{bert_pre_tokenize, whitespace_split};
use crate::stages::char_splits::CharSplit;
use crate::Error;

/// Metaspace's `prepend_scheme`: whether a piece gets the replacement in front.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Prepend {
    Always,
    Never,
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
                        "never" => Prepend::Never,
                        other => {
                            return Err(Error::Unsupported(format!(
                                "{}.prepend_scheme = {other:?}: the fast path runs \"always\" \
                                 and \"never\"",
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
                return Err(Error::Unsupported(format!(
                    "{}.type = {other:?}: the fast path runs BertPreTokenizer, WhitespaceSplit, \
                     Metaspace, Whitespace, Punctuation, CharDelimiterSplit, UnicodeScripts and \
                     Sequence",
                    v.path()
                )));
            }
        })
    }

    /// Call `f` with each piece of `text`.
    pub fn for_each_piece(&self, text: &str, f: &mut dyn FnMut(&str)) {
        match self {
            TextPreTokenizer::Bert => bert_pre_tokenize(text, &mut |p| f(p)),
            TextPreTokenizer::WhitespaceSplit => whitespace_split(text, &mut |p| f(p)),
            TextPreTokenizer::Metaspace {
                replacement,
                prepend,
                split,
            } => metaspace(text, *replacement, *prepend, *split, f),
            TextPreTokenizer::Chars(split) => {
                for (start, end) in split.spans(text) {
                    f(&text[start..end]);
                }
            }
            TextPreTokenizer::Sequence(stages) => {
                let mut pieces = vec![text.to_string()];
                for stage in stages {
                    let mut next = Vec::new();
                    for piece in &pieces {
                        stage.for_each_piece(piece, &mut |p| next.push(p.to_string()));
                    }
                    pieces = next;
                }
                for piece in &pieces {
                    f(piece);
                }
            }
        }
    }
}

/// Hugging Face's Metaspace: spaces become the replacement, one is put in front (by the scheme)
/// and the text is cut before every replacement (MergedWithNext).
fn metaspace(
    text: &str,
    replacement: char,
    prepend: Prepend,
    split: bool,
    f: &mut dyn FnMut(&str),
) {
    if text.is_empty() {
        return;
    }
    let mut buf = String::with_capacity(text.len() + 8);
    let starts_with = text.starts_with(replacement) || text.starts_with(' ');
    if !starts_with && prepend == Prepend::Always {
        buf.push(replacement);
    }
    for ch in text.chars() {
        buf.push(if ch == ' ' { replacement } else { ch });
    }
    if !split {
        f(&buf);
        return;
    }
    let mut start = 0;
    for (i, ch) in buf.char_indices() {
        if ch == replacement && i > start {
            f(&buf[start..i]);
            start = i;
        }
    }
    f(&buf[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, prepend: Prepend) -> Vec<String> {
        let mut out = Vec::new();
        metaspace(text, '▁', prepend, true, &mut |p| out.push(p.to_string()));
        out
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
