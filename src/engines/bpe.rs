//! The byte-level BPE encoding pipeline ([`BpeEngine`]): added tokens, pre-tokenizer, model,
//! with a word cache.
//!
//! This is the fast path behind `tinyllm.tok.BPETokenizer` for byte-level pipelines.
//! Added tokens are split out first with a leftmost-longest automaton (Hugging Face's rule,
//! [`crate::stages::added_tokens`]); the text between them is normalized when there is a
//! normalizer ([`crate::stages::normalizers`]), then pre-tokenized
//! ([`crate::stages::pre_tokenizers`]); each piece is encoded by the BPE model
//! ([`crate::models::bpe`]), through a word cache keyed by the exact piece bytes
//! ([`crate::engines::word_cache`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::engines::look_ahead::Ahead;
use crate::engines::offsets::{byte_level_gap, with_added_tokens, ByteTokens, TokenOffsets};
use crate::engines::seeds::{Seeds, SEED_AFTER};
use crate::engines::word_cache::ShardedCache;
use crate::engines::Encoder;
use crate::memory::huge_pages::Pages;
use crate::models::bpe::BpeModel;
use crate::models::random::SplitMix64;
use crate::stages::added_tokens::{split_added, AddedMatcher, AddedTokens};
use crate::stages::normalizers::Normalizer;
use crate::stages::pre_tokenizers::ByteLevelPreTokenizer;
use crate::Error;

pub struct BpeEngine {
    cache: ShardedCache,
    /// Pieces merged so far (counted per text), up to [`SEED_AFTER`]: then the seeds are built.
    merged: AtomicUsize,
    model: BpeModel,
    pre: ByteLevelPreTokenizer,
    added: AddedTokens,
    normalizer: Option<Normalizer>,
    /// Token lengths for offsets, given once by [`BpeEngine::set_token_texts`].
    tokens: OnceLock<ByteTokens>,
}

thread_local! {
    static BUFFERS: std::cell::RefCell<(String, String)> = const { std::cell::RefCell::new((String::new(), String::new())) };
}

impl BpeEngine {
    pub fn new(model: BpeModel, pre: ByteLevelPreTokenizer, added: Vec<(String, u32)>) -> Self {
        BpeEngine {
            cache: ShardedCache::new(Pages::Huge),
            merged: AtomicUsize::new(0),
            model,
            pre,
            added: AddedTokens::new(added),
            normalizer: None,
            tokens: OnceLock::new(),
        }
    }

    /// The same engine, normalizing each stretch of text between added tokens first.
    pub fn with_normalizer(mut self, normalizer: Option<Normalizer>) -> Self {
        self.normalizer = normalizer;
        self
    }

    /// The merge model.
    pub fn model(&self) -> &BpeModel {
        &self.model
    }

    /// Call `f` with `gap` as the normalizer leaves it.
    fn normalized<T>(&self, gap: &str, f: impl FnOnce(&str) -> T) -> T {
        let Some(normalizer) = &self.normalizer else {
            return f(gap);
        };
        // An ASCII gap goes through a normalizer that keeps ASCII as it is, uncopied.
        if normalizer.keeps_ascii() && gap.is_ascii() {
            return f(gap);
        }
        BUFFERS.with(|cell| {
            // Taken out of the cell, so a nested call (none today) could not find it borrowed.
            let (mut out, mut spare) = cell.take();
            normalizer.run(gap, &mut out, &mut spare);
            let result = f(&out);
            // One huge text should not pin its size in every worker's buffers for good.
            if out.capacity() <= 1 << 22 && spare.capacity() <= 1 << 22 {
                cell.replace((out, spare));
            }
            result
        })
    }

    fn encode_text(&self, text: &str, out: &mut Vec<u32>) -> Result<(), Error> {
        if text.is_empty() {
            return Ok(());
        }
        let mut cache = self.cache.for_current_thread();
        let mut merged = 0;
        let result = self.normalized(text, |text| {
            let model = &self.model;
            let mut ahead = Ahead::new(&mut cache, out, |piece, out| {
                merged += 1;
                model.encode_word(piece, out)
            });
            let result = self.pre.for_each_span(text, &mut ahead);
            ahead.finish();
            result
        });
        drop(cache);
        if merged > 0 && !self.cache.has_seeds() {
            let before = self.merged.fetch_add(merged, Ordering::Relaxed);
            // The one call that crosses the mark builds them; the others go on meanwhile.
            if before < SEED_AFTER && before + merged >= SEED_AFTER {
                self.seed_cache();
            }
        }
        result
    }

