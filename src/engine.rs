//! The byte-level BPE encoding pipeline: added tokens, pre-tokenizer, model, with a word cache.
//!
//! This is the fast path behind `tinyllm.tok.BPETokenizer` for pipelines without a normalizer.
//! Added tokens are split out first with a leftmost-longest automaton (Hugging Face's rule); the
//! text between them is pre-tokenized; each piece is encoded by the BPE model, through a word
//! cache keyed by the exact piece bytes. The cache belongs to the engine and is split into shards
//! picked by thread, each locked once per text rather than once per piece, so parallel batches do
//! not contend and the memory goes when the engine goes.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::BpeModel;
use crate::pretokenize::PreTokenizer;
use crate::Error;

/// Cached words longer than this are not stored (they are rare and would bloat the cache).
const CACHE_MAX_WORD: usize = 256;
/// Entries per shard before the shard is cleared (clearing is cheaper than LRU).
const CACHE_MAX_ENTRIES: usize = 1 << 17;
const CACHE_SHARDS: usize = 16;

type WordCache = FxHashMap<Box<[u8]>, Box<[u32]>>;

fn shard_of_current_thread() -> usize {
    let mut h = rustc_hash::FxHasher::default();
    std::thread::current().id().hash(&mut h);
    (h.finish() as usize) % CACHE_SHARDS
}

/// Added tokens that may be matched in one call, compiled once and reused.
pub struct AddedMatcher {
    automaton: AhoCorasick,
    ids: Vec<u32>,
}

pub struct Engine {
    cache: Vec<Mutex<WordCache>>,
    model: BpeModel,
    pre: PreTokenizer,
    added: FxHashMap<String, u32>,
    matchers: Mutex<HashMap<Vec<String>, Arc<AddedMatcher>>>,
}

impl Engine {
    pub fn new(model: BpeModel, pre: PreTokenizer, added: Vec<(String, u32)>) -> Self {
        Engine {
            cache: (0..CACHE_SHARDS)
                .map(|_| Mutex::new(WordCache::default()))
                .collect(),
            model,
            pre,
            added: added.into_iter().collect(),
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
                    .added
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

    fn encode_text(&self, text: &str, out: &mut Vec<u32>) -> Result<(), Error> {
        if text.is_empty() {
            return Ok(());
        }
        // A poisoned shard only means another thread panicked mid-insert; the map is still valid.
        let mut cache = match self.cache[shard_of_current_thread()].lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        self.pre.for_each_piece(text, &mut |piece| {
            if piece.len() > CACHE_MAX_WORD {
                self.model.encode_word(piece, out);
                return;
            }
            if let Some(ids) = cache.get(piece) {
                out.extend_from_slice(ids);
                return;
            }
            let start = out.len();
            self.model.encode_word(piece, out);
            if cache.len() >= CACHE_MAX_ENTRIES {
                cache.clear();
            }
            cache.insert(piece.into(), out[start..].into());
        })
    }

    /// Encode one text; `matcher` holds the added tokens that may match (see [`Engine::matcher`]).
    pub fn encode(&self, text: &str, matcher: Option<&AddedMatcher>) -> Result<Vec<u32>, Error> {
        let mut out = Vec::with_capacity(text.len() / 3 + 4);
        let Some(m) = matcher else {
            self.encode_text(text, &mut out)?;
            return Ok(out);
        };
        let mut last = 0;
        for found in m.automaton.find_iter(text) {
            self.encode_text(&text[last..found.start()], &mut out)?;
            out.push(m.ids[found.pattern().as_usize()]);
            last = found.end();
        }
        self.encode_text(&text[last..], &mut out)?;
        Ok(out)
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
