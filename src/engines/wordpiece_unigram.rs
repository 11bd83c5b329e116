//! The encoding pipeline of WordPiece and Unigram tokenizers ([`TextEngine`]): added tokens,
//! normalizer, pre-tokenizer, model, with a word cache, all in Rust.
//!
//! Added tokens are split out first (leftmost-longest, raw text; [`crate::stages::added_tokens`]);
//! each stretch of text between them is normalized into a reused buffer, cut into pieces by a
//! [`TextPreTokenizer`] and encoded piece by piece. The stages are the ones real BERT and T5-style
//! files use; `from_json` refuses the rest, and the Python side then keeps its reference pipeline
//! (`tinyllm.tok.pipeline`). The Python side attaches this engine in `tinyllm.tok.models.engines`.

use std::sync::Arc;

use crate::engines::look_ahead::Ahead;
use crate::engines::offsets::{text_gap, with_added_tokens, TokenOffsets};
use crate::engines::word_cache::{ShardedCache, WordCache};
use crate::engines::Encoder;
use crate::memory::huge_pages::Pages;
use crate::models::char_bpe::{CharBpeModel, CharBpeOptions};
use crate::models::random::SplitMix64;
use crate::models::spm_bpe::SpmBpeModel;
use crate::models::spm_unigram::SpmUnigramModel;
use crate::models::unigram::UnigramModel;
use crate::models::wordlevel::WordLevelModel;
use crate::models::wordpiece::WordPieceModel;
use crate::spec::Spec;
use crate::stages::added_tokens::{split_added, AddedMatcher, AddedTokens};
use crate::stages::normalizers::Normalizer;
use crate::stages::text_pre_tokenizers::TextPreTokenizer;
use crate::Error;

/// Normalize `text` and call `f` with each pre-token: the words a trainer counts (a text that
/// begins its input).
pub fn for_each_word(
    normalizer: Option<&Normalizer>,
    pre: Option<&TextPreTokenizer>,
    text: &str,
    f: &mut dyn FnMut(&str),
) {
    for_each_word_at(normalizer, pre, text, true, f);
}

/// [`for_each_word`] of a stretch of the input; `at_text_start` says whether it begins the input.
fn for_each_word_at(
    normalizer: Option<&Normalizer>,
    pre: Option<&TextPreTokenizer>,
    text: &str,
    at_text_start: bool,
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
        Some(p) => p.for_each_piece_at(text, at_text_start, f),
        None if !text.is_empty() => f(text),
        None => {}
    }
}

pub enum Model {
    WordPiece(WordPieceModel),
    Unigram(UnigramModel),
    /// Character-level BPE (the pre-tokenizer is not ByteLevel).
    Bpe(CharBpeModel),
    WordLevel(WordLevelModel),
    // SentencePiece `.model` files (spec: `pieces` [[text, score, type], ...], `byte_fallback`).
    SpmBpe(Box<SpmBpeModel>),
    SpmUnigram(Box<SpmUnigramModel>),
}

/// A `{token: id}` vocabulary of a spec and its largest id.
fn vocab_ids(spec: &Spec) -> Result<(Vec<(String, u32)>, u32), Error> {
    let vocab: Vec<(String, u32)> = spec.with_field("vocab", |vocab| {
        vocab.each_entry(|token, id| Ok((token.to_string(), id.as_u32()?)))
    })?;
    let max_id = vocab.iter().map(|v| v.1).max().unwrap_or(0);
    Ok((vocab, max_id))
}