    /// How many seeds the word cache has (0 until they are built).
    pub fn seed_count(&self) -> usize {
        self.cache.seed_count()
    }

    /// Build the seeds now (see [`crate::engines::seeds`]) instead of after [`SEED_AFTER`]
    /// merged pieces; ids are the same either way. Returns how many there are.
    pub fn seed_cache(&self) -> usize {
        if !self.cache.has_seeds() {
            let model = &self.model;
            let seeds = Seeds::build(|found| model.spelled_tokens(Seeds::wanted, found));
            self.cache.set_seeds(seeds);
        }
        self.cache.seed_count()
    }

    /// BPE-dropout encoding of one text: pre-token k (counting across the whole text) draws from
    /// `SplitMix64::new(SplitMix64::stream_seed(key, k))`. Bypasses the word cache.
    pub fn encode_dropout(
        &self,
        text: &str,
        matcher: Option<&AddedMatcher>,
        p: f64,
        key: u64,
    ) -> Result<Vec<u32>, Error> {
        let out = std::cell::RefCell::new(Vec::with_capacity(text.len() / 2 + 4));
        let mut k: u64 = 0;
        let mut gap = |gap: &str, _: usize| -> Result<(), Error> {
            if gap.is_empty() {
                return Ok(());
            }
            self.normalized(gap, |gap| {
                self.pre.for_each_piece(gap, &mut |piece| {
                    let mut rng = SplitMix64::for_stream(key, k);
                    k += 1;
                    self.model
                        .encode_word_dropout(piece, p, &mut rng, &mut out.borrow_mut());
                })
            })
        };
        split_added(matcher, text, &mut gap, &mut |id| out.borrow_mut().push(id))?;
        Ok(out.into_inner())
    }
}

impl BpeEngine {
    /// Give the model's token strings by id (byte alphabet; None for ids without one) and its
    /// unknown id, which [`Encoder::encode_offsets`] needs. Later calls are ignored.
    pub fn set_token_texts(&self, texts: &[Option<String>], unk: Option<u32>) {
        if self.tokens.get().is_none() {
            let _ = self.tokens.set(ByteTokens::new(texts, unk));
        }
    }

    pub fn has_token_texts(&self) -> bool {
        self.tokens.get().is_some()
    }
}

impl Encoder for BpeEngine {
    fn encode_offsets(
        &self,
        text: &str,
        matcher: Option<&AddedMatcher>,
    ) -> Result<TokenOffsets, Error> {
        let Some(tokens) = self.tokens.get() else {
            return Err(Error::Unsupported(
                "offsets: the engine was not given its token strings (set_token_texts)".into(),
            ));
        };
        let mut cache = self.cache.for_current_thread();
        let mut encode = |piece: &[u8], out: &mut Vec<u32>| {
            cache.encode(piece, out, |out| self.model.encode_word(piece, out))
        };
        with_added_tokens(matcher, text, &mut |gap, first, raw, out| {
            byte_level_gap(
                self.normalizer.as_ref(),
                &self.pre,
                tokens,
                &mut encode,
                gap,
                first,
                raw,
                out,
            )
        })
    }

    /// Forget every cached word (frees the memory; results never depend on the cache).
    fn clear_cache(&self) {
        self.cache.clear();
    }

    fn warm_up(&self) {
        self.seed_cache();
    }

    /// The matcher for this set of added-token texts (None when the set is empty).
    fn matcher(&self, texts: &[String]) -> Result<Option<Arc<AddedMatcher>>, Error> {
        self.added.matcher(texts)
    }

    /// Encode one text; `matcher` holds the added tokens that may match (see [`Encoder::matcher`]).
    fn encode(&self, text: &str, matcher: Option<&AddedMatcher>) -> Result<Vec<u32>, Error> {
        let mut out = Vec::with_capacity(text.len() / 3 + 4);
        let Some(m) = matcher else {
            self.encode_text(text, &mut out)?;
            return Ok(out);
        };
        let out = std::cell::RefCell::new(out);
        m.split(
            text,
            &mut |gap, _| self.encode_text(gap, &mut out.borrow_mut()),
            &mut |id| out.borrow_mut().push(id),
        )?;
        Ok(out.into_inner())
    }
}
