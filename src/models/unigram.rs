//! Unigram encoding of one pre-token: the most probable segmentation into vocabulary pieces.
//!
//! Each piece has a score (a log-probability); a segmentation scores the float sum of its pieces,
//! added left to right. The reference is `tinyllm.tok.models.unigram`; the rules are
//! Hugging Face `tokenizers`' (models/unigram, itself a port of sentencepiece):
//!
//! - Viterbi ties go to the path whose last piece starts earliest, then the same rule on the
//!   prefix: start positions are scanned in order and a later candidate must be strictly better.
//!   With `▁ = a = -1` and `aa = -2`, `▁aaa` gives `▁ a aa`.
//! - A character that starts no piece of its own length gets an unknown node, `unk_id` with score
//!   `min(score) - 10`. Consecutive nodes carrying `unk_id` fuse into one token; when the fused
//!   text is itself a piece, that piece's id is emitted (HF looks tokens up by text).
//! - With `unk_id` = None there are no unknown nodes and a word no path covers is an error.
//!
//! `encode` follows sentencepiece's fast path: only the best path ending at each position is kept,
//! and pieces are found by walking a double-array trie from each character start. Two departures
//! make it faster: text is re-encoded into code units, one per character for the vocabulary's 239
//! most frequent characters (so a Cyrillic match takes one step per letter, not two), and trie
//! cells are placed hottest subtree first. Buffers are thread-local, so a call allocates nothing
//! but output. Positions are cut only at character boundaries; spans come back in UTF-8 bytes.
//! `nbest` and `sample` build the full lattice; they serve inspection and data preparation.
//!
//! Sampling uses [`SplitMix64`], defined bit for bit so that Python and Rust draw the same path.

use std::cell::RefCell;
use std::cmp::Ordering;

use crate::models::double_array::{DoubleArray, Hottest};
use crate::models::random::SplitMix64;
use crate::Error;

const NONE: u32 = u32::MAX;
/// Marks an unknown-character node in the Viterbi buffers (trie slots are below 2^31).
const UNK_NODE: u32 = u32::MAX - 1;
/// Gap below the lowest piece score given to an unknown character (sentencepiece's kUnkPenalty).
pub const UNK_PENALTY: f64 = 10.0;

/// A finite score with a total order, for the placement heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrderedScore(f64);

impl Eq for OrderedScore {}

impl PartialOrd for OrderedScore {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedScore {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

// ---------------------------------------------------------------------------------------------
// The code-unit alphabet

/// First code unit of a three-unit (rare) character; units below it are whole characters.
const ESCAPE: u8 = 240;

/// Re-encodes text so that the trie walks one step per character instead of one per UTF-8 byte.
///
/// Characters that occur in pieces get codes by descending frequency in the vocabulary (ties by
/// code point): the 239 most frequent are single units 1..=239, the rest three units
/// `[240 + r / 65536, r / 256 % 256, r % 256]` (r = rank - 239). Every other character is the
/// single unit 0, which no piece contains, so a walk stops there. The code is prefix-free and
/// aligned to characters, so piece matches are the same as on the original text; for Cyrillic
/// or CJK it halves or thirds the dependent memory loads per match.
#[derive(Debug, Clone)]
struct Alphabet {
    /// Packed code of each BMP character: units in the low three bytes, unit count above; 0 =
    /// in no piece.
    bmp: Vec<u32>,
    astral: rustc_hash::FxHashMap<u32, u32>,
}

impl Alphabet {
    fn new(pieces: &[(String, f64)]) -> Result<Self, Error> {
        let mut counts: rustc_hash::FxHashMap<char, u64> = Default::default();
        for (piece, _) in pieces {
            for ch in piece.chars() {
                *counts.entry(ch).or_insert(0) += 1;
            }
        }
        let mut chars: Vec<(u64, char)> = counts.into_iter().map(|(ch, n)| (n, ch)).collect();
        chars.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut alphabet = Self {
            bmp: vec![0; 0x10000],
            astral: Default::default(),
        };
        for (rank, &(_, ch)) in chars.iter().enumerate() {
            let packed = if rank < ESCAPE as usize - 1 {
                (1 << 24) | (rank as u32 + 1)
            } else {
                let r = (rank - (ESCAPE as usize - 1)) as u32;
                if r >= 16 << 16 {
                    return Err(Error::Invalid("vocab: too many distinct characters".into()));
                }
                let units = [ESCAPE as u32 + (r >> 16), (r >> 8) & 0xFF, r & 0xFF];
                (3 << 24) | units[0] | (units[1] << 8) | (units[2] << 16)
            };
            match u16::try_from(ch as u32) {
                Ok(c) => alphabet.bmp[c as usize] = packed,
                Err(_) => {
                    alphabet.astral.insert(ch as u32, packed);
                }
            }
        }
        Ok(alphabet)
    }

    #[inline(always)]
    fn code(&self, ch: char) -> u32 {
        match self.bmp.get(ch as usize) {
            Some(&packed) => packed,
            None => self.astral.get(&(ch as u32)).copied().unwrap_or(0),
        }
    }

    /// Appends the code units of `text` to `units`.
    #[inline]
    fn encode(&self, text: &str, units: &mut Vec<u8>) {
        units.reserve(text.len());
        for ch in text.chars() {
            let packed = self.code(ch);
            units.push(packed as u8);
            if packed >> 24 == 3 {
                units.extend_from_slice(&[(packed >> 8) as u8, (packed >> 16) as u8]);
            }
        }
    }

