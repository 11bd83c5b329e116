//! Byte-level BPE encoding of one pre-token: apply learned merge ranks.
//!
//! Among adjacent pairs present in the merge table, merge the one with the lowest rank (leftmost
//! on ties) and repeat until none applies. Short words use a flat scan over a small vector; long
//! words use a (rank, position) min-heap over a linked list with lazy invalidation, so the work is
//! O(n log n) and never quadratic (`"a" * 100_000` stays fast).
//!
//! Example with merges `a b` (rank 0), `b c` (rank 1), `ab c` (rank 2): `abcbc` -> `abc` `bc`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::Error;

const NONE: u32 = u32::MAX;
/// Words up to this many bytes use the flat scan; longer ones the heap.
const SHORT_WORD: usize = 64;

#[inline]
fn key(left: u32, right: u32) -> u64 {
    ((left as u64) << 32) | right as u64
}

#[derive(Debug, Clone)]
pub struct BpeModel {
    /// (left, right) -> (rank, merged id).
    merges: FxHashMap<u64, (u32, u32)>,
    /// The id of each single byte's token, or NONE.
    byte_ids: [u32; 256],
    /// With ignore_merges: whole pre-tokens that are themselves vocabulary entries.
    whole_words: Option<FxHashMap<Box<[u8]>, u32>>,
    unk: Option<u32>,
}

impl BpeModel {
    /// `merges` are (left, right, rank, merged) with the ranks already resolved (a pair listed
    /// twice keeps its last rank). `byte_ids[b]` is the id of byte `b`'s one-byte token.
    pub fn new(
        byte_ids: &[Option<u32>],
        merges: &[(u32, u32, u32, u32)],
        whole_words: Option<Vec<(Vec<u8>, u32)>>,
        unk: Option<u32>,
    ) -> Result<Self, Error> {
        if byte_ids.len() != 256 {
            return Err(Error::Invalid(format!(
                "byte_ids has {} entries, expected 256",
                byte_ids.len()
            )));
        }
        let mut table = [NONE; 256];
        for (b, id) in byte_ids.iter().enumerate() {
            table[b] = id.unwrap_or(NONE);
        }
        let mut map = FxHashMap::default();
        map.reserve(merges.len());
        for &(l, r, rank, merged) in merges {
            map.insert(key(l, r), (rank, merged));
        }
        let whole_words = whole_words.map(|w| {
            w.into_iter()
                .map(|(k, v)| (k.into_boxed_slice(), v))
                .collect()
        });
        Ok(BpeModel {
            merges: map,
            byte_ids: table,
            whole_words,
            unk,
        })
    }

    #[inline]
    fn rank(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        self.merges.get(&key(left, right)).copied()
    }

    /// Append the ids of `word` to `out`.
    pub fn encode_word(&self, word: &[u8], out: &mut Vec<u32>) {
        if let Some(whole) = &self.whole_words {
            if let Some(&id) = whole.get(word) {
                out.push(id);
                return;
            }
        }
        let mut symbols: Vec<u32> = Vec::with_capacity(word.len());
        for &b in word {
            let id = self.byte_ids[b as usize];
            if id != NONE {
                symbols.push(id);
            } else if let Some(unk) = self.unk {
                symbols.push(unk);
            } // else: dropped, as Hugging Face does when there is no unk token
        }
        if symbols.len() <= SHORT_WORD {
            self.merge_short(&mut symbols);
            out.extend_from_slice(&symbols);
        } else {
            self.merge_long(&symbols, out);
        }
    }

    fn merge_short(&self, symbols: &mut Vec<u32>) {
        // ranks[k] is the rank of the pair (k, k+1), or NONE.
        let mut ranks: Vec<u32> = symbols
            .windows(2)
            .map(|w| self.rank(w[0], w[1]).map_or(NONE, |r| r.0))
            .collect();
        loop {
            let mut best = NONE;
            let mut at = 0;
            for (k, &r) in ranks.iter().enumerate() {
                if r < best {
                    best = r;
                    at = k;
                }
            }
            if best == NONE {
                return;
            }
            let merged = self
                .rank(symbols[at], symbols[at + 1])
                .map_or(NONE, |r| r.1);
            symbols[at] = merged;
            symbols.remove(at + 1);
            ranks.remove(at);
            if at > 0 {
                ranks[at - 1] = self
                    .rank(symbols[at - 1], symbols[at])
                    .map_or(NONE, |r| r.0);
            }
            if at < ranks.len() {
                ranks[at] = self
                    .rank(symbols[at], symbols[at + 1])
                    .map_or(NONE, |r| r.0);
            }
        }
    }

