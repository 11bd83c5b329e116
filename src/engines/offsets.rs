//! Ids with offsets: each token's span in the raw input, in characters and in UTF-8 bytes, and
//! whether it is an added token, as flat columns ([`TokenOffsets`]). The rule is the Python
//! reference's (`PipelineTokenizer._encode_reference` in `tinyllm.tok.pipeline`), reproduced step
//! by step so both give the same numbers:
//!
//! 1. added tokens split the raw text; an added token spans its own characters;
//! 2. each gap is normalized with alignment ([`crate::stages::alignment`]): every normalized
//!    character knows the raw characters it came from;
//! 3. the pre-tokenizer cuts pieces `(text, start, end)` with `start..end` in normalized
//!    characters; `text` may carry `shift` characters put in front (Metaspace's `▁`, ByteLevel's
//!    prefix space) that have no source of their own;
//! 4. the model gives each token a unit span in the piece (characters, or bytes for byte-level
//!    BPE); a token spans from the source of its first unit's character to the source of its
//!    last unit's character, an inserted prefix counting as the piece's first character.
//!
//! Byte offsets are the raw byte offsets of those character spans, except for byte-level BPE
//! without a normalizer, where pieces are raw bytes and a token that splits a multi-byte
//! character gets its exact bytes. Example (GPT-2, `"a😀"`): 😀 is four bytes and two tokens;
//! the offsets are (0, 1), (1, 2), (1, 2) in characters but (0, 1), (1, 4), (4, 5) in bytes.

use std::borrow::Cow;
use std::cell::RefCell;

use crate::engines::wordpiece_unigram::Model;
use crate::stages::added_tokens::{split_added, AddedMatcher};
use crate::stages::alignment::{normalize_aligned, Span};
use crate::stages::bert::{bert_pre_tokenize, whitespace_split};
use crate::stages::normalizers::Normalizer;
use crate::stages::pre_tokenizers::{gpt2_split, ByteLevelPreTokenizer};
use crate::stages::text_pre_tokenizers::TextPreTokenizer;
use crate::text::byte_alphabet::char_to_byte;
use crate::Error;

/// The tokens of one text as columns: id, raw character span, raw byte span, added or not.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TokenOffsets {
    pub ids: Vec<u32>,
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
    pub byte_starts: Vec<u32>,
    pub byte_ends: Vec<u32>,
    pub added: Vec<bool>,
}

impl TokenOffsets {
    fn push(&mut self, id: u32, chars: Span, bytes: Span, added: bool) {
        self.ids.push(id);
        self.starts.push(chars.0);
        self.ends.push(chars.1);
        self.byte_starts.push(bytes.0);
        self.byte_ends.push(bytes.1);
        self.added.push(added);
    }
}

/// The byte offset of each character of the raw text (and of its end).
pub struct RawText {
    byte_at: Vec<u32>,
}

impl RawText {
    fn new(text: &str) -> Self {
        let byte_at = text
            .char_indices()
            .map(|(i, _)| i as u32)
            .chain([text.len() as u32])
            .collect();
        RawText { byte_at }
    }

    #[inline]
    fn byte(&self, c: u32) -> u32 {
        self.byte_at[(c as usize).min(self.byte_at.len() - 1)]
    }

    /// The character index at byte offset `b` (a character boundary).
    fn char_of(&self, b: usize) -> u32 {
        self.byte_at.partition_point(|&x| (x as usize) < b) as u32
    }
}

/// The character index of every byte offset of `s` (a byte inside a character gets that
/// character's index), and of its end.
fn char_index(s: &str, out: &mut Vec<u32>) {
    out.clear();
    for (k, c) in s.chars().enumerate() {
        out.extend(std::iter::repeat_n(k as u32, c.len_utf8()));
    }
    out.push(out.last().map_or(0, |&k| k + 1));
}

/// Adds the tokens of one stretch of text: (stretch, its first raw character, the raw text, out).
pub type GapEncoder<'a> =
    dyn FnMut(&str, u32, &RawText, &mut TokenOffsets) -> Result<(), Error> + 'a;

