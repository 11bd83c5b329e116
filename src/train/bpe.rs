//! Incremental BPE training: learn the ordered merge table (seed 003, "0x06 BPE training").
//!
//! Contract (identical to `train_merges_reference` in `tinyllm.train.bpe`, which
//! recounts every pair every round):
//!
//! * the score of a pair `(a, b)` is the sum over units of `frequency × windows`, where windows are
//!   adjacent positions holding `(a, b)` in the unit's current sequence; windows overlap (`aaa` has
//!   two `(a, a)` windows) and never cross units;
//! * the highest score wins; equal scores go to the lexicographically smallest `(left, right)`;
//! * training stops before merging when `max_merges` merges exist (checked first), when no pair is
//!   left, or when the best score is below `min_frequency`;
//! * each unit is rewritten left to right without overlap (`aaa -> X a`); merge rank `r` creates id
//!   `base_size + r`.
//!
//! The trainer is incremental: it keeps global pair scores, a pair → units index and a max-heap of
//! `(score, Reverse(pair))` with lazy invalidation. A merge rewrites only the units that contained
//! the selected pair, and only the windows that touch a replaced position change the scores.
//! Nothing depends on hash-map iteration order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::Error;

/// Why training stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `max_merges` merges were learned.
    MaxMerges,
    /// The best remaining score was below `min_frequency`.
    MinFrequency,
    /// No adjacent pair was left in any unit.
    NoPairs,
}

/// The learned merges, in rank order, and why training stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Training {
    pub merges: Vec<(u32, u32)>,
    pub stop: StopReason,
}

