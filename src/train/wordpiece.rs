//! Incremental WordPiece training: likelihood-ratio merges over counted words.
//!
//! Contract (identical to `train_wordpiece_reference` in `tinyllm.train.wordpiece`,
//! which recounts every round):
//!
//! * ids: the special tokens in order, then the word-initial characters `c` sorted by code point,
//!   then the inner characters `prefix + c` sorted by code point, then one id per new merge string;
//!   `limit_alphabet` keeps the N entries of highest weighted count (ties: smaller string) and words
//!   holding a dropped entry are not trained on;
//! * each round, with f(x) the weighted count of symbol x and f(xy) the weighted count of windows
//!   (x, y) (overlapping, never across words), the pair with f(xy) >= min_frequency and the
//!   highest f(xy) / (f(x) f(y)) wins, compared exactly; ties go to the larger f(xy), then to the
//!   smallest (x, y);
//! * the merged string is x followed by y without its prefix; if it already has an id that id is
//!   reused, else it gets the next id; every unit is rewritten left to right without overlap;
//! * training stops (checked in this order) when the vocabulary has `vocab_size` entries, when no
//!   pair is left, or when every pair is below `min_frequency`.
//!
//! The trainer keeps the words in one flat symbol array, symbol counts, pair counts with a pair →
//! units index, a symbol → pairs index and a max-heap of exact scores with lazy invalidation. A
//! merge rewrites only the units that held the pair, and only windows touching a rewritten
//! position change. Unlike BPE, the score of a pair also rises when one of its symbols loses
//! occurrences, so after merging (x, y) every live pair holding x or y is pushed again; a popped
//! entry whose (f(xy), f(x), f(y)) are not current is stale and is replaced by a current one.
//!
//! Scores are compared by cross-multiplication in u128; training refuses corpora whose total
//! weighted length T makes T³ overflow u128, so no comparison can overflow.
//! Nothing depends on hash-map iteration order.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use rustc_hash::FxHashMap;

use crate::train::bpe::{key, unkey};
use crate::Error;

/// Why training stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The vocabulary reached `vocab_size` entries.
    VocabSize,
    /// Pairs were left, but all below `min_frequency`.
    MinFrequency,
    /// No adjacent pair was left in any unit.
    NoPairs,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::VocabSize => "vocab_size",
            StopReason::MinFrequency => "min_frequency",
            StopReason::NoPairs => "no_pairs",
        }
    }
}

/// Training parameters (see the module docs).
#[derive(Debug, Clone)]
pub struct Params<'a> {
    pub vocab_size: usize,
    pub specials: &'a [String],
    pub min_frequency: u64,
    pub prefix: &'a str,
    pub limit_alphabet: Option<usize>,
}

/// Live progress for a progress bar: merges learned so far, and at most how many (known once the
/// alphabet is built; 0 before).
#[derive(Debug, Default)]
pub struct Progress {
    pub merges: AtomicUsize,
    pub most: AtomicUsize,
}

/// The vocabulary in id order and its accounting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Training {
    pub tokens: Vec<String>,
    /// Vocabulary entries added by the word-initial alphabet.
    pub initial_alphabet: usize,
    /// Vocabulary entries added by the continuation alphabet.
    pub continuation_alphabet: usize,
    /// Merges learned (each either added an entry or reused one).
    pub merges: usize,
    /// Merges whose string already had an id.
    pub reused_merges: usize,
    pub stop: StopReason,
}

fn invalid(message: String) -> Error {
    Error::Invalid(format!("WordPiece training: {message}"))
}

/// A heap entry: a pair with the counts its score was computed from.
#[derive(Clone, Copy, Debug)]
struct Entry {
    fxy: u64,
    fx: u64,
    fy: u64,
    key: u64,
    slot: u32,
}

impl Entry {
    #[inline(always)]
    fn den(&self) -> u128 {
        self.fx as u128 * self.fy as u128
    }
}

