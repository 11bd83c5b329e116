//! Text -> number over texts held elsewhere (a vocabulary's own buffer): each text is found by a
//! 64-bit hash and compared in place, so the index holds no copy of the texts. A vocabulary of a
//! quarter of a million tokens is otherwise two small allocations per token, which cost more to
//! make and to free than the rest of reading it.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

#[derive(Debug, Default, Clone)]
pub struct TextIndex {
    /// hash -> value of the first text with that hash.
    first: FxHashMap<u64, u32>,
    /// The later texts whose hash an earlier one has (all but never).
    clash: FxHashMap<Box<str>, u32>,
}

#[inline]
fn text_hash(text: &str) -> u64 {
    let mut h = FxHasher::default();
    text.hash(&mut h);
    h.finish()
}

impl TextIndex {
    pub fn with_capacity(n: usize) -> Self {
        TextIndex {
            first: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            clash: FxHashMap::default(),
        }
    }

    /// The value of `text`; `text_of(value)` is the text a value stands for.
    #[inline]
    pub fn get<'t>(&self, text: &str, text_of: impl Fn(u32) -> &'t str) -> Option<u32> {
        match self.first.get(&text_hash(text)) {
            None => None,
            Some(&v) if text_of(v) == text => Some(v),
            Some(_) => self.clash.get(text).copied(),
        }
    }

    /// Add `text` with `value`, unless it is there already: then its value is returned as the
    /// error and nothing changes.
    pub fn insert<'t>(
        &mut self,
        text: &str,
        value: u32,
        text_of: impl Fn(u32) -> &'t str,
    ) -> Result<(), u32> {
        let h = text_hash(text);
        match self.first.get(&h) {
            None => {
                self.first.insert(h, value);
            }
            Some(&v) if text_of(v) == text => return Err(v),
            Some(_) => match self.clash.get(text) {
                Some(&v) => return Err(v),
                None => {
                    self.clash.insert(text.into(), value);
                }
            },
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.first.len() + self.clash.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_text_and_refuses_a_repeat() {
        let texts: Vec<String> = (0..5000).map(|i| format!("t{i}")).collect();
        let mut index = TextIndex::default();
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(index.insert(t, i as u32, |v| &texts[v as usize]), Ok(()));
        }
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(index.get(t, |v| &texts[v as usize]), Some(i as u32));
            assert_eq!(index.insert(t, 0, |v| &texts[v as usize]), Err(i as u32));
        }
        assert_eq!(index.get("nope", |v| &texts[v as usize]), None);
        assert_eq!(index.len(), texts.len());
    }

    #[test]
    fn texts_with_one_hash_are_told_apart() {
        // Make "b" clash: its hash already stands for "a".
        let texts = ["a", "b"];
        let of = |v: u32| texts[v as usize];
        let mut index = TextIndex::default();
        index.first.insert(text_hash("b"), 0);
        assert_eq!(index.get("b", of), None);
        assert_eq!(index.insert("b", 1, of), Ok(()));
        assert_eq!(index.get("b", of), Some(1));
        assert_eq!(index.insert("b", 7, of), Err(1));
        assert_eq!(index.len(), 2);
    }
}