    /// `byte_at[u]`: the byte offset in `text` of unit position `u` (a three-unit character
    /// repeats its offset), plus a last entry, the text's length. Off the hot path: spans and
    /// errors only.
    fn byte_offsets(&self, text: &str, byte_at: &mut Vec<u32>) {
        for (at, ch) in text.char_indices() {
            let count = if self.code(ch) >> 24 == 3 { 3 } else { 1 };
            byte_at.extend(std::iter::repeat_n(at as u32, count));
        }
        byte_at.push(text.len() as u32);
    }
}

#[inline(always)]
fn unit_width(lead: u8) -> usize {
    if lead >= ESCAPE {
        3
    } else {
        1
    }
}

// ---------------------------------------------------------------------------------------------
// The model

/// A Unigram vocabulary ready to encode.
#[derive(Clone)]
pub struct UnigramModel {
    alphabet: Alphabet,
    /// Pieces as code-unit strings, each cell carrying its piece's score.
    trie: DoubleArray<f64>,
    n_pieces: usize,
    unk_id: Option<u32>,
    unk_score: f64,
    /// With byte_fallback: byte_ids[b] is the id of the piece `<0xNN>`, or NONE.
    byte_fallback: Option<Box<[u32; 256]>>,
}

impl std::fmt::Debug for UnigramModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnigramModel")
            .field("pieces", &self.n_pieces)
            .field("unk_id", &self.unk_id)
            .field("trie_slots", &self.trie.len())
            .finish()
    }
}

/// Positions are u32 code-unit offsets (up to three units a byte); longer words are refused
/// rather than silently wrapped.
fn check_length(word: &str) -> Result<(), Error> {
    if word.len() >= 1 << 30 {
        return Err(Error::Invalid(format!(
            "Unigram: a word of {} bytes is too long (the limit is 1 GiB)",
            word.len()
        )));
    }
    Ok(())
}

/// Reused per-word buffers of `encode`, one set per thread. Positions are code-unit offsets.
#[derive(Default)]
struct Scratch {
    units: Vec<u8>,
    score: Vec<f64>,
    /// Start of the best last piece ending here; NONE while the position is unreached.
    prev: Vec<u32>,
    /// Trie slot of that piece, or UNK_NODE.
    node: Vec<u32>,
    /// The best path: (start, end, id).
    path: Vec<(u32, u32, u32)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// One lattice node (code-unit positions).
#[derive(Debug, Clone, Copy)]
struct Edge {
    start: u32,
    end: u32,
    id: u32,
    score: f64,
}

/// All nodes of a word's lattice, grouped by end, each group by increasing start (the order in
/// which the Viterbi scan meets them), with the word's code units.
struct Lattice {
    units: Vec<u8>,
    edges: Vec<Edge>,
    /// edges[first[j]..first[j + 1]] end at unit position j.
    first: Vec<u32>,
}

impl Lattice {
    fn len(&self) -> usize {
        self.units.len()
    }

    fn incoming(&self, end: usize) -> &[Edge] {
        &self.edges[self.first[end] as usize..self.first[end + 1] as usize]
    }
}

/// A-before-B order of `nbest`: higher score, then earlier start of the last piece, then the
/// earlier prefix (its rank in the start position's list).
fn nbest_order(a: &(f64, u32, u32), b: &(f64, u32, u32)) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then(a.1.cmp(&b.1))
        .then(a.2.cmp(&b.2))
}

impl UnigramModel {
    /// `pieces[i]` is (piece, score) of id `i`. Pieces must be non-empty and distinct, scores
    /// finite; `unk_id` must index `pieces`. No byte fallback; see
    /// [`with_byte_fallback`](Self::with_byte_fallback).
    pub fn new(pieces: &[(String, f64)], unk_id: Option<u32>) -> Result<Self, Error> {
        if pieces.len() >= UNK_NODE as usize {
            return Err(Error::Invalid(format!(
                "vocab: {} pieces is more than u32 ids allow",
                pieces.len()
            )));
        }
        for (i, (piece, score)) in pieces.iter().enumerate() {
            if piece.is_empty() {
                return Err(Error::Invalid(format!("vocab[{i}]: the piece is empty")));
            }
            if !score.is_finite() {
                return Err(Error::Invalid(format!(
                    "vocab[{i}]: the score of {piece:?} must be finite, found {score}"
                )));
            }
        }
        if let Some(unk) = unk_id {
            if unk as usize >= pieces.len() {
                return Err(Error::Invalid(format!(
                    "unk_id: {unk} is out of range for {} pieces",
                    pieces.len()
                )));
            }
        }
        let alphabet = Alphabet::new(pieces)?;
        let mut encoded: Vec<(Vec<u8>, u32)> = Vec::with_capacity(pieces.len());
        for (i, (piece, _)) in pieces.iter().enumerate() {
            let mut units = Vec::with_capacity(piece.len());
            alphabet.encode(piece, &mut units);
            encoded.push((units, i as u32));
        }
        encoded.sort_unstable();
        if let Some(w) = encoded.windows(2).find(|w| w[0].0 == w[1].0) {
            let (first, later) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
            return Err(Error::Invalid(format!(
                "vocab[{later}]: piece {:?} duplicates vocab[{first}]",
                pieces[later as usize].0
            )));
        }
        let keys: Vec<(&[u8], u32)> = encoded.iter().map(|(u, i)| (u.as_slice(), *i)).collect();
        let scores: Vec<f64> = pieces.iter().map(|(_, s)| *s).collect();
        let min_score = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let min_score = if pieces.is_empty() { 0.0 } else { min_score };
        Ok(Self {
            alphabet,
            // Hottest subtree first, by the best score under a node.
            trie: DoubleArray::build(
                &keys,
                |id| scores[id as usize],
                Hottest::new(|under: &[(&[u8], u32)]| {
                    (under.iter())
                        .map(|&(_, id)| OrderedScore(scores[id as usize]))
                        .max()
                        .unwrap_or(OrderedScore(f64::NEG_INFINITY))
                }),
            )?,
            n_pieces: pieces.len(),
            unk_id,
            unk_score: min_score - UNK_PENALTY,
            byte_fallback: None,
        })
    }

