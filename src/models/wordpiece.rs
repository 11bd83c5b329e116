//! WordPiece encoding of one pre-token: greedy longest-match-first over two byte tries.
//!
//! The first piece of a word is looked up among all vocabulary entries, the later ones among the
//! entries that start with the continuation prefix (`##`), stored without it. At each position
//! the trie walk keeps the deepest entry that ends on a character boundary. A position with no
//! entry, or a word of more than `max_input_chars_per_word` characters, turns the whole word into
//! the unknown token. The reference is `tinyllm.tok.models.wordpiece.WordPieceModel`.
//!
//! Example with `un`, `##want`, `##ed`: `unwanted` -> `un` `##want` `##ed`; `wanted` -> `[UNK]`.

use crate::Error;

/// "No token here" in a node, "no such child" in an edge lookup.
const NONE: u32 = u32::MAX;

/// A byte trie: the root's children in a dense table, deeper ones as sorted edge lists.
#[derive(Debug, Clone)]
struct Trie {
    /// Per node: (first edge, edge count, token id or NONE).
    nodes: Vec<(u32, u32, u32)>,
    /// (byte, child) edges, each node's sorted by byte.
    edges: Vec<(u8, u32)>,
    root_children: Box<[u32; 256]>,
}

impl Trie {
    /// The trie of `entries` (non-empty keys; a key listed twice keeps its last id).
    ///
    /// Sorted, the keys under one node are one run, and its children's runs follow each other in
    /// byte order, so the compact arrays are written directly: no map per node, and no recursion
    /// (a vocabulary may hold a very long token). Each node's edges are reserved when the node is
    /// made, and filled in as its children are.
    fn build(entries: Vec<(&[u8], u32)>) -> Trie {
        // Unstable, and by position too: equal keys keep their order without a stable sort's
        // copies. Each key's first eight bytes, big-endian in a u64, decide most comparisons
        // without reading the key (the bytes compared in full only when those are equal).
        let mut keyed: Vec<(u64, &[u8], u32, u32)> = (entries.into_iter().enumerate())
            .map(|(k, (key, id))| (head(key), key, id, k as u32))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            (a.0.cmp(&b.0))
                .then_with(|| a.1.cmp(b.1))
                .then(a.3.cmp(&b.3))
        });
        // The keys copied in sorted order into one buffer: the walk below reads them in order.
        let mut arena: Vec<u8> = Vec::with_capacity(keyed.iter().map(|e| e.1.len()).sum());
        let entries: Vec<(u32, u32, u32)> = (keyed.into_iter())
            .map(|(_, key, id, _)| {
                arena.extend_from_slice(key);
                ((arena.len() - key.len()) as u32, key.len() as u32, id)
            })
            .collect();
        let byte = |k: usize, depth: usize| arena[entries[k].0 as usize + depth];
        let mut nodes: Vec<(u32, u32, u32)> = Vec::new();
        let mut edges: Vec<(u8, u32)> = Vec::new();
        // (run of entries sharing their first `depth` bytes, depth, the edge that points here)
        let mut pending = vec![(0usize, entries.len(), 0usize, None::<usize>)];
        while let Some((mut lo, hi, depth, edge)) = pending.pop() {
            if let Some(e) = edge {
                edges[e].1 = nodes.len() as u32;
            }
            let mut id = NONE;
            while lo < hi && entries[lo].1 as usize == depth {
                id = entries[lo].2; // a shorter key sorts first; the last of equal keys wins
                lo += 1;
            }
            let first = edges.len();
            let mut k = lo;
            while k < hi {
                let b = byte(k, depth);
                let run_start = k;
                while k < hi && byte(k, depth) == b {
                    k += 1;
                }
                pending.push((run_start, k, depth + 1, Some(edges.len())));
                edges.push((b, NONE));
            }
            nodes.push((first as u32, (edges.len() - first) as u32, id));
        }
        let mut root_children = Box::new([NONE; 256]);
        let (first, count, _) = nodes[0];
        for &(b, child) in &edges[first as usize..(first + count) as usize] {
            root_children[b as usize] = child;
        }
        Trie {
            nodes,
            edges,
            root_children,
        }
    }

    /// The deepest (end, id) for `text[start..]` ending on a char boundary, if any.
    #[inline]
    fn longest(&self, text: &[u8], start: usize) -> Option<(usize, u32)> {
        let mut best = None;
        let mut node = match text.get(start) {
            Some(&b) => self.root_children[b as usize],
            None => return None,
        };
        let mut pos = start + 1;
        while node != NONE {
            let (first, count, id) = self.nodes[node as usize];
            if id != NONE && is_boundary(text, pos) {
                best = Some((pos, id));
            }
            let Some(&b) = text.get(pos) else { break };
            let edges = &self.edges[first as usize..(first + count) as usize];
            node = match edges.binary_search_by_key(&b, |e| e.0) {
                Ok(k) => edges[k].1,
                Err(_) => NONE,
            };
            pos += 1;
        }
        best
    }
}