/// Split `text` around the added tokens and collect the offsets: `gap(stretch, first_char,
/// raw, out)` adds the tokens of each stretch between them (`first_char`: where it starts in
/// the raw text).
pub fn with_added_tokens(
    matcher: Option<&AddedMatcher>,
    text: &str,
    gap: &mut GapEncoder<'_>,
) -> Result<TokenOffsets, Error> {
    let raw = RawText::new(text);
    let out = RefCell::new(TokenOffsets::default());
    // Byte where the previous gap ended: an added token starts there and ends at the next gap.
    let last_end = std::cell::Cell::new(0usize);
    split_added(
        matcher,
        text,
        &mut |stretch, at| {
            let mut out = out.borrow_mut();
            if let Some(k) = out.added.len().checked_sub(1) {
                if out.added[k] && out.byte_ends[k] == u32::MAX {
                    out.byte_ends[k] = at as u32;
                    out.ends[k] = raw.char_of(at);
                }
            }
            last_end.set(at + stretch.len());
            if stretch.is_empty() {
                return Ok(());
            }
            gap(stretch, raw.char_of(at), &raw, &mut out)
        },
        &mut |id| {
            let start = last_end.get();
            out.borrow_mut()
                .push(id, (raw.char_of(start), 0), (start as u32, u32::MAX), true);
        },
    )?;
    Ok(out.into_inner())
}

/// Where a piece's tokens land: the normalized text's alignment (raw characters) and the raw
/// text's byte offsets.
struct Landing<'a> {
    align: &'a [Span],
    raw: &'a RawText,
}

impl Landing<'_> {
    /// The raw character span of a token whose first and last units lie in characters `first`
    /// and `last` of a piece at normalized `ps` with `shift` inserted characters.
    fn chars(&self, ps: usize, shift: usize, first: usize, last: usize) -> Span {
        let at = |k: usize| (ps + k.saturating_sub(shift)).min(self.align.len() - 1);
        (self.align[at(first)].0, self.align[at(last)].1)
    }

    fn bytes(&self, chars: Span) -> Span {
        (self.raw.byte(chars.0), self.raw.byte(chars.1))
    }
}

// -- text pipelines (TextEngine) ---------------------------------------------------------------

/// A pre-token: its text and the normalized characters `start..end` it came from.
struct Piece<'a> {
    text: Cow<'a, str>,
    start: usize,
    end: usize,
}

/// Pieces of `text` as a stage splits it: (piece, start, end) in characters of `text`.
/// `at_text_start`: whether `text` begins the whole input (Metaspace "first" reads it).
fn split_stage<'a>(
    stage: &TextPreTokenizer,
    text: &'a str,
    at_text_start: bool,
) -> Vec<(Cow<'a, str>, usize, usize)> {
    let mut byte_spans: Vec<(usize, usize)> = Vec::new();
    let base = text.as_ptr() as usize;
    let mut from_slice = |p: &str| {
        let s = p.as_ptr() as usize - base;
        byte_spans.push((s, s + p.len()));
    };
    match stage {
        TextPreTokenizer::Bert => bert_pre_tokenize(text, &mut from_slice),
        TextPreTokenizer::WhitespaceSplit => whitespace_split(text, &mut from_slice),
        TextPreTokenizer::Chars(split) => byte_spans = split.spans(text),
        TextPreTokenizer::Stage(stage) => byte_spans = stage.pieces(text),
        TextPreTokenizer::Metaspace {
            replacement,
            prepend,
            split,
        } => return metaspace(text, *replacement, prepend.applies(at_text_start), *split),
        TextPreTokenizer::Sequence(_) => unreachable!("sequences are applied stage by stage"),
    }
    let mut out = Vec::with_capacity(byte_spans.len());
    // Pieces come in order: count characters from the previous piece on.
    let (mut byte, mut chars) = (0usize, 0usize);
    for (s, e) in byte_spans {
        if s < e {
            let start = chars + text[byte..s].chars().count();
            let end = start + text[s..e].chars().count();
            out.push((Cow::Borrowed(&text[s..e]), start, end));
            (byte, chars) = (e, end);
        }
    }
    out
}