    /// HF's `byte_fallback`: a (fused) run of unknown characters becomes one `<0xNN>` piece per
    /// UTF-8 byte, each spanning the whole run, when all of them are pieces; else the unknown id.
    /// Only the output changes, never the lattice.
    pub fn with_byte_fallback(mut self, on: bool) -> Self {
        self.byte_fallback = on.then(|| {
            let mut ids = Box::new([NONE; 256]);
            for (b, slot) in ids.iter_mut().enumerate() {
                *slot = self.piece_id(&format!("<0x{b:02X}>")).unwrap_or(NONE);
            }
            ids
        });
        self
    }

    pub fn unk_id(&self) -> Option<u32> {
        self.unk_id
    }

    pub fn vocab_size(&self) -> usize {
        self.n_pieces
    }

    /// The id of `piece`, if it is in the vocabulary.
    pub fn piece_id(&self, piece: &str) -> Option<u32> {
        let mut units = Vec::new();
        self.alphabet.encode(piece, &mut units);
        self.trie.get(&units) // a character in no piece is unit 0, which no key contains
    }

    /// Append the ids of the best segmentation of `word` to `out`.
    ///
    /// Infallible: with `unk_id` Some every word has a segmentation. With `unk_id` None a word
    /// that no segmentation covers appends nothing; use [`try_encode`](Self::try_encode) to get
    /// the error instead.
    pub fn encode(&self, word: &str, out: &mut Vec<u32>) {
        let _ = self.try_encode(word, out);
    }

    /// Like [`encode`](Self::encode), but a word no segmentation covers (possible only with
    /// `unk_id` None) is an error naming the character, and `out` is left as it was.
    pub fn try_encode(&self, word: &str, out: &mut Vec<u32>) -> Result<(), Error> {
        self.best_path(word, |s| {
            self.emit_fused(word, &s.units, &s.path, |id, _, _| out.push(id))
        })
    }

    /// Like [`try_encode`](Self::try_encode), with each token's byte span in `word`:
    /// (id, start, end).
    pub fn encode_spans(
        &self,
        word: &str,
        out: &mut Vec<(u32, usize, usize)>,
    ) -> Result<(), Error> {
        self.best_path(word, |s| {
            let mut byte_at = Vec::new();
            self.alphabet.byte_offsets(word, &mut byte_at);
            self.emit_fused(word, &s.units, &s.path, |id, a, b| {
                out.push((id, byte_at[a] as usize, byte_at[b] as usize))
            })
        })
    }

    /// Runs Viterbi on the thread's scratch buffers and hands them to `finish`.
    fn best_path(&self, word: &str, finish: impl FnOnce(&Scratch)) -> Result<(), Error> {
        if word.is_empty() {
            return Ok(());
        }
        check_length(word)?;
        let mut finish = Some(finish);
        let mut run = |scratch: &mut Scratch| {
            self.viterbi(word, scratch)?;
            if let Some(finish) = finish.take() {
                finish(scratch);
            }
            Ok(())
        };
        // Fresh buffers only if the thread's are unavailable (re-entered, or torn down).
        let used = SCRATCH.try_with(|cell| cell.try_borrow_mut().ok().map(|mut s| run(&mut s)));
        match used {
            Ok(Some(result)) => result,
            _ => run(&mut Scratch::default()),
        }
    }

    /// sentencepiece's fast Viterbi: one pass over start positions, pushing each piece found
    /// from a reached start to its end; a later candidate must be strictly better (HF's ties).
    /// Leaves the word's units in `s.units` and the best path, in unit positions, in `s.path`.
    fn viterbi(&self, word: &str, s: &mut Scratch) -> Result<(), Error> {
        s.units.clear();
        self.alphabet.encode(word, &mut s.units);
        let units = &s.units;
        let n = units.len();
        // Only `prev` needs resetting: `score` and `node` are read where `prev` is set.
        s.prev.clear();
        s.prev.resize(n + 1, NONE);
        if s.score.len() <= n {
            s.score.resize(n + 1, 0.0);
            s.node.resize(n + 1, NONE);
        }
        s.prev[0] = 0;
        s.score[0] = 0.0;
        let units = &s.units[..n];
        let score = &mut s.score[..=n];
        let prev = &mut s.prev[..=n];
        let node = &mut s.node[..=n];
        let mut start = 0usize;
        while start < n {
            let width = unit_width(units[start]);
            if prev[start] != NONE {
                let here = score[start];
                let mut has_single = false;
                self.trie.prefixes(units, start, |end, slot, piece_score| {
                    let candidate = piece_score + here;
                    if prev[end] == NONE || candidate > score[end] {
                        score[end] = candidate;
                        prev[end] = start as u32;
                        node[end] = slot;
                    }
                    has_single |= end - start == width;
                });
                if !has_single && self.unk_id.is_some() {
                    let end = start + width;
                    let candidate = self.unk_score + here;
                    if prev[end] == NONE || candidate > score[end] {
                        score[end] = candidate;
                        prev[end] = start as u32;
                        node[end] = UNK_NODE;
                    }
                }
            }
            start += width;
        }
        if prev[n] == NONE {
            return Err(self.uncovered(word, |j| prev[j] != NONE));
        }
        s.path.clear();
        let mut end = n;
        while end > 0 {
            let start = s.prev[end] as usize;
            let id = match s.node[end] {
                UNK_NODE => self.unk_id.unwrap_or(NONE),
                slot => self.trie.id(slot),
            };
            s.path.push((start as u32, end as u32, id));
            end = start;
        }
        s.path.reverse();
        Ok(())
    }