impl Ord for Entry {
    /// Higher score first, then larger f(xy), then smaller pair. No product overflows: every
    /// count is at most the total weighted length T, and T³ < 2¹²⁸ is checked up front.
    fn cmp(&self, other: &Self) -> Ordering {
        let lhs = self.fxy as u128 * other.den();
        let rhs = other.fxy as u128 * self.den();
        lhs.cmp(&rhs)
            .then(self.fxy.cmp(&other.fxy))
            .then(other.key.cmp(&self.key))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

/// State of one pair, in a slab slot. A pair that loses its last window leaves the key map and its
/// slot stays dead; if the pair comes back it gets a new slot.
struct PairInfo {
    /// Weighted number of windows, f(xy).
    count: u64,
    /// Unweighted number of windows; 0 means the slot is dead.
    windows: u32,
    /// The merge round in which the pair was last queued for a push (dedup).
    queued: u32,
    /// The counts of the highest heap entry of this pair, if it has one; no push is needed while
    /// that entry ranks at least as high as the current counts.
    top: Option<(u64, u64, u64)>,
    key: u64,
}

/// Live pairs: key → slot, the slots, each slot's units, and each symbol's slots.
#[derive(Default)]
struct Pairs {
    slot_of: FxHashMap<u64, u32>,
    info: Vec<PairInfo>,
    /// Per slot: units that held the pair when indexed (may name units that no longer hold it,
    /// may repeat; deduplicated when used).
    units: Vec<Vec<u32>>,
    /// Per symbol: slots of the pairs holding it (may name dead slots until pruned).
    by_symbol: Vec<Vec<u32>>,
}

impl Pairs {
    fn live(&self) -> usize {
        self.slot_of.len()
    }

    /// One window of pair `k` leaves a unit of frequency `f`.
    #[inline(always)]
    fn dec(&mut self, k: u64, f: u64) {
        let Some(&slot) = self.slot_of.get(&k) else {
            debug_assert!(false, "window of an unknown pair");
            return;
        };
        let info = &mut self.info[slot as usize];
        debug_assert!(info.count >= f && info.windows > 0);
        info.count = info.count.saturating_sub(f);
        info.windows = info.windows.saturating_sub(1);
        if info.windows == 0 {
            self.slot_of.remove(&k);
            self.units[slot as usize] = Vec::new();
        }
    }

    /// One window of pair (a, b) arrives in unit `u` of frequency `f`; returns the pair's slot.
    #[inline(always)]
    fn inc(&mut self, a: u32, b: u32, u: u32, f: u64) -> u32 {
        let k = key(a, b);
        let next = self.info.len() as u32;
        let slot = *self.slot_of.entry(k).or_insert(next);
        if slot == next {
            self.info.push(PairInfo {
                count: 0,
                windows: 0,
                queued: u32::MAX,
                top: None,
                key: k,
            });
            self.units.push(Vec::new());
            self.by_symbol[a as usize].push(slot);
            if a != b {
                self.by_symbol[b as usize].push(slot);
            }
        }
        let info = &mut self.info[slot as usize];
        // No overflow: every count is bounded by the total weighted length, checked up front.
        info.count += f;
        info.windows += 1;
        let units = &mut self.units[slot as usize];
        if units.last() != Some(&u) {
            units.push(u);
        }
        slot
    }
}

/// The heap entry for `slot` with its current counts.
#[inline(always)]
fn current(info: &PairInfo, slot: u32, sym_count: &[u64]) -> Entry {
    let (a, b) = unkey(info.key);
    Entry {
        fxy: info.count,
        fx: sym_count[a as usize],
        fy: sym_count[b as usize],
        key: info.key,
        slot,
    }
}

/// Push a current entry for a live pair at or above `min_frequency` unless its top entry already
/// ranks at least as high.
#[inline(always)]
fn offer(
    heap: &mut BinaryHeap<Entry>,
    info: &mut PairInfo,
    slot: u32,
    sym_count: &[u64],
    min_frequency: u64,
) {
    if info.windows == 0 || info.count < min_frequency {
        return;
    }
    let e = current(info, slot, sym_count);
    let needed = match info.top {
        None => true,
        Some((fxy, fx, fy)) => {
            e > Entry {
                fxy,
                fx,
                fy,
                key: e.key,
                slot,
            }
        }
    };
    if needed {
        info.top = Some((e.fxy, e.fx, e.fy));
        heap.push(e);
    }
}

/// Per-unit storage in the flat symbol array.
#[derive(Clone, Copy)]
struct UnitMeta {
    freq: u64,
    start: usize,
    len: usize,
}

struct Vocab {
    tokens: Vec<String>,
    ids: FxHashMap<String, u32>,
}

impl Vocab {
    /// The id of `s`, and whether it was new.
    fn intern(&mut self, s: String) -> (u32, bool) {
        if let Some(&id) = self.ids.get(&s) {
            return (id, false);
        }
        let id = self.tokens.len() as u32;
        self.tokens.push(s.clone());
        self.ids.insert(s, id);
        (id, true)
    }
}

fn check(words: &[(String, u64)], p: &Params) -> Result<(), Error> {
    for (k, s) in p.specials.iter().enumerate() {
        if s.is_empty() {
            return Err(invalid(format!(
                "specials[{k}]: expected a non-empty string, found \"\""
            )));
        }
        if p.specials[..k].contains(s) {
            return Err(invalid(format!("specials[{k}]: {s:?} is listed twice")));
        }
    }
    if p.vocab_size < p.specials.len() || p.vocab_size > u32::MAX as usize {
        return Err(invalid(format!(
            "vocab_size: expected at least {} (the special tokens) and below 2**32, found {}",
            p.specials.len(),
            p.vocab_size
        )));
    }
    if p.min_frequency == 0 {
        return Err(invalid(
            "min_frequency: expected an integer >= 1, found 0".into(),
        ));
    }
    if p.prefix.is_empty() {
        return Err(invalid(
            "continuing_subword_prefix: expected a non-empty string, found \"\"".into(),
        ));
    }
    if words.len() > u32::MAX as usize {
        return Err(invalid(format!(
            "words: {} words, at most {} supported",
            words.len(),
            u32::MAX
        )));
    }
    for (k, (w, c)) in words.iter().enumerate() {
        if w.is_empty() {
            return Err(invalid(format!(
                "words[{k}]: expected a non-empty word, found \"\""
            )));
        }
        if *c == 0 {
            return Err(invalid(format!(
                "words[{k}]: expected a count >= 1, found 0"
            )));
        }
    }
    Ok(())
}

/// Train a WordPiece vocabulary on counted words.
pub fn train(words: &[(String, u64)], params: &Params) -> Result<Training, Error> {
    train_with_progress(words, params, None)
}

/// [`train`], publishing the merges learned so far in `progress` (for a progress bar).
pub fn train_with_progress(
    words: &[(String, u64)],
    params: &Params,
    progress: Option<&Progress>,
) -> Result<Training, Error> {
    check(words, params)?;
    let prefix = params.prefix;
    let min_frequency = params.min_frequency;
    let mut vocab = Vocab {
        tokens: Vec::new(),
        ids: FxHashMap::default(),
    };
    for s in params.specials {
        vocab.intern(s.clone());
    }

    // ---- the alphabet -------------------------------------------------------------------------
    // (char, inner) → weighted count.
    let mut weight: FxHashMap<(char, bool), u64> = FxHashMap::default();
    for (w, c) in words {
        for (i, ch) in w.chars().enumerate() {
            let n = weight.entry((ch, i > 0)).or_insert(0);
            *n = n.checked_add(*c).ok_or_else(|| {
                invalid(format!(
                    "the weighted count of character {ch:?} overflows u64"
                ))
            })?;
        }
    }
    let entry_string = |(ch, inner): (char, bool)| {
        if inner {
            let mut s = String::with_capacity(prefix.len() + ch.len_utf8());
            s.push_str(prefix);
            s.push(ch);
            s
        } else {
            ch.to_string()
        }
    };
    let mut entries: Vec<(char, bool)> = weight.keys().copied().collect();
    if let Some(limit) = params.limit_alphabet {
        if limit < entries.len() {
            let mut ranked: Vec<(u64, String, (char, bool))> = entries
                .iter()
                .map(|&e| (weight[&e], entry_string(e), e))
                .collect();
            ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            ranked.truncate(limit);
            entries = ranked.into_iter().map(|(_, _, e)| e).collect();
        }
    }
    // Initial entries (inner = false) first, each group by code point.
    entries.sort_unstable_by_key(|&(ch, inner)| (inner, ch));
    let mut symbol_of: FxHashMap<(char, bool), u32> = FxHashMap::default();
    let (mut initial_alphabet, mut continuation_alphabet) = (0, 0);
    for &e in &entries {
        let (id, new) = vocab.intern(entry_string(e));
        if new {
            if e.1 {
                continuation_alphabet += 1;
            } else {
                initial_alphabet += 1;
            }
        }
        symbol_of.insert(e, id);
    }
    drop(weight);

    // ---- units: one flat symbol array ------------------------------------------------------------
    let mut symbols: Vec<u32> = Vec::new();
    let mut meta: Vec<UnitMeta> = Vec::with_capacity(words.len());
    let mut total: u128 = 0;
    'words: for (w, c) in words {
        let start = symbols.len();
        for (i, ch) in w.chars().enumerate() {
            match symbol_of.get(&(ch, i > 0)) {
                Some(&id) => symbols.push(id),
                None => {
                    symbols.truncate(start);
                    continue 'words;
                }
            }
        }
        let len = symbols.len() - start;
        total += len as u128 * *c as u128;
        meta.push(UnitMeta {
            freq: *c,
            start,
            len,
        });
    }
    drop(symbol_of);
    symbols.shrink_to_fit();
    if total
        .checked_mul(total)
        .and_then(|t| t.checked_mul(total))
        .is_none()
    {
        return Err(invalid(format!(
            "the total weighted length {total} is too large to compare scores exactly \
             (its cube must fit in 128 bits, so at most about 6.9e12)"
        )));
    }

    // ---- symbol counts, pair counts and indexes --------------------------------------------------
    let mut sym_count: Vec<u64> = vec![0; vocab.tokens.len()];
    let mut pairs = Pairs {
        by_symbol: vec![Vec::new(); vocab.tokens.len()],
        ..Pairs::default()
    };
    for (u, m) in meta.iter().enumerate() {
        let s = &symbols[m.start..m.start + m.len];
        for &x in s {
            sym_count[x as usize] += m.freq;
        }
        for w in s.windows(2) {
            pairs.inc(w[0], w[1], u as u32, m.freq);
        }
    }

    if let Some(p) = progress {
        p.most.store(
            params.vocab_size.saturating_sub(vocab.tokens.len()),
            AtomicOrdering::Relaxed,
        );
    }
    let mut heap: BinaryHeap<Entry> = BinaryHeap::new();
    rebuild(&mut heap, &mut pairs, &sym_count, min_frequency);

    let mut merges = 0usize;
    let mut reused = 0usize;
    let mut stamp: Vec<u32> = vec![u32::MAX; meta.len()];
    let mut old_buf: Vec<u32> = Vec::new();
    let mut covered: Vec<bool> = Vec::new();
    let mut fresh: Vec<bool> = Vec::new();
    let mut new_buf: Vec<u32> = Vec::new();
    let mut gained: Vec<u32> = Vec::new();

    let stop = loop {
        if vocab.tokens.len() >= params.vocab_size {
            break StopReason::VocabSize;
        }
        // Invariant: every live pair with f(xy) >= min_frequency has a heap entry ranking at
        // least as high as its current counts (its `top`), so the first entry that is current is
        // the best pair.
        let best = loop {
            let Some(e) = heap.pop() else { break None };
            let info = &mut pairs.info[e.slot as usize];
            let stored = (e.fxy, e.fx, e.fy);
            let is_top = info.top == Some(stored);
            if info.windows == 0 || info.count < min_frequency {
                if is_top {
                    info.top = None;
                }
                continue;
            }
            let cur = current(info, e.slot, &sym_count);
            if (cur.fxy, cur.fx, cur.fy) == stored {
                info.top = None;
                break Some(e);
            }
            if is_top {
                // Stale, ranking above the current counts: replace it by a current entry.
                info.top = Some((cur.fxy, cur.fx, cur.fy));
                heap.push(cur);
            }
            // Otherwise an older entry of a pair whose top entry is still queued: drop it.
        };
        let Some(best) = best else {
            break if pairs.live() > 0 {
                StopReason::MinFrequency
            } else {
                StopReason::NoPairs
            };
        };
        let (x, y) = unkey(best.key);
        let round = merges as u32;

        // The new symbol (or the existing one that spells the same string).
        let mut merged = vocab.tokens[x as usize].clone();
        let right = &vocab.tokens[y as usize];
        merged.push_str(right.strip_prefix(prefix).unwrap_or(right));
        let (z, new) = vocab.intern(merged);
        if new {
            sym_count.push(0);
            pairs.by_symbol.push(Vec::new());
        } else {
            reused += 1;
        }

        // Rewrite the units that held the pair; only windows touching a rewritten position change.
        let affected = std::mem::take(&mut pairs.units[best.slot as usize]);
        for &u in &affected {
            let ui = u as usize;
            if stamp[ui] == round {
                continue;
            }
            stamp[ui] = round;
            let UnitMeta {
                freq: f,
                start,
                len: n,
            } = meta[ui];
            let s = &symbols[start..start + n];
            let Some(first) = s.windows(2).position(|w| w[0] == x && w[1] == y) else {
                continue;
            };
            old_buf.clear();
            old_buf.extend_from_slice(s);
            covered.clear();
            covered.resize(n, false);
            new_buf.clear();
            new_buf.extend_from_slice(&s[..first]);
            fresh.clear();
            fresh.resize(first, false);
            let mut r = first;
            let mut matches = 0u64;
            while r < n {
                if r + 1 < n && old_buf[r] == x && old_buf[r + 1] == y {
                    covered[r] = true;
                    covered[r + 1] = true;
                    new_buf.push(z);
                    fresh.push(true);
                    matches += 1;
                    r += 2;
                } else {
                    new_buf.push(old_buf[r]);
                    fresh.push(false);
                    r += 1;
                }
            }
            for i in first.saturating_sub(1)..n - 1 {
                if covered[i] || covered[i + 1] {
                    pairs.dec(key(old_buf[i], old_buf[i + 1]), f);
                }
            }
            let m = new_buf.len();
            for j in first.saturating_sub(1)..m - 1 {
                if fresh[j] || fresh[j + 1] {
                    gained.push(pairs.inc(new_buf[j], new_buf[j + 1], u, f));
                }
            }
            symbols[start..start + m].copy_from_slice(&new_buf);
            meta[ui].len = m;
            let moved = matches * f;
            sym_count[x as usize] -= moved;
            sym_count[y as usize] -= moved;
            sym_count[z as usize] += moved;
        }
        drop(affected);

        // Scores rose for the pairs that gained windows and for every pair holding x or y (their
        // counts fell); everything else only fell, which the lazy check on pop handles.
        if heap.len() > 4 * pairs.live() + (1 << 16) {
            rebuild(&mut heap, &mut pairs, &sym_count, min_frequency);
        } else {
            for &slot in &gained {
                let info = &mut pairs.info[slot as usize];
                if info.queued != round {
                    info.queued = round;
                    offer(&mut heap, info, slot, &sym_count, min_frequency);
                }
            }
        }
        gained.clear();
        // The symbol lists of x and y: offer every live pair, drop dead slots (a pair that came
        // back has a new slot, so no slot is listed twice for one symbol).
        for s in [x, y] {
            let mut list = std::mem::take(&mut pairs.by_symbol[s as usize]);
            list.retain(|&slot| {
                let info = &mut pairs.info[slot as usize];
                if info.windows == 0 {
                    return false;
                }
                if info.queued != round {
                    info.queued = round;
                    offer(&mut heap, info, slot, &sym_count, min_frequency);
                }
                true
            });
            pairs.by_symbol[s as usize] = list;
        }

        merges += 1;
        if let Some(p) = progress {
            p.merges.store(merges, AtomicOrdering::Relaxed);
        }
    };

    Ok(Training {
        tokens: vocab.tokens,
        initial_alphabet,
        continuation_alphabet,
        merges,
        reused_merges: reused,
        stop,
    })
}

/// A heap holding exactly one current entry per live pair at or above `min_frequency`.
fn rebuild(heap: &mut BinaryHeap<Entry>, pairs: &mut Pairs, sym_count: &[u64], min_frequency: u64) {
    let mut entries = std::mem::take(heap).into_vec();
    entries.clear();
    for (slot, info) in pairs.info.iter_mut().enumerate() {
        if info.windows > 0 && info.count >= min_frequency {
            let e = current(info, slot as u32, sym_count);
            info.top = Some((e.fxy, e.fx, e.fy));
            entries.push(e);
        } else {
            info.top = None;
        }
    }
    *heap = BinaryHeap::from(entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn p<'a>(
        vocab_size: usize,
        specials: &'a [String],
        min_frequency: u64,
        prefix: &'a str,
        limit_alphabet: Option<usize>,
    ) -> Params<'a> {
        Params {
            vocab_size,
            specials,
            min_frequency,
            prefix,
            limit_alphabet,
        }
    }