#[inline(always)]
pub(crate) fn key(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

#[inline(always)]
pub(crate) fn unkey(k: u64) -> (u32, u32) {
    ((k >> 32) as u32, k as u32)
}

/// One unit in the flat symbol array.
#[derive(Clone, Copy)]
struct UnitMeta {
    freq: u64,
    start: usize,
    len: usize,
}

/// Global state of one pair.
struct PairInfo {
    /// Weighted score: sum of unit frequency over the pair's windows.
    count: u64,
    /// Unweighted number of windows; a pair exists while this is positive (a pair seen only in
    /// zero-frequency units exists with score 0, as in the reference's `Counter`).
    windows: u64,
    /// Units that contained the pair when it was indexed, ascending and without duplicates (may
    /// name units that no longer contain it).
    units: Vec<u32>,
}

fn overflow(a: u32, b: u32) -> Error {
    Error::Invalid(format!(
        "BPE training: the weighted count of pair ({a}, {b}) overflows u64"
    ))
}

/// Learn up to `max_merges` merges from `units`.
///
/// `units`: independent training units (pre-tokens), each a symbol sequence (ids < base_size) with
/// its corpus frequency. Merge rank r creates id `base_size + r`.
pub fn train(
    units: &[(Vec<u32>, u64)],
    base_size: u32,
    max_merges: usize,
    min_frequency: u64,
) -> Result<Training, Error> {
    train_with_progress(units, base_size, max_merges, min_frequency, None)
}

/// [`train`], storing the number of merges learned so far in `progress` (for a progress bar).
pub fn train_with_progress(
    units: &[(Vec<u32>, u64)],
    base_size: u32,
    max_merges: usize,
    min_frequency: u64,
    progress: Option<&std::sync::atomic::AtomicUsize>,
) -> Result<Training, Error> {
    // ---- validation -------------------------------------------------------------------------
    if (base_size as u64)
        .checked_add(max_merges as u64)
        .is_none_or(|s| s > u32::MAX as u64)
    {
        return Err(Error::Invalid(format!(
            "BPE training: base_size {base_size} + max_merges {max_merges} does not fit in u32 ids"
        )));
    }
    if units.len() > u32::MAX as usize {
        return Err(Error::Invalid(format!(
            "BPE training: {} units, at most {} supported",
            units.len(),
            u32::MAX
        )));
    }
    let mut total = 0usize;
    for (u, (syms, _)) in units.iter().enumerate() {
        if let Some(pos) = syms.iter().position(|&s| s >= base_size) {
            return Err(Error::Invalid(format!(
                "BPE training: units[{u}] position {pos}: symbol {} is not below base_size {base_size}",
                syms[pos]
            )));
        }
        total += syms.len();
    }

    // ---- compact storage: one flat symbol array, per-unit start and current length ------------
    let mut symbols: Vec<u32> = Vec::with_capacity(total);
    // Frequency, start and current length side by side: one cache line per affected unit.
    let mut meta: Vec<UnitMeta> = Vec::with_capacity(units.len());
    for (syms, f) in units {
        meta.push(UnitMeta {
            freq: *f,
            start: symbols.len(),
            len: syms.len(),
        });
        symbols.extend_from_slice(syms);
    }

    // ---- initial pair scores and index (units visited in ascending order) ---------------------
    let mut pairs: FxHashMap<u64, PairInfo> = FxHashMap::default();
    for (u, (syms, f)) in units.iter().enumerate() {
        let u = u as u32;
        for w in syms.windows(2) {
            let info = pairs.entry(key(w[0], w[1])).or_insert_with(|| PairInfo {
                count: 0,
                windows: 0,
                units: Vec::new(),
            });
            info.count = info
                .count
                .checked_add(*f)
                .ok_or_else(|| overflow(w[0], w[1]))?;
            info.windows += 1;
            if info.units.last() != Some(&u) {
                info.units.push(u);
            }
        }
    }
    // Live pairs (at least one window). Pairs scoring below `min_frequency` can never be
    // selected (scores only fall, except for new pairs), so they stay out of the heap; this count
    // still tells `MinFrequency` from `NoPairs` when the heap runs dry.
    let mut live = pairs.len();
    // Heap order does not depend on the map's order: keys are distinct pairs.
    let mut heap: BinaryHeap<(u64, Reverse<u64>)> = pairs
        .iter()
        .filter(|(_, info)| info.count >= min_frequency)
        .map(|(&k, info)| (info.count, Reverse(k)))
        .collect::<Vec<_>>()
        .into();

    let mut merges: Vec<(u32, u32)> = Vec::new();
    let mut new_keys: Vec<u64> = Vec::new();

    loop {
        if merges.len() >= max_merges {
            return Ok(Training {
                merges,
                stop: StopReason::MaxMerges,
            });
        }
        // Best live pair. Invariant: every live pair scoring at least `min_frequency` has a heap
        // entry whose stored score is >= its current score (scores only decrease, except for pairs
        // holding the newest id, which are pushed when created), so the first entry whose stored
        // score is current is the maximum, ties going to the smallest pair.
        let best = loop {
            let Some((c, Reverse(k))) = heap.pop() else {
                break None;
            };
            // Dead pairs (no window left) are removed from the map.
            let Some(info) = pairs.get(&k) else { continue };
            if info.count != c {
                if info.count >= min_frequency {
                    heap.push((info.count, Reverse(k)));
                }
                continue;
            }
            break Some((c, k));
        };
        let Some((_, k)) = best else {
            let stop = if live > 0 {
                StopReason::MinFrequency
            } else {
                StopReason::NoPairs
            };
            return Ok(Training { merges, stop });
        };
        let (a, b) = unkey(k);
        let x = base_size + merges.len() as u32;
        // After the rewrite no window (a, b) is left and none can appear again (new windows all
        // hold x), so the pair leaves the table.
        let affected = match pairs.remove(&k) {
            Some(info) => info.units,
            None => Vec::new(),
        };
        live -= 1;
        debug_assert!(affected.windows(2).all(|w| w[0] < w[1]));
        new_keys.clear();

        for &u in &affected {
            let ui = u as usize;
            let UnitMeta {
                freq: f,
                start,
                len: n,
            } = meta[ui];
            let s = &mut symbols[start..start + n];
            // Skip to the first occurrence; units indexed earlier may no longer hold the pair.
            let Some(first) = s.windows(2).position(|w| w[0] == a && w[1] == b) else {
                continue;
            };
            let mut r = first;
            let mut w = first;
            while r < n {
                if r + 1 < n && s[r] == a && s[r + 1] == b {
                    // Left window.
                    if w > 0 {
                        let left = s[w - 1];
                        if left != x {
                            // Old window (left, a) disappears; if left == x it was the right
                            // window of the previous replacement, already removed.
                            dec(&mut pairs, &mut live, key(left, a), k, f);
                        }
                        inc(&mut pairs, &mut new_keys, &mut live, left, x, u, f)?;
                    }
                    // Right window.
                    if r + 2 < n {
                        let right = s[r + 2];
                        dec(&mut pairs, &mut live, key(b, right), k, f);
                        let next_is_merge = r + 3 < n && right == a && s[r + 3] == b;
                        if !next_is_merge {
                            inc(&mut pairs, &mut new_keys, &mut live, x, right, u, f)?;
                        }
                    }
                    s[w] = x;
                    w += 1;
                    r += 2;
                } else {
                    s[w] = s[r];
                    w += 1;
                    r += 1;
                }
            }
            meta[ui].len = w;
        }
        drop(affected);

        for &nk in &new_keys {
            if let Some(info) = pairs.get(&nk) {
                if info.count >= min_frequency {
                    heap.push((info.count, Reverse(nk)));
                }
            }
        }
        merges.push((a, b));
        if let Some(done) = progress {
            done.store(merges.len(), std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// One window of an old pair disappears from a unit of frequency `f`; a pair left without windows
/// can never reappear (new windows all hold the newest id), so it leaves the map.
#[inline(always)]
fn dec(pairs: &mut FxHashMap<u64, PairInfo>, live: &mut usize, k: u64, selected: u64, f: u64) {
    if k == selected {
        return;
    }
    if let Some(info) = pairs.get_mut(&k) {
        debug_assert!(info.count >= f && info.windows > 0);
        info.count = info.count.saturating_sub(f);
        info.windows = info.windows.saturating_sub(1);
        if info.windows == 0 {
            pairs.remove(&k);
            *live -= 1;
        }
    } else {
        debug_assert!(false, "window of an unknown pair");
    }
}

/// One window of a new pair (holding the newest id) appears in unit `u` of frequency `f`.
#[inline(always)]
fn inc(
    pairs: &mut FxHashMap<u64, PairInfo>,
    new_keys: &mut Vec<u64>,
    live: &mut usize,
    a: u32,
    b: u32,
    u: u32,
    f: u64,
) -> Result<(), Error> {
    let k = key(a, b);
    let info = pairs.entry(k).or_insert_with(|| {
        new_keys.push(k);
        *live += 1;
        PairInfo {
            count: 0,
            windows: 0,
            units: Vec::new(),
        }
    });
    info.count = info.count.checked_add(f).ok_or_else(|| overflow(a, b))?;
    info.windows += 1;
    // Units are visited in ascending order, so a duplicate can only be the last entry.
    if info.units.last() != Some(&u) {
        info.units.push(u);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The seed's loop: full recount every round.
    fn reference(
        units: &[(Vec<u32>, u64)],
        base_size: u32,
        max_merges: usize,
        min_frequency: u64,
    ) -> Training {
        let mut cur: Vec<(Vec<u32>, u64)> = units.to_vec();
        let mut merges = Vec::new();
        loop {
            if merges.len() >= max_merges {
                return Training {
                    merges,
                    stop: StopReason::MaxMerges,
                };
            }
            let mut counts: HashMap<(u32, u32), u64> = HashMap::new();
            for (s, f) in &cur {
                for w in s.windows(2) {
                    *counts.entry((w[0], w[1])).or_insert(0) += *f;
                }
            }
            let Some((&pair, &score)) = counts.iter().min_by_key(|(p, c)| (Reverse(**c), **p))
            else {
                return Training {
                    merges,
                    stop: StopReason::NoPairs,
                };
            };
            if score < min_frequency {
                return Training {
                    merges,
                    stop: StopReason::MinFrequency,
                };
            }
            let x = base_size + merges.len() as u32;
            for (s, _) in cur.iter_mut() {
                *s = rewrite(s, pair, x);
            }
            merges.push(pair);
        }
    }

    fn rewrite(s: &[u32], pair: (u32, u32), x: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            if i + 1 < s.len() && (s[i], s[i + 1]) == pair {
                out.push(x);
                i += 2;
            } else {
                out.push(s[i]);
                i += 1;
            }
        }
        out
    }

    fn weighted_len(units: &[(Vec<u32>, u64)]) -> u64 {
        units.iter().map(|(s, f)| s.len() as u64 * f).sum()
    }

    #[test]
    fn seed_trace() {
        let units = vec![(vec![0, 0, 0, 1], 2), (vec![3, 0, 0, 0, 1, 0, 2], 1)];
        let t = train(&units, 4, 4, 2).unwrap();
        assert_eq!(t.merges, vec![(0, 0), (0, 1), (4, 5)]);
        assert_eq!(t.stop, StopReason::MinFrequency);
        assert_eq!(t, reference(&units, 4, 4, 2));
        // Weighted lengths 15 -> 12 -> 9 -> 6.
        let mut cur = units.clone();
        let mut lens = vec![weighted_len(&cur)];
        for (r, &p) in t.merges.iter().enumerate() {
            for (s, _) in cur.iter_mut() {
                *s = rewrite(s, p, 4 + r as u32);
            }
            lens.push(weighted_len(&cur));
        }
        assert_eq!(lens, vec![15, 12, 9, 6]);
        assert_eq!(cur, vec![(vec![6], 2), (vec![3, 6, 0, 2], 1)]);
        // With min_frequency 1 the fourth merge happens and max_merges stops it.
        let t = train(&units, 4, 4, 1).unwrap();
        assert_eq!(t.merges.len(), 4);
        assert_eq!(t.stop, StopReason::MaxMerges);
        assert_eq!(t, reference(&units, 4, 4, 1));
    }

    #[test]
    fn aaaa_runs_out_of_pairs() {
        let units = vec![(vec![0, 0, 0, 0], 1)];
        let t = train(&units, 1, 10, 1).unwrap();
        assert_eq!(t.merges, vec![(0, 0), (1, 1)]);
        assert_eq!(t.stop, StopReason::NoPairs);
        assert_eq!(t, reference(&units, 1, 10, 1));
    }

    #[test]
    fn edge_cases() {
        // max_merges = 0 stops first, even without pairs.
        assert_eq!(
            train(&[], 4, 0, 1).unwrap(),
            Training {
                merges: vec![],
                stop: StopReason::MaxMerges
            }
        );
        assert_eq!(train(&[], 4, 3, 1).unwrap().stop, StopReason::NoPairs);
        assert_eq!(
            train(&[(vec![1], 5), (vec![], 2)], 4, 3, 1).unwrap().stop,
            StopReason::NoPairs
        );
        // aaa -> X a, then (X, a).
        let t = train(&[(vec![0, 0, 0], 1)], 1, 5, 1).unwrap();
        assert_eq!(t.merges, vec![(0, 0), (1, 0)]);
        assert_eq!(t.stop, StopReason::NoPairs);
        // Zero-frequency units: pairs exist with score 0 (as in the reference's Counter).
        let u = vec![(vec![0, 1, 0], 0)];
        assert_eq!(train(&u, 2, 5, 1).unwrap(), reference(&u, 2, 5, 1));
        assert_eq!(train(&u, 2, 5, 1).unwrap().stop, StopReason::MinFrequency);
        assert_eq!(train(&u, 2, 5, 0).unwrap(), reference(&u, 2, 5, 0));
        let u = vec![(vec![0, 1, 0, 1], 0), (vec![1, 1], 3)];
        assert_eq!(train(&u, 2, 5, 0).unwrap(), reference(&u, 2, 5, 0));
    }

    #[test]
    fn errors() {
        let e = train(&[(vec![0, 1], 1), (vec![0, 2, 7], 1)], 3, 4, 1).unwrap_err();
        let Error::Invalid(m) = e else {
            panic!("{e:?}")
        };
        assert!(
            m.contains("units[1]") && m.contains("position 2") && m.contains('7'),
            "{m}"
        );
        assert!(matches!(train(&[], u32::MAX, 1, 1), Err(Error::Invalid(_))));
        assert!(matches!(
            train(&[], 10, usize::MAX, 1),
            Err(Error::Invalid(_))
        ));
        assert!(train(&[], u32::MAX - 5, 5, 1).is_ok());
        // Weighted count overflow is an error, not a wrap.
        let e = train(&[(vec![0, 1], u64::MAX), (vec![0, 1], 1)], 2, 1, 1).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)));
        // Two windows of one unit: 2 × (u64::MAX / 2 + 1) overflows. (A merge cannot create an
        // overflow: a new pair has at most as many weighted windows as the merged pair had.)
        let big = u64::MAX / 2 + 1;
        let e = train(&[(vec![0, 1, 0, 1], big)], 2, 3, 1).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{e:?}");
        // Large but fitting counts are fine.
        let t = train(&[(vec![0, 1, 0], u64::MAX / 2)], 2, 3, 1).unwrap();
        assert_eq!(
            t,
            Training {
                merges: vec![(0, 1), (2, 0)],
                stop: StopReason::NoPairs
            }
        );
    }

    /// A tiny deterministic generator for randomized tests (shared with other trainers' tests).
    pub(crate) struct Lcg(pub(crate) u64);
    impl Lcg {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_case(rng: &mut Lcg) -> (Vec<(Vec<u32>, u64)>, u32, usize, u64) {
        let alphabet = 2 + rng.below(5) as u32;
        let n_units = 1 + rng.below(30) as usize;
        let units = (0..n_units)
            .map(|_| {
                let len = rng.below(13) as usize;
                let s = (0..len)
                    .map(|_| rng.below(alphabet as u64) as u32)
                    .collect();
                (s, 1 + rng.below(5))
            })
            .collect();
        (units, alphabet, rng.below(41) as usize, 1 + rng.below(3))
    }

    #[test]
    fn matches_reference_on_random_corpora() {
        let mut rng = Lcg(0x5eed_0003);
        for case in 0..3000 {
            let (units, base, max_merges, min_freq) = random_case(&mut rng);
            let got = train(&units, base, max_merges, min_freq).unwrap();
            let want = reference(&units, base, max_merges, min_freq);
            assert_eq!(
                got, want,
                "case {case}: units {units:?} base {base} max {max_merges} min {min_freq}"
            );
        }
    }

    #[test]
    fn matches_reference_with_repetitive_units() {
        // Small alphabets and long runs exercise overlapping windows (aaa, abab) heavily.
        let mut rng = Lcg(42);
        for case in 0..1000 {
            let alphabet = 1 + rng.below(2) as u32;
            let units: Vec<(Vec<u32>, u64)> = (0..1 + rng.below(6))
                .map(|_| {
                    let len = rng.below(20) as usize;
                    (
                        (0..len)
                            .map(|_| rng.below(alphabet as u64) as u32)
                            .collect(),
                        rng.below(4),
                    )
                })
                .collect();
            let min_freq = rng.below(3);
            let got = train(&units, alphabet, 60, min_freq).unwrap();
            assert_eq!(
                got,
                reference(&units, alphabet, 60, min_freq),
                "case {case}: {units:?} min {min_freq}"
            );
        }
    }

    #[test]
    fn deterministic_and_order_independent() {
        let mut rng = Lcg(7);
        for _ in 0..300 {
            let (units, base, max_merges, min_freq) = random_case(&mut rng);
            let a = train(&units, base, max_merges, min_freq).unwrap();
            let b = train(&units, base, max_merges, min_freq).unwrap();
            assert_eq!(a, b);
            // Permute the units (Fisher-Yates with the LCG).
            let mut perm = units.clone();
            for i in (1..perm.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                perm.swap(i, j);
            }
            assert_eq!(train(&perm, base, max_merges, min_freq).unwrap(), a);
            // Splitting a unit's frequency across duplicates changes nothing either.
            let mut split = Vec::new();
            for (s, f) in &units {
                if *f > 1 {
                    split.push((s.clone(), 1));
                    split.push((s.clone(), f - 1));
                } else {
                    split.push((s.clone(), *f));
                }
            }
            assert_eq!(train(&split, base, max_merges, min_freq).unwrap(), a);
        }
    }

    /// Throughput on the shared corpora: `cargo test --release train::bpe::tests::throughput -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn throughput() {
        use std::time::Instant;
        fn collect(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            entries.sort();
            for p in entries {
                if p.is_dir() {
                    collect(&p, out);
                } else {
                    out.push(p);
                }
            }
        }
        let limit: usize = std::env::var("BPE_TRAIN_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10 << 20);
        let vocab: usize = std::env::var("BPE_TRAIN_VOCAB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(32_000);
        let mut files = Vec::new();
        collect(
            std::path::Path::new("/work/shared/data/corpora"),
            &mut files,
        );
        let mut text: Vec<u8> = Vec::new();
        for f in files {
            if text.len() >= limit {
                break;
            }
            if let Ok(bytes) = std::fs::read(&f) {
                text.extend_from_slice(&bytes);
                text.push(b'\n');
            }
        }
        text.truncate(limit);
        let t0 = Instant::now();
        let mut counts: HashMap<&[u8], u64> = HashMap::new();
        for w in text
            .split(|c| c.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
        {
            *counts.entry(w).or_insert(0) += 1;
        }
        let mut pieces: Vec<(&[u8], u64)> = counts.into_iter().collect();
        pieces.sort_unstable();
        let units: Vec<(Vec<u32>, u64)> = pieces
            .iter()
            .map(|(p, f)| (p.iter().map(|&b| b as u32).collect(), *f))
            .collect();
        let t_count = t0.elapsed();
        let t1 = Instant::now();
        let t = train(&units, 256, vocab - 256, 2).unwrap();
        let t_train = t1.elapsed();
        eprintln!(
            "train::bpe throughput: {} bytes, {} units, counting {:?}, training {:?}: {} merges, stop {:?}",
            text.len(),
            units.len(),
            t_count,
            t_train,
            t.merges.len(),
            t.stop
        );
    }
}
