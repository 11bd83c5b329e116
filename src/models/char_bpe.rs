//! Character-level BPE of one pre-token (Llama-2 style files: Metaspace or no pre-tokenizer), with
//! Hugging Face's options: `byte_fallback`, `fuse_unk`, `unk`, `continuing_subword_prefix`,
//! `end_of_word_suffix`, `ignore_merges`. Mirrors `tinyllm.tok.models.bpe.BPEModel` on words
//! that are not byte-level.
//!
//! The word starts as one symbol per character, looked up as HF's `merge_word` does: the prefix
//! goes before every character but the first, the suffix after the last; a character (so
//! decorated) missing from the vocabulary becomes its UTF-8 bytes as `<0xNN>` tokens when
//! `byte_fallback` is on and all of them exist, else the unknown token (or nothing). A pending
//! unknown is emitted at the next known character or at the end, so byte tokens found in between
//! come first, and with `fuse_unk` consecutive unknowns are one. Then the lowest-ranked adjacent
//! pair merges, leftmost on ties, through a (rank, position) min-heap over a linked list, so long
//! words (a whole line without a pre-tokenizer) stay O(n log n).
//!
//! Example: vocab `<unk>` `a` `<0x78>`, byte fallback, no fuse: `aéxéa` -> `a` `<0x78>` `<unk>`
//! `<unk>` `a` (the unknown é waits for the next known character; x's byte token does not count).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::Error;

const NONE: u32 = u32::MAX;

#[inline]
fn key(left: u32, right: u32) -> u64 {
    ((left as u64) << 32) | right as u64
}

/// The options of a character-level BPE model besides its tables.
#[derive(Debug, Clone, Default)]
pub struct CharBpeOptions {
    pub unk: Option<u32>,
    pub byte_fallback: bool,
    pub fuse_unk: bool,
    pub prefix: String,
    pub suffix: String,
    pub ignore_merges: bool,
}

#[derive(Debug, Clone)]
pub struct CharBpeModel {
    vocab: FxHashMap<Box<str>, u32>,
    /// (left, right) -> (rank, merged).
    merges: FxHashMap<u64, (u32, u32)>,
    /// byte_ids[b]: the id of `<0xNN>`, or NONE.
    byte_ids: Box<[u32; 256]>,
    options: CharBpeOptions,
}

impl CharBpeModel {
    /// `merges` are (left, right, rank, merged) with the ranks already resolved (a pair listed
    /// twice keeps its last rank); `options.unk` must be an id of `vocab`.
    pub fn new(
        vocab: Vec<(String, u32)>,
        merges: &[(u32, u32, u32, u32)],
        options: CharBpeOptions,
    ) -> Result<Self, Error> {
        let mut map: FxHashMap<Box<str>, u32> = FxHashMap::default();
        map.reserve(vocab.len());
        for (token, id) in vocab {
            if map.insert(token.clone().into_boxed_str(), id).is_some() {
                return Err(Error::Invalid(format!(
                    "vocab: token {token:?} is listed twice"
                )));
            }
        }
        if let Some(unk) = options.unk {
            if !map.values().any(|&id| id == unk) {
                return Err(Error::Invalid(format!(
                    "unk_id: {unk} is not an id of the vocabulary"
                )));
            }
        }
        let mut byte_ids = Box::new([NONE; 256]);
        for (b, slot) in byte_ids.iter_mut().enumerate() {
            if let Some(&id) = map.get(format!("<0x{b:02X}>").as_str()) {
                *slot = id;
            }
        }
        let mut table = FxHashMap::default();
        table.reserve(merges.len());
        for &(l, r, rank, merged) in merges {
            table.insert(key(l, r), (rank, merged));
        }
        Ok(CharBpeModel {
            vocab: map,
            merges: table,
            byte_ids,
            options,
        })
    }

    #[inline]
    fn rank(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        self.merges.get(&key(left, right)).copied()
    }

    /// The word's starting symbols (see the module docs), appended to `out`.
    fn symbols(&self, word: &str, out: &mut Vec<u32>) {
        let o = &self.options;
        let mut pending: Option<u32> = None;
        let mut decorated = String::new();
        let mut chars = word.char_indices().peekable();
        let mut first = true;
        while let Some((at, c)) = chars.next() {
            let last = chars.peek().is_none();
            let plain = (first || o.prefix.is_empty()) && (!last || o.suffix.is_empty());
            let s: &str = if plain {
                &word[at..at + c.len_utf8()]
            } else {
                decorated.clear();
                if !first {
                    decorated.push_str(&o.prefix);
                }
                decorated.push(c);
                if last {
                    decorated.push_str(&o.suffix);
                }
                &decorated
            };
            first = false;
            if let Some(&id) = self.vocab.get(s) {
                if let Some(unk) = pending.take() {
                    out.push(unk);
                }
                out.push(id);
                continue;
            }
            if o.byte_fallback && s.bytes().all(|b| self.byte_ids[b as usize] != NONE) {
                // A pending unknown stays pending: HF emits it after these byte tokens.
                out.extend(s.bytes().map(|b| self.byte_ids[b as usize]));
                continue;
            }
            if let Some(unk) = o.unk {
                match pending {
                    Some(_) if o.fuse_unk => {}
                    Some(previous) => {
                        out.push(previous);
                        pending = Some(unk);
                    }
                    None => pending = Some(unk),
                }
            }
        }
        if let Some(unk) = pending {
            out.push(unk);
        }
    }