    /// Emits a path's tokens (unit positions), fusing each run of `unk_id` nodes into one
    /// (HF's fuse_unk), then byte fallback for a run that is still unknown.
    fn emit_fused(
        &self,
        word: &str,
        units: &[u8],
        path: &[(u32, u32, u32)],
        mut emit: impl FnMut(u32, usize, usize),
    ) {
        let unk = self.unk_id.unwrap_or(NONE);
        let mut k = 0;
        while k < path.len() {
            let (start, mut end, id) = path[k];
            k += 1;
            if id != unk {
                emit(id, start as usize, end as usize);
                continue;
            }
            let mut fused = false;
            while k < path.len() && path[k].2 == unk {
                end = path[k].1;
                fused = true;
                k += 1;
            }
            // HF maps the fused text back through the vocabulary: usually unknown, so unk. A
            // lone unk node is unknown text too, unless it is the unk piece itself, matched as text
            // (that only matters for byte fallback, which spells unknown text in bytes).
            let found = if fused || self.byte_fallback.is_some() {
                self.trie.get(&units[start as usize..end as usize])
            } else {
                None
            };
            if let (None, Some(byte_ids)) = (found, &self.byte_fallback) {
                let mut byte_at = Vec::new();
                self.alphabet.byte_offsets(word, &mut byte_at);
                let text = &word.as_bytes()
                    [byte_at[start as usize] as usize..byte_at[end as usize] as usize];
                if text.iter().all(|&b| byte_ids[b as usize] != NONE) {
                    for &b in text {
                        emit(byte_ids[b as usize], start as usize, end as usize);
                    }
                    continue;
                }
            }
            emit(found.unwrap_or(unk), start as usize, end as usize);
        }
    }

    /// The error for a word no path covers: the furthest reachable position starts no piece.
    fn uncovered(&self, word: &str, reached: impl Fn(usize) -> bool) -> Error {
        let mut byte_at = Vec::new();
        self.alphabet.byte_offsets(word, &mut byte_at);
        let furthest = (0..byte_at.len() - 1)
            .rev()
            .find(|&j| reached(j))
            .unwrap_or(0);
        let byte = byte_at[furthest] as usize;
        let at = word[..byte].chars().count();
        let ch = word[byte..].chars().next().unwrap_or('\u{FFFD}');
        Error::Invalid(format!(
            "Unigram: no piece covers character {ch:?} at position {at} of {word:?}, and unk_id is null"
        ))
    }

    fn lattice(&self, word: &str) -> Lattice {
        let mut units = Vec::new();
        self.alphabet.encode(word, &mut units);
        let n = units.len();
        let mut edges: Vec<Edge> = Vec::new();
        let mut start = 0usize;
        while start < n {
            let width = unit_width(units[start]);
            let mut has_single = false;
            self.trie.prefixes(&units, start, |end, slot, score| {
                edges.push(Edge {
                    start: start as u32,
                    end: end as u32,
                    id: self.trie.id(slot),
                    score,
                });
                has_single |= end - start == width;
            });
            if let (false, Some(unk)) = (has_single, self.unk_id) {
                edges.push(Edge {
                    start: start as u32,
                    end: (start + width) as u32,
                    id: unk,
                    score: self.unk_score,
                });
            }
            start += width;
        }
        edges.sort_by_key(|e| e.end); // stable: starts stay increasing within an end
        let mut first = vec![0u32; n + 2];
        for e in &edges {
            first[e.end as usize + 1] += 1;
        }
        for j in 1..first.len() {
            first[j] += first[j - 1];
        }
        Lattice {
            units,
            edges,
            first,
        }
    }

    /// The `n` best segmentations as (ids, score), best first: higher score, then the earlier
    /// start of the last piece, then (same last piece) the earlier prefix by this same order.
    /// The first entry is always `encode`'s. Scores are left-to-right float sums, as in Python.
    /// A word with no segmentation (only possible with `unk_id` None) has an empty list.
    pub fn nbest(&self, word: &str, n: usize) -> Vec<(Vec<u32>, f64)> {
        if n == 0 || check_length(word).is_err() {
            return Vec::new();
        }
        let lattice = self.lattice(word);
        let len = lattice.len();
        // kept[range[j]]: up to n (score, edge index, rank of the prefix at edge.start), best first
        let mut kept: Vec<(f64, u32, u32)> = vec![(0.0, NONE, 0)];
        let mut range: Vec<(u32, u32)> = vec![(0, 0); len + 1];
        range[0] = (0, 1);
        let mut candidates: Vec<(f64, u32, u32)> = Vec::new();
        for end in 1..=len {
            candidates.clear();
            let offset = lattice.first[end] as usize;
            for (k, e) in lattice.incoming(end).iter().enumerate() {
                let (lo, hi) = range[e.start as usize];
                for (rank, prefix) in kept[lo as usize..hi as usize].iter().enumerate() {
                    candidates.push((prefix.0 + e.score, (offset + k) as u32, rank as u32));
                }
            }
            // `nbest_order` compares starts, which live in the edges: look them up.
            candidates.sort_by(|a, b| {
                let sa = lattice.edges[a.1 as usize].start;
                let sb = lattice.edges[b.1 as usize].start;
                nbest_order(&(a.0, sa, a.2), &(b.0, sb, b.2))
            });
            candidates.truncate(n);
            let lo = kept.len() as u32;
            kept.extend_from_slice(&candidates);
            range[end] = (lo, kept.len() as u32);
        }
        let (lo, hi) = range[len];
        let mut result = Vec::with_capacity((hi - lo) as usize);
        let mut path: Vec<(u32, u32, u32)> = Vec::new();
        for &(score, edge, rank) in &kept[lo as usize..hi as usize] {
            path.clear();
            let (mut edge, mut rank) = (edge, rank);
            while edge != NONE {
                let e = lattice.edges[edge as usize];
                path.push((e.start, e.end, e.id));
                let entry = kept[(range[e.start as usize].0 + rank) as usize];
                edge = entry.1;
                rank = entry.2;
            }
            path.reverse();
            let mut ids = Vec::with_capacity(path.len());
            self.emit_fused(word, &lattice.units, &path, |id, _, _| ids.push(id));
            result.push((ids, score));
        }
        result
    }

