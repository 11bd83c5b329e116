//! The vocabulary and merges of a BPE tokenizer.json, read straight from the JSON text of
//! `model.vocab` and `model.merges` (see [`crate::formats::json_spans`]) into one table that
//! every layer shares: the engine is built from it and Python looks tokens up in it, so the
//! hundreds of thousands of entries are never Python objects unless the reference asks for them.
//!
//! Reading is all or nothing: [`BpeTables::read`] returns None for anything the strict Python
//! reader would refuse (a non-integer or repeated id, a merge that is not two non-empty parts, a
//! part or merged token missing from the vocabulary, ...) and for what Python's `json` reads
//! differently from serde_json (a lone surrogate escape). The caller then reads the file in
//! Python, whose errors name the JSON path; this module never words an error of its own.
//!
//! Semantics kept from Python's dict: a token listed twice keeps its first position and its
//! last id.

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Ids index dense tables, so they are bounded (as in the Python reader).
pub const MAX_ID: u64 = (1 << 24) - 1;
const NONE: u32 = u32::MAX;

#[derive(Debug, Default)]
pub struct BpeTables {
    /// Vocabulary entries in document order (first position of a repeated token).
    tokens: Vec<Box<str>>,
    /// ids[k]: the id of tokens[k].
    ids: Vec<u32>,
    /// token -> position in `tokens`.
    index: FxHashMap<Box<str>, u32>,
    /// by_id[i]: position of id i in `tokens`, NONE for a hole.
    by_id: Vec<u32>,
    /// (left, right, merged) ids of every merge, in file order.
    merges: Vec<(u32, u32, u32)>,
}

struct VocabSeed<'t>(&'t mut BpeTables);

impl<'de> DeserializeSeed<'de> for VocabSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for VocabSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of token ids")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let t = self.0;
        if let Some(n) = map.size_hint() {
            t.tokens.reserve(n);
        }
        while let Some(BorrowedStr(token)) = map.next_key::<BorrowedStr<'de>>()? {
            let id = map.next_value::<u64>()?;
            if id > MAX_ID {
                return Err(de::Error::custom("id out of range"));
            }
            match t.index.get(&*token) {
                Some(&k) => t.ids[k as usize] = id as u32,
                None => {
                    let token: Box<str> = token.into();
                    t.index.insert(token.clone(), t.tokens.len() as u32);
                    t.tokens.push(token);
                    t.ids.push(id as u32);
                }
            }
        }
        Ok(())
    }
}

/// One merge: `"left right"` or `["left", "right"]` (borrowed from the text when it has no escapes).
struct Merge<'de>(Cow<'de, str>, Cow<'de, str>);

struct MergeVisitor;

impl<'de> Visitor<'de> for MergeVisitor {
    type Value = Merge<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a merge")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Merge<'de>, E> {
        let (l, r) = two_parts(s).ok_or_else(|| E::custom("not two parts"))?;
        Ok(Merge(Cow::Borrowed(l), Cow::Borrowed(r)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Merge<'de>, E> {
        let (l, r) = two_parts(s).ok_or_else(|| E::custom("not two parts"))?;
        Ok(Merge(Cow::Owned(l.to_owned()), Cow::Owned(r.to_owned())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Merge<'de>, A::Error> {
        let left: Cow<'de, str> = seq
            .next_element::<BorrowedStr>()?
            .ok_or_else(|| de::Error::custom("short"))?
            .0;
        let right: Cow<'de, str> = seq
            .next_element::<BorrowedStr>()?
            .ok_or_else(|| de::Error::custom("short"))?
            .0;
        if seq.next_element::<de::IgnoredAny>()?.is_some() || left.is_empty() || right.is_empty() {
            return Err(de::Error::custom("not two parts"));
        }
        Ok(Merge(left, right))
    }
}

impl<'de> de::Deserialize<'de> for Merge<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Merge<'de>, D::Error> {
        d.deserialize_any(MergeVisitor)
    }
}

/// `"left right"` split at its one space (Python's `split(" ")` giving two non-empty parts).
fn two_parts(s: &str) -> Option<(&str, &str)> {
    let (l, r) = s.split_once(' ')?;
    (!l.is_empty() && !r.is_empty() && !r.contains(' ')).then_some((l, r))
}

/// A string, borrowed from the text when it has no escapes. (`Cow<str>`'s own `Deserialize`
/// always copies.)
struct BorrowedStr<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for BorrowedStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BorrowedStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

struct MergesSeed<'t> {
    tables: &'t mut BpeTables,
    /// Bytes of `continuing_subword_prefix` that a merge drops from its right part.
    cut: usize,
}

