//! Pre-tokenizers that cut by character classes, as byte spans of the piece they split:
//! Hugging Face's `Whitespace`, `Punctuation`, `CharDelimiterSplit` and `UnicodeScripts`. Both the
//! text pipelines ([`crate::stages::text_pre_tokenizers`]) and the byte-level ones
//! ([`crate::stages::pre_tokenizers`]) run them. The pure-Python reference is
//! `tinyllm.tok.stages.pre_tokenizers`.
//!
//! The character facts come from tables measured from HF ([`crate::stages::unicode_tables`],
//! BERT's punctuation set), never from Rust's std, whose Unicode version moves with the compiler.

use crate::spec::Spec;
use crate::stages::bert::{char_flags, PUNCTUATION, RE_SPACE, WORD};
use crate::stages::pre_tokenizers::{cover, split_runs, Behavior};
use crate::stages::unicode_tables::SCRIPT_CLASS;
use crate::Error;

/// One of the four character-class pre-tokenizers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharSplit {
    Whitespace,
    Punctuation(Behavior),
    CharDelimiterSplit(char),
    UnicodeScripts,
}

impl CharSplit {
    /// The stage of a pre-tokenizer object, or None when its type is not one of the four.
    pub fn from_spec(v: &Spec<'_, '_>) -> Result<Option<Self>, Error> {
        Ok(Some(match v.type_name()? {
            "Whitespace" => CharSplit::Whitespace,
            "Punctuation" => CharSplit::Punctuation(match v.get("behavior")? {
                None => Behavior::Isolated, // HF's default
                Some(_) => behavior_field(v, "behavior")?,
            }),
            "CharDelimiterSplit" => {
                CharSplit::CharDelimiterSplit(v.with_field("delimiter", |d| {
                    let mut chars = d.as_str()?.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => Ok(c),
                        _ => Err(d.error("one character")),
                    }
                })?)
            }
            "UnicodeScripts" => CharSplit::UnicodeScripts,
            _ => return Ok(None),
        }))
    }

    /// The byte spans of the pieces of `s`, in order.
    pub fn spans(&self, s: &str) -> Vec<(usize, usize)> {
        match *self {
            CharSplit::Whitespace => whitespace_spans(s),
            CharSplit::Punctuation(behavior) => punctuation_spans(s, behavior),
            CharSplit::CharDelimiterSplit(delimiter) => char_delimiter_spans(s, delimiter),
            CharSplit::UnicodeScripts => unicode_scripts_spans(s),
        }
    }
}

/// A SplitDelimiterBehavior field (`"Isolated"`, ...); errors name the field.
pub fn behavior_field(v: &Spec<'_, '_>, key: &str) -> Result<Behavior, Error> {
    v.with_field(key, |b| {
        Behavior::parse(b.as_str()?).map_err(|_| {
            b.error(
                "one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", \"MergedWithNext\", \
                 \"Contiguous\"",
            )
        })
    })
}

/// HF's Whitespace (`\w+|[^\w\s]+`): runs of word characters and runs of other non-space
/// characters are the pieces, spaces are dropped. `Hey, you_2!? é` -> `Hey` `,` `you_2` `!?` `é`.
pub fn whitespace_spans(s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    // The class of the current run: Some(true) for word characters, Some(false) for the others.
    let mut run: Option<(usize, bool)> = None;
    for (at, c) in s.char_indices() {
        let flags = char_flags(c);
        let class = if flags & WORD != 0 {
            Some(true)
        } else if flags & RE_SPACE != 0 {
            None
        } else {
            Some(false)
        };
        match (run, class) {
            (Some((_, word)), Some(now)) if word == now => continue,
            (Some((start, _)), _) => spans.push((start, at)),
            (None, _) => {}
        }
        run = class.map(|word| (at, word));
    }
    if let Some((start, _)) = run {
        spans.push((start, s.len()));
    }
    spans
}

/// Split at every character that `is_delimiter` accepts (each one a delimiter of its own).
fn char_split(
    s: &str,
    is_delimiter: impl Fn(char) -> bool,
    behavior: Behavior,
) -> Vec<(usize, usize)> {
    let matches = s
        .char_indices()
        .filter(|&(_, c)| is_delimiter(c))
        .map(|(at, c)| (at, at + c.len_utf8()));
    split_runs(&cover(s.len(), matches), behavior)
}