    /// One segmentation drawn from q(z) ∝ P(z)^alpha with a fresh `SplitMix64::new(seed)`.
    ///
    /// Infallible: an `alpha` that is not finite and >= 0, or a word no segmentation covers
    /// (only with `unk_id` None), gives an empty Vec; [`sample_with`](Self::sample_with) reports
    /// those as errors.
    pub fn sample(&self, word: &str, alpha: f64, seed: u64) -> Vec<u32> {
        let mut out = Vec::new();
        match self.sample_with(word, alpha, &mut SplitMix64::new(seed), &mut out) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }

    /// One segmentation drawn from q(z) ∝ P(z)^alpha, continuing `rng` (so one stream can run
    /// through many words); its ids are appended to `out`. Forward filtering, backward sampling
    /// in log space:
    ///
    /// ```text
    /// logZ[0] = 0;  logZ[j] = logsumexp over nodes i->j of (logZ[i] + alpha * score)
    /// from j = len back to 0: u = rng.next_f64(); take the first node (by increasing start)
    /// whose running weight exceeds u * total, the weights being exp(t - max t) for
    /// t = logZ[i] + alpha * score, summed left to right.
    /// ```
    ///
    /// The Python reference performs the same float operations in the same order, so both
    /// draw the same path. One draw per piece of the path, from its end.
    pub fn sample_with(
        &self,
        word: &str,
        alpha: f64,
        rng: &mut SplitMix64,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(Error::Invalid(format!(
                "sample: alpha must be a finite number >= 0, found {alpha}"
            )));
        }
        check_length(word)?;
        let lattice = self.lattice(word);
        let len = lattice.len();
        let mut log_z: Vec<Option<f64>> = vec![None; len + 1];
        log_z[0] = Some(0.0);
        let mut terms: Vec<(f64, Edge)> = Vec::new();
        for end in 1..=len {
            collect_terms(lattice.incoming(end), &log_z, alpha, &mut terms);
            if !terms.is_empty() {
                let top = max_term(&terms);
                let mut total = 0.0;
                for (t, _) in &terms {
                    total += (t - top).exp();
                }
                log_z[end] = Some(top + total.ln());
            }
        }
        if log_z[len].is_none() {
            return Err(self.uncovered(word, |j| log_z[j].is_some()));
        }
        let mut path: Vec<(u32, u32, u32)> = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        let mut end = len;
        while end > 0 {
            collect_terms(lattice.incoming(end), &log_z, alpha, &mut terms);
            let top = max_term(&terms);
            weights.clear();
            weights.extend(terms.iter().map(|(t, _)| (t - top).exp()));
            let mut total = 0.0;
            for w in &weights {
                total += w;
            }
            let target = rng.next_f64() * total;
            let mut chosen = terms[terms.len() - 1].1;
            let mut running = 0.0;
            for (w, (_, e)) in weights.iter().zip(&terms) {
                running += w;
                if target < running {
                    chosen = *e;
                    break;
                }
            }
            path.push((chosen.start, chosen.end, chosen.id));
            end = chosen.start as usize;
        }
        path.reverse();
        self.emit_fused(word, &lattice.units, &path, |id, _, _| out.push(id));
        Ok(())
    }
}

fn collect_terms(edges: &[Edge], log_z: &[Option<f64>], alpha: f64, terms: &mut Vec<(f64, Edge)>) {
    terms.clear();
    for e in edges {
        if let Some(z) = log_z[e.start as usize] {
            terms.push((z + alpha * e.score, *e));
        }
    }
}

