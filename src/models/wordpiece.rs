//! WordPiece encoding of one pre-token: greedy longest-match-first over two byte tries.
//!
//! The first piece of a word is looked up among all vocabulary entries, the later ones among the
//! entries that start with the continuation prefix (`##`), stored without it. At each position
//! the trie walk keeps the deepest entry that ends on a character boundary. A position with no
//! entry, or a word of more than `max_input_chars_per_word` characters, turns the whole word into
//! the unknown token. The reference is `tinyllm.tok.models.wordpiece.WordPieceModel`.
//!
//! Example with `un`, `##want`, `##ed`: `unwanted` -> `un` `##want` `##ed`; `wanted` -> `[UNK]`.

use std::sync::{Arc, OnceLock};

use crate::models::double_array::{BreadthFirst, DoubleArray};
use crate::Error;

/// The keys of one lookup (all entries, or the continuations without their prefix) in a
/// double-array trie: one array read per byte of a walk. (A trie of sorted edge lists, searched
/// per byte, was a quarter of a BERT encode of multilingual text: the node and its edges were
/// two or more dependent reads per byte, mostly cache misses.)
#[derive(Debug, Clone)]
struct Trie(DoubleArray<()>);

impl Trie {
    /// The trie of `entries` (non-empty keys; a key listed twice keeps its last id), placed
    /// breadth first.
    fn build(entries: Vec<(&[u8], u32)>) -> Result<Trie, Error> {
        // By key, and for equal keys by position, so the last one listed is kept. Each key's
        // first eight bytes, big-endian in a u64, decide most comparisons without reading it.
        let mut keyed: Vec<(u64, &[u8], usize, u32)> = (entries.into_iter().enumerate())
            .map(|(k, (key, id))| (head(key), key, k, id))
            .collect();
        keyed.sort_unstable();
        let mut keys: Vec<(&[u8], u32)> = Vec::with_capacity(keyed.len());
        for (_, key, _, id) in keyed {
            match keys.last_mut() {
                Some(last) if last.0 == key => last.1 = id,
                _ => keys.push((key, id)),
            }
        }
        Ok(Trie(DoubleArray::build(
            &keys,
            |_| (),
            BreadthFirst::default(),
        )?))
    }

