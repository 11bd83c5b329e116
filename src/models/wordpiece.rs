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
    fn build(entries: Vec<(&[u8], u32)>) -> Trie {
        let mut builder = TrieBuilder::default();
        for (key, id) in entries {
            builder.insert(key, id);
        }
        builder.freeze()
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

#[inline]
fn is_boundary(text: &[u8], pos: usize) -> bool {
    // A UTF-8 continuation byte is 0b10xx_xxxx; anything else (or the end) starts a character.
    text.get(pos).is_none_or(|&b| (b as i8) >= -0x40)
}

/// Tree nodes with child maps, turned into the compact [`Trie`] once complete.
#[derive(Default)]
struct TrieBuilder {
    children: Vec<Vec<(u8, u32)>>,
    ids: Vec<u32>,
}

impl TrieBuilder {
    fn node(&mut self) -> u32 {
        self.children.push(Vec::new());
        self.ids.push(NONE);
        (self.children.len() - 1) as u32
    }

    fn insert(&mut self, key: &[u8], id: u32) {
        if self.children.is_empty() {
            self.node();
        }
        let mut node = 0u32;
        for &b in key {
            let found = self.children[node as usize]
                .iter()
                .find(|e| e.0 == b)
                .map(|e| e.1);
            node = match found {
                Some(child) => child,
                None => {
                    let child = self.node();
                    self.children[node as usize].push((b, child));
                    child
                }
            };
        }
        self.ids[node as usize] = id;
    }

    fn freeze(mut self) -> Trie {
        if self.children.is_empty() {
            self.node();
        }
        let mut root_children = Box::new([NONE; 256]);
        for &(b, child) in &self.children[0] {
            root_children[b as usize] = child;
        }
        let mut nodes = Vec::with_capacity(self.children.len());
        let mut edges = Vec::new();
        for (kids, &id) in self.children.iter_mut().zip(&self.ids) {
            kids.sort_unstable();
            nodes.push((edges.len() as u32, kids.len() as u32, id));
            edges.extend_from_slice(kids);
        }
        Trie {
            nodes,
            edges,
            root_children,
        }
    }
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
    pub fn new(
        vocab: &[(String, u32)],
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
            .filter(|(t, _)| !t.is_empty())
            .map(|(t, id)| (t.as_bytes(), *id))
            .collect();
        let continuation = vocab
            .iter()
            .filter_map(|(t, id)| t.strip_prefix(prefix).map(|rest| (rest.as_bytes(), *id)))
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
    fn missing_unk_is_an_error() {
        let vocab = vec![("a".to_string(), 1)];
        assert!(WordPieceModel::new(&vocab, 0, "##", 100).is_err());
    }
}
