//! Whole encoding pipelines, the fast paths behind the tokenizer classes: added tokens, then the
//! stages, then a model, with a word cache, over one text or a batch in parallel.
//!
//! - [`bpe::BpeEngine`]: byte-level BPE (added tokens, byte-level pre-tokenizer, BPE; no normalizer);
//! - [`wordpiece_unigram::TextEngine`]: WordPiece and Unigram (added tokens, normalizer,
//!   text pre-tokenizer, model);
//! - [`word_cache`]: the per-engine cache of piece -> ids that both use;
//! - [`offsets`]: each token's span in the raw text, for both.
//!
//! Both implement [`Encoder`], the calls they share. Engines sit above `stages` and `models`,
//! which never import them.

use std::sync::Arc;

use rayon::prelude::*;

use crate::engines::offsets::TokenOffsets;
use crate::stages::added_tokens::AddedMatcher;
use crate::Error;

pub mod bpe;
pub mod offsets;
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