    /// The deepest (end, id) for `text[start..]` ending on a char boundary, if any.
    #[inline]
    fn longest(&self, text: &[u8], start: usize) -> Option<(usize, u32)> {
        let mut best = None;
        self.0.prefixes(text, start, |end, slot, ()| {
            if is_boundary(text, end) {
                best = Some((end, slot));
            }
        });
        best.map(|(end, slot)| (end, self.0.id(slot)))
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

/// The most bytes of token text a WordPiece vocabulary may hold (4 MiB; multilingual BERT's
/// 119,547 tokens are about 1 MiB). It bounds the tries: each node placed grows the array by at
/// most 258 cells, so every base stays below the double array's 2^31 limit, and a trie built on
/// first use cannot fail.
const MAX_KEY_BYTES: usize = 1 << 22;

#[derive(Debug, Clone)]
pub struct WordPieceModel {
    /// The tries of all entries and of the continuations (without their prefix), built on first
    /// use ([`Self::tries`]): a load that never encodes, and the load itself, do not pay for
    /// them (a BERT vocabulary's take 7 ms, a load 45).
    tries: OnceLock<(Trie, Trie)>,
    keys: Arc<Keys>,
    unk: u32,
    max_chars: usize,
}

/// What the tries are built from: every entry's bytes, one after another, and where each lies.
#[derive(Debug)]
struct Keys {
    bytes: Vec<u8>,
    /// (start, length, id) of each entry in `bytes`, in the vocabulary's order.
    initial: Vec<(u32, u32, u32)>,
    /// The same for each entry with the continuation prefix, the prefix left out.
    continuation: Vec<(u32, u32, u32)>,
}

impl Keys {
    fn entries(&self, list: &[(u32, u32, u32)]) -> Vec<(&[u8], u32)> {
        (list.iter())
            .map(|&(start, len, id)| (&self.bytes[start as usize..(start + len) as usize], id))
            .collect()
    }
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
        let size: usize = vocab.iter().map(|(t, _)| t.as_ref().len()).sum();
        if size > MAX_KEY_BYTES {
            return Err(Error::Invalid(format!(
                "vocab: {size} bytes of token text, more than the {MAX_KEY_BYTES} a WordPiece \
                 vocabulary may hold"
            )));
        }
        let mut keys = Keys {
            bytes: Vec::with_capacity(size),
            initial: Vec::with_capacity(vocab.len()),
            continuation: Vec::new(),
        };
        for (token, id) in vocab {
            let token = token.as_ref();
            if token.is_empty() {
                continue;
            }
            let start = keys.bytes.len() as u32;
            keys.bytes.extend_from_slice(token.as_bytes());
            keys.initial.push((start, token.len() as u32, *id));
            if let Some(rest) = token.strip_prefix(prefix).filter(|rest| !rest.is_empty()) {
                let skip = (token.len() - rest.len()) as u32;
                keys.continuation
                    .push((start + skip, rest.len() as u32, *id));
            }
        }
        Ok(WordPieceModel {
            tries: OnceLock::new(),
            keys: Arc::new(keys),
            unk,
            max_chars: max_input_chars_per_word,
        })
    }

    /// (all entries, continuations), built on the first call.
    #[inline]
    fn tries(&self) -> &(Trie, Trie) {
        self.tries.get_or_init(|| {
            let build = |list| {
                // The only error is an array past 2^31 cells, which MAX_KEY_BYTES rules out.
                Trie::build(self.keys.entries(list)).expect("key bytes bounded in new")
            };
            (build(&self.keys.initial), build(&self.keys.continuation))
        })
    }

    /// Build the tries now instead of on the first encode.
    pub fn warm_up(&self) {
        self.tries();
    }

    /// Append the ids of `word` to `out`.
    pub fn encode(&self, word: &str, out: &mut Vec<u32>) {
        let mark = out.len();
        if !self.for_each_piece(word, |id, _, _| out.push(id)) {
            out.truncate(mark);
            out.push(self.unk);
        }
    }

    /// [`encode`](Self::encode) with each token's byte span in `word`: (id, start, end). The
    /// unknown token spans the whole word.
    pub fn encode_spans(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        let mark = out.len();
        if !self.for_each_piece(word, |id, start, end| out.push((id, start, end))) {
            out.truncate(mark);
            out.push((self.unk, 0, word.len()));
        }
    }

    /// Greedy longest-match-first: `piece(id, start, end)` for each token of `word`, the first
    /// from the initial entries and the rest from the `##` ones. False, after any number of
    /// calls, when the word is the unknown token instead (longer than `max_chars` characters,
    /// or a position no entry starts at); an empty word has no tokens.
    #[inline(always)]
    fn for_each_piece(&self, word: &str, mut piece: impl FnMut(u32, usize, usize)) -> bool {
        if word.len() > self.max_chars && word.chars().count() > self.max_chars {
            return false;
        }
        let bytes = word.as_bytes();
        let (initial, continuation) = self.tries();
        let mut start = 0;
        while start < bytes.len() {
            let trie = if start == 0 { initial } else { continuation };
            let Some((end, id)) = trie.longest(bytes, start) else {
                return false;
            };
            piece(id, start, end);
            start = end;
        }
        true
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
        let trie = Trie::build(entries).unwrap();
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
    fn the_tries_are_built_on_first_use_or_by_warm_up() {
        let tokens = ["[UNK]", "un", "##want", "##ed", "un", "##ed"]; // repeats keep the last id
        let lazy = model(&tokens, 100);
        assert!(lazy.tries.get().is_none());
        assert_eq!(encode(&lazy, "unwanted"), vec![4, 2, 5]);
        assert!(lazy.tries.get().is_some());
        let warm = model(&tokens, 100);
        warm.warm_up();
        assert!(warm.tries.get().is_some());
        assert_eq!(encode(&warm, "unwanted"), vec![4, 2, 5]);
        assert_eq!(encode(&warm.clone(), "unwanted"), vec![4, 2, 5]);
    }

    #[test]
    fn a_vocabulary_past_the_key_byte_limit_is_refused() {
        let long = "x".repeat(1 << 16);
        let vocab: Vec<(String, u32)> = (0..=(MAX_KEY_BYTES >> 16) as u32)
            .map(|id| (format!("{id}{long}"), id))
            .collect();
        let error = WordPieceModel::new(&vocab, 0, "##", 100).unwrap_err();
        assert!(error.to_string().contains("bytes of token text"), "{error}");
        assert!(WordPieceModel::new(&vocab[..8], 0, "##", 100).is_ok());
    }

    #[test]
    fn missing_unk_is_an_error() {
        let vocab = vec![("a".to_string(), 1)];
        assert!(WordPieceModel::new(&vocab, 0, "##", 100).is_err());
    }
}