/// The reference's Metaspace: spaces become the replacement, one is put in front (when `prefix`)
/// and the text is cut before each replacement; spans leave the prefix out.
fn metaspace(
    text: &str,
    replacement: char,
    prefix: bool,
    split: bool,
) -> Vec<(Cow<'_, str>, usize, usize)> {
    if text.is_empty() {
        return Vec::new();
    }
    let replaced: String = text
        .chars()
        .map(|c| if c == ' ' { replacement } else { c })
        .collect();
    let added = usize::from(!replaced.starts_with(replacement) && prefix);
    let chars: Vec<char> = std::iter::repeat_n(replacement, added)
        .chain(replaced.chars())
        .collect();
    let mut spans = Vec::new();
    if split {
        let mut start = 0;
        for (i, &c) in chars.iter().enumerate() {
            if c == replacement && i > start {
                spans.push((start, i));
                start = i;
            }
        }
        spans.push((start, chars.len()));
    } else {
        spans.push((0, chars.len()));
    }
    spans
        .into_iter()
        .map(|(s, e)| {
            let piece: String = chars[s..e].iter().collect();
            (
                Cow::Owned(piece),
                s.saturating_sub(added),
                e.saturating_sub(added),
            )
        })
        .collect()
}

/// Every piece re-split by `stage` (the reference's `PreTokenizer.apply`); a piece begins the
/// input when the gap does (`at_text_start`), it starts at the gap's first character and no
/// prefix was put in front of it.
fn apply<'a>(
    stage: &TextPreTokenizer,
    pieces: Vec<Piece<'a>>,
    at_text_start: bool,
) -> Vec<Piece<'a>> {
    if let TextPreTokenizer::Sequence(stages) = stage {
        return stages
            .iter()
            .fold(pieces, |pieces, s| apply(s, pieces, at_text_start));
    }
    let mut out = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let shift = piece.text.chars().count() - (piece.end - piece.start);
        let at = at_text_start && piece.start == 0 && shift == 0;
        let subs: Vec<(String, usize, usize)> = match &piece.text {
            // Borrowed pieces can lend their slices on; owned ones are copied.
            Cow::Borrowed(t) => {
                for (sub, s, e) in split_stage(stage, t, at) {
                    out.push(Piece {
                        text: sub,
                        start: piece.start + s.saturating_sub(shift),
                        end: piece.start + e.saturating_sub(shift),
                    });
                }
                continue;
            }
            Cow::Owned(t) => split_stage(stage, t, at)
                .into_iter()
                .map(|(sub, s, e)| (sub.into_owned(), s, e))
                .collect(),
        };
        for (sub, s, e) in subs {
            out.push(Piece {
                text: Cow::Owned(sub),
                start: piece.start + s.saturating_sub(shift),
                end: piece.start + e.saturating_sub(shift),
            });
        }
    }
    out
}

impl Model {
    /// Each token of `piece` with its byte span in `piece`: (id, start, end).
    pub fn encode_spans(
        &self,
        piece: &str,
        out: &mut Vec<(u32, usize, usize)>,
    ) -> Result<(), Error> {
        match self {
            Model::WordPiece(m) => m.encode_spans(piece, out),
            Model::Unigram(m) => m.encode_spans(piece, out)?,
            Model::Bpe(m) => m.encode_spans(piece, out),
            Model::WordLevel(m) => m.encode_spans(piece, out),
            Model::SpmBpe(m) => m.encode_spans(piece, out),
            Model::SpmUnigram(m) => m.encode_spans(piece, out),
        }
        Ok(())
    }
}

/// `gap` as the normalizer leaves it, with each character's source span in characters of the
/// whole input (the gap starts at character `first_char`); None when nothing is left.
fn aligned_gap(
    normalizer: Option<&Normalizer>,
    gap: &str,
    first_char: u32,
) -> Option<(String, Vec<Span>)> {
    let (mut normalized, mut align) = (String::new(), Vec::new());
    normalize_aligned(normalizer, gap, &mut normalized, &mut align);
    if normalized.is_empty() {
        return None;
    }
    for span in &mut align {
        *span = (span.0 + first_char, span.1 + first_char);
    }
    Some((normalized, align))
}