impl<'de> DeserializeSeed<'de> for MergesSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MergesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of merges")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let t = self.tables;
        if let Some(n) = seq.size_hint() {
            t.merges.reserve(n);
        }
        let mut merged = String::new();
        while let Some(Merge(left, right)) = seq.next_element::<Merge>()? {
            // Hugging Face's merged token: left + right without its first `cut` bytes.
            let rest = right
                .get(self.cut..)
                .ok_or_else(|| de::Error::custom("prefix"))?;
            merged.clear();
            merged.push_str(&left);
            merged.push_str(rest);
            let id = |s: &str| {
                t.token_id(s)
                    .ok_or_else(|| de::Error::custom("not in vocab"))
            };
            let m = (id(&left)?, id(&right)?, id(&merged)?);
            t.merges.push(m);
        }
        Ok(())
    }
}

impl BpeTables {
    /// The tables of the JSON texts of `model.vocab` (an object of token ids) and `model.merges`;
    /// `prefix` is the model's `continuing_subword_prefix`. None when the strict reader would
    /// refuse something (see the module docs).
    pub fn read(vocab_json: &[u8], merges_json: &[u8], prefix: Option<&str>) -> Option<Self> {
        let mut t = BpeTables::default();
        let mut d = serde_json::Deserializer::from_slice(vocab_json);
        VocabSeed(&mut t).deserialize(&mut d).ok()?;
        d.end().ok()?;
        let max = t.ids.iter().copied().max();
        t.by_id = vec![NONE; max.map_or(0, |m| m as usize + 1)];
        for (k, &id) in t.ids.iter().enumerate() {
            if t.by_id[id as usize] != NONE {
                return None; // a repeated id
            }
            t.by_id[id as usize] = k as u32;
        }
        let cut = prefix.map_or(0, str::len);
        let mut d = serde_json::Deserializer::from_slice(merges_json);
        MergesSeed {
            tables: &mut t,
            cut,
        }
        .deserialize(&mut d)
        .ok()?;
        d.end().ok()?;
        Some(t)
    }

    /// The id of `token`.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.index.get(token).map(|&k| self.ids[k as usize])
    }

    /// The token of id `i` (None for a hole or past the end).
    pub fn token(&self, i: u32) -> Option<&str> {
        match self.by_id.get(i as usize) {
            Some(&k) if k != NONE => Some(&self.tokens[k as usize]),
            _ => None,
        }
    }

    /// The largest id + 1.
    pub fn id_count(&self) -> usize {
        self.by_id.len()
    }

    /// (token, id) in document order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, u32)> {
        self.tokens
            .iter()
            .map(|t| &**t)
            .zip(self.ids.iter().copied())
    }

    /// (left, right, merged) ids of every merge, in file order (a pair listed twice appears twice).
    pub fn merges(&self) -> &[(u32, u32, u32)] {
        &self.merges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vocab_and_merges_like_the_python_reader() {
        let t = BpeTables::read(
            br#"{"a": 0, "b": 1, "ab": 5, "a": 2}"#,
            br#"["a b", ["a", "b"]]"#,
            None,
        )
        .unwrap();
        assert_eq!(
            t.entries().collect::<Vec<_>>(),
            [("a", 2), ("b", 1), ("ab", 5)]
        );
        assert_eq!(t.id_count(), 6);
        assert_eq!(
            (t.token(2), t.token(0), t.token(9)),
            (Some("a"), None, None)
        );
        assert_eq!(t.merges(), [(2, 1, 5), (2, 1, 5)]);
    }

    #[test]
    fn a_prefix_is_dropped_from_the_right_part() {
        let t = BpeTables::read(
            br###"{"a": 0, "##b": 1, "ab": 2}"###,
            br###"["a ##b"]"###,
            Some("##"),
        )
        .unwrap();
        assert_eq!(t.merges(), [(0, 1, 2)]);
    }

    #[test]
    fn refuses_what_the_strict_reader_refuses() {
        let vocab = br#"{"a": 0, "b": 1, "ab": 2}"#;
        for (v, m) in [
            (&br#"{"a": 0, "b": 0}"#[..], &b"[]"[..]),
            (br#"{"a": -1}"#, b"[]"),
            (br#"{"a": 1.0}"#, b"[]"),
            (br#"{"a": 16777216}"#, b"[]"),
            (br#"{"\ud800": 1}"#, b"[]"),
            (br#"["a"]"#, b"[]"),
            (vocab, br#"["a  b"]"#),
            (vocab, br#"["a"]"#),
            (vocab, br#"[["a", "b", "c"]]"#),
            (vocab, br#"[["a", ""]]"#),
            (vocab, br#"["a c"]"#),
            (vocab, br#"["b a"]"#),
            (vocab, br#"{"a": "b"}"#),
            (vocab, br#"["a b"] x"#),
        ] {
            assert!(
                BpeTables::read(v, m, None).is_none(),
                "{:?} {:?}",
                String::from_utf8_lossy(v),
                String::from_utf8_lossy(m)
            );
        }
        assert!(BpeTables::read(vocab, br#"["a b"]"#, Some("abc")).is_none());
    }
}