    fn merge_long(&self, symbols: &[u32], out: &mut Vec<u32>) {
        let n = symbols.len();
        let mut ids = symbols.to_vec();
        let mut next: Vec<usize> = (1..=n).collect(); // n means "none"
        let mut prev: Vec<usize> = (0..n).map(|k| if k == 0 { n } else { k - 1 }).collect();
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::with_capacity(n);
        for k in 0..n - 1 {
            if let Some((rank, _)) = self.rank(ids[k], ids[k + 1]) {
                heap.push(Reverse((rank, k)));
            }
        }
        while let Some(Reverse((rank, k))) = heap.pop() {
            let nx = next[k];
            if !alive[k] || nx >= n {
                continue;
            }
            let Some((current, merged)) = self.rank(ids[k], ids[nx]) else {
                continue;
            };
            if current != rank {
                continue; // stale: the pair at k changed since this entry was pushed
            }
            ids[k] = merged;
            alive[nx] = false;
            next[k] = next[nx];
            if next[k] < n {
                prev[next[k]] = k;
            }
            let pv = prev[k];
            if pv < n {
                if let Some((r, _)) = self.rank(ids[pv], ids[k]) {
                    heap.push(Reverse((r, pv)));
                }
            }
            if next[k] < n {
                if let Some((r, _)) = self.rank(ids[k], ids[next[k]]) {
                    heap.push(Reverse((r, k)));
                }
            }
        }
        let mut k = 0;
        while k < n {
            out.push(ids[k]);
            k = next[k];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a=0 b=1 c=2 ab=3 bc=4 abc=5, merges: a b (0), b c (1), ab c (2).
    fn toy() -> BpeModel {
        let mut byte_ids = vec![None; 256];
        byte_ids[b'a' as usize] = Some(0);
        byte_ids[b'b' as usize] = Some(1);
        byte_ids[b'c' as usize] = Some(2);
        BpeModel::new(
            &byte_ids,
            &[(0, 1, 0, 3), (1, 2, 1, 4), (3, 2, 2, 5)],
            None,
            None,
        )
        .unwrap()
    }

    fn naive(model: &BpeModel, word: &[u8]) -> Vec<u32> {
        let mut s: Vec<u32> = word
            .iter()
            .filter_map(|&b| Some(model.byte_ids[b as usize]).filter(|&i| i != NONE))
            .collect();
        loop {
            let best = (0..s.len().saturating_sub(1))
                .filter_map(|k| model.rank(s[k], s[k + 1]).map(|(r, m)| (r, k, m)))
                .min();
            match best {
                Some((_, k, m)) => {
                    s[k] = m;
                    s.remove(k + 1);
                }
                None => return s,
            }
        }
    }

    #[test]
    fn lowest_rank_then_leftmost() {
        let m = toy();
        let mut out = Vec::new();
        m.encode_word(b"abcbc", &mut out);
        assert_eq!(out, [5, 4]);
        out.clear();
        m.encode_word(b"bcab x", &mut out); // ' ' and 'x' have no token: dropped
        assert_eq!(out, [4, 3]);
    }

    #[test]
    fn short_and_long_paths_agree_with_the_naive_loop() {
        let m = toy();
        let mut state = 12345u64;
        for len in [0usize, 1, 2, 3, 10, 63, 64, 65, 200, 1000] {
            for _ in 0..20 {
                let word: Vec<u8> = (0..len)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        b"abc"[(state >> 33) as usize % 3]
                    })
                    .collect();
                let mut short = Vec::new();
                let mut syms: Vec<u32> = word.iter().map(|&b| m.byte_ids[b as usize]).collect();
                m.merge_short(&mut syms);
                short.extend(syms);
                let mut long = Vec::new();
                if !word.is_empty() {
                    m.merge_long(
                        &word
                            .iter()
                            .map(|&b| m.byte_ids[b as usize])
                            .collect::<Vec<_>>(),
                        &mut long,
                    );
                }
                let expected = naive(&m, &word);
                assert_eq!(short, expected);
                assert_eq!(long, expected);
            }
        }
    }

    #[test]
    fn long_repeated_input_is_fast() {
        let m = toy();
        let word = vec![b'a'; 200_000];
        let mut out = Vec::new();
        m.encode_word(&word, &mut out);
        assert_eq!(out.len(), 200_000);
    }
}