    fn w(items: &[(&str, u64)]) -> Vec<(String, u64)> {
        items.iter().map(|(s, c)| (s.to_string(), *c)).collect()
    }

    /// The contract, recounting every round (mirrors the Python reference).
    fn reference(words: &[(String, u64)], params: &Params) -> Training {
        let mut tokens: Vec<String> = Vec::new();
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut intern = |s: String, tokens: &mut Vec<String>| -> (u32, bool) {
            if let Some(&i) = ids.get(&s) {
                return (i, false);
            }
            ids.insert(s.clone(), tokens.len() as u32);
            tokens.push(s);
            (tokens.len() as u32 - 1, true)
        };
        for s in params.specials {
            intern(s.clone(), &mut tokens);
        }
        let mut weight: HashMap<String, u64> = HashMap::new();
        let mut initial: Vec<char> = Vec::new();
        let mut inner: Vec<char> = Vec::new();
        for (word, c) in words {
            for (i, ch) in word.chars().enumerate() {
                let s = if i == 0 {
                    initial.push(ch);
                    ch.to_string()
                } else {
                    inner.push(ch);
                    format!("{}{ch}", params.prefix)
                };
                *weight.entry(s).or_insert(0) += c;
            }
        }
        initial.sort();
        initial.dedup();
        inner.sort();
        inner.dedup();
        if let Some(limit) = params.limit_alphabet {
            let mut ranked: Vec<(&String, &u64)> = weight.iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let kept: Vec<String> = ranked.iter().take(limit).map(|e| e.0.clone()).collect();
            initial.retain(|c| kept.contains(&c.to_string()));
            inner.retain(|c| kept.contains(&format!("{}{c}", params.prefix)));
        }
        let before = tokens.len();
        let mut first_ids = HashMap::new();
        for &c in &initial {
            first_ids.insert(c, intern(c.to_string(), &mut tokens).0);
        }
        let initial_alphabet = tokens.len() - before;
        let mut inner_ids = HashMap::new();
        for &c in &inner {
            inner_ids.insert(c, intern(format!("{}{c}", params.prefix), &mut tokens).0);
        }
        let continuation_alphabet = tokens.len() - before - initial_alphabet;
        let mut units: Vec<(Vec<u32>, u64)> = Vec::new();
        for (word, c) in words {
            let syms: Option<Vec<u32>> = word
                .chars()
                .enumerate()
                .map(|(i, ch)| {
                    if i == 0 {
                        first_ids.get(&ch).copied()
                    } else {
                        inner_ids.get(&ch).copied()
                    }
                })
                .collect();
            if let Some(s) = syms {
                units.push((s, *c));
            }
        }
        let (mut merges, mut reused) = (0, 0);
        let stop = loop {
            if tokens.len() >= params.vocab_size {
                break StopReason::VocabSize;
            }
            let mut sc: HashMap<u32, u64> = HashMap::new();
            let mut pc: HashMap<(u32, u32), u64> = HashMap::new();
            for (s, c) in &units {
                for &x in s {
                    *sc.entry(x).or_insert(0) += c;
                }
                for win in s.windows(2) {
                    *pc.entry((win[0], win[1])).or_insert(0) += c;
                }
            }
            if pc.is_empty() {
                break StopReason::NoPairs;
            }
            let best = pc
                .iter()
                .filter(|(_, &n)| n >= params.min_frequency)
                .map(|(&(x, y), &n)| Entry {
                    fxy: n,
                    fx: sc[&x],
                    fy: sc[&y],
                    key: key(x, y),
                    slot: 0,
                })
                .max();
            let Some(best) = best else {
                break StopReason::MinFrequency;
            };
            let (x, y) = unkey(best.key);
            let right = tokens[y as usize].clone();
            let merged = format!(
                "{}{}",
                tokens[x as usize],
                right.strip_prefix(params.prefix).unwrap_or(&right)
            );
            let (z, new) = intern(merged, &mut tokens);
            if !new {
                reused += 1;
            }
            merges += 1;
            for (s, _) in units.iter_mut() {
                let mut out = Vec::new();
                let mut i = 0;
                while i < s.len() {
                    if i + 1 < s.len() && s[i] == x && s[i + 1] == y {
                        out.push(z);
                        i += 2;
                    } else {
                        out.push(s[i]);
                        i += 1;
                    }
                }
                *s = out;
            }
        };
        Training {
            tokens,
            initial_alphabet,
            continuation_alphabet,
            merges,
            reused_merges: reused,
            stop,
        }
    }