impl Model {
    /// The model of a text pipeline from its spec, and its largest id. `model_type` is
    /// "WordPiece" (spec: `vocab` {token: id}, `unk_id`, `prefix`, `max_input_chars_per_word`) or
    /// "Unigram" (spec: `pieces` [[piece, score], ...] in id order, `unk_id` or null,
    /// `byte_fallback`), "BPE" (character-level; spec: `vocab`, `merges` [[left, right, rank,
    /// merged], ...] as ids, `unk_id` or null, `byte_fallback`, `fuse_unk`, `prefix`, `suffix`,
    /// `ignore_merges`) or "WordLevel" (spec: `vocab`, `unk_id`). Errors name the field under
    /// `name` (e.g. `model_json.vocab["##a"]`).
    pub fn from_json(
        model_type: &str,
        spec: &serde_json::Value,
        name: &'static str,
    ) -> Result<(Model, u32), Error> {
        let spec = Spec::root(spec, name);
        match model_type {
            "WordPiece" => {
                let (vocab, _) = vocab_ids(&spec)?;
                let prefix = spec.str("prefix")?;
                let max_chars = spec.with_field("max_input_chars_per_word", |v| v.as_usize())?;
                let unk = spec.with_field("unk_id", |v| v.as_u32())?;
                if !vocab.iter().any(|(_, id)| *id == unk) {
                    return Err(spec.field_error(
                        "unk_id",
                        "an id of the vocabulary",
                        format!("{unk}, which no token of {name}.vocab has"),
                    ));
                }
                Model::from_vocab(model_type, vocab, unk, prefix, max_chars)
            }
            "Unigram" => {
                let pieces: Vec<(String, f64)> = spec.with_field("pieces", |pieces| {
                    pieces.each_item(|pair| {
                        if pair.value().as_array().is_none_or(|a| a.len() != 2) {
                            return Err(pair.error("a [piece, score] pair"));
                        }
                        Ok((
                            pair.with_item(0, |p| p.as_str())?.to_string(),
                            pair.with_item(1, |s| s.as_f64())?,
                        ))
                    })
                })?;
                let unk = spec.opt_u32("unk_id")?;
                if let Some(unk) = unk {
                    if unk as usize >= pieces.len() {
                        return Err(spec.field_error(
                            "unk_id",
                            &format!("an id below the {} pieces", pieces.len()),
                            unk.to_string(),
                        ));
                    }
                }
                let max_id = u32::try_from(pieces.len().saturating_sub(1)).map_err(|_| {
                    spec.field_error(
                        "pieces",
                        "at most 2^32 pieces",
                        format!("{} pieces", pieces.len()),
                    )
                })?;
                let model = UnigramModel::new(&pieces, unk)?
                    .with_byte_fallback(spec.bool_or("byte_fallback", false)?);
                Ok((Model::Unigram(model), max_id))
            }
            "BPE" => {
                let (vocab, max_id) = vocab_ids(&spec)?;
                let merges: Vec<(u32, u32, u32, u32)> = spec.with_field("merges", |merges| {
                    merges.each_item(|m| {
                        if m.value().as_array().is_none_or(|a| a.len() != 4) {
                            return Err(m.error("[left, right, rank, merged] ids"));
                        }
                        let at = |k| m.with_item(k, |v| v.as_u32());
                        Ok((at(0)?, at(1)?, at(2)?, at(3)?))
                    })
                })?;
                let options = CharBpeOptions {
                    unk: spec.opt_u32("unk_id")?,
                    byte_fallback: spec.bool_or("byte_fallback", false)?,
                    fuse_unk: spec.bool_or("fuse_unk", false)?,
                    prefix: spec.str("prefix")?.to_string(),
                    suffix: spec.str("suffix")?.to_string(),
                    ignore_merges: spec.bool_or("ignore_merges", false)?,
                };
                Ok((
                    Model::Bpe(CharBpeModel::new(vocab, &merges, options)?),
                    max_id,
                ))
            }
            "WordLevel" => {
                let (vocab, _) = vocab_ids(&spec)?;
                let unk = spec.with_field("unk_id", |v| v.as_u32())?;
                Model::from_vocab(model_type, vocab, unk, "", 0)
            }
            "SentencePieceBPE" => {
                let model = SpmBpeModel::from_spec(&spec)?;
                let max_id = model.pieces.max_id();
                Ok((Model::SpmBpe(Box::new(model)), max_id))
            }
            "SentencePieceUnigram" => {
                let model = SpmUnigramModel::from_spec(&spec)?;
                let max_id = model.pieces.max_id();
                Ok((Model::SpmUnigram(Box::new(model)), max_id))
            }
            other => Err(Error::Field {
                field: "model_type".into(),
                expected: "\"WordPiece\", \"Unigram\", \"BPE\" or \"WordLevel\"".into(),
                found: format!("{other:?}"),
            }),
        }
    }

    /// A "WordPiece" (`prefix`, `max_chars`) or "WordLevel" model over a `{token: id}`
    /// vocabulary, and its largest id: what a spec's `vocab` gives, or a vocabulary the core read
    /// itself (`BpeTables::read_vocab`). A WordPiece `unk` must be an id of the vocabulary.
    pub fn from_vocab<S: AsRef<str> + Into<String>>(
        model_type: &str,
        vocab: Vec<(S, u32)>,
        unk: u32,
        prefix: &str,
        max_chars: usize,
    ) -> Result<(Model, u32), Error> {
        let max_id = vocab.iter().map(|v| v.1).max().unwrap_or(0);
        match model_type {
            "WordPiece" => {
                if !vocab.iter().any(|(_, id)| *id == unk) {
                    return Err(Error::Field {
                        field: "unk_id".into(),
                        expected: "an id of the vocabulary".into(),
                        found: format!("{unk}, which no token of the vocabulary has"),
                    });
                }
                let model = WordPieceModel::new(&vocab, unk, prefix, max_chars)?;
                Ok((Model::WordPiece(model), max_id))
            }
            "WordLevel" => {
                let vocab = vocab.into_iter().map(|(t, id)| (t.into(), id)).collect();
                Ok((Model::WordLevel(WordLevelModel::new(vocab, unk)?), max_id))
            }
            other => Err(Error::Field {
                field: "model_type".into(),
                expected: "\"WordPiece\" or \"WordLevel\"".into(),
                found: format!("{other:?}"),
            }),
        }
    }

