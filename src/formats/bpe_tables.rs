//! The vocabulary and merges of a BPE tokenizer.json, read straight from the JSON text of
//! `model.vocab` and `model.merges` (see [`crate::formats::json_spans`]) into one table that
//! every layer shares (WordPiece and WordLevel files read their vocabulary alone into it): the
//! engine is built from it and Python looks tokens up in it, so the hundreds of thousands of
//! entries are never Python objects unless the reference asks for them.
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

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::models::text_index::TextIndex;
use crate::text::base64::base64_digit;
#[cfg(test)]
use crate::text::base64::decode_base64;
use crate::text::byte_alphabet::token_string;

/// Ids index dense tables, so they are bounded (as in the Python reader).
pub const MAX_ID: u64 = (1 << 24) - 1;
const NONE: u32 = u32::MAX;

#[derive(Debug, Default)]
pub struct BpeTables {
    /// The vocabulary's tokens in document order (first position of a repeated token), one
    /// after the other; ends[k]: where the k-th ends.
    text: String,
    ends: Vec<u32>,
    /// ids[k]: the id of the k-th token.
    ids: Vec<u32>,
    /// token -> its position k (over `text`: no copy of the tokens).
    index: TextIndex,
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
        while let Some(BorrowedStr(token)) = map.next_key::<BorrowedStr<'de>>()? {
            let id = map.next_value::<u64>()?;
            if id > MAX_ID {
                return Err(de::Error::custom("id out of range"));
            }
            if let Err(k) = t.push(&token, id as u32) {
                t.ids[k as usize] = id as u32;
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
        let mut t = BpeTables::read_vocab(vocab_json)?;
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

    /// The vocabulary alone, with no merges: the JSON text of a `model.vocab` object of token ids
    /// (WordPiece and WordLevel files share their vocabulary this way too). None as for
    /// [`BpeTables::read`].
    pub fn read_vocab(vocab_json: &[u8]) -> Option<Self> {
        let mut t = BpeTables::default();
        // serde_json cannot tell a map's size: one entry per `:` is a close upper bound (a token
        // with a colon in it is rare), and saves rehashing the index as it grows.
        let entries = vocab_json.iter().filter(|&&b| b == b':').count();
        t.reserve(entries, vocab_json.len());
        let mut d = serde_json::Deserializer::from_slice(vocab_json);
        VocabSeed(&mut t).deserialize(&mut d).ok()?;
        d.end().ok()?;
        t.fill_by_id()?; // None for a repeated id
        Some(t)
    }

    /// The tables of a tiktoken `.tiktoken` file (`base64(token bytes) SPACE rank` lines) with
    /// `specials` (text, id) added after the ranks in id order: tokens spelled in the GPT-2 byte
    /// alphabet, id = rank, and the merges tiktoken's rank rule implies (every split of a token
    /// into two ranked parts, ordered by (token rank, left rank, right rank); see
    /// `tinyllm.tok.formats.tiktoken.derive_merges`). None for anything the Python reader would
    /// refuse or might read differently (it then reads the file and words the error).
    pub fn from_tiktoken(data: &[u8], specials: &[(String, u32)]) -> Option<Self> {
        // Python splits lines at \r too and fields at any ASCII whitespace: leave those to it.
        if data
            .iter()
            .any(|&b| matches!(b, b'\r' | b'\t' | 0x0b | 0x0c))
        {
            return None;
        }
        // Token bytes decoded into one buffer: (start, end, rank) per line.
        let mut bytes: Vec<u8> = Vec::with_capacity(data.len() / 2);
        let mut spans: Vec<(u32, u32, u32)> = Vec::with_capacity(data.len() / 12);
        for line in data.split(|&b| b == b'\n') {
            let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
            let (token, rank) = match (fields.next(), fields.next(), fields.next()) {
                (None, _, _) => continue, // a blank line
                (Some(token), Some(rank), None) => (token, rank),
                _ => return None,
            };
            if rank.is_empty() || !rank.iter().all(u8::is_ascii_digit) || rank.len() > 9 {
                return None;
            }
            let rank: u64 = std::str::from_utf8(rank).ok()?.parse().ok()?;
            let start = bytes.len();
            strict_base64_into(token, &mut bytes)?;
            if bytes.len() == start || rank > MAX_ID {
                return None;
            }
            spans.push((start as u32, bytes.len() as u32, rank as u32));
        }
        let token = |&(start, end, _): &(u32, u32, u32)| &bytes[start as usize..end as usize];
        let ranks = RankMap::new(spans.iter().map(|s| (token(s), s.2)));
        if ranks.len() != spans.len() || (0..=255u8).any(|b| ranks.get(&[b]).is_none()) {
            return None; // a repeated token, or a byte without a rank
        }
        let mut t = BpeTables::default();
        t.reserve(spans.len() + specials.len(), bytes.len() * 2);
        for s in &spans {
            t.push(&token_string(token(s)), s.2).ok()?;
        }
        let mut specials: Vec<&(String, u32)> = specials.iter().collect();
        specials.sort_by_key(|s| s.1);
        for (content, id) in specials {
            if u64::from(*id) > MAX_ID {
                return None;
            }
            t.push(content, *id).ok()?;
        }
        t.fill_by_id()?;
        // Every split of every token into two ranked parts, in parallel (a quarter of a million
        // tokens for o200k), each token's sorted by (left, right); files list tokens by rank, and
        // then that is the whole order without a global sort.
        let in_rank_order = spans.windows(2).all(|w| w[0].2 < w[1].2);
        let mut keyed: Vec<(u32, u32, u32)> = spans
            .par_iter()
            .flat_map_iter(|s| {
                let token = token(s);
                let mut splits: Vec<(u32, u32, u32)> = (1..token.len())
                    .filter_map(|k| Some((s.2, ranks.get(&token[..k])?, ranks.get(&token[k..])?)))
                    .collect();
                splits.sort_unstable();
                splits
            })
            .collect();
        if !in_rank_order {
            keyed.par_sort_unstable();
        }
        t.merges = keyed.into_iter().map(|(m, l, r)| (l, r, m)).collect();
        Some(t)
    }

    /// Room for `n` tokens of about `bytes` bytes in all.
    fn reserve(&mut self, n: usize, bytes: usize) {
        self.text.reserve(bytes);
        self.ends.reserve(n);
        self.ids.reserve(n);
        self.index = TextIndex::with_capacity(n);
    }

    /// Append a new token with `id`; when it is already there, its position is the error.
    fn push(&mut self, token: &str, id: u32) -> Result<(), u32> {
        let (text, ends) = (&self.text, &self.ends);
        (self.index).insert(token, ends.len() as u32, |k| token_at(text, ends, k))?;
        self.text.push_str(token);
        self.ends.push(self.text.len() as u32);
        self.ids.push(id);
        Ok(())
    }

    /// The k-th token (document order).
    #[inline]
    fn token_at(&self, k: u32) -> &str {
        token_at(&self.text, &self.ends, k)
    }

    /// Fill `by_id` from `ids`; None when an id repeats.
    fn fill_by_id(&mut self) -> Option<()> {
        let max = self.ids.iter().copied().max();
        self.by_id = vec![NONE; max.map_or(0, |m| m as usize + 1)];
        for (k, &id) in self.ids.iter().enumerate() {
            if self.by_id[id as usize] != NONE {
                return None;
            }
            self.by_id[id as usize] = k as u32;
        }
        Some(())
    }

    /// The id of `token`.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        (self.index.get(token, |k| self.token_at(k))).map(|k| self.ids[k as usize])
    }

