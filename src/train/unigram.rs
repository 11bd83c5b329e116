//! Unigram vocabulary training: EM over word lattices with pruning by likelihood loss.
//!
//! The contract (steps 1-8) is spelled out in `tinyllm.train.unigram` (`train_unigram_reference`), the readable
//! reference; this file performs the same integer and float operations in the same order, so the
//! two return the same pieces and scores, bit for bit. Floats are never summed in an order that
//! depends on threads: the E-step accumulates expected counts in fixed point (`floor(x · 2^32 +
//! 0.5)` as u128, exact and associative), Viterbi counts are integers, and every float sum runs
//! left to right over a fixed order.
//!
//! Memory stays bounded on large corpora:
//!
//! - words are held once, as one flat array of character ranks (required characters by rank,
//!   everything else `NONE`) with per-word offsets; pieces are (position, length) references into
//!   it, never owned strings, until the result is built;
//! - seed candidates are counted length by length (apriori): a substring of length L is counted
//!   only where its prefix and suffix of length L-1 reached frequency 2, and it is keyed by the
//!   id of its prefix plus its last character, so each level needs one small map;
//! - the trie over the pieces is a breadth-first child array (12 bytes a node) walked over
//!   character ranks; dropped pieces are unmapped in place and the trie is rebuilt once half of
//!   its pieces are gone.

use std::cmp::Ordering;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::Error;

/// Fixed-point scale of the expected counts (2^32).
pub const SCALE: f64 = 4294967296.0;
/// Gap below the lowest piece score given to an unknown character (as in encoding).
pub const UNK_PENALTY: f64 = crate::models::unigram::UNK_PENALTY;

const NONE: u32 = u32::MAX;
/// Words per parallel job.
const CHUNK: usize = 512;

/// How the M-step turns expected counts into scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MStep {
    /// Maximum likelihood: score = ln(c) - ln(sum c), i.e. p = c / sum c.
    MaximumLikelihood,
    /// Sentencepiece's variational update: score = digamma(c) - digamma(sum c).
    Digamma,
}

/// Training parameters (see the Python reference for their meaning and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Number of pieces wanted (the vocabulary size minus the special tokens).
    pub target: usize,
    pub character_coverage: f64,
    pub max_piece_length: usize,
    pub seed_size: usize,
    pub shrinking_factor: f64,
    pub sub_iterations: usize,
    pub m_step: MStep,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            target: 8000,
            character_coverage: 0.9995,
            max_piece_length: 16,
            seed_size: 1_000_000,
            shrinking_factor: 0.75,
            sub_iterations: 2,
            m_step: MStep::MaximumLikelihood,
        }
    }
}

/// What training did.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub required_chars: usize,
    pub seed_pieces: usize,
    pub rounds: usize,
    pub em_iterations: usize,
    /// Σ count × log-likelihood of the word, from the last E-step.
    pub objective: f64,
    pub pieces: usize,
    /// "size" (the size goal was reached) or "no_progress" (a prune removed nothing).
    pub stop_reason: &'static str,
}

// ---------------------------------------------------------------------------------------------
// Numerics shared with Python

/// ψ(x) for x > 0: the recurrence up to 7, then the asymptotic series (the reference's ops).
pub fn digamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 7.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    x -= 0.5;
    let t = 1.0 / x;
    let t2 = t * t;
    let t4 = t2 * t2;
    r +=
        x.ln() + t2 / 24.0 - 7.0 * t4 / 960.0 + 31.0 * t4 * t2 / 8064.0 - 127.0 * t4 * t4 / 30720.0;
    r
}

/// top + ln(Σ exp(t - top)), top = max, the sum left to right. `terms` is never empty.
fn logsumexp(terms: &[f64]) -> f64 {
    let mut top = terms[0];
    for &t in &terms[1..] {
        if t > top {
            top = t;
        }
    }
    let mut total = 0.0;
    for &t in terms {
        total += (t - top).exp();
    }
    top + total.ln()
}

/// floor(x · 2^32 + 0.5) as an exact integer (x >= 0).
#[inline]
fn fixed_point(x: f64) -> u128 {
    (x * SCALE + 0.5).floor() as u128
}

// ---------------------------------------------------------------------------------------------
// The corpus

/// Words as one flat array of character ranks among the required characters.
struct Corpus {
    /// The required characters, by rank.
    alphabet: Vec<char>,
    /// Rank of each character of each word in the required list, NONE if it is not required.
    ranks: Vec<u32>,
    /// Word w is chars[start[w]..start[w + 1]].
    start: Vec<u32>,
    counts: Vec<u64>,
}

impl Corpus {
    fn word(&self, w: usize) -> std::ops::Range<usize> {
        self.start[w] as usize..self.start[w + 1] as usize
    }

    fn len(&self) -> usize {
        self.counts.len()
    }

    /// The characters of a piece (pieces hold required characters only).
    fn text(&self, p: Piece) -> impl Iterator<Item = char> + '_ {
        self.ranks[p.pos as usize..(p.pos + p.len) as usize]
            .iter()
            .map(|&r| self.alphabet.get(r as usize).copied().unwrap_or('\u{FFFD}'))
    }

    /// Code point order of two pieces.
    fn compare(&self, a: Piece, b: Piece) -> Ordering {
        self.text(a).cmp(self.text(b))
    }

    fn string(&self, p: Piece) -> String {
        self.text(p).collect()
    }
}