    /// Append the ids of `word` to `out`.
    pub fn encode(&self, word: &str, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if self.options.ignore_merges {
            if let Some(&id) = self.vocab.get(word) {
                out.push(id);
                return;
            }
        }
        let start = out.len();
        self.symbols(word, out);
        if out.len() - start > 1 {
            let symbols: Vec<u32> = out.drain(start..).collect();
            self.merge(&symbols, out);
        }
    }

    /// Apply the merges to `symbols`: lowest rank first, leftmost on ties. A heap entry
    /// (rank, left position) is checked when popped: its left symbol must still be alive and the
    /// pair it starts must still have that rank (a rank names one pair), else it is stale.
    fn merge(&self, symbols: &[u32], out: &mut Vec<u32>) {
        let n = symbols.len();
        let mut ids = symbols.to_vec();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
        for i in 0..n - 1 {
            if let Some((rank, _)) = self.rank(ids[i], ids[i + 1]) {
                heap.push(Reverse((rank, i)));
            }
        }
        while let Some(Reverse((rank, i))) = heap.pop() {
            if !alive[i] || next[i] >= n {
                continue;
            }
            let j = next[i];
            let merged = match self.rank(ids[i], ids[j]) {
                Some((r, merged)) if r == rank => merged,
                _ => continue,
            };
            ids[i] = merged;
            alive[j] = false;
            let k = next[j];
            next[i] = k;
            if k < n {
                prev[k] = i;
                if let Some((r, _)) = self.rank(ids[i], ids[k]) {
                    heap.push(Reverse((r, i)));
                }
            }
            let p = prev[i];
            if p != usize::MAX {
                if let Some((r, _)) = self.rank(ids[p], ids[i]) {
                    heap.push(Reverse((r, p)));
                }
            }
        }
        let mut i = 0;
        while i < n {
            out.push(ids[i]);
            i = next[i];
        }
    }
}

impl CharBpeModel {
    /// [`encode`](Self::encode) with each token's byte span in `word`: (id, start, end). Byte
    /// tokens span their character, a fused unknown spans its run (the reference's rule).
    pub fn encode_spans(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        if word.is_empty() {
            return;
        }
        if self.options.ignore_merges {
            if let Some(&id) = self.vocab.get(word) {
                out.push((id, 0, word.len()));
                return;
            }
        }
        let mut symbols = Vec::new();
        self.symbol_spans(word, &mut symbols);
        self.merge_spans(&mut symbols);
        out.extend(symbols);
    }

    /// [`symbols`](Self::symbols) with byte spans.
    fn symbol_spans(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        let o = &self.options;
        let mut pending: Option<(u32, usize, usize)> = None;
        let mut decorated = String::new();
        let mut chars = word.char_indices().peekable();
        let mut first = true;
        while let Some((at, c)) = chars.next() {
            let end = at + c.len_utf8();
            let last = chars.peek().is_none();
            decorated.clear();
            if !first {
                decorated.push_str(&o.prefix);
            }
            decorated.push(c);
            if last {
                decorated.push_str(&o.suffix);
            }
            first = false;
            let s = decorated.as_str();
            if let Some(&id) = self.vocab.get(s) {
                if let Some(unk) = pending.take() {
                    out.push(unk);
                }
                out.push((id, at, end));
                continue;
            }
            if o.byte_fallback && s.bytes().all(|b| self.byte_ids[b as usize] != NONE) {
                out.extend(s.bytes().map(|b| (self.byte_ids[b as usize], at, end)));
                continue;
            }
            if let Some(unk) = o.unk {
                match &mut pending {
                    Some(p) if o.fuse_unk => p.2 = end,
                    Some(p) => {
                        out.push(*p);
                        pending = Some((unk, at, end));
                    }
                    None => pending = Some((unk, at, end)),
                }
            }
        }
        if let Some(unk) = pending {
            out.push(unk);
        }
    }