/// The first eight bytes of `key` as a big-endian integer (zero-padded): a key that sorts before
/// another never has a larger head.
#[inline]
fn head(key: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = key.len().min(8);
    buf[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(buf)
}

#[inline]
fn is_boundary(text: &[u8], pos: usize) -> bool {
    // A UTF-8 continuation byte is 0b10xx_xxxx; anything else (or the end) starts a character.
    text.get(pos).is_none_or(|&b| (b as i8) >= -0x40)
}

#[derive(Debug, Clone)]
pub struct WordPieceModel {
    initial: Trie,
    continuation: Trie,
    unk: u32,
    max_chars: usize,
}

impl WordPieceModel {
    /// `vocab` maps token strings to ids; `unk` must be one of the ids.
    pub fn new<S: AsRef<str>>(
        vocab: &[(S, u32)],
        unk: u32,
        prefix: &str,
        max_input_chars_per_word: usize,
    ) -> Result<Self, Error> {
        if !vocab.iter().any(|(_, id)| *id == unk) {
            return Err(Error::Invalid(format!(
                "unk id {unk} is not in the vocabulary"
            )));
        }
        let initial = vocab
            .iter()
            .map(|(t, id)| (t.as_ref(), *id))
            .filter(|(t, _)| !t.is_empty())
            .map(|(t, id)| (t.as_bytes(), id))
            .collect();
        let continuation = vocab
            .iter()
            .filter_map(|(t, id)| {
                (t.as_ref().strip_prefix(prefix)).map(|rest| (rest.as_bytes(), *id))
            })
            .filter(|(rest, _)| !rest.is_empty())
            .collect();
        Ok(WordPieceModel {
            initial: Trie::build(initial),
            continuation: Trie::build(continuation),
            unk,
            max_chars: max_input_chars_per_word,
        })
    }

    /// Append the ids of `word` to `out`.
    pub fn encode(&self, word: &str, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.len() > self.max_chars && word.chars().count() > self.max_chars {
            out.push(self.unk);
            return;
        }
        let bytes = word.as_bytes();
        let mark = out.len();
        let mut start = 0;
        while start < bytes.len() {
            let trie = if start == 0 {
                &self.initial
            } else {
                &self.continuation
            };
            match trie.longest(bytes, start) {
                Some((end, id)) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }
}

impl WordPieceModel {
    /// [`encode`](Self::encode) with each token's byte span in `word`: (id, start, end). The
    /// unknown token spans the whole word.
    pub fn encode_spans(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        if word.is_empty() {
            return;
        }
        if word.len() > self.max_chars && word.chars().count() > self.max_chars {
            out.push((self.unk, 0, word.len()));
            return;
        }
        let bytes = word.as_bytes();
        let mark = out.len();
        let mut start = 0;
        while start < bytes.len() {
            let trie = if start == 0 {
                &self.initial
            } else {
                &self.continuation
            };
            match trie.longest(bytes, start) {
                Some((end, id)) => {
                    out.push((id, start, end));
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push((self.unk, 0, word.len()));
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tokens: &[&str], max: usize) -> WordPieceModel {
        let vocab: Vec<(String, u32)> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        WordPieceModel::new(&vocab, 0, "##", max).unwrap()
    }

    fn encode(m: &WordPieceModel, word: &str) -> Vec<u32> {
        let mut out = Vec::new();
        m.encode(word, &mut out);
        out
    }

    #[test]
    fn seed_examples() {
        let m = model(
            &[
                "[UNK]", "un", "##want", "##ed", "runn", "play", ",", "##ing", "##er",
            ],
            100,
        );
        assert_eq!(encode(&m, "unwanted"), vec![1, 2, 3]);
        assert_eq!(encode(&m, "want"), vec![0]);
        assert_eq!(encode(&m, "playingx"), vec![0]);
        assert_eq!(encode(&m, "Unwanted"), vec![0]);
        assert_eq!(encode(&m, "playing"), vec![5, 7]);
        assert_eq!(encode(&m, ""), Vec::<u32>::new());
    }

    #[test]
    fn long_words_and_multibyte_boundaries() {
        let m = model(&["[UNK]", "a", "##a", "é", "##é"], 3);
        assert_eq!(encode(&m, "aaa"), vec![1, 2, 2]);
        assert_eq!(encode(&m, "aaaa"), vec![0]);
        assert_eq!(encode(&m, "éé"), vec![3, 4]);
        // "é" is c3 a9: an entry holding only c3 must never match half a character.
        let half = vec![
            ("[UNK]".to_string(), 0),
            (String::from_utf8_lossy(&[0xc3]).into_owned(), 1),
        ];
        let m = WordPieceModel::new(&half, 0, "##", 100).unwrap();
        assert_eq!(encode(&m, "é"), vec![0]);
    }

    #[test]
    fn the_trie_finds_the_longest_key_at_every_position_of_random_texts() {
        // Keys over a tiny alphabet (many shared prefixes, keys that are prefixes of others, a
        // multi-byte character), against a brute-force search of the key map.
        use crate::models::random::SplitMix64;
        let mut rng = SplitMix64::new(7);
        let alphabet = ["a", "b", "é", "c"];
        let mut pick = |n: u64| (rng.next_f64() * n as f64) as usize;
        let mut keys: std::collections::HashMap<String, u32> = Default::default();
        for id in 0..300 {
            let len = 1 + pick(6);
            let key: String = (0..len).map(|_| alphabet[pick(4)]).collect();
            keys.insert(key, id); // a repeated key keeps its last id, as the builder does
        }
        let entries: Vec<(&[u8], u32)> = keys.iter().map(|(k, &id)| (k.as_bytes(), id)).collect();
        let trie = Trie::build(entries);
        for _ in 0..200 {
            let text: String = (0..pick(12)).map(|_| alphabet[pick(4)]).collect();
            let bytes = text.as_bytes();
            for (start, _) in text.char_indices() {
                let expected = (start + 1..=bytes.len())
                    .rev()
                    .filter(|&end| text.is_char_boundary(end))
                    .find_map(|end| keys.get(&text[start..end]).map(|&id| (end, id)));
                assert_eq!(trie.longest(bytes, start), expected, "{text:?} at {start}");
            }
        }
    }

    #[test]
    fn missing_unk_is_an_error() {
        let vocab = vec![("a".to_string(), 1)];
        assert!(WordPieceModel::new(&vocab, 0, "##", 100).is_err());
    }
}
