//! The encoding pipeline of WordPiece and Unigram tokenizers: added tokens, normalizer,
//! pre-tokenizer, model, all in Rust.
//!
//! Added tokens are split out first (leftmost-longest, raw text); each stretch of text between
//! them is normalized into a reused buffer, cut into pieces and encoded piece by piece. The stages
//! are the ones real BERT and T5-style files use; `from_json` refuses the rest, and the Python
//! side then keeps its reference pipeline (`tinyllm.tok.pipeline`).

use serde_json::Value;

use crate::bert_text::{bert_pre_tokenize, whitespace_split, BertNormalizer};
use crate::engine::{split_added, AddedMatcher, AddedTokens};
use crate::precompiled::Precompiled;
use crate::pretokenize::field_bool;
use crate::simple_normalizers::{Replace, Strip};
use crate::unigram::{SplitMix64, UnigramModel};
use crate::word_cache::{ShardedCache, WordCache};
use crate::wordpiece::WordPieceModel;
use crate::Error;

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, Error> {
    v.get(key)
        .ok_or_else(|| Error::Unsupported(format!("missing field {key:?} in {v}")))
}

fn text<'a>(v: &'a Value, key: &str) -> Result<&'a str, Error> {
    field(v, key)?
        .as_str()
        .ok_or_else(|| Error::Unsupported(format!("{key} is not a string")))
}

/// Standard base64 (with `=` padding, whitespace ignored), for Precompiled charsmaps.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (position, ch) in text.bytes().enumerate() {
        let value = match ch {
            b'A'..=b'Z' => ch - b'A',
            b'a'..=b'z' => ch - b'a' + 26,
            b'0'..=b'9' => ch - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => {
                return Err(Error::Invalid(format!(
                    "base64: byte {ch:#04x} at position {position} is not a base64 digit"
                )))
            }
        };
        acc = (acc << 6) | value as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

pub enum Normalizer {
    Bert(BertNormalizer),
    // Boxed: the charsmap tables dwarf the other variants.
    Precompiled(Box<Precompiled>),
    Replace(Replace),
    Strip(Strip),
    Sequence(Vec<Normalizer>),
}