/// HF's Punctuation: BERT's punctuation set (ASCII punctuation and Unicode P*), each character a
/// delimiter, with one of the five behaviours.
pub fn punctuation_spans(s: &str, behavior: Behavior) -> Vec<(usize, usize)> {
    char_split(s, |c| char_flags(c) & PUNCTUATION != 0, behavior)
}

/// HF's CharDelimiterSplit: the pieces between occurrences of `delimiter`, which is dropped.
pub fn char_delimiter_spans(s: &str, delimiter: char) -> Vec<(usize, usize)> {
    char_split(s, |c| c == delimiter, Behavior::Removed)
}

/// The script class of `c` in HF's UnicodeScripts (0 is "Any").
fn script_class(c: char) -> u16 {
    let cp = c as u32;
    let i = SCRIPT_CLASS.partition_point(|&(lo, _, _)| lo <= cp);
    match i.checked_sub(1).map(|j| SCRIPT_CLASS[j]) {
        Some((_, hi, class)) if cp <= hi => class,
        _ => 0,
    }
}

/// HF's UnicodeScripts: a cut before each non-Any character whose script differs from the last
/// non-Any one. Any characters stay with the piece before them; those before the first non-Any
/// character are dropped, as is a text of Any characters only.
/// ` abc αβ 日本ひらがな 12` -> `abc ` `αβ ` `日本ひらがな ` `12`.
pub fn unicode_scripts_spans(s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start: Option<usize> = None;
    let mut last = 0;
    for (at, c) in s.char_indices() {
        let script = script_class(c);
        if script == 0 || script == last {
            continue;
        }
        if let Some(start) = start {
            spans.push((start, at));
        }
        start = Some(at);
        last = script;
    }
    if let Some(start) = start {
        spans.push((start, s.len()));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(s: &'a str, spans: &[(usize, usize)]) -> Vec<&'a str> {
        spans.iter().map(|&(a, b)| &s[a..b]).collect()
    }

    // Expected values are what HF tokenizers 0.23.3 gives.
    #[test]
    fn whitespace_keeps_word_and_symbol_runs() {
        let s = "Hey, you_2!? é";
        assert_eq!(
            pieces(s, &whitespace_spans(s)),
            ["Hey", ",", "you_2", "!?", "é"]
        );
        let s = "  a\u{3000}b\u{301}.. ";
        assert_eq!(pieces(s, &whitespace_spans(s)), ["a", "b\u{301}", ".."]);
        assert!(whitespace_spans(" \t\n").is_empty());
    }

    #[test]
    fn punctuation_behaviors() {
        let s = "a,b..c";
        assert_eq!(
            pieces(s, &punctuation_spans(s, Behavior::MergedWithNext)),
            ["a", ",b", ".", ".c"]
        );
        assert_eq!(
            pieces(s, &punctuation_spans(s, Behavior::Isolated)),
            ["a", ",", "b", ".", ".", "c"]
        );
        assert_eq!(
            pieces(s, &punctuation_spans(s, Behavior::Contiguous)),
            ["a", ",", "b", "..", "c"]
        );
        assert_eq!(
            pieces(s, &punctuation_spans(s, Behavior::Removed)),
            ["a", "b", "c"]
        );
        let s = "¿qué?「x」";
        assert_eq!(
            pieces(s, &punctuation_spans(s, Behavior::MergedWithPrevious)),
            ["¿", "qué?", "「", "x」"]
        );
    }

    #[test]
    fn char_delimiter_drops_the_delimiter() {
        let s = "axxbx";
        assert_eq!(pieces(s, &char_delimiter_spans(s, 'x')), ["a", "b"]);
        let s = "é ü";
        assert_eq!(pieces(s, &char_delimiter_spans(s, ' ')), ["é", "ü"]);
    }

    #[test]
    fn unicode_scripts_cut_where_the_script_changes() {
        let s = " abc αβ 日本ひらがな 12";
        assert_eq!(
            pieces(s, &unicode_scripts_spans(s)),
            ["abc ", "αβ ", "日本ひらがな ", "12"]
        );
        assert!(unicode_scripts_spans("   ").is_empty());
        assert!(unicode_scripts_spans("").is_empty());
    }
}