    #[test]
    fn hand_trace_with_a_score_tie() {
        // f(a)=5, f(##b)=5, f(##c)=2: (a, ##b) scores 5/25, (##b, ##c) 2/10; equal, and the
        // larger f(xy) wins.
        let specials = vec!["[UNK]".to_string()];
        let words = w(&[("ab", 3), ("abc", 2)]);
        let t = train(&words, &p(10, &specials, 1, "##", None)).unwrap();
        assert_eq!(t.tokens, ["[UNK]", "a", "##b", "##c", "ab", "abc"]);
        assert_eq!(
            (t.merges, t.reused_merges, t.stop),
            (2, 0, StopReason::NoPairs)
        );
        assert_eq!((t.initial_alphabet, t.continuation_alphabet), (1, 2));
        assert_eq!(t, reference(&words, &p(10, &specials, 1, "##", None)));
        // The vocabulary cap stops before the second merge; min_frequency 3 stops after the first.
        let t = train(&words, &p(5, &specials, 1, "##", None)).unwrap();
        assert_eq!((t.tokens.len(), t.stop), (5, StopReason::VocabSize));
        let t = train(&words, &p(10, &specials, 3, "##", None)).unwrap();
        assert_eq!((t.merges, t.stop), (1, StopReason::MinFrequency));
    }

