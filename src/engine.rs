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

/// Longer pieces are not cached: they rarely repeat (a CJK sentence is one GPT-2 piece), and
/// allocating their entries cost more than the hits saved (measured with examples/encode_file).
const CACHE_MAX_WORD: usize = 32;
/// Entries per shard before the shard is cleared (clearing is cheaper than LRU).
const CACHE_MAX_ENTRIES: usize = 1 << 17;
const CACHE_SHARDS: usize = 16;

/// Pieces of at most this many bytes are keyed inline as a u128 (bytes plus a length tag).
const INLINE_KEY: usize = 15;
/// Marks an inline entry whose ids live in the spill map (more than three ids).
const SPILLED: u32 = u32::MAX;

/// Word cache: short pieces with up to three ids are stored inline (no allocation, one u128
/// compare per probe); everything else in a map of boxed slices.
#[derive(Default)]
struct WordCache {
    inline: FxHashMap<u128, [u32; 4]>,
    spill: FxHashMap<Box<[u8]>, Box<[u32]>>,
}

#[inline]
fn inline_key(piece: &[u8]) -> Option<u128> {
    if piece.len() > INLINE_KEY {
        return None;
    }
    let mut buf = [0u8; 16];
    buf[..piece.len()].copy_from_slice(piece);
    buf[15] = piece.len() as u8;
    Some(u128::from_le_bytes(buf))
}

impl WordCache {
    fn len(&self) -> usize {
        self.inline.len() + self.spill.len()
    }

    fn clear(&mut self) {
        self.inline.clear();
        self.spill.clear();
    }

    /// Append the cached ids of `piece` to `out`; false on a miss.
    #[inline]
    fn extend(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        if let Some(k) = inline_key(piece) {
            match self.inline.get(&k) {
                Some(v) if v[3] != SPILLED => {
                    out.extend_from_slice(&v[..v[3] as usize]);
                    return true;
                }
                Some(_) => {}
                None => return false,
            }
        }
        match self.spill.get(piece) {
            Some(ids) => {
                out.extend_from_slice(ids);
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if let Some(k) = inline_key(piece) {
            if ids.len() <= 3 {
                let mut v = [0u32; 4];
                v[..ids.len()].copy_from_slice(ids);
                v[3] = ids.len() as u32;
                self.inline.insert(k, v);
                return;
            }
            self.inline.insert(k, [0, 0, 0, SPILLED]);
        }
        self.spill.insert(piece.into(), ids.into());
    }
}

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

    /// Forget every cached word (frees the memory; results never depend on the cache).
    pub fn clear_cache(&self) {
        for shard in &self.cache {
            match shard.lock() {
                Ok(mut guard) => guard.clear(),
                Err(poisoned) => poisoned.into_inner().clear(),
            }
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
            if cache.extend(piece, out) {
                return;
            }
            let start = out.len();
            self.model.encode_word(piece, out);
            if cache.len() >= CACHE_MAX_ENTRIES {
                cache.clear();
            }
            cache.insert(piece, &out[start..]);
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
