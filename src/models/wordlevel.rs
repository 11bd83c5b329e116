//! WordLevel: each pre-token is one vocabulary id, or the unknown id. Mirrors
//! `tinyllm.tok.models.wordlevel`.

use rustc_hash::FxHashMap;

use crate::Error;

#[derive(Debug, Clone)]
pub struct WordLevelModel {
    vocab: FxHashMap<Box<str>, u32>,
    unk: u32,
}

impl WordLevelModel {
    /// `unk` must be an id of `vocab`.
    pub fn new(vocab: Vec<(String, u32)>, unk: u32) -> Result<Self, Error> {
        if !vocab.iter().any(|(_, id)| *id == unk) {
            return Err(Error::Invalid(format!(
                "unk_id: {unk} is not an id of the vocabulary"
            )));
        }
        Ok(WordLevelModel {
            vocab: vocab
                .into_iter()
                .map(|(t, i)| (t.into_boxed_str(), i))
                .collect(),
            unk,
        })
    }

    /// Append the id of `word` (nothing for an empty word).
    pub fn encode(&self, word: &str, out: &mut Vec<u32>) {
        if !word.is_empty() {
            out.push(self.vocab.get(word).copied().unwrap_or(self.unk));
        }
    }
}

impl WordLevelModel {
    /// [`encode`](Self::encode) with the token's byte span: the whole word.
    pub fn encode_spans(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        if !word.is_empty() {
            let id = self.vocab.get(word).copied().unwrap_or(self.unk);
            out.push((id, 0, word.len()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_words_and_the_unknown() {
        let m = WordLevelModel::new(vec![("[UNK]".into(), 0), ("hello".into(), 1)], 0).unwrap();
        let mut out = Vec::new();
        for w in ["hello", "there", ""] {
            m.encode(w, &mut out);
        }
        assert_eq!(out, [1, 0]);
        assert!(WordLevelModel::new(vec![("a".into(), 0)], 3).is_err());
    }
}