    /// [`merge`](Self::merge) over symbols with spans, in place: a merged symbol spans both.
    fn merge_spans(&self, symbols: &mut Vec<(u32, usize, usize)>) {
        let n = symbols.len();
        if n < 2 {
            return;
        }
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
        for i in 0..n - 1 {
            if let Some((rank, _)) = self.rank(symbols[i].0, symbols[i + 1].0) {
                heap.push(Reverse((rank, i)));
            }
        }
        while let Some(Reverse((rank, i))) = heap.pop() {
            if !alive[i] || next[i] >= n {
                continue;
            }
            let j = next[i];
            let merged = match self.rank(symbols[i].0, symbols[j].0) {
                Some((r, merged)) if r == rank => merged,
                _ => continue,
            };
            symbols[i].0 = merged;
            symbols[i].2 = symbols[j].2;
            alive[j] = false;
            let k = next[j];
            next[i] = k;
            if k < n {
                prev[k] = i;
                if let Some((r, _)) = self.rank(symbols[i].0, symbols[k].0) {
                    heap.push(Reverse((r, i)));
                }
            }
            let p = prev[i];
            if p != usize::MAX {
                if let Some((r, _)) = self.rank(symbols[p].0, symbols[i].0) {
                    heap.push(Reverse((r, p)));
                }
            }
        }
        let mut kept = Vec::with_capacity(n);
        let mut i = 0;
        while i < n {
            kept.push(symbols[i]);
            i = next[i];
        }
        *symbols = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(
        vocab: &[(&str, u32)],
        merges: &[(&str, &str)],
        options: CharBpeOptions,
    ) -> CharBpeModel {
        let owned: Vec<(String, u32)> = vocab.iter().map(|(t, i)| (t.to_string(), *i)).collect();
        let id = |t: &str| vocab.iter().find(|v| v.0 == t).unwrap().1;
        let cut = options.prefix.len();
        let resolved: Vec<(u32, u32, u32, u32)> = merges
            .iter()
            .enumerate()
            .map(|(rank, (l, r))| (id(l), id(r), rank as u32, id(&format!("{l}{}", &r[cut..]))))
            .collect();
        CharBpeModel::new(owned, &resolved, options).unwrap()
    }

    fn encode(m: &CharBpeModel, word: &str) -> Vec<u32> {
        let mut out = Vec::new();
        m.encode(word, &mut out);
        out
    }

    #[test]
    fn merges_lowest_rank_first_leftmost_on_ties() {
        let m = model(
            &[
                ("a", 0),
                ("b", 1),
                ("c", 2),
                ("ab", 3),
                ("bc", 4),
                ("abc", 5),
                ("aa", 6),
            ],
            &[("a", "b"), ("b", "c"), ("ab", "c"), ("a", "a")],
            CharBpeOptions::default(),
        );
        assert_eq!(encode(&m, "abcbc"), [5, 4]);
        assert_eq!(encode(&m, "aaa"), [6, 0]);
        assert_eq!(encode(&m, "aaaa"), [6, 6]);
        assert_eq!(encode(&m, "xa"), [0]); // no unk: dropped
        let long = "ab".repeat(5000);
        assert_eq!(encode(&m, &long), vec![3; 5000]);
    }

    #[test]
    fn byte_fallback_and_the_pending_unknown_order() {
        let options = CharBpeOptions {
            unk: Some(0),
            byte_fallback: true,
            ..Default::default()
        };
        let m = model(
            &[("<unk>", 0), ("a", 1), ("<0x78>", 2)],
            &[],
            options.clone(),
        );
        assert_eq!(encode(&m, "aéxéa"), [1, 2, 0, 0, 1]);
        let fused = model(
            &[("<unk>", 0), ("a", 1), ("<0xC3>", 2), ("<0xA9>", 3)],
            &[],
            CharBpeOptions {
                fuse_unk: true,
                ..options
            },
        );
        assert_eq!(encode(&fused, "aéxyé"), [1, 2, 3, 2, 3, 0]); // x y fused, after é's bytes
    }

    #[test]
    fn prefix_and_suffix_decorate_the_characters() {
        let options = CharBpeOptions {
            prefix: "##".into(),
            suffix: "</w>".into(),
            ..Default::default()
        };
        let m = model(
            &[
                ("a", 0),
                ("##b", 1),
                ("ab", 2),
                ("##c</w>", 3),
                ("abc</w>", 4),
                ("c</w>", 5),
            ],
            &[("a", "##b"), ("ab", "##c</w>")],
            options,
        );
        assert_eq!(encode(&m, "abc"), [4]);
        assert_eq!(encode(&m, "ab"), [0]); // "##b</w>" is not in the vocabulary: dropped
        assert_eq!(encode(&m, "c"), [5]);
    }

    #[test]
    fn ignore_merges_takes_whole_entries() {
        let options = CharBpeOptions {
            ignore_merges: true,
            ..Default::default()
        };
        let m = model(
            &[("a", 0), ("b", 1), ("ab", 2), ("ba", 3)],
            &[("a", "b")],
            options,
        );
        assert_eq!(encode(&m, "ba"), [3]);
        assert_eq!(encode(&m, "bab"), [1, 2]);
    }
}