/// The tokens of one stretch of text between added tokens, through a text pipeline.
pub fn text_gap(
    normalizer: Option<&Normalizer>,
    pre: Option<&TextPreTokenizer>,
    model: &Model,
    gap: &str,
    first_char: u32,
    raw: &RawText,
    out: &mut TokenOffsets,
) -> Result<(), Error> {
    let Some((normalized, align)) = aligned_gap(normalizer, gap, first_char) else {
        return Ok(());
    };
    let whole = Piece {
        text: Cow::Borrowed(normalized.as_str()),
        start: 0,
        end: align.len(),
    };
    let pieces = match pre {
        // The gap begins the input when it starts at its first character.
        Some(pre) => apply(pre, vec![whole], first_char == 0),
        None => vec![whole],
    };
    let landing = Landing { align: &align, raw };
    let (mut spans, mut char_at) = (Vec::new(), Vec::new());
    for piece in pieces {
        spans.clear();
        model.encode_spans(&piece.text, &mut spans)?;
        char_index(&piece.text, &mut char_at);
        let chars = *char_at.last().unwrap_or(&0) as usize;
        let shift = chars - (piece.end - piece.start);
        for &(id, s, e) in &spans {
            let first = char_at[s] as usize;
            let last = char_at[e.max(s + 1) - 1] as usize;
            let chars = landing.chars(piece.start, shift, first, last);
            out.push(id, chars, landing.bytes(chars), false);
        }
    }
    Ok(())
}

// -- byte-level BPE (BpeEngine) ----------------------------------------------------------------

/// What byte-level offsets need to know of the vocabulary: each id's length in bytes, which
/// bytes have a token of their own, and the unknown id.
pub struct ByteTokens {
    /// u32::MAX for a token outside the byte alphabet (it cannot come out of the model).
    len: Vec<u32>,
    has_byte: [bool; 256],
    unk: Option<u32>,
}

impl ByteTokens {
    /// From the model's token strings by id (None where an id has none).
    pub fn new(texts: &[Option<String>], unk: Option<u32>) -> Self {
        let mut has_byte = [false; 256];
        let len = texts
            .iter()
            .map(|t| {
                let Some(t) = t else { return u32::MAX };
                let mut n = 0u32;
                let mut only = None;
                for c in t.chars() {
                    match char_to_byte(c) {
                        Some(b) => only = if n == 0 { Some(b) } else { None },
                        None => return u32::MAX,
                    }
                    n += 1;
                }
                if let (1, Some(b)) = (n, only) {
                    has_byte[b as usize] = true;
                }
                n
            })
            .collect();
        ByteTokens { len, has_byte, unk }
    }

    /// Byte spans in `word` of the model's `ids` for it: bytes without a token are dropped (or
    /// are the unknown token), every other token covers its own bytes.
    fn spans(
        &self,
        word: &[u8],
        ids: &[u32],
        out: &mut Vec<(u32, usize, usize)>,
    ) -> Result<(), Error> {
        let mut at = 0;
        for &id in ids {
            if self.unk.is_none() {
                while at < word.len() && !self.has_byte[word[at] as usize] {
                    at += 1;
                }
            }
            let n = if Some(id) == self.unk && at < word.len() && !self.has_byte[word[at] as usize]
            {
                1
            } else {
                self.len.get(id as usize).copied().unwrap_or(u32::MAX) as usize
            };
            if n == u32::MAX as usize || at + n > word.len() {
                return Err(Error::Unsupported(format!(
                    "offsets: token {id} does not spell the next bytes of its piece"
                )));
            }
            out.push((id, at, at + n));
            at += n;
        }
        Ok(())
    }
}