/// A piece: `len` characters at `pos` of the flat corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    pos: u32,
    len: u32,
}

fn invalid(msg: String) -> Error {
    Error::Invalid(msg)
}

fn check(words: &[(String, u64)], o: &Options) -> Result<(), Error> {
    if o.target == 0 || o.target as u64 >= 1 << 32 {
        return Err(invalid(format!(
            "target: expected an integer in 1..2^32, found {}",
            o.target
        )));
    }
    let c = o.character_coverage;
    if !(c > 0.0 && c <= 1.0) {
        return Err(invalid(format!(
            "character_coverage: expected a number in (0, 1], found {c}"
        )));
    }
    if o.max_piece_length == 0 || o.max_piece_length > 255 {
        return Err(invalid(format!(
            "max_piece_length: expected an integer in 1..=255, found {}",
            o.max_piece_length
        )));
    }
    if o.seed_size as u64 >= 1 << 32 {
        return Err(invalid(format!(
            "seed_size: expected an integer below 2^32, found {}",
            o.seed_size
        )));
    }
    let s = o.shrinking_factor;
    if !(s > 0.0 && s < 1.0) {
        return Err(invalid(format!(
            "shrinking_factor: expected a number in (0, 1), found {s}"
        )));
    }
    if o.sub_iterations == 0 || o.sub_iterations > 1000 {
        return Err(invalid(format!(
            "sub_iterations: expected an integer in 1..=1000, found {}",
            o.sub_iterations
        )));
    }
    for (k, (word, count)) in words.iter().enumerate() {
        if word.is_empty() {
            return Err(invalid(format!(
                "words[{k}]: expected a non-empty word, found \"\""
            )));
        }
        if *count == 0 {
            return Err(invalid(format!(
                "words[{k}]: count of {word:?}: expected an integer >= 1, found 0"
            )));
        }
        if k > 0 && words[k - 1].0 >= *word {
            return Err(invalid(format!(
                "words[{k}]: {word:?} is not after {:?}; expected distinct words sorted by code point",
                words[k - 1].0
            )));
        }
    }
    Ok(())
}

/// Step 1 and the flat corpus: (corpus, required characters with their counts, by rank).
fn build_corpus(
    words: &[(String, u64)],
    coverage: f64,
) -> Result<(Corpus, Vec<(char, u64)>), Error> {
    let mut start: Vec<u32> = Vec::with_capacity(words.len() + 1);
    let mut counts: Vec<u64> = Vec::with_capacity(words.len());
    let mut char_count: FxHashMap<char, u64> = FxHashMap::default();
    let mut weighted: u128 = 0;
    let mut n_chars = 0usize;
    start.push(0);
    for (word, count) in words {
        let before = n_chars;
        for ch in word.chars() {
            n_chars += 1;
            let n = char_count.entry(ch).or_insert(0);
            *n = n.checked_add(*count).ok_or_else(too_large)?;
        }
        weighted += (n_chars - before) as u128 * *count as u128;
        if n_chars >= NONE as usize {
            return Err(invalid(format!(
                "words: {n_chars} characters in distinct words; at most 2^32 - 1 are supported"
            )));
        }
        start.push(n_chars as u32);
        counts.push(*count);
    }
    // Every frequency times a piece length must fit in u64 (the reference's ints are unbounded).
    if weighted.saturating_mul(256) > u64::MAX as u128 {
        return Err(too_large());
    }
    let mut ranked: Vec<(char, u64)> = char_count.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: u64 = ranked.iter().map(|&(_, n)| n).sum();
    let bound = coverage * total as f64;
    let mut cum: u64 = 0;
    let mut keep = ranked.len();
    for (k, &(_, n)) in ranked.iter().enumerate() {
        if cum as f64 >= bound {
            keep = k;
            break;
        }
        cum += n;
    }
    ranked.truncate(keep);
    let rank_of: FxHashMap<char, u32> = ranked
        .iter()
        .enumerate()
        .map(|(k, &(ch, _))| (ch, k as u32))
        .collect();
    let mut ranks = Vec::with_capacity(n_chars);
    for (word, _) in words {
        ranks.extend(
            word.chars()
                .map(|ch| rank_of.get(&ch).copied().unwrap_or(NONE)),
        );
    }
    let alphabet = ranked.iter().map(|&(ch, _)| ch).collect();
    Ok((
        Corpus {
            alphabet,
            ranks,
            start,
            counts,
        },
        ranked,
    ))
}

fn too_large() -> Error {
    invalid(
        "words: the counts are too large (count × characters × 256 must stay below 2^64)".into(),
    )
}

// ---------------------------------------------------------------------------------------------
// Step 2: seeds

/// A scored substring: `value` = f × len.
#[derive(Clone, Copy)]
struct Scored {
    value: u64,
    piece: Piece,
}

/// (-value, string): the order of seeds and of the initial piece list.
fn by_value(corpus: &Corpus, a: &Scored, b: &Scored) -> Ordering {
    b.value
        .cmp(&a.value)
        .then_with(|| corpus.compare(a.piece, b.piece))
}