    #[test]
    fn rare_pairs_score_higher() {
        // (x, ##y) appears twice in 2 words of its own: 2/(2*2) beats the common (t, ##h).
        let words = w(&[("th", 100), ("the", 50), ("xy", 2)]);
        let t = train(&words, &p(100, &[], 1, "##", None)).unwrap();
        assert_eq!(t.tokens[5], "xy");
        assert_eq!(t, reference(&words, &p(100, &[], 1, "##", None)));
    }

    #[test]
    fn reused_strings_keep_their_id() {
        // "a"+"##bc" and "ab"+"##c" both spell "abc".
        let words = w(&[("abc", 1), ("abcd", 1), ("bc", 5), ("ab", 5), ("xbc", 3)]);
        for min in 1..3 {
            let params = p(50, &[], min, "##", None);
            let got = train(&words, &params).unwrap();
            assert_eq!(got, reference(&words, &params));
        }
        // A prefix of one character: "#" + "#a" spells "#a" again (the merge reuses y's id, and
        // the pair can reappear right away).
        let words = w(&[("##a", 3), ("###a", 2), ("#a#", 1)]);
        let params = p(50, &[], 1, "#", None);
        let got = train(&words, &params).unwrap();
        assert_eq!(got, reference(&words, &params));
        assert!(got.reused_merges > 0, "{got:?}");
    }

