//! Whole encoding pipelines, the fast paths behind the tokenizer classes: added tokens, then the
//! stages, then a model, with a word cache, over one text or a batch in parallel.
//!
//! - [`bpe::BpeEngine`]: byte-level BPE (added tokens, byte-level pre-tokenizer, BPE; no normalizer);
//! - [`wordpiece_unigram::TextEngine`]: WordPiece and Unigram (added tokens, normalizer,
//!   text pre-tokenizer, model);
//! - [`word_cache`]: the per-engine cache of piece -> ids that both use (its table of lines,
//!   [`cache_lines`], shared by the engine's threads, keyed by [`cache_key`]; the memory from
//!   [`crate::memory::zeroed_table`]), and [`look_ahead`], the loop over a text's pieces that
//!   prefetches their cache lines;
//! - [`offsets`]: each token's span in the raw text, for both;
//! - [`seeds`]: the vocabulary's words, encoded once, that a BPE engine's cache table starts from.
//!
//! Both implement [`Encoder`], the calls they share. Engines sit above `stages` and `models`,
//! which never import them.

use std::sync::Arc;

use rayon::prelude::*;

use crate::engines::offsets::TokenOffsets;
use crate::stages::added_tokens::AddedMatcher;
use crate::Error;

pub mod bpe;
pub mod cache_key;
pub mod cache_lines;
pub mod look_ahead;
pub mod offsets;
pub mod seeds;
pub mod word_cache;
pub mod wordpiece_unigram;

#[cfg(test)]
mod robustness_tests;

/// What every engine does: compile the added tokens a call allows, encode, forget its cache.
pub trait Encoder: Sync {
    /// The matcher for this set of added-token texts (None when the set is empty); an unknown
    /// text is an error.
    fn matcher(&self, texts: &[String]) -> Result<Option<Arc<AddedMatcher>>, Error>;

    /// Encode one text; `matcher` holds the added tokens that may match (see [`Encoder::matcher`]).
    fn encode(&self, text: &str, matcher: Option<&AddedMatcher>) -> Result<Vec<u32>, Error>;

    /// Forget every cached word (frees the memory; results never depend on the cache).
    fn clear_cache(&self);

    /// Build now what the first encodes would otherwise build on their way (a BPE engine's
    /// word-cache seeds, a WordPiece model's tries); ids never change.
    fn warm_up(&self) {}

    /// Encode one text with each token's raw span (see [`offsets`]): the ids of
    /// [`Encoder::encode`] with character and byte offsets and added-token flags. Errors with
    /// `Error::Unsupported` when this engine cannot tell the spans (the caller then runs the
    /// reference).
    fn encode_offsets(
        &self,
        text: &str,
        matcher: Option<&AddedMatcher>,
    ) -> Result<TokenOffsets, Error>;

    /// Encode many texts in parallel (rayon); the output order is the input order.
    fn encode_batch(
        &self,
        texts: &[&str],
        matcher: Option<&AddedMatcher>,
    ) -> Result<Vec<Vec<u32>>, Error> {
        texts.par_iter().map(|t| self.encode(t, matcher)).collect()
    }
}

/// For each record `k` (its ids at `ids[offsets[k]..offsets[k + 1]]`), whether the bytes of its
/// tokens joined differ from `texts[k]`'s UTF-8; id `i`'s bytes are
/// `blob[token_offsets[i]..token_offsets[i + 1]]`. In parallel over the records, no allocation
/// per record. The reference is `_suspects` in `tinyllm/eval/metrics.py` (numpy).
pub fn joined_bytes_differ(
    ids: &[u32],
    offsets: &[u64],
    blob: &[u8],
    token_offsets: &[u64],
    texts: &[&str],
) -> Result<Vec<bool>, String> {
    if offsets.len() != texts.len() + 1 {
        return Err(format!(
            "offsets has {} entries for {} texts; expected texts + 1",
            offsets.len(),
            texts.len()
        ));
    }
    if offsets.windows(2).any(|w| w[0] > w[1])
        || offsets.last().is_some_and(|&e| e as usize > ids.len())
    {
        return Err(format!(
            "offsets are not non-decreasing within the {} ids",
            ids.len()
        ));
    }
    if token_offsets.is_empty()
        || token_offsets.windows(2).any(|w| w[0] > w[1])
        || *token_offsets.last().unwrap() as usize > blob.len()
    {
        return Err("token_offsets are not non-decreasing within the blob".to_string());
    }
    let vocab = token_offsets.len() - 1;
    if let Some(&bad) = ids.iter().find(|&&i| i as usize >= vocab) {
        return Err(format!("id {bad} is outside the {vocab} ids of the table"));
    }
    Ok((0..texts.len())
        .into_par_iter()
        .map(|k| {
            let text = texts[k].as_bytes();
            let mut at = 0usize;
            for &id in &ids[offsets[k] as usize..offsets[k + 1] as usize] {
                let i = id as usize;
                let bytes = &blob[token_offsets[i] as usize..token_offsets[i + 1] as usize];
                match text.get(at..at + bytes.len()) {
                    Some(part) if part == bytes => at += bytes.len(),
                    _ => return true,
                }
            }
            at != text.len()
        })
        .collect())
}

#[cfg(test)]
mod joined_bytes_tests {
    use super::joined_bytes_differ;

    #[test]
    fn joined_bytes_compare_each_record() {
        // ids: 0 "ab", 1 "c", 2 "" ; records: "abc" ok, "ca" wrong, "" ok, "abab" short.
        let blob = b"abc";
        let table = [0u64, 2, 3, 3];
        let ids = [0u32, 1, 2, 1, 0, 0];
        let offsets = [0u64, 3, 5, 5, 6];
        let got =
            joined_bytes_differ(&ids, &offsets, blob, &table, &["abc", "ca", "", "abab"]).unwrap();
        assert_eq!(got, vec![false, true, false, true]);
        assert!(joined_bytes_differ(&[3], &[0, 1], blob, &table, &["a"]).is_err());
        assert!(joined_bytes_differ(&ids, &[0, 9], blob, &table, &["a"]).is_err());
    }
}