/// The first `seed_size` substrings of 2..=max_len required characters with weighted frequency
/// >= 2, by (-f × len, string).
fn seeds(corpus: &Corpus, max_len: usize, seed_size: usize) -> Vec<Scored> {
    let n = corpus.ranks.len();
    // prev[pos]: id of the frequent substring of the previous length starting at pos, or NONE.
    let mut prev: Vec<u32> = corpus.ranks.clone();
    let mut cur: Vec<u32> = vec![NONE; n];
    // Reserved once (untouched capacity costs no memory); cut back to `seed_size` when full.
    let cap = seed_size.saturating_add((seed_size / 4).max(1024));
    let mut pool: Vec<Scored> = Vec::with_capacity(cap);
    // Once the pool has been cut to `seed_size`, its worst entry: anything below cannot enter.
    let mut floor: Option<Scored> = None;
    let mut map: FxHashMap<u64, u32> = FxHashMap::default();
    let mut freq: Vec<u64> = Vec::new();
    let mut first: Vec<u32> = Vec::new();
    let mut remap: Vec<u32> = Vec::new();
    for len in 2..=max_len {
        if seed_size == 0 {
            break;
        }
        map.clear();
        freq.clear();
        first.clear();
        cur.fill(NONE);
        for w in 0..corpus.len() {
            let range = corpus.word(w);
            if range.len() < len {
                continue;
            }
            let count = corpus.counts[w];
            for pos in range.start..=range.end - len {
                let (head, tail) = (prev[pos], prev[pos + 1]);
                if head == NONE || tail == NONE {
                    continue;
                }
                let key = ((head as u64) << 32) | corpus.ranks[pos + len - 1] as u64;
                let next = freq.len() as u32;
                let id = *map.entry(key).or_insert(next);
                if id == next {
                    freq.push(0);
                    first.push(pos as u32);
                }
                // Cannot overflow: bounded by the weighted character count (checked).
                freq[id as usize] += count;
                cur[pos] = id;
            }
        }
        remap.clear();
        let mut frequent = 0u32;
        for (id, &f) in freq.iter().enumerate() {
            if f >= 2 {
                remap.push(frequent);
                frequent += 1;
                let s = Scored {
                    value: f * len as u64,
                    piece: Piece {
                        pos: first[id],
                        len: len as u32,
                    },
                };
                if floor.is_none_or(|fl| by_value(corpus, &s, &fl) == Ordering::Less) {
                    if pool.len() == cap {
                        cut(corpus, &mut pool, seed_size);
                        floor = pool.last().copied();
                        if floor.is_some_and(|fl| by_value(corpus, &s, &fl) != Ordering::Less) {
                            continue;
                        }
                    }
                    pool.push(s);
                }
            } else {
                remap.push(NONE);
            }
        }
        if frequent == 0 {
            break;
        }
        for id in cur.iter_mut() {
            if *id != NONE {
                *id = remap[*id as usize];
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    cut(corpus, &mut pool, seed_size);
    pool.sort_unstable_by(|a, b| by_value(corpus, a, b));
    pool
}

/// Keeps the best `k` entries of `pool` (unordered, except that the worst kept is last).
fn cut(corpus: &Corpus, pool: &mut Vec<Scored>, k: usize) {
    if pool.len() <= k {
        return;
    }
    if k == 0 {
        pool.clear();
        return;
    }
    pool.select_nth_unstable_by(k - 1, |a, b| by_value(corpus, a, b));
    pool.truncate(k);
    // Put the worst of the kept entries last (select_nth leaves it at k - 1).
}

// ---------------------------------------------------------------------------------------------
// The trie over character ranks

/// A trie over rank sequences in breadth-first order: the children of node i are the nodes
/// first[i]..first[i + 1], sorted by label; the root's children are also indexed by rank.
struct Trie {
    root: Vec<u32>,
    first: Vec<u32>,
    label: Vec<u32>,
    /// The current index of the piece spelled by each node, or NONE.
    piece: Vec<u32>,
    /// Pieces at build time.
    size: usize,
}

impl Trie {
    fn build(corpus: &Corpus, pieces: &[Piece], n_ranks: usize) -> Self {
        let key = |k: u32| {
            let p = pieces[k as usize];
            &corpus.ranks[p.pos as usize..(p.pos + p.len) as usize]
        };
        let mut order: Vec<u32> = (0..pieces.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
        // Node i covers order[lo..hi] at depth d; nodes are numbered as they are discovered.
        let mut ranges: std::collections::VecDeque<(u32, u32, u32)> =
            std::collections::VecDeque::from([(0, order.len() as u32, 0)]);
        let mut first: Vec<u32> = Vec::new();
        let mut label: Vec<u32> = vec![NONE];
        let mut piece: Vec<u32> = vec![NONE];
        let mut head = 0;
        while let Some((mut lo, hi, d)) = ranges.pop_front() {
            let d = d as usize;
            if lo < hi && key(order[lo as usize]).len() == d {
                piece[head] = order[lo as usize];
                lo += 1;
            }
            first.push(label.len() as u32);
            let mut k = lo as usize;
            while k < hi as usize {
                let r = key(order[k])[d];
                let mut e = k + 1;
                while e < hi as usize && key(order[e])[d] == r {
                    e += 1;
                }
                ranges.push_back((k as u32, e as u32, d as u32 + 1));
                label.push(r);
                piece.push(NONE);
                k = e;
            }
            head += 1;
        }
        first.push(label.len() as u32);
        let mut root = vec![NONE; n_ranks];
        for c in first[0]..first[1] {
            root[label[c as usize] as usize] = c;
        }
        Self {
            root,
            first,
            label,
            piece,
            size: pieces.len(),
        }
    }

    #[inline(always)]
    fn child(&self, node: u32, r: u32) -> u32 {
        if node == 0 {
            return self.root.get(r as usize).copied().unwrap_or(NONE);
        }
        let lo = self.first[node as usize] as usize;
        let hi = self.first[node as usize + 1] as usize;
        match self.label[lo..hi].binary_search(&r) {
            Ok(i) => (lo + i) as u32,
            Err(_) => NONE,
        }
    }

    /// Calls `f(len, piece)` for every live piece that is a prefix of `ranks`, shortest first.
    #[inline(always)]
    fn prefixes(&self, ranks: &[u32], mut f: impl FnMut(usize, u32)) {
        let mut node = 0u32;
        for (k, &r) in ranks.iter().enumerate() {
            if r == NONE {
                return;
            }
            node = self.child(node, r);
            if node == NONE {
                return;
            }
            let p = self.piece[node as usize];
            if p != NONE {
                f(k + 1, p);
            }
        }
    }

    /// Renumbers pieces after a step kept `kept` (old indices, increasing).
    fn keep(&mut self, kept: &[u32], old_len: usize) {
        let mut new_of_old = vec![NONE; old_len];
        for (new, &old) in kept.iter().enumerate() {
            new_of_old[old as usize] = new as u32;
        }
        for p in self.piece.iter_mut() {
            if *p != NONE {
                *p = new_of_old[*p as usize];
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lattices

#[derive(Debug, Clone, Copy)]
struct Edge {
    start: u32,
    end: u32,
    /// Current piece index, NONE for an unknown character.
    piece: u32,
    score: f64,
}

/// Per-thread buffers.
#[derive(Default)]
struct Scratch {
    edges: Vec<Edge>,
    /// edges[out_first[i]..out_first[i + 1]] start at i (by increasing end).
    out_first: Vec<u32>,
    /// by_end[in_first[j]..in_first[j + 1]]: edges ending at j (by increasing start).
    in_first: Vec<u32>,
    by_end: Vec<u32>,
    a: Vec<f64>,
    b: Vec<f64>,
    terms: Vec<f64>,
    best: Vec<(f64, u32)>,
    path: Vec<u32>,
}

struct Model<'a> {
    trie: &'a Trie,
    scores: &'a [f64],
    unk_score: f64,
}

impl Model<'_> {
    /// Builds the lattice of `ranks` (one word) in `s`; `exclude` is left out.
    fn lattice(&self, ranks: &[u32], exclude: u32, s: &mut Scratch) {
        let n = ranks.len();
        s.edges.clear();
        s.out_first.clear();
        for p in 0..n {
            s.out_first.push(s.edges.len() as u32);
            let mut single = false;
            let edges = &mut s.edges;
            self.trie.prefixes(&ranks[p..], |len, k| {
                if k != exclude {
                    edges.push(Edge {
                        start: p as u32,
                        end: (p + len) as u32,
                        piece: k,
                        score: self.scores[k as usize],
                    });
                    single |= len == 1;
                }
            });
            if !single {
                s.edges.push(Edge {
                    start: p as u32,
                    end: p as u32 + 1,
                    piece: NONE,
                    score: self.unk_score,
                });
            }
        }
        s.out_first.push(s.edges.len() as u32);
        // Incoming lists: a stable counting sort by end keeps starts increasing.
        s.in_first.clear();
        s.in_first.resize(n + 2, 0);
        for e in &s.edges {
            s.in_first[e.end as usize + 1] += 1;
        }
        for j in 1..s.in_first.len() {
            s.in_first[j] += s.in_first[j - 1];
        }
        s.by_end.clear();
        s.by_end.resize(s.edges.len(), 0);
        // in_first[j] is used as the fill cursor of end j - 1, then restored.
        for (i, e) in s.edges.iter().enumerate() {
            let slot = &mut s.in_first[e.end as usize];
            s.by_end[*slot as usize] = i as u32;
            *slot += 1;
        }
        for j in (1..s.in_first.len()).rev() {
            s.in_first[j] = s.in_first[j - 1];
        }
        s.in_first[0] = 0;
    }

    /// Forward-backward on the lattice in `s` (n characters); returns a[n].
    fn forward_backward(&self, n: usize, s: &mut Scratch) -> f64 {
        s.a.clear();
        s.a.resize(n + 1, 0.0);
        s.b.clear();
        s.b.resize(n + 1, 0.0);
        for j in 1..=n {
            s.terms.clear();
            for &i in &s.by_end[s.in_first[j] as usize..s.in_first[j + 1] as usize] {
                let e = s.edges[i as usize];
                s.terms.push(s.a[e.start as usize] + e.score);
            }
            s.a[j] = logsumexp(&s.terms);
        }
        for i in (0..n).rev() {
            s.terms.clear();
            for e in &s.edges[s.out_first[i] as usize..s.out_first[i + 1] as usize] {
                s.terms.push(e.score + s.b[e.end as usize]);
            }
            s.b[i] = logsumexp(&s.terms);
        }
        s.a[n]
    }

    /// The best path of the lattice in `s` (n characters) into `s.path`; ties go to the path
    /// whose last piece starts earliest.
    fn viterbi(&self, n: usize, s: &mut Scratch) {
        s.best.clear();
        s.best.resize(n + 1, (0.0, NONE));
        for j in 1..=n {
            let mut set = false;
            for &i in &s.by_end[s.in_first[j] as usize..s.in_first[j + 1] as usize] {
                let e = s.edges[i as usize];
                let cand = s.best[e.start as usize].0 + e.score;
                if !set || cand > s.best[j].0 {
                    s.best[j] = (cand, i);
                    set = true;
                }
            }
        }
        s.path.clear();
        let mut j = n;
        while j > 0 {
            let e = s.edges[s.best[j].1 as usize];
            s.path.push(e.piece);
            j = e.start as usize;
        }
        s.path.reverse();
    }
}

// ---------------------------------------------------------------------------------------------
// Steps 4, 5 and 7

/// The smallest number of word chunks per parallel job: one accumulator per thread, not per
/// job, since an accumulator has one entry per piece.
fn jobs_per_thread(words: usize) -> usize {
    words
        .div_ceil(CHUNK)
        .div_ceil(rayon::current_num_threads())
        .max(1)
}

/// Fixed-point expected counts per piece and the objective.
fn e_step(corpus: &Corpus, model: &Model, n_pieces: usize) -> (Vec<u128>, f64) {
    let mut logz = vec![0.0f64; corpus.len()];
    let words: Vec<usize> = (0..corpus.len()).collect();
    let acc = words
        .par_chunks(CHUNK)
        .zip(logz.par_chunks_mut(CHUNK))
        .with_min_len(jobs_per_thread(corpus.len()))
        .fold(
            || (vec![0u128; n_pieces], Scratch::default()),
            |(mut acc, mut s), (chunk, zs)| {
                for (&w, z_out) in chunk.iter().zip(zs.iter_mut()) {
                    let range = corpus.word(w);
                    let n = range.len();
                    model.lattice(&corpus.ranks[range], NONE, &mut s);
                    let z = model.forward_backward(n, &mut s);
                    *z_out = z;
                    let count = corpus.counts[w] as f64;
                    for e in &s.edges {
                        if e.piece != NONE {
                            let p =
                                (s.a[e.start as usize] + e.score + s.b[e.end as usize] - z).exp();
                            acc[e.piece as usize] += fixed_point(count * p);
                        }
                    }
                }
                (acc, s)
            },
        )
        .map(|(acc, _)| acc)
        .reduce_with(|mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
            a
        })
        .unwrap_or_else(|| vec![0u128; n_pieces]);
    let mut objective = 0.0;
    for (w, z) in logz.iter().enumerate() {
        objective += corpus.counts[w] as f64 * z;
    }
    (acc, objective)
}

/// Indices kept by the M-step (in order) and their new scores.
fn m_step(pieces: &[Piece], acc: &[u128], rule: MStep) -> (Vec<u32>, Vec<f64>) {
    let mut kept = Vec::new();
    let mut expected = Vec::new();
    for (k, (p, &q)) in pieces.iter().zip(acc).enumerate() {
        let mut e = q as f64 / SCALE;
        if p.len == 1 {
            e = e.max(0.5);
        } else if e < 0.5 {
            continue;
        }
        kept.push(k as u32);
        expected.push(e);
    }
    let mut total = 0.0;
    for &e in &expected {
        total += e;
    }
    let scores = match rule {
        MStep::MaximumLikelihood => {
            let log_total = total.ln();
            expected.iter().map(|&e| e.ln() - log_total).collect()
        }
        MStep::Digamma => {
            let d_total = digamma(total);
            expected.iter().map(|&e| digamma(e) - d_total).collect()
        }
    };
    (kept, scores)
}

/// Indices kept by a prune (in order).
fn prune(corpus: &Corpus, model: &Model, pieces: &[Piece], keep: usize) -> Vec<u32> {
    let n_pieces = pieces.len();
    let words: Vec<usize> = (0..corpus.len()).collect();
    // vfreq and F (the summed count of the words whose best path uses the piece), exact.
    let (vfreq, users) = words
        .par_chunks(CHUNK)
        .with_min_len(jobs_per_thread(corpus.len()))
        .fold(
            || {
                (
                    vec![0u64; n_pieces],
                    vec![0u64; n_pieces],
                    vec![NONE; n_pieces],
                    Scratch::default(),
                )
            },
            |(mut vfreq, mut users, mut seen, mut s), chunk| {
                for &w in chunk {
                    let range = corpus.word(w);
                    let n = range.len();
                    model.lattice(&corpus.ranks[range], NONE, &mut s);
                    model.viterbi(n, &mut s);
                    let count = corpus.counts[w];
                    for &k in &s.path {
                        if k != NONE {
                            vfreq[k as usize] += count;
                            if seen[k as usize] != w as u32 {
                                seen[k as usize] = w as u32;
                                users[k as usize] += count;
                            }
                        }
                    }
                }
                (vfreq, users, seen, s)
            },
        )
        .map(|(v, u, _, _)| (v, u))
        .reduce_with(|(mut va, mut ua), (vb, ub)| {
            for (x, y) in va.iter_mut().zip(vb) {
                *x += y;
            }
            for (x, y) in ua.iter_mut().zip(ub) {
                *x += y;
            }
            (va, ua)
        })
        .unwrap_or_else(|| (vec![0; n_pieces], vec![0; n_pieces]));
    let vsum: u64 = vfreq.iter().sum();
    let log_vsum = (vsum as f64).ln();
    let losses: Vec<Option<f64>> = (0..n_pieces)
        .into_par_iter()
        .map_init(Scratch::default, |s, k| {
            let p = pieces[k];
            if p.len == 1 || vfreq[k] == 0 {
                return None;
            }
            let ranks = &corpus.ranks[p.pos as usize..(p.pos + p.len) as usize];
            model.lattice(ranks, k as u32, s);
            model.viterbi(p.len as usize, s);
            let vz = vfreq[k];
            let logp_sp = (vz as f64).ln() - log_vsum;
            let l = ((vsum as u128 + vz as u128 * (s.path.len() as u128 - 1)) as f64).ln();
            let mut logp_alt = 0.0;
            for &y in &s.path {
                let vy = vfreq.get(y as usize).copied().unwrap_or(0);
                logp_alt += ((vy as u128 + vz as u128) as f64).ln() - l;
            }
            Some(users[k] as f64 / vsum as f64 * (logp_sp - logp_alt))
        })
        .collect();
    let mut candidates: Vec<(f64, u32)> = losses
        .iter()
        .enumerate()
        .filter_map(|(k, l)| l.map(|l| (l, k as u32)))
        .collect();
    candidates.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    let required = pieces.iter().filter(|p| p.len == 1).count();
    let room = keep.saturating_sub(required);
    let mut chosen = vec![false; n_pieces];
    for &(_, k) in candidates.iter().take(room) {
        chosen[k as usize] = true;
    }
    (0..n_pieces as u32)
        .filter(|&k| pieces[k as usize].len == 1 || chosen[k as usize])
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The whole training

/// Train a Unigram vocabulary on `words` ((word, count), distinct, sorted by code point):
/// (piece, score) best first, and the report. `progress(round, pieces)` is called after each
/// EM round.
pub fn train(
    words: Vec<(String, u64)>,
    options: &Options,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<(Vec<(String, f64)>, Report), Error> {
    check(&words, options)?;
    let (corpus, required) = build_corpus(&words, options.character_coverage)?;
    drop(words); // the flat corpus is all that is needed from here on
    if required.len() > options.target {
        return Err(invalid(format!(
            "vocab_size: the {} characters that cover {} of the corpus do not fit in {} pieces; \
             expected a larger vocab_size (or a lower character_coverage)",
            required.len(),
            options.character_coverage,
            options.target
        )));
    }
    let seeds = seeds(&corpus, options.max_piece_length, options.seed_size);
    let n_seeds = seeds.len();
    // Step 3.
    let mut first_at = vec![NONE; required.len()];
    for (pos, &r) in corpus.ranks.iter().enumerate() {
        if r != NONE && first_at[r as usize] == NONE {
            first_at[r as usize] = pos as u32;
        }
    }
    let mut entries: Vec<Scored> = required
        .iter()
        .zip(&first_at)
        .map(|(&(_, count), &pos)| Scored {
            value: count,
            piece: Piece { pos, len: 1 },
        })
        .collect();
    entries.reserve_exact(seeds.len());
    entries.extend(seeds);
    entries.sort_unstable_by(|a, b| by_value(&corpus, a, b));
    let mut total = 0.0;
    for e in &entries {
        total += e.value as f64;
    }
    let log_total = total.ln();
    let mut scores: Vec<f64> = entries
        .iter()
        .map(|e| (e.value as f64).ln() - log_total)
        .collect();
    let mut pieces: Vec<Piece> = entries.iter().map(|e| e.piece).collect();
    drop(entries);

    let n_ranks = required.len();
    let mut trie = Trie::build(&corpus, &pieces, n_ranks);
    let desired = (options.target as f64 * 1.1).floor() as usize;
    let (mut rounds, mut em_iterations) = (0usize, 0usize);
    let mut objective = 0.0;
    let mut stop = "size";
    // Applies a selection (old indices kept, in order) to the pieces and the trie.
    let apply = |kept: &[u32], pieces: &mut Vec<Piece>, trie: &mut Trie| {
        let old_len = pieces.len();
        *pieces = kept.iter().map(|&k| pieces[k as usize]).collect();
        if pieces.len() * 2 < trie.size {
            *trie = Trie::build(&corpus, pieces, n_ranks);
        } else {
            trie.keep(kept, old_len);
        }
    };
    while !pieces.is_empty() {
        rounds += 1;
        for _ in 0..options.sub_iterations {
            let model = Model {
                trie: &trie,
                scores: &scores,
                unk_score: min_score(&scores) - UNK_PENALTY,
            };
            let (acc, obj) = e_step(&corpus, &model, pieces.len());
            objective = obj;
            let (kept, new_scores) = m_step(&pieces, &acc, options.m_step);
            scores = new_scores;
            apply(&kept, &mut pieces, &mut trie);
            em_iterations += 1;
        }
        if let Some(report) = progress {
            report(rounds, pieces.len());
        }
        if pieces.len() <= desired {
            break;
        }
        let keep = desired.max((options.shrinking_factor * pieces.len() as f64).floor() as usize);
        let model = Model {
            trie: &trie,
            scores: &scores,
            unk_score: min_score(&scores) - UNK_PENALTY,
        };
        let kept = prune(&corpus, &model, &pieces, keep);
        if kept.len() == pieces.len() {
            stop = "no_progress";
            break;
        }
        scores = kept.iter().map(|&k| scores[k as usize]).collect();
        apply(&kept, &mut pieces, &mut trie);
    }
    // Step 8.
    let mut ranked: Vec<u32> = (0..pieces.len() as u32).collect();
    ranked.sort_by(|&a, &b| {
        scores[b as usize]
            .partial_cmp(&scores[a as usize])
            .unwrap_or(Ordering::Equal)
            .then_with(|| corpus.compare(pieces[a as usize], pieces[b as usize]))
    });
    let mut room = options.target - required.len();
    let mut out = Vec::new();
    for k in ranked {
        let p = pieces[k as usize];
        if p.len == 1 {
            out.push((corpus.string(p), scores[k as usize]));
        } else if room > 0 {
            out.push((corpus.string(p), scores[k as usize]));
            room -= 1;
        }
    }
    let report = Report {
        required_chars: required.len(),
        seed_pieces: n_seeds,
        rounds,
        em_iterations,
        objective,
        pieces: out.len(),
        stop_reason: stop,
    };
    Ok((out, report))
}

/// Python's `min` over a non-empty list of floats.
fn min_score(scores: &[f64]) -> f64 {
    let mut m = scores.first().copied().unwrap_or(0.0);
    for &s in scores {
        if s < m {
            m = s;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[(&str, u64)]) -> Vec<(String, u64)> {
        let mut w: Vec<(String, u64)> = list.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        w.sort();
        w
    }

    fn options(target: usize) -> Options {
        Options {
            target,
            ..Options::default()
        }
    }

    #[test]
    fn digamma_matches_known_values() {
        let gamma = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + gamma).abs() < 1e-9);
        assert!((digamma(0.5) + gamma + 2.0 * 2f64.ln()).abs() < 1e-9);
        // ψ(x + 1) = ψ(x) + 1/x
        for x in [0.3, 2.5, 7.5, 100.0] {
            assert!((digamma(x + 1.0) - digamma(x) - 1.0 / x).abs() < 1e-9);
        }
    }

    #[test]
    fn abab_lattice_gives_the_exact_posteriors() {
        // Pieces a, b (1/4), ab (7/20), aba (1/10), bab (1/20): six segmentations of abab.
        let w = words(&[("a", 1), ("aba", 1), ("abab", 1), ("b", 1), ("bab", 1)]);
        let (corpus, required) = build_corpus(&w, 1.0).unwrap();
        assert_eq!(required.len(), 2);
        let at = |word: usize, off: u32, len: u32| Piece {
            pos: corpus.start[word] + off,
            len,
        };
        let pieces = [
            at(0, 0, 1),
            at(3, 0, 1),
            at(2, 0, 2),
            at(1, 0, 3),
            at(4, 0, 3),
        ];
        let names: Vec<String> = pieces.iter().map(|&p| corpus.string(p)).collect();
        assert_eq!(names, ["a", "b", "ab", "aba", "bab"]);
        let scores: Vec<f64> = [0.25f64, 0.25, 0.35, 0.1, 0.05]
            .iter()
            .map(|p| p.ln())
            .collect();
        let trie = Trie::build(&corpus, &pieces, required.len());
        let model = Model {
            trie: &trie,
            scores: &scores,
            unk_score: min_score(&scores) - UNK_PENALTY,
        };
        let mut s = Scratch::default();
        model.lattice(&corpus.ranks[corpus.word(2)], NONE, &mut s);
        let z = model.forward_backward(4, &mut s);
        let paths = [
            49.0 / 400.0,
            1.0 / 40.0,
            7.0 / 320.0,
            7.0 / 320.0,
            1.0 / 80.0,
            1.0 / 256.0,
        ];
        let total: f64 = paths.iter().sum();
        assert!((z - total.ln()).abs() < 1e-12, "{z}");
        // Expected counts: ab is used twice in ab+ab, once in a+b+ab and ab+a+b.
        let mut expected = [0.0f64; 5];
        for e in &s.edges {
            expected[e.piece as usize] +=
                (s.a[e.start as usize] + e.score + s.b[e.end as usize] - z).exp();
        }
        let exact_ab = (2.0 * 49.0 / 400.0 + 2.0 * 7.0 / 320.0) / total;
        let exact_a = (2.0 * 7.0 / 320.0 + 1.0 / 80.0 + 2.0 / 256.0) / total;
        let exact_bab = (1.0 / 80.0) / total;
        assert!((expected[2] - exact_ab).abs() < 1e-12);
        assert!((expected[0] - exact_a).abs() < 1e-12);
        assert!((expected[4] - exact_bab).abs() < 1e-12);
        model.viterbi(4, &mut s);
        assert_eq!(s.path, [2, 2]);
        // ab left out: aba + b (1/40) beats a + b + a + b and a + bab.
        model.lattice(&corpus.ranks[corpus.word(2)], 2, &mut s);
        model.viterbi(4, &mut s);
        assert_eq!(s.path, [3, 1]);
    }

    #[test]
    fn viterbi_ties_go_to_the_earliest_last_piece() {
        let w = words(&[("▁aaa", 1)]);
        let (corpus, _) = build_corpus(&w, 1.0).unwrap();
        let pieces = [
            Piece { pos: 0, len: 1 },
            Piece { pos: 1, len: 1 },
            Piece { pos: 1, len: 2 },
        ];
        let scores = [-1.0, -1.0, -2.0];
        let trie = Trie::build(&corpus, &pieces, 2);
        let model = Model {
            trie: &trie,
            scores: &scores,
            unk_score: -12.0,
        };
        let mut s = Scratch::default();
        model.lattice(&corpus.ranks[corpus.word(0)], NONE, &mut s);
        model.viterbi(4, &mut s);
        assert_eq!(s.path, [0, 1, 2]);
    }

    #[test]
    fn seeds_follow_the_definition() {
        let w = words(&[("▁ab", 5), ("▁abab", 2), ("▁b", 1), ("▁x", 1)]);
        let (corpus, required) = build_corpus(&w, 1.0).unwrap();
        let seeds = seeds(&corpus, 16, 100);
        let got: Vec<(String, u64)> = seeds
            .iter()
            .map(|s| (corpus.string(s.piece), s.value))
            .collect();
        // Brute force: every substring of length >= 2 with f >= 2, by (-f len, string).
        let mut f: std::collections::BTreeMap<String, u64> = Default::default();
        for (word, n) in &w {
            let chars: Vec<char> = word.chars().collect();
            for i in 0..chars.len() {
                for j in i + 2..=chars.len() {
                    *f.entry(chars[i..j].iter().collect()).or_insert(0) += n;
                }
            }
        }
        let mut expected: Vec<(String, u64)> = f
            .into_iter()
            .filter(|(_, n)| *n >= 2)
            .map(|(s, n)| {
                let len = s.chars().count() as u64;
                (s, n * len)
            })
            .collect();
        expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        assert_eq!(got, expected);
        assert_eq!(required.len(), 4);
        assert_eq!(seeds_of(&corpus, 2).len(), 2);
    }

    fn seeds_of(corpus: &Corpus, k: usize) -> Vec<Scored> {
        seeds(corpus, 16, k)
    }

    #[test]
    fn trains_to_the_target_with_every_required_character() {
        let w = words(&[
            ("▁the", 50),
            ("▁then", 20),
            ("▁there", 15),
            ("▁other", 12),
            ("▁hat", 9),
            ("▁that", 30),
            ("▁tea", 4),
            ("▁eat", 6),
            ("▁heat", 3),
        ]);
        for target in [8, 10, 15] {
            let (pieces, report) = train(w.clone(), &options(target), None).unwrap();
            assert_eq!(pieces.len(), target, "{pieces:?}");
            for ch in ["▁", "t", "h", "e", "a", "o", "r", "n"] {
                assert!(pieces.iter().any(|(p, _)| p == ch), "{ch} missing");
            }
            assert_eq!(report.pieces, target);
            assert_eq!(report.required_chars, 8);
            assert!(report.objective < 0.0);
            for w in pieces.windows(2) {
                assert!(w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0));
            }
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let mut list = Vec::new();
        let mut state = 7u64;
        for _ in 0..3000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 1 + (state >> 60) as usize % 7;
            let word: String = std::iter::once('▁')
                .chain(
                    (0..len)
                        .map(|k| ['a', 'b', 'c', 'd', 'e', 'é'][((state >> (8 * k)) % 6) as usize]),
                )
                .collect();
            list.push((word, 1 + (state >> 40) % 5));
        }
        let mut merged: std::collections::BTreeMap<String, u64> = Default::default();
        for (wd, n) in list {
            *merged.entry(wd).or_insert(0) += n;
        }
        let w: Vec<(String, u64)> = merged.into_iter().collect();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| train(w.clone(), &options(40), None).unwrap())
        };
        let one = run(1);
        assert_eq!(one.0.len(), 40);
        for threads in [2, 4] {
            let other = run(threads);
            assert_eq!(one.0.len(), other.0.len());
            for (a, b) in one.0.iter().zip(&other.0) {
                assert_eq!(a.0, b.0);
                assert_eq!(a.1.to_bits(), b.1.to_bits());
            }
            assert_eq!(one.1.objective.to_bits(), other.1.objective.to_bits());
        }
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let err =
            |w: &[(String, u64)], o: &Options| train(w.to_vec(), o, None).unwrap_err().to_string();
        let w = words(&[("▁ab", 2)]);
        assert!(err(&w, &options(0)).contains("target"));
        assert!(err(&w, &options(2)).contains("vocab_size"));
        let mut o = options(10);
        o.character_coverage = 0.0;
        assert!(err(&w, &o).contains("character_coverage"));
        o.character_coverage = f64::NAN;
        assert!(err(&w, &o).contains("character_coverage"));
        let mut o = options(10);
        o.shrinking_factor = 1.0;
        assert!(err(&w, &o).contains("shrinking_factor"));
        let mut o = options(10);
        o.sub_iterations = 0;
        assert!(err(&w, &o).contains("sub_iterations"));
        let unsorted = vec![("▁b".to_string(), 1), ("▁a".to_string(), 1)];
        assert!(err(&unsorted, &options(10)).contains("words[1]"));
        assert!(err(&[("".to_string(), 1)], &options(10)).contains("words[0]"));
        assert!(err(&[("a".to_string(), 0)], &options(10)).contains("words[0]"));
        assert!(err(&[("a".to_string(), u64::MAX)], &options(10)).contains("too large"));
        let (pieces, report) = train(vec![], &options(10), None).unwrap();
        assert!(pieces.is_empty());
        assert_eq!(report.rounds, 0);
        // A single-character corpus, and unknown characters under partial coverage.
        let (pieces, _) = train(words(&[("a", 3)]), &options(5), None).unwrap();
        assert_eq!(pieces.len(), 1);
        let mut o = options(5);
        o.character_coverage = 0.5;
        let (pieces, _) = train(words(&[("aaaab", 3), ("aac", 1)]), &o, None).unwrap();
        assert!(pieces
            .iter()
            .all(|(p, _)| !p.contains('b') && !p.contains('c')));
    }
}
