//! Added tokens: split a text around the added tokens a call allows, before any other stage.
//!
//! Matching is leftmost-longest on the raw text (Hugging Face's rule for added tokens with
//! `normalized: false`; the engines leave `normalized: true` tokens to the Python reference): at the
//! leftmost position where some allowed token matches, the longest one wins, and the scan resumes
//! after it. The text between matches (the gaps) goes on to the normalizer and pre-tokenizer; each
//! match becomes its id. Which tokens a call allows is decided on the Python side
//! (`tinyllm.tok.stages.special_policy`; the tokens themselves are `tinyllm.tok.stages.added_tokens`).
//!
//! Example with added tokens `<s>` = 1 and `<s>x` = 2: `a<s>xb<s>` -> gap `a`, 2, gap `b`, 1, and
//! an empty gap at the end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rustc_hash::FxHashMap;

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