    /// The token of id `i` (None for a hole or past the end).
    pub fn token(&self, i: u32) -> Option<&str> {
        match self.by_id.get(i as usize) {
            Some(&k) if k != NONE => Some(self.token_at(k)),
            _ => None,
        }
    }

    /// The largest id + 1.
    pub fn id_count(&self) -> usize {
        self.by_id.len()
    }

    /// (token, id) in document order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, u32)> {
        (0..self.ends.len() as u32)
            .map(|k| self.token_at(k))
            .zip(self.ids.iter().copied())
    }

    /// (left, right, merged) ids of every merge, in file order (a pair listed twice appears twice).
    pub fn merges(&self) -> &[(u32, u32, u32)] {
        &self.merges
    }
}

/// The k-th token of a buffer of tokens and their ends.
#[inline]
fn token_at<'t>(text: &'t str, ends: &[u32], k: u32) -> &'t str {
    let k = k as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] as usize };
    &text[start..ends[k] as usize]
}

/// Token bytes -> rank, with the short tokens (most lookups) packed into integer keys: no slice
/// hashing or comparison for them.
struct RankMap<'a> {
    short: FxHashMap<u64, u32>,
    long: FxHashMap<&'a [u8], u32>,
}

impl<'a> RankMap<'a> {
    fn new(entries: impl Iterator<Item = (&'a [u8], u32)>) -> Self {
        let mut map = RankMap {
            short: FxHashMap::default(),
            long: FxHashMap::default(),
        };
        for (token, rank) in entries {
            match Self::pack(token) {
                Some(key) => map.short.insert(key, rank),
                None => map.long.insert(token, rank),
            };
        }
        map
    }

    /// Up to 7 bytes and the length in one u64.
    #[inline]
    fn pack(token: &[u8]) -> Option<u64> {
        if token.len() > 7 {
            return None;
        }
        let mut buf = [0u8; 8];
        buf[..token.len()].copy_from_slice(token);
        buf[7] = token.len() as u8;
        Some(u64::from_le_bytes(buf))
    }

    #[inline]
    fn get(&self, token: &[u8]) -> Option<u32> {
        match Self::pack(token) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(token).copied(),
        }
    }

    fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }
}

/// Standard base64 as Python's `b64decode(validate=True)` takes it, and stricter: only the
/// alphabet, then at most two `=`, in whole groups of four; decoded onto `out` (None otherwise).
fn strict_base64_into(field: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let digits = field.iter().position(|&b| b == b'=').unwrap_or(field.len());
    let padding = &field[digits..];
    if field.len() % 4 != 0 || padding.len() > 2 || padding.iter().any(|&b| b != b'=') {
        return None;
    }
    let (mut acc, mut bits) = (0u32, 0u32);
    for &ch in &field[..digits] {
        let value = base64_digit(ch)?;
        acc = (acc << 6) | value as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(())
}

#[cfg(test)]
fn strict_base64(field: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    strict_base64_into(field, &mut out).map(|()| out)
}

/// (old) Standard base64, kept for the comparison test.
#[cfg(test)]
fn strict_base64_reference(field: &[u8]) -> Option<Vec<u8>> {
    let digits = field.iter().position(|&b| b == b'=').unwrap_or(field.len());
    let padding = &field[digits..];
    if field.len() % 4 != 0 || padding.len() > 2 || padding.iter().any(|&b| b != b'=') {
        return None;
    }
    if !field[..digits]
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
    {
        return None;
    }
    decode_base64(std::str::from_utf8(field).ok()?).ok()
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
    fn tiktoken_ranks_give_tokens_and_the_implied_merges() {
        let mut text = String::new();
        for b in 0..=255u8 {
            text.push_str(&format!("{} {b}\n", encode(&[b])));
        }
        text.push_str(&format!(
            "{} 256\n\n{} 257\n",
            encode(b"ab"),
            encode(b"abc")
        ));
        let t = BpeTables::from_tiktoken(text.as_bytes(), &[("<|end|>".into(), 300)]).unwrap();
        assert_eq!(t.token_id("Ġ"), Some(32));
        assert_eq!(
            (t.token(257), t.token(300), t.id_count()),
            (Some("abc"), Some("<|end|>"), 301)
        );
        assert_eq!(t.merges(), [(97, 98, 256), (256, 99, 257)]);
        // A repeated rank, a special on a rank, a bad line: left to the Python reader.
        for bad in [
            format!("{text}{} 5\n", encode(b"xy")),
            format!("{text}x\n"),
            format!("{text}QQ 5x\n"),
        ] {
            assert!(BpeTables::from_tiktoken(bad.as_bytes(), &[]).is_none());
        }
        assert!(BpeTables::from_tiktoken(text.as_bytes(), &[("<|end|>".into(), 5)]).is_none());
        assert!(BpeTables::from_tiktoken(text.replace('\n', "\r\n").as_bytes(), &[]).is_none());
    }

    fn encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (k, &b)| acc | (b as u32) << (16 - 8 * k));
            for k in 0..4 {
                out.push(if k <= chunk.len() {
                    ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char
                } else {
                    '='
                });
            }
        }
        out
    }

    #[test]
    fn strict_base64_decodes_as_the_crate_decoder() {
        for n in 0..40u8 {
            let field = encode(
                &(0..n)
                    .map(|k| k.wrapping_mul(37).wrapping_add(n))
                    .collect::<Vec<_>>(),
            );
            assert_eq!(
                strict_base64(field.as_bytes()),
                strict_base64_reference(field.as_bytes())
            );
        }
    }

    #[test]
    fn strict_base64_takes_only_whole_padded_groups() {
        assert_eq!(strict_base64(b"YWI=").unwrap(), b"ab");
        for bad in [&b"YWI"[..], b"YW==x", b"Y===", b"YW I", b"YWI-", b"=="] {
            assert!(strict_base64(bad).is_none());
        }
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
