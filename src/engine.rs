//! The byte-level BPE encoding pipeline: added tokens, pre-tokenizer, model, with a word cache.
//!
//! This is the fast path behind `tinyllm.tok.BPETokenizer` for pipelines without a normalizer.
//! Added tokens are split out first with a leftmost-longest automaton (Hugging Face's rule); the
//! text between them is pre-tokenized; each piece is encoded by the BPE model, through a word
//! cache keyed by the exact piece bytes (`word_cache`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::BpeModel;
use crate::pretokenize::PreTokenizer;
use crate::unigram::SplitMix64;
use crate::word_cache::ShardedCache;
use crate::Error;

/// Added tokens that may be matched in one call, compiled once and reused.
pub struct AddedMatcher {
    automaton: AhoCorasick,
    ids: Vec<u32>,
}

impl AddedMatcher {
    /// Split `text` around the leftmost-longest added tokens (Hugging Face's rule): `gap` gets
    /// each stretch of text between them with its byte offset, `token` each matched id.
    pub fn split(
        &self,
        text: &str,
        gap: &mut dyn FnMut(&str, usize) -> Result<(), Error>,
        token: &mut dyn FnMut(u32),
    ) -> Result<(), Error> {
        let mut last = 0;
        for found in self.automaton.find_iter(text) {
            gap(&text[last..found.start()], last)?;
            token(self.ids[found.pattern().as_usize()]);
            last = found.end();
        }
        gap(&text[last..], last)
    }
}

/// [`AddedMatcher::split`] when there is a matcher, else the whole text is one gap at offset 0.
pub fn split_added(
    matcher: Option<&AddedMatcher>,
    text: &str,
    gap: &mut dyn FnMut(&str, usize) -> Result<(), Error>,
    token: &mut dyn FnMut(u32),
) -> Result<(), Error> {
    match matcher {
        Some(m) => m.split(text, gap, token),
        None => gap(text, 0),
    }
}

/// The added tokens of a tokenizer and a cache of matchers, one per set of matchable texts
/// (the set depends on which specials a call allows).
#[derive(Default)]
pub struct AddedTokens {
    ids: FxHashMap<String, u32>,
    matchers: Mutex<HashMap<Vec<String>, Arc<AddedMatcher>>>,
}

impl AddedTokens {
    pub fn new(added: Vec<(String, u32)>) -> Self {
        AddedTokens {
            // An empty text would match everywhere (and inside characters); it can never be meant.
            ids: added
                .into_iter()
                .filter(|(text, _)| !text.is_empty())
                .collect(),
            matchers: Mutex::new(HashMap::new()),
        }
    }

    /// The matcher for this set of added-token texts (None when the set is empty).
    pub fn matcher(&self, texts: &[String]) -> Result<Option<Arc<AddedMatcher>>, Error> {
        if texts.is_empty() {
            return Ok(None);
        }
        let mut key = texts.to_vec();
        key.sort();
        key.dedup();
        let mut cache = self
            .matchers
            .lock()
            .map_err(|_| Error::Invalid("matcher cache poisoned".into()))?;
        if let Some(m) = cache.get(&key) {
            return Ok(Some(m.clone()));
        }
        let mut ids = Vec::with_capacity(key.len());
        for t in &key {
            ids.push(
                *self
                    .ids
                    .get(t)
                    .ok_or_else(|| Error::Invalid(format!("{t:?} is not an added token")))?,
            );
        }
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&key)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let m = Arc::new(AddedMatcher { automaton, ids });
        cache.insert(key, m.clone());
        Ok(Some(m))
    }
}

pub struct Engine {
    cache: ShardedCache,
    model: BpeModel,
    pre: PreTokenizer,
    added: AddedTokens,
}

impl Engine {
    pub fn new(model: BpeModel, pre: PreTokenizer, added: Vec<(String, u32)>) -> Self {
        Engine {
            cache: ShardedCache::new(),
            model,
            pre,
            added: AddedTokens::new(added),
        }
    }

    /// Forget every cached word (frees the memory; results never depend on the cache).
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    /// The matcher for this set of added-token texts (None when the set is empty).
    pub fn matcher(&self, texts: &[String]) -> Result<Option<Arc<AddedMatcher>>, Error> {
        self.added.matcher(texts)
    }

    fn encode_text(&self, text: &str, out: &mut Vec<u32>) -> Result<(), Error> {
        if text.is_empty() {
            return Ok(());
        }
        let mut cache = self.cache.for_current_thread();
        self.pre.for_each_piece(text, &mut |piece| {
            cache.encode(piece, out, |out| self.model.encode_word(piece, out))
        })
    }

    /// Encode one text; `matcher` holds the added tokens that may match (see [`Engine::matcher`]).
    pub fn encode(&self, text: &str, matcher: Option<&AddedMatcher>) -> Result<Vec<u32>, Error> {
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
            self.pre.for_each_piece(gap, &mut |piece| {
                let mut rng = SplitMix64::for_stream(key, k);
                k += 1;
                self.model
                    .encode_word_dropout(piece, p, &mut rng, &mut out.borrow_mut());
            })
        };
        split_added(matcher, text, &mut gap, &mut |id| out.borrow_mut().push(id))?;
        Ok(out.into_inner())
    }

    /// Encode many texts in parallel (rayon); the output order is the input order.
    pub fn encode_batch(
        &self,
        texts: &[&str],
        matcher: Option<&AddedMatcher>,
    ) -> Result<Vec<Vec<u32>>, Error> {
        texts.par_iter().map(|t| self.encode(t, matcher)).collect()
    }
}