    #[inline]
    fn encode(&self, piece: &str, out: &mut Vec<u32>) {
        match self {
            Model::WordPiece(m) => m.encode(piece, out),
            Model::Unigram(m) => m.encode(piece, out),
            Model::Bpe(m) => m.encode(piece, out),
            Model::WordLevel(m) => m.encode(piece, out),
            Model::SpmBpe(m) => m.encode(piece, out),
            Model::SpmUnigram(m) => m.encode(piece, out),
        }
    }
}

pub struct TextEngine {
    normalizer: Option<Normalizer>,
    pre: Option<TextPreTokenizer>,
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
        pre: Option<TextPreTokenizer>,
        model: Model,
        added: Vec<(String, u32)>,
    ) -> Self {
        TextEngine {
            normalizer,
            pre,
            model,
            added: AddedTokens::new(added),
            cache: ShardedCache::new(Pages::Small),
        }
    }

    /// Encode one stretch of text between added tokens; `at_text_start`: it begins the input.
    fn encode_gap(
        &self,
        gap: &str,
        at_text_start: bool,
        cache: &mut WordCache,
        out: &mut Vec<u32>,
    ) {
        if gap.is_empty() {
            return;
        }
        BUFFERS.with(|cell| {
            let mut guard = cell.borrow_mut();
            let (normalized, spare) = &mut *guard;
            let text: &str = match &self.normalizer {
                // An ASCII gap goes through a normalizer that keeps ASCII as it is, uncopied.
                Some(n) if !(n.keeps_ascii() && gap.is_ascii()) => {
                    n.run(gap, normalized, spare);
                    normalized
                }
                _ => gap,
            };
            let model = &self.model;
            let mut ahead = Ahead::new(cache, out, |piece: &[u8], out: &mut Vec<u32>| {
                debug_assert!(std::str::from_utf8(piece).is_ok());
                // SAFETY: every piece pushed below is a `&str`'s bytes, and `Ahead` hands back
                // those bytes (or the same bytes rebuilt from the piece's key).
                model.encode(unsafe { std::str::from_utf8_unchecked(piece) }, out)
            });
            match &self.pre {
                Some(pre) => {
                    pre.for_each_span_at(text, at_text_start, &mut |buffer, start, end| {
                        ahead.push(buffer, start, end)
                    })
                }
                None => ahead.push(text.as_bytes(), 0, text.len()),
            }
            ahead.finish();
            // One huge text should not pin its size in every worker's buffers for good.
            for buffer in [normalized, spare] {
                if buffer.capacity() > 1 << 22 {
                    *buffer = String::new();
                }
            }
        });
    }

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
        let mut gap = |gap: &str, at: usize| -> Result<(), Error> {
            let mut failed = Ok(());
            for_each_word_at(
                self.normalizer.as_ref(),
                self.pre.as_ref(),
                gap,
                at == 0,
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

impl Encoder for TextEngine {
    /// The matcher for this set of added-token texts (None when the set is empty).
    fn matcher(&self, texts: &[String]) -> Result<Option<Arc<AddedMatcher>>, Error> {
        self.added.matcher(texts)
    }

    /// Forget every cached word (results never depend on the cache).
    fn clear_cache(&self) {
        self.cache.clear();
    }

    fn warm_up(&self) {
        if let Model::WordPiece(model) = &self.model {
            model.warm_up();
        }
    }

    fn encode_offsets(
        &self,
        text: &str,
        matcher: Option<&AddedMatcher>,
    ) -> Result<TokenOffsets, Error> {
        with_added_tokens(matcher, text, &mut |gap, first, raw, out| {
            text_gap(
                self.normalizer.as_ref(),
                self.pre.as_ref(),
                &self.model,
                gap,
                first,
                raw,
                out,
            )
        })
    }

    /// Encode one text; `matcher` holds the added tokens that may match.
    fn encode(&self, text: &str, matcher: Option<&AddedMatcher>) -> Result<Vec<u32>, Error> {
        let mut out = Vec::with_capacity(text.len() / 4 + 4);
        let mut cache = self.cache.for_current_thread();
        match matcher {
            None => self.encode_gap(text, true, &mut cache, &mut out),
            Some(m) => {
                let out_cell = std::cell::RefCell::new(&mut out);
                m.split(
                    text,
                    &mut |gap, at| {
                        self.encode_gap(gap, at == 0, &mut cache, &mut out_cell.borrow_mut());
                        Ok(())
                    },
                    &mut |id| out_cell.borrow_mut().push(id),
                )?;
            }
        }
        Ok(out)
    }
}