/// The first maximal term, as Python's `max` picks it.
fn max_term(terms: &[(f64, Edge)]) -> f64 {
    let mut top = terms[0].0;
    for (t, _) in &terms[1..] {
        if *t > top {
            top = *t;
        }
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(pieces: &[(&str, f64)], unk: Option<u32>) -> UnigramModel {
        let owned: Vec<(String, f64)> = pieces.iter().map(|(p, s)| (p.to_string(), *s)).collect();
        UnigramModel::new(&owned, unk).unwrap()
    }

    fn encode(m: &UnigramModel, word: &str) -> Vec<u32> {
        let mut out = Vec::new();
        m.try_encode(word, &mut out).unwrap();
        let mut infallible = Vec::new();
        m.encode(word, &mut infallible);
        assert_eq!(out, infallible);
        out
    }

    /// The specification's example: a, b (1/4), ab (7/20), aba (1/10), bab (1/20).
    fn abab() -> UnigramModel {
        let p = |x: f64| x.ln();
        model(
            &[
                ("a", p(0.25)),
                ("b", p(0.25)),
                ("ab", p(0.35)),
                ("aba", p(0.1)),
                ("bab", p(0.05)),
            ],
            None,
        )
    }

    #[test]
    fn seed_example_abab_is_ab_ab() {
        assert_eq!(encode(&abab(), "abab"), [2, 2]);
    }

    #[test]
    fn seed_example_ties_go_to_the_earliest_last_piece() {
        let m = model(&[("▁", -1.0), ("a", -1.0), ("aa", -2.0)], None);
        assert_eq!(encode(&m, "▁aaa"), [0, 1, 2]);
    }

    #[test]
    fn hf_doc_example() {
        let m = model(
            &[
                ("<unk>", 0.0),
                ("a", 0.0),
                ("b", 0.0),
                ("c", 0.0),
                ("d", 0.0),
                ("cd", 1.0),
                ("ab", 2.0),
                ("abc", 5.0),
                ("abcd", 10.0),
            ],
            Some(0),
        );
        // abcd a cd xx: the two unknown x fuse into one unk
        assert_eq!(encode(&m, "abcdacdxx"), [8, 1, 5, 0]);
        let mut spans = Vec::new();
        m.encode_spans("abcdacdxx", &mut spans).unwrap();
        assert_eq!(spans.last(), Some(&(0, 7, 9)));
    }

    #[test]
    fn unknown_runs_fuse_with_the_unk_piece_itself() {
        let m = model(&[("<unk>", 0.0), ("a", -1.0)], Some(0));
        // "<unk>" matched as a piece, é unknown, "<unk>" again: one fused token
        assert_eq!(encode(&m, "a<unk>é<unk>a"), [1, 0, 1]);
        assert_eq!(encode(&m, "ééé"), [0]);
    }

    #[test]
    fn byte_fallback_spells_an_unknown_run_in_byte_pieces() {
        let pieces = [
            ("<unk>", 0.0),
            ("a", -1.0),
            ("<0xC3>", -9.0),
            ("<0xA9>", -9.0),
            ("<0x78>", -9.0),
        ];
        let m = model(&pieces, Some(0)).with_byte_fallback(true);
        assert_eq!(encode(&m, "aééa"), [1, 2, 3, 2, 3, 1]); // the fused run é é
        assert_eq!(encode(&m, "aéxa"), [1, 2, 3, 4, 1]);
        assert_eq!(encode(&m, "aéya"), [1, 0, 1]); // y has no byte piece: the run stays unk
        let mut spans = Vec::new();
        m.encode_spans("aéa", &mut spans).unwrap();
        assert_eq!(spans, [(1, 0, 1), (2, 1, 3), (3, 1, 3), (1, 3, 4)]);
        assert_eq!(m.nbest("aé", 1)[0].0, [1, 2, 3]);
        assert_eq!(encode(&model(&pieces, Some(0)), "aéa"), [1, 0, 1]);
        // The unk piece matched as text is not unknown text: no byte fallback for it.
        let tied = model(&[("<unk>", 0.0), ("a", -1.0), ("<0x3C>", -1.0)], Some(0))
            .with_byte_fallback(true);
        assert_eq!(encode(&tied, "a<unk>"), [1, 0]);
    }

    #[test]
    fn a_fused_run_that_spells_a_piece_becomes_that_piece() {
        // Scores high enough that two unknown nodes (90 + 90) beat the piece xy (100).
        let m = model(&[("<unk>", 100.0), ("xy", 100.0), ("a", 100.0)], Some(0));
        assert_eq!(encode(&m, "axya"), [2, 1, 2]);
    }

    #[test]
    fn without_unk_uncovered_words_fail_and_spanned_ones_do_not() {
        let m = model(&[("abc", -1.0), ("d", -1.0)], None);
        assert_eq!(encode(&m, "abcd"), [0, 1]);
        let mut out = vec![7];
        let err = m.try_encode("abcxd", &mut out).unwrap_err();
        assert!(err.to_string().contains("'x' at position 3"), "{err}");
        assert_eq!(out, [7]);
        m.encode("abcxd", &mut out);
        assert_eq!(out, [7]);
        assert!(m.nbest("abcx", 2).is_empty());
        assert!(m.sample("abcx", 1.0, 1).is_empty());
        let err = m
            .sample_with("abcx", 1.0, &mut SplitMix64::new(1), &mut out)
            .unwrap_err();
        assert!(err.to_string().contains("'x' at position 3"), "{err}");
        assert_eq!(encode(&m, ""), Vec::<u32>::new());
    }

    #[test]
    fn constructor_rejects_bad_tables() {
        let err = |p: &[(&str, f64)], unk| {
            let owned: Vec<(String, f64)> = p.iter().map(|(a, s)| (a.to_string(), *s)).collect();
            UnigramModel::new(&owned, unk).unwrap_err().to_string()
        };
        assert!(err(&[("a", 0.0), ("b", 0.0), ("a", 1.0)], None)
            .contains("vocab[2]: piece \"a\" duplicates vocab[0]"));
        assert!(err(&[("a", f64::NAN)], None).contains("vocab[0]"));
        assert!(err(&[("", 0.0)], None).contains("vocab[0]: the piece is empty"));
        assert!(err(&[("a", 0.0)], Some(1)).contains("unk_id: 1 is out of range for 1 pieces"));
    }

    #[test]
    fn multibyte_pieces_and_unknowns_cut_at_char_boundaries() {
        let m = model(
            &[
                ("<unk>", -5.0),
                ("▁При", -2.0),
                ("вет", -2.0),
                ("▁", -3.0),
                ("П", -4.0),
            ],
            Some(0),
        );
        assert_eq!(encode(&m, "▁Привет"), [1, 2]);
        let mut spans = Vec::new();
        m.encode_spans("▁Пжж", &mut spans).unwrap();
        assert_eq!(spans, [(3, 0, 3), (4, 3, 5), (0, 5, 9)]);
    }

    #[test]
    fn trie_finds_exactly_the_pieces() {
        let words = [
            "a",
            "ab",
            "abc",
            "b",
            "ba",
            "é",
            "éa",
            "z\u{10348}",
            "\u{7f}",
            "\u{ff}",
        ];
        let pieces: Vec<(String, f64)> = words.iter().map(|w| (w.to_string(), -1.0)).collect();
        let m = UnigramModel::new(&pieces, None).unwrap();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(m.piece_id(w), Some(i as u32));
        }
        for w in ["", "c", "abcd", "e", "\u{10348}", "áa"] {
            assert_eq!(m.piece_id(w), None, "{w}");
        }
    }

    /// A plain Viterbi over characters with a hash map, the rules spelled out once more.
    fn naive(pieces: &[(String, f64)], unk: Option<u32>, word: &str) -> Option<Vec<u32>> {
        let lookup: std::collections::HashMap<&str, u32> = pieces
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (p.as_str(), i as u32))
            .collect();
        let min = pieces.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let at: Vec<usize> = word
            .char_indices()
            .map(|(b, _)| b)
            .chain([word.len()])
            .collect();
        let n = at.len() - 1;
        let mut best: Vec<Option<(f64, usize, u32)>> = vec![None; n + 1];
        best[0] = Some((0.0, 0, 0));
        for start in 0..n {
            let Some((here, _, _)) = best[start] else {
                continue;
            };
            let mut single = false;
            for end in start + 1..=n {
                if let Some(&id) = lookup.get(&word[at[start]..at[end]]) {
                    let cand = pieces[id as usize].1 + here;
                    if best[end].is_none_or(|b| cand > b.0) {
                        best[end] = Some((cand, start, id));
                    }
                    single |= end == start + 1;
                }
            }
            if let (false, Some(u)) = (single, unk) {
                let cand = min - UNK_PENALTY + here;
                if best[start + 1].is_none_or(|b| cand > b.0) {
                    best[start + 1] = Some((cand, start, u));
                }
            }
        }
        let mut path = Vec::new();
        let mut end = n;
        while end > 0 {
            let (_, start, id) = best[end]?;
            path.push((start, end, id));
            end = start;
        }
        path.reverse();
        let mut out: Vec<(u32, usize, usize)> = Vec::new();
        for (s, e, id) in path {
            match out.last_mut() {
                Some(last) if Some(id) == unk && last.0 == NONE => last.2 = e,
                _ => out.push((if Some(id) == unk { NONE } else { id }, s, e)),
            }
        }
        Some(
            out.into_iter()
                .map(|(id, s, e)| match id {
                    NONE => lookup
                        .get(&word[at[s]..at[e]])
                        .copied()
                        .unwrap_or(unk.unwrap()),
                    id => id,
                })
                .collect(),
        )
    }

    #[test]
    fn agrees_with_a_naive_viterbi_on_large_alphabets() {
        // 400 CJK characters: more than 239 distinct, so the three-unit escape codes are used.
        let chars: Vec<char> = (0x4E00u32..0x4E00 + 400)
            .filter_map(char::from_u32)
            .chain("ab▁é𝔸".chars())
            .collect();
        let mut state = 99u64;
        let mut next = |k: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % k
        };
        for round in 0..40 {
            // Even rounds use all 405 characters, odd rounds 40 (single-unit codes only).
            let pool = if round % 2 == 0 {
                &chars[..]
            } else {
                &chars[chars.len() - 40..]
            };
            let mut seen = std::collections::HashSet::new();
            let mut pieces: Vec<(String, f64)> = Vec::new();
            for k in 0..500 {
                let len = if k < 300 { 1 } else { 2 + next(3) };
                let piece: String = (0..len).map(|_| pool[next(pool.len())]).collect();
                if seen.insert(piece.clone()) {
                    pieces.push((piece, -((next(40) as f64) / 4.0)));
                }
            }
            let unk = if round % 3 == 0 {
                None
            } else {
                Some(next(pieces.len()) as u32)
            };
            let m = UnigramModel::new(&pieces, unk).unwrap();
            let escapes = m.alphabet.bmp.iter().any(|&packed| packed >> 24 == 3);
            assert_eq!(escapes, round % 2 == 0);
            for _ in 0..50 {
                // Runs of whole pieces (so long matches happen) and of random characters.
                let mut word = String::new();
                for _ in 0..next(6) {
                    match next(3) {
                        0 => word.push('q'),
                        1 => word.push(pool[next(pool.len())]),
                        _ => word.push_str(&pieces[next(pieces.len())].0),
                    }
                }
                let mut out = Vec::new();
                match (naive(&pieces, unk, &word), m.try_encode(&word, &mut out)) {
                    (Some(expected), Ok(())) => assert_eq!(out, expected, "{word:?}"),
                    (None, Err(_)) => {}
                    (a, b) => panic!("{word:?}: naive {a:?}, fast {b:?}"),
                }
            }
        }
    }

    #[test]
    fn nbest_lists_the_six_abab_paths_in_declared_order() {
        let best = abab().nbest("abab", 10);
        let ids: Vec<Vec<u32>> = best.iter().map(|(ids, _)| ids.clone()).collect();
        assert_eq!(
            ids,
            vec![
                vec![2, 2],
                vec![3, 1],
                vec![0, 1, 2],
                vec![2, 0, 1],
                vec![0, 4],
                vec![0, 1, 0, 1]
            ]
        );
        let probs: Vec<f64> = best.iter().map(|(_, s)| s.exp()).collect();
        let exact = [
            49.0 / 400.0,
            1.0 / 40.0,
            7.0 / 320.0,
            7.0 / 320.0,
            1.0 / 80.0,
            1.0 / 256.0,
        ];
        for (p, q) in probs.iter().zip(exact) {
            assert!((p - q).abs() < 1e-12, "{p} vs {q}");
        }
        assert_eq!(abab().nbest("abab", 2).len(), 2);
        assert!(abab().nbest("abab", 0).is_empty());
        assert_eq!(abab().nbest("", 3), vec![(vec![], 0.0)]);
    }

    #[test]
    fn nbest_first_is_viterbi_on_ties() {
        let m = model(&[("▁", -1.0), ("a", -1.0), ("aa", -2.0)], None);
        let best = m.nbest("▁aaa", 5);
        assert_eq!(best[0].0, encode(&m, "▁aaa"));
        // all three paths score -4: last piece starting earliest first, then by the prefix
        let ids: Vec<Vec<u32>> = best.iter().map(|(ids, _)| ids.clone()).collect();
        assert_eq!(ids, vec![vec![0, 1, 2], vec![0, 2, 1], vec![0, 1, 1, 1]]);
    }

    #[test]
    fn sampling_is_deterministic_and_pinned() {
        let m = abab();
        let mut rng = SplitMix64::new(7);
        let mut draws = Vec::new();
        for _ in 0..8 {
            let mut out = Vec::new();
            m.sample_with("abab", 1.0, &mut rng, &mut out).unwrap();
            draws.push(out);
        }
        let mut again = SplitMix64::new(7);
        for d in &draws {
            let mut out = Vec::new();
            m.sample_with("abab", 1.0, &mut again, &mut out).unwrap();
            assert_eq!(&out, d);
        }
        // The same eight draws are pinned in tests/tok/test_unigram.py (Python reference).
        assert_eq!(draws, pinned_abab_draws());
        assert_eq!(m.sample("abab", 1.0, 7), draws[0]);
        let mut out = Vec::new();
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(m
                .sample_with("abab", bad, &mut SplitMix64::new(7), &mut out)
                .is_err());
            assert!(m.sample("abab", bad, 7).is_empty());
        }
        assert_eq!(m.sample("", 1.0, 7), Vec::<u32>::new());
    }

    fn pinned_abab_draws() -> Vec<Vec<u32>> {
        vec![
            vec![2, 2],
            vec![2, 0, 1],
            vec![2, 2],
            vec![2, 2],
            vec![2, 2],
            vec![0, 1, 0, 1],
            vec![0, 1, 2],
            vec![2, 2],
        ]
    }

    #[test]
    fn sampling_frequencies_follow_the_tempered_path_probabilities() {
        let m = abab();
        let paths = m.nbest("abab", 10);
        for alpha in [1.0, 0.5] {
            let weights: Vec<f64> = paths.iter().map(|(_, s)| (alpha * s).exp()).collect();
            let total: f64 = weights.iter().sum();
            let mut counts = vec![0usize; paths.len()];
            let mut rng = SplitMix64::new(2024);
            let draws = 20_000;
            for _ in 0..draws {
                let mut out = Vec::new();
                m.sample_with("abab", alpha, &mut rng, &mut out).unwrap();
                let k = paths.iter().position(|(ids, _)| *ids == out).unwrap();
                counts[k] += 1;
            }
            let chi2: f64 = counts
                .iter()
                .zip(&weights)
                .map(|(&o, w)| {
                    let e = draws as f64 * w / total;
                    (o as f64 - e).powi(2) / e
                })
                .sum();
            assert!(
                chi2 < 20.515,
                "alpha {alpha}: chi2 {chi2} (df 5, p = 0.001)"
            );
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        let m = model(
            &[("<unk>", 0.0), ("a", -1.0), ("\u{10ffff}", -1.0)],
            Some(0),
        );
        for w in ["\u{0}", "\u{10ffff}\u{10ffff}", "a\u{0}a", "\u{feff}"] {
            let _ = encode(&m, w);
            assert!(!m.nbest(w, 3).is_empty());
            assert!(!m.sample(w, 0.0, 1).is_empty());
        }
        let empty = UnigramModel::new(&[], None).unwrap();
        assert!(empty.try_encode("a", &mut Vec::new()).is_err());
        assert!(empty.nbest("a", 3).is_empty());
    }

    /// Throughput of `encode` on `▁`-prefixed space-split words of the shared multilingual
    /// corpus with the rut5-base vocabulary (from `../shared/data`, or `$TINYLLM_SHARED_DATA`).
    /// Run by hand: `cargo test --release unigram::tests::throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn throughput() {
        let root = match std::env::var_os("TINYLLM_SHARED_DATA") {
            Some(dir) => std::path::PathBuf::from(dir),
            None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
        };
        let json =
            std::fs::read_to_string(root.join("tokenizers/rut5-base/tokenizer.json")).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let pieces: Vec<(String, f64)> = doc["model"]["vocab"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e[0].as_str().unwrap().to_string(), e[1].as_f64().unwrap()))
            .collect();
        let unk = doc["model"]["unk_id"].as_u64().map(|u| u as u32);
        let t = std::time::Instant::now();
        let m = UnigramModel::new(&pieces, unk).unwrap();
        println!("build: {:?}, {} slots", t.elapsed(), m.trie.len());

        let multi = root.join("corpora/multi");
        measure(&m, "corpora/multi", &words_of(&multi));
        let ru = words_of(&multi.join("leipzig-sentences/ru.txt"));
        let ru: Vec<String> = (0..20).flat_map(|_| ru.iter().cloned()).collect();
        measure(&m, "leipzig ru.txt x20", &ru);
        if std::env::var_os("UNIGRAM_BENCH_DEBUG").is_some() {
            let one: Vec<String> = (0..200_000).map(|_| "▁предполагал".to_string()).collect();
            measure(&m, "one word", &one);
            let few: Vec<String> = ru.iter().take(200).cloned().cycle().take(200_000).collect();
            measure(&m, "200 words", &few);
            let mut sorted = ru.clone();
            sorted.sort();
            measure(&m, "ru sorted", &sorted);
        }
    }

    /// `▁`-prefixed space- and newline-separated words of every .txt file under `path`.
    fn words_of(path: &std::path::Path) -> Vec<String> {
        let mut words = Vec::new();
        let mut files = vec![path.to_path_buf()];
        while let Some(p) = files.pop() {
            if p.is_dir() {
                for e in std::fs::read_dir(&p).unwrap() {
                    files.push(e.unwrap().path());
                }
            } else if p.extension().is_some_and(|x| x == "txt") {
                let text = std::fs::read_to_string(&p).unwrap();
                for w in text.split([' ', '\n']).filter(|w| !w.is_empty()) {
                    words.push(format!("▁{w}"));
                }
            }
        }
        words
    }

    fn measure(m: &UnigramModel, name: &str, words: &[String]) {
        // This thread's CPU time where Linux exposes it: steadier than wall time on a busy box.
        let clock = || match std::fs::read_to_string("/proc/thread-self/schedstat") {
            Ok(s) => s
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<f64>().ok())
                .map(|ns| ns * 1e-9),
            Err(_) => None,
        };
        let epoch = std::time::Instant::now();
        let now = || clock().unwrap_or_else(|| epoch.elapsed().as_secs_f64());
        let bytes: usize = words.iter().map(|w| w.len()).sum();
        let mut out = Vec::with_capacity(1 << 20);
        let mut best = f64::MAX;
        for _ in 0..10 {
            out.clear();
            let t = now();
            for w in words {
                m.encode(w, &mut out);
            }
            best = best.min(now() - t);
        }
        println!(
            "{name}: {} words, {:.1} MB, {} ids: {:.1} MB/s (best of 10)",
            words.len(),
            bytes as f64 / 1e6,
            out.len(),
            bytes as f64 / 1e6 / best
        );
    }
}