impl Normalizer {
    /// `charsmap` supplies the decoded bytes of a Precompiled stage's base64 blob.
    pub fn from_json(
        v: &Value,
        charsmap: &dyn Fn(&str) -> Result<Vec<u8>, Error>,
    ) -> Result<Self, Error> {
        Ok(match text(v, "type")? {
            "BertNormalizer" => Normalizer::Bert(BertNormalizer::new(
                field_bool(v, "clean_text", true)?,
                field_bool(v, "handle_chinese_chars", true)?,
                match v.get("strip_accents") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(field_bool(v, "strip_accents", false)?),
                },
                field_bool(v, "lowercase", true)?,
            )),
            "Precompiled" => Normalizer::Precompiled(Box::new(Precompiled::from_bytes(
                &charsmap(text(v, "precompiled_charsmap")?)?,
            )?)),
            "Replace" => {
                let pattern = field(v, "pattern")?;
                let (source, is_regex) = match (pattern.get("String"), pattern.get("Regex")) {
                    (Some(Value::String(s)), None) => (s.as_str(), false),
                    (None, Some(Value::String(r))) => (r.as_str(), true),
                    _ => return Err(Error::Unsupported(format!("Replace pattern {pattern}"))),
                };
                Normalizer::Replace(Replace::new(source, is_regex, text(v, "content")?)?)
            }
            "Strip" => Normalizer::Strip(Strip::new(
                field_bool(v, "strip_left", true)?,
                field_bool(v, "strip_right", true)?,
            )),
            "Sequence" => Normalizer::Sequence(
                field(v, "normalizers")?
                    .as_array()
                    .ok_or_else(|| Error::Unsupported("normalizers is not a list".into()))?
                    .iter()
                    .map(|n| Normalizer::from_json(n, charsmap))
                    .collect::<Result<_, _>>()?,
            ),
            other => return Err(Error::Unsupported(format!("normalizer {other}"))),
        })
    }

    /// Write the normalized `text` into `out` (cleared first); `spare` is scratch for sequences.
    fn run(&self, text: &str, out: &mut String, spare: &mut String) {
        out.clear();
        match self {
            Normalizer::Bert(n) => n.normalize(text, out),
            Normalizer::Precompiled(n) => n.normalize(text, out),
            Normalizer::Replace(n) => n.normalize(text, out),
            Normalizer::Strip(n) => n.normalize(text, out),
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

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Prepend {
    Always,
    Never,
}

pub enum PreTokenizer {
    Bert,
    WhitespaceSplit,
    Metaspace {
        replacement: char,
        prepend: Prepend,
        split: bool,
    },
    Sequence(Vec<PreTokenizer>),
}

impl PreTokenizer {
    pub fn from_json(v: &Value) -> Result<Self, Error> {
        Ok(match text(v, "type")? {
            "BertPreTokenizer" => PreTokenizer::Bert,
            "WhitespaceSplit" => PreTokenizer::WhitespaceSplit,
            "Metaspace" => {
                let mut chars = text(v, "replacement")?.chars();
                let (Some(replacement), None) = (chars.next(), chars.next()) else {
                    return Err(Error::Unsupported(
                        "replacement is not one character".into(),
                    ));
                };
                // "first" needs each piece's position in the raw input, which this engine does
                // not track; the Python reference runs such files.
                let prepend = match v.get("prepend_scheme").and_then(Value::as_str) {
                    None | Some("always") => Prepend::Always,
                    Some("never") => Prepend::Never,
                    Some(other) => {
                        return Err(Error::Unsupported(format!(
                            "Metaspace prepend_scheme {other:?}; expected \"always\" or \"never\""
                        )))
                    }
                };
                PreTokenizer::Metaspace {
                    replacement,
                    prepend,
                    split: field_bool(v, "split", true)?,
                }
            }
            "Sequence" => PreTokenizer::Sequence(
                field(v, "pretokenizers")?
                    .as_array()
                    .ok_or_else(|| Error::Unsupported("pretokenizers is not a list".into()))?
                    .iter()
                    .map(PreTokenizer::from_json)
                    .collect::<Result<_, _>>()?,
            ),
            other => return Err(Error::Unsupported(format!("pre-tokenizer {other}"))),
        })
    }

    /// Call `f` with each piece of `text`.
    fn for_each_piece(&self, text: &str, f: &mut dyn FnMut(&str)) {
        match self {
            PreTokenizer::Bert => bert_pre_tokenize(text, &mut |p| f(p)),
            PreTokenizer::WhitespaceSplit => whitespace_split(text, &mut |p| f(p)),
            PreTokenizer::Metaspace {
                replacement,
                prepend,
                split,
            } => metaspace(text, *replacement, *prepend, *split, f),
            PreTokenizer::Sequence(stages) => {
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

/// Normalize `text` and call `f` with each pre-token: the words a trainer counts.
pub fn for_each_word(
    normalizer: Option<&Normalizer>,
    pre: Option<&PreTokenizer>,
    text: &str,
    f: &mut dyn FnMut(&str),
) {
    let (mut normalized, mut spare) = (String::new(), String::new());
    let text = match normalizer {
        Some(n) => {
            n.run(text, &mut normalized, &mut spare);
            normalized.as_str()
        }
        None => text,
    };
    match pre {
        Some(p) => p.for_each_piece(text, f),
        None if !text.is_empty() => f(text),
        None => {}
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

pub enum Model {
    WordPiece(WordPieceModel),
    Unigram(UnigramModel),
}

impl Model {
    #[inline]
    fn encode(&self, piece: &str, out: &mut Vec<u32>) {
        match self {
            Model::WordPiece(m) => m.encode(piece, out),
            Model::Unigram(m) => m.encode(piece, out),
        }
    }
}

pub struct TextEngine {
    normalizer: Option<Normalizer>,
    pre: Option<PreTokenizer>,
    model: Model,
    added: AddedTokens,
    cache: ShardedCache,
}

thread_local! {
    static BUFFERS: std::cell::RefCell<(String, String)> = const { std::cell::RefCell::new((String::new(), String::new())) };
}

impl TextEngine {
    pub fn new(
        normalizer: Option<Normalizer>,
        pre: Option<PreTokenizer>,
        model: Model,
        added: Vec<(String, u32)>,
    ) -> Self {
        TextEngine {
            normalizer,
            pre,
            model,
            added: AddedTokens::new(added),
            cache: ShardedCache::new(),
        }
    }

    pub fn matcher(&self, texts: &[String]) -> Result<Option<std::sync::Arc<AddedMatcher>>, Error> {
        self.added.matcher(texts)
    }

    /// Forget every cached word (results never depend on the cache).
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    fn encode_gap(&self, gap: &str, cache: &mut WordCache, out: &mut Vec<u32>) {
        if gap.is_empty() {
            return;
        }
        BUFFERS.with(|cell| {
            let mut guard = cell.borrow_mut();
            let (normalized, spare) = &mut *guard;
            let text: &str = match &self.normalizer {
                Some(n) => {
                    n.run(gap, normalized, spare);
                    normalized
                }
                None => gap,
            };
            let mut encode = |piece: &str| {
                cache.encode(piece.as_bytes(), out, |out| self.model.encode(piece, out))
            };
            match &self.pre {
                Some(pre) => pre.for_each_piece(text, &mut encode),
                None => encode(text),
            }
            // One huge text should not pin its size in every worker's buffers for good.
            for buffer in [normalized, spare] {
                if buffer.capacity() > 1 << 22 {
                    *buffer = String::new();
                }
            }
        });
    }

    /// Encode one text; `matcher` holds the added tokens that may match.
    pub fn encode(&self, text: &str, matcher: Option<&AddedMatcher>) -> Result<Vec<u32>, Error> {
        let mut out = Vec::with_capacity(text.len() / 4 + 4);
        let mut cache = self.cache.for_current_thread();
        match matcher {
            None => self.encode_gap(text, &mut cache, &mut out),
            Some(m) => {
                let out_cell = std::cell::RefCell::new(&mut out);
                m.split(
                    text,
                    &mut |gap, _| {
                        self.encode_gap(gap, &mut cache, &mut out_cell.borrow_mut());
                        Ok(())
                    },
                    &mut |id| out_cell.borrow_mut().push(id),
                )?;
            }
        }
        Ok(out)
    }
}

impl TextEngine {
    /// Unigram subword sampling of one text: word k (counting across the whole text) draws its
    /// segmentation from q(z) ∝ P(z)^alpha with `SplitMix64::new(SplitMix64::stream_seed(key, k))`.
    /// Bypasses the word cache. Errors for a WordPiece model.
    pub fn encode_sample(
        &self,
        text: &str,
        matcher: Option<&AddedMatcher>,
        alpha: f64,
        key: u64,
    ) -> Result<Vec<u32>, Error> {
        let Model::Unigram(model) = &self.model else {
            return Err(Error::Unsupported("sampling needs a Unigram model".into()));
        };
        let out = std::cell::RefCell::new(Vec::with_capacity(text.len() / 2 + 4));
        let mut k: u64 = 0;
        let mut gap = |gap: &str, _: usize| -> Result<(), Error> {
            let mut failed = Ok(());
            for_each_word(
                self.normalizer.as_ref(),
                self.pre.as_ref(),
                gap,
                &mut |word| {
                    if failed.is_ok() {
                        let mut rng = SplitMix64::for_stream(key, k);
                        k += 1;
                        failed = model.sample_with(word, alpha, &mut rng, &mut out.borrow_mut());
                    }
                },
            );
            failed
        };
        split_added(matcher, text, &mut gap, &mut |id| out.borrow_mut().push(id))?;
        Ok(out.into_inner())
    }
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
    fn base64_round_trips_known_values() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8hIQ==").unwrap(), b"hello!!");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("a$").is_err());
    }

    #[test]
    fn metaspace_matches_hugging_face_examples() {
        assert_eq!(pieces("Hey  you", Prepend::Always), ["▁Hey", "▁", "▁you"]);
        assert_eq!(pieces("a▁▁b", Prepend::Always), ["▁a", "▁", "▁b"]);
        assert_eq!(pieces(" x", Prepend::Always), ["▁x"]);
        assert_eq!(pieces("x y", Prepend::Never), ["x", "▁y"]);
        assert!(pieces("", Prepend::Always).is_empty());
    }
}