    #[test]
    fn limit_alphabet_drops_words() {
        let words = w(&[("ab", 5), ("ac", 1), ("zzz", 1)]);
        let params = p(50, &[], 1, "##", Some(2));
        let t = train(&words, &params).unwrap();
        // a (6) and ##b (5) stay; ##c, z, ##z (1, 1, 2) go, and so do "ac" and "zzz".
        assert_eq!(t.tokens, ["a", "##b", "ab"]);
        assert_eq!(t, reference(&words, &params));
        let t = train(&words, &p(50, &[], 1, "##", Some(0))).unwrap();
        assert_eq!((t.tokens.len(), t.stop), (0, StopReason::NoPairs));
    }

    #[test]
    fn errors_are_values() {
        let specials = vec!["[UNK]".to_string(), "[UNK]".to_string()];
        let words = w(&[("a", 1)]);
        let msg = |r: Result<Training, Error>| match r {
            Err(Error::Invalid(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(msg(train(&words, &p(10, &specials, 1, "##", None))).contains("specials[1]"));
        assert!(msg(train(&words, &p(10, &[], 0, "##", None))).contains("min_frequency"));
        assert!(msg(train(&words, &p(10, &[], 1, "", None))).contains("continuing_subword_prefix"));
        assert!(msg(train(&w(&[("", 1)]), &p(10, &[], 1, "##", None))).contains("words[0]"));
        assert!(msg(train(&w(&[("a", 0)]), &p(10, &[], 1, "##", None))).contains("words[0]"));
        let one = vec!["x".to_string()];
        assert!(msg(train(&words, &p(0, &one, 1, "##", None))).contains("vocab_size"));
        // Counts too large to compare exactly, and alphabet weights overflowing u64.
        assert!(
            msg(train(&w(&[("ab", 1 << 62)]), &p(10, &[], 1, "##", None))).contains("too large")
        );
        let big = w(&[("a", u64::MAX), ("ab", 1)]);
        assert!(msg(train(&big, &p(10, &[], 1, "##", None))).contains("overflows"));
        // Empty input is fine.
        let t = train(&[], &p(10, &[], 1, "##", None)).unwrap();
        assert_eq!((t.tokens.len(), t.stop), (0, StopReason::NoPairs));
    }

    use crate::train::bpe::tests::Lcg;

    fn random_words(rng: &mut Lcg, alphabet: &[char], max_len: u64) -> Vec<(String, u64)> {
        let mut map: std::collections::BTreeMap<String, u64> = Default::default();
        for _ in 0..1 + rng.below(25) {
            let len = 1 + rng.below(max_len);
            let s: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            *map.entry(s).or_insert(0) += 1 + rng.below(6);
        }
        map.into_iter().collect()
    }

    #[test]
    fn matches_reference_on_random_corpora() {
        let mut rng = Lcg(0x0077_0bd5);
        let alphabets: [&[char]; 4] = [
            &['a', 'b'],
            &['a', 'b', 'c', 'd', 'e'],
            &['#', 'a', 'b'],
            &['x', 'é', '中', '#'],
        ];
        for case in 0..3000 {
            let alphabet = alphabets[rng.below(4) as usize];
            let words = random_words(&mut rng, alphabet, 9);
            let specials: Vec<String> = match rng.below(3) {
                0 => vec![],
                1 => vec!["[UNK]".into()],
                _ => vec!["a".into(), "##b".into()],
            };
            let prefix = ["##", "#", "x"][rng.below(3) as usize];
            let limit = match rng.below(4) {
                0 => Some(rng.below(8) as usize),
                _ => None,
            };
            let params = p(
                specials.len() + rng.below(40) as usize,
                &specials,
                1 + rng.below(3),
                prefix,
                limit,
            );
            let got = train(&words, &params).unwrap();
            let want = reference(&words, &params);
            assert_eq!(got, want, "case {case}: {words:?} {params:?}");
        }
    }

    #[test]
    fn deterministic_whatever_the_word_order() {
        let mut rng = Lcg(11);
        for _ in 0..200 {
            let words = random_words(&mut rng, &['a', 'b', 'c'], 8);
            let params = p(30, &[], 1, "##", None);
            let a = train(&words, &params).unwrap();
            let mut perm = words.clone();
            perm.reverse();
            assert_eq!(train(&perm, &params).unwrap(), a);
        }
    }

    /// Throughput on the shared corpora (whitespace words, lowercased):
    /// `cargo test --release train::wordpiece::tests::throughput -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn throughput() {
        use std::time::Instant;
        let limit: usize = std::env::var("WP_TRAIN_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10 << 20);
        let vocab: usize = std::env::var("WP_TRAIN_VOCAB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(32_000);
        let mut text = String::new();
        for sub in ["en", "code", "multi"] {
            let Ok(rd) = std::fs::read_dir(format!("/work/shared/data/corpora/{sub}")) else {
                continue;
            };
            let mut paths: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            paths.sort();
            for path in paths {
                if let Ok(t) = std::fs::read_to_string(&path) {
                    text.push_str(&t);
                }
            }
        }
        while text.len() < limit && !text.is_empty() {
            let copy = text.clone();
            text.push_str(&copy);
        }
        let mut counts: HashMap<String, u64> = HashMap::new();
        for piece in text[..text.floor_char_boundary(limit)]
            .split(|c: char| c.is_whitespace() || c.is_ascii_punctuation())
            .filter(|s| !s.is_empty())
        {
            *counts.entry(piece.to_lowercase()).or_insert(0) += 1;
        }
        let mut words: Vec<(String, u64)> = counts.into_iter().collect();
        words.sort();
        let specials: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let t0 = Instant::now();
        let t = train(&words, &p(vocab, &specials, 2, "##", None)).unwrap();
        eprintln!(
            "train::wordpiece: {} words, {:?}: {} tokens, {} merges ({} reused), stop {:?}",
            words.len(),
            t0.elapsed(),
            t.tokens.len(),
            t.merges,
            t.reused_merges,
            t.stop
        );
    }
}