/// The tokens of one stretch of text between added tokens, through a byte-level BPE pipeline;
/// `encode` appends a piece's ids (the engine's cached model).
#[allow(clippy::too_many_arguments)]
pub fn byte_level_gap(
    normalizer: Option<&Normalizer>,
    pre: &ByteLevelPreTokenizer,
    tokens: &ByteTokens,
    encode: &mut dyn FnMut(&[u8], &mut Vec<u32>),
    gap: &str,
    first_char: u32,
    raw: &RawText,
    out: &mut TokenOffsets,
) -> Result<(), Error> {
    let Some((normalized, align)) = aligned_gap(normalizer, gap, first_char) else {
        return Ok(());
    };
    // Without a normalizer the piece bytes are the raw bytes: byte offsets can be exact.
    let exact_bytes = normalizer.is_none();
    let landing = Landing { align: &align, raw };
    let options = pre.byte_level();
    let mut norm_char = Vec::new();
    char_index(&normalized, &mut norm_char);
    let (mut subs, mut ids, mut spans, mut piece_char) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (s, e) in pre.stage_spans(&normalized)? {
        if s >= e {
            continue;
        }
        let stage_piece = &normalized[s..e];
        let piece_start = norm_char[s] as usize;
        let added = usize::from(options.add_prefix_space && !stage_piece.starts_with(' '));
        let piece: Cow<'_, str> = if added == 1 {
            Cow::Owned(format!(" {stage_piece}"))
        } else {
            Cow::Borrowed(stage_piece)
        };
        subs.clear();
        if options.use_regex {
            gpt2_split(&piece, |a, b| subs.push((a, b)));
        } else {
            subs.push((0, piece.len()));
        }
        char_index(&piece, &mut piece_char);
        for &(a, b) in &subs {
            let word = &piece.as_bytes()[a..b];
            let ps = piece_start + (piece_char[a] as usize).saturating_sub(added);
            let pe = piece_start + (piece_char[b] as usize).saturating_sub(added);
            let shift = (piece_char[b] - piece_char[a]) as usize - (pe - ps);
            ids.clear();
            encode(word, &mut ids);
            spans.clear();
            tokens.spans(word, &ids, &mut spans)?;
            let base = piece_char[a];
            for &(id, us, ue) in &spans {
                let first = (piece_char[a + us] - base) as usize;
                let last = (piece_char[a + ue - 1] - base) as usize;
                let chars = landing.chars(ps, shift, first, last);
                let bytes = if exact_bytes {
                    let origin = align[ps.min(align.len() - 1)].0;
                    let base = raw.byte(origin) as usize;
                    (
                        (base + us.saturating_sub(shift)) as u32,
                        (base + ue.saturating_sub(shift).max(1)) as u32,
                    )
                } else {
                    landing.bytes(chars)
                };
                out.push(id, chars, bytes, false);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::wordpiece_unigram::TextEngine;
    use crate::engines::Encoder;
    use serde_json::json;

    #[test]
    fn bert_offsets_point_at_the_raw_characters_and_bytes() {
        let normalizer = Normalizer::from_json(
            &json!({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                    "strip_accents": null, "lowercase": true}),
            "n",
        )
        .unwrap();
        let pre = TextPreTokenizer::from_json(&json!({"type": "BertPreTokenizer"}), "p").unwrap();
        let vocab = json!({"[UNK]": 0, "[SEP]": 1, "hello": 2, "中": 3, "x": 4, "##x": 5});
        let spec = json!({"vocab": vocab, "unk_id": 0, "prefix": "##",
                          "max_input_chars_per_word": 100});
        let (model, _) = Model::from_json("WordPiece", &spec, "m").unwrap();
        let engine = TextEngine::new(
            Some(normalizer),
            Some(pre),
            model,
            vec![("[SEP]".into(), 1)],
        );
        let matcher = engine.matcher(&["[SEP]".to_string()]).unwrap();
        // "Héllo" lowercases and loses its accent (e + U+0301 after NFD): still one word of 5.
        let text = "He\u{301}llo 中[SEP]xx";
        let got = engine.encode_offsets(text, matcher.as_deref()).unwrap();
        assert_eq!(got.ids, [2, 3, 1, 4, 5]);
        assert_eq!(got.starts, [0, 7, 8, 13, 14]);
        assert_eq!(got.ends, [6, 8, 13, 14, 15]);
        assert_eq!(got.byte_starts, [0, 8, 11, 16, 17]);
        assert_eq!(got.byte_ends, [7, 11, 16, 17, 18]);
        assert_eq!(got.added, [false, false, true, false, false]);
        assert_eq!(
            got.ids,
            engine.encode(text, matcher.as_deref()).unwrap(),
            "the same ids as encode"
        );
    }
}
