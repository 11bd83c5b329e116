//! The merge table of byte-level BPE for pairs outside the dense grid: (left, right) ->
//! `rank << 32 | merged`, internal ids.
//!
//! Two forms. [`PairTable::Wide`] keeps each pair as a 16-byte (key, answer) entry of hashbrown's
//! map and takes any ranks. [`PairTable::Compact`] keeps a pair in one 8-byte entry, `left`,
//! `right` and an order key, so the table is half the size (o200k's 200,000 pairs: 2 MiB of
//! entries instead of 4, nearer the 2 MiB of a core's L2 cache, where a first-seen word's pair
//! questions land at random). It needs no rank beside the merged id because in the vocabularies
//! read from tiktoken's files and in GPT-2's the merged ids rise with the ranks: merging in rank
//! order is merging in order of the merged id, and among the merges that make the same token
//! (a Llama-3- or Qwen2-style file lists every split of a token), in order of their ranks. So the
//! order key is `merged << tie_bits | tie`, `tie` the merge's place among those of its token, and
//! the merged id is the key's high bits.
//!
//! Example: merges `a a` -> `aa` (rank 0), `aa a` -> `aaa` (1), `a aa` -> `aaa` (2), with
//! `aa` = 3 and `aaa` = 4 (ids 0-2 the bytes). The keys are `3 << 1 | 0`, `4 << 1 | 0` and
//! `4 << 1 | 1` (one tie bit): ordered as the ranks are. In `a aa a` both pairs make `aaa`, and
//! `aa a` goes first, as its rank says: `a aaa`, where the leftmost pair would have given
//! `aaa a`.
//!
//! The order keys replace the ranks everywhere, the grid's answers too: every comparison of two
//! ranks gives the same answer with the keys, and nothing reads a rank's value.
//!
//! A question about a pair with a merge reads twice: hashbrown's control bytes (256 KB for
//! o200k, mostly in the core's L2 cache), which say which slot holds the pair, then the slot, in
//! the 2 MiB of entries. The compact table knows where a pair's home slot lies ([`Home`]) and
//! prefetches its line before hashbrown starts, so the second read travels with the first
//! instead of after it: o200k encodes unseen multilingual text 4% faster, and 9% faster when the
//! caches are emptied between turns of 100 documents, as other work between two calls empties
//! them (docs/benchmarks.md, twenty-sixth pass).

use rustc_hash::FxBuildHasher;

use crate::memory::huge_pages::TableAlloc;

/// The packed answer (`rank << 32 | merged`) of a pair without a merge (no rank is u32::MAX).
pub const ABSENT: u64 = u64::MAX;

/// How merges are ranked inside the model: their own ranks, or order keys (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderKeys {
    /// Bits of an internal id.
    id_bits: u32,
    /// Bits of a tie among the merges that make one token.
    tie_bits: u32,
}

impl OrderKeys {
    /// The order keys of `merges` (left, right, rank, merged; internal ids below `id_count`), if
    /// they apply: the list is in rank order, the merged ids never fall along it, the keys stay
    /// below `limit` and an entry fits 64 bits. `merged_of` maps a listed merged id to its
    /// internal one.
    pub fn of(
        merges: &[(u32, u32, u32, u32)],
        merged_of: impl Fn(u32) -> Option<u32>,
        id_count: usize,
        limit: u32,
    ) -> Option<OrderKeys> {
        let id_bits = bits_for(id_count.checked_sub(1)? as u64);
        let (mut last_rank, mut ties, mut most) = (None, Ties::default(), 0u32);
        for &(_, _, rank, merged) in merges {
            let merged = merged_of(merged)?;
            if last_rank.is_some_and(|r| r >= rank) || ties.last.is_some_and(|m| m > merged) {
                return None;
            }
            most = most.max(ties.next(merged));
            last_rank = Some(rank);
        }
        let keys = OrderKeys {
            id_bits,
            tie_bits: bits_for(most as u64),
        };
        if 3 * id_bits + keys.tie_bits > 64 {
            return None;
        }
        // Below 2^(id_bits + tie_bits), which the check above keeps under 2^64.
        let highest = (id_count as u64 - 1) << keys.tie_bits | most as u64;
        (highest < limit as u64).then_some(keys)
    }

    /// The order key of a merge of the list `of` accepted: its merged id and its tie ([`Ties`]).
    pub fn key(&self, merged: u32, tie: u32) -> u32 {
        merged << self.tie_bits | tie
    }

    fn key_bits(&self) -> u32 {
        self.id_bits + self.tie_bits
    }

    /// The answer (`key << 32 | merged`) of an order key.
    #[inline(always)]
    fn answer(&self, key: u64) -> u64 {
        key << 32 | key >> self.tie_bits
    }

    /// A compact entry's pair: `left << id_bits | right`.
    #[inline(always)]
    fn pair_of(&self, left: u32, right: u32) -> u64 {
        (left as u64) << self.id_bits | right as u64
    }

    /// The compact entry of a pair and its answer: the pair above the order key.
    fn entry(&self, pair: u64, answer: u64) -> u64 {
        pair << self.key_bits() | answer >> 32
    }

    /// The pair of a compact entry.
    #[inline(always)]
    fn entry_pair(&self, entry: u64) -> u64 {
        entry >> self.key_bits()
    }

    /// The answer of a compact entry.
    #[inline(always)]
    fn entry_answer(&self, entry: u64) -> u64 {
        self.answer(entry & ((1 << self.key_bits()) - 1))
    }
}

/// Counts the ties along a merge list in rank order: a merge's place among the merges just
/// before it that make the same token (0 for the first of them).
#[derive(Default)]
pub struct Ties {
    last: Option<u32>,
    tie: u32,
}

impl Ties {
    /// The tie of the next merge, which makes `merged`.
    pub fn next(&mut self, merged: u32) -> u32 {
        self.tie = if self.last == Some(merged) {
            self.tie + 1
        } else {
            0
        };
        self.last = Some(merged);
        self.tie
    }
}

/// The bits needed to write `n` (0 for 0).
fn bits_for(n: u64) -> u32 {
    u64::BITS - n.leading_zeros()
}

#[inline(always)]
fn prefetch(at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(at as *const i8, std::arch::x86_64::_MM_HINT_T0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[inline(always)]
fn hash(key: u64) -> u64 {
    use std::hash::BuildHasher;
    FxBuildHasher.hash_one(key)
}

#[inline(always)]
fn pack(left: u32, right: u32) -> u64 {
    ((left as u64) << 32) | right as u64
}

/// The pairs outside the grid (see the module).
pub enum PairTable {
    Wide(hashbrown::HashMap<u64, u64, FxBuildHasher, TableAlloc>),
    Compact {
        entries: hashbrown::HashTable<u64, TableAlloc>,
        keys: OrderKeys,
        home: Home,
    },
}

/// Where a pair's home slot lies in memory (see the module): slot `h & mask` at `end - 8 * h`.
/// Learnt from where the entries are, not assumed from hashbrown's layout; if they do not sit
/// where this says, `end` is 0 and nothing is prefetched. A prefetch is only a hint: a wrong
/// address would cost time, never an answer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Home {
    end: usize,
    mask: usize,
}

impl Clone for PairTable {
    fn clone(&self) -> PairTable {
        let mut copy = match self {
            PairTable::Wide(map) => PairTable::Wide(map.clone()),
            PairTable::Compact { entries, keys, .. } => PairTable::Compact {
                entries: entries.clone(),
                keys: *keys,
                home: Home::default(),
            },
        };
        copy.learn_homes();
        copy
    }
}

impl std::fmt::Debug for PairTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let form = match self {
            PairTable::Wide(_) => "wide",
            PairTable::Compact { .. } => "compact",
        };
        write!(f, "PairTable({form}, {} pairs)", self.len())
    }
}

impl PairTable {
    /// An empty table for `n` pairs: compact with `keys`, else wide.
    pub fn with_capacity(n: usize, keys: Option<OrderKeys>) -> PairTable {
        match keys {
            Some(keys) => PairTable::Compact {
                entries: hashbrown::HashTable::with_capacity_in(n, TableAlloc),
                keys,
                home: Home::default(),
            },
            None => PairTable::Wide(hashbrown::HashMap::with_capacity_and_hasher_in(
                n,
                FxBuildHasher,
                TableAlloc,
            )),
        }
    }

    /// Set the answer (`rank << 32 | merged`; in a compact table the rank is the order key of
    /// `merged`) of a pair, replacing an earlier one.
    pub fn insert(&mut self, left: u32, right: u32, answer: u64) {
        match self {
            PairTable::Wide(map) => {
                map.insert(pack(left, right), answer);
            }
            PairTable::Compact { entries, keys, .. } => {
                let pair = keys.pair_of(left, right);
                let entry = keys.entry(pair, answer);
                debug_assert_eq!((answer >> 32) as u32 >> keys.tie_bits, answer as u32);
                let found = |&e: &u64| keys.entry_pair(e) == pair;
                match entries.entry(hash(pair), found, |&e| hash(keys.entry_pair(e))) {
                    hashbrown::hash_table::Entry::Occupied(mut e) => *e.get_mut() = entry,
                    hashbrown::hash_table::Entry::Vacant(e) => {
                        e.insert(entry);
                    }
                }
            }
        }
    }

    /// The answer of a pair: `rank << 32 | merged`, or [`ABSENT`].
    #[inline(always)]
    pub fn get(&self, left: u32, right: u32) -> u64 {
        match self {
            PairTable::Wide(map) => map.get(&pack(left, right)).copied().unwrap_or(ABSENT),
            PairTable::Compact {
                entries,
                keys,
                home,
            } => {
                let pair = keys.pair_of(left, right);
                let h = hash(pair);
                if home.end != 0 {
                    let at = home.end.wrapping_sub((h as usize & home.mask) << 3);
                    prefetch(at);
                }
                match entries.find(h, |&e| keys.entry_pair(e) == pair) {
                    Some(&e) => keys.entry_answer(e),
                    None => ABSENT,
                }
            }
        }
    }

    /// Every pair as (left, right, answer).
    pub fn entries(&self) -> Box<dyn Iterator<Item = (u32, u32, u64)> + '_> {
        match self {
            PairTable::Wide(map) => {
                Box::new(map.iter().map(|(&p, &a)| ((p >> 32) as u32, p as u32, a)))
            }
            PairTable::Compact { entries, keys, .. } => Box::new(entries.iter().map(move |&e| {
                let pair = keys.entry_pair(e);
                (
                    (pair >> keys.id_bits) as u32,
                    (pair & ((1 << keys.id_bits) - 1)) as u32,
                    keys.entry_answer(e),
                )
            })),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            PairTable::Wide(map) => map.len(),
            PairTable::Compact { entries, .. } => entries.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Learn where the entries' home slots lie (see [`Home`]): once the table is filled, and
    /// again for a copy, whose entries are elsewhere. Tables of fewer than 1,024 pairs are left
    /// alone: they stay in the caches.
    pub fn learn_homes(&mut self) {
        let PairTable::Compact {
            entries,
            keys,
            home,
        } = self
        else {
            return;
        };
        *home = Home::default();
        if entries.len() < 1024 {
            return;
        }
        // hashbrown fills at most 7 of every 8 slots, and has a power of two of them.
        let mask = (entries.capacity() / 7 * 8).next_power_of_two() - 1;
        let sample = || {
            (entries.iter().take(4096)).map(|e| {
                (
                    e as *const u64 as usize,
                    hash(keys.entry_pair(*e)) as usize & mask,
                )
            })
        };
        // Each entry votes for the end its address gives if it sat in its home slot; most do.
        let mut votes: rustc_hash::FxHashMap<usize, usize> = Default::default();
        for (at, slot) in sample() {
            *votes.entry(at.wrapping_add(slot << 3)).or_default() += 1;
        }
        let Some((&end, _)) = votes.iter().max_by_key(|&(&end, &n)| (n, end)) else {
            return;
        };
        // Nine in ten within the 16 slots a probe reads first: the layout is as assumed.
        let (near, all) = sample().fold((0, 0), |(near, all), (at, slot)| {
            let off = end.wrapping_sub(slot << 3).wrapping_sub(at) >> 3;
            (near + (off < 16) as usize, all + 1)
        });
        if near * 10 >= all * 9 {
            *home = Home { end, mask };
        }
    }

    /// Whether home slots are prefetched (their layout was learnt).
    pub fn prefetches(&self) -> bool {
        matches!(self, PairTable::Compact { home, .. } if home.end != 0)
    }

    /// Whether pairs are kept compact (order keys in place of ranks).
    pub fn is_compact(&self) -> bool {
        matches!(self, PairTable::Compact { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_follow_the_ranks_or_do_not_apply() {
        let ids = |m: u32| Some(m);
        // aa (3), aaa (4) twice: one tie bit.
        let merges = [(0, 0, 0, 3), (3, 0, 1, 4), (0, 3, 2, 4)];
        let keys = OrderKeys::of(&merges, ids, 5, u32::MAX).unwrap();
        assert_eq!(keys.tie_bits, 1);
        assert_eq!([keys.key(3, 0), keys.key(4, 0), keys.key(4, 1)], [6, 8, 9]);
        // A merged id that falls, ranks out of order, a key past the limit: none.
        assert_eq!(
            OrderKeys::of(&[(0, 0, 0, 4), (0, 1, 1, 3)], ids, 5, u32::MAX),
            None
        );
        assert_eq!(
            OrderKeys::of(&[(0, 0, 1, 3), (0, 1, 0, 4)], ids, 5, u32::MAX),
            None
        );
        assert_eq!(OrderKeys::of(&merges, ids, 5, 9), None);
        assert!(OrderKeys::of(&merges, ids, 5, 10).is_some());
        // An id too wide for three in 64 bits.
        assert_eq!(OrderKeys::of(&merges, ids, 1 << 22, u32::MAX), None);
        // An unnumbered merged token.
        assert_eq!(
            OrderKeys::of(&merges, |m| (m != 4).then_some(m), 5, u32::MAX),
            None
        );
    }

    #[test]
    fn both_forms_answer_alike() {
        let merges: Vec<(u32, u32, u32, u32)> = (0..3000u32)
            .map(|k| (k % 251 + 300, k / 7 + 400, k, 1000 + k / 3))
            .collect();
        let keys = OrderKeys::of(&merges, Some, 2000, u32::MAX).unwrap();
        let mut wide = PairTable::with_capacity(merges.len(), None);
        let mut compact = PairTable::with_capacity(merges.len(), Some(keys));
        let mut ties = Ties::default();
        for &(l, r, rank, m) in &merges {
            let tie = ties.next(m);
            wide.insert(l, r, (rank as u64) << 32 | m as u64);
            compact.insert(l, r, (keys.key(m, tie) as u64) << 32 | m as u64);
        }
        assert!(compact.is_compact() && !wide.is_compact());
        assert_eq!(wide.len(), compact.len());
        compact.learn_homes();
        assert!(compact.prefetches() && !wide.prefetches());
        let order = |t: &PairTable, l, r| t.get(l, r);
        for l in 290..560 {
            for r in 395..830 {
                let (a, b) = (order(&wide, l, r), order(&compact, l, r));
                assert_eq!(a == ABSENT, b == ABSENT, "pair {l} {r}");
                assert_eq!(a as u32, b as u32, "merged of {l} {r}");
            }
        }
        // The order of any two answers is the same in both forms.
        let listed: Vec<(u64, u64)> = merges
            .iter()
            .map(|&(l, r, _, _)| (wide.get(l, r), compact.get(l, r)))
            .collect();
        for w in listed.windows(2) {
            assert_eq!(w[0].0.cmp(&w[1].0), w[0].1.cmp(&w[1].1));
        }
        let mut back: Vec<(u32, u32, u64)> = compact.entries().collect();
        back.sort_unstable();
        let mut expected: Vec<(u32, u32, u64)> = merges
            .iter()
            .map(|&(l, r, _, _)| (l, r, compact.get(l, r)))
            .collect();
        expected.sort_unstable();
        assert_eq!(back, expected);
    }

    /// The home slots of a compact table are learnt from its entries, a copy learns its own,
    /// and a small table is left alone; none of it changes an answer.
    #[test]
    fn home_slots_are_learnt_per_table() {
        let merges: Vec<(u32, u32, u32, u32)> = (0..20_000u32)
            .map(|k| (k % 997 + 300, k / 13 + 400, k, 2000 + k))
            .collect();
        let keys = OrderKeys::of(&merges, Some, 22_001, u32::MAX).unwrap();
        let fill = |n: usize| {
            let mut table = PairTable::with_capacity(n, Some(keys));
            for &(l, r, _, m) in &merges[..n] {
                table.insert(l, r, (keys.key(m, 0) as u64) << 32 | m as u64);
            }
            table
        };
        let home = |t: &PairTable| match t {
            PairTable::Compact { home, .. } => home.end,
            PairTable::Wide(_) => 0,
        };
        let mut table = fill(merges.len());
        assert!(
            !table.prefetches(),
            "nothing is learnt before it is asked for"
        );
        table.learn_homes();
        assert!(table.prefetches());
        // Every entry lies in the slots the learnt end gives (end - 8 * mask ..= end), nine in
        // ten within 16 slots after their home (counted around the table's end).
        if let PairTable::Compact {
            entries,
            keys,
            home,
        } = &table
        {
            let mut near = 0;
            for e in entries.iter() {
                let at = e as *const u64 as usize;
                assert!((home.end - 8 * home.mask..=home.end).contains(&at));
                let slot = hash(keys.entry_pair(*e)) as usize & home.mask;
                near += ((home.end.wrapping_sub(slot << 3).wrapping_sub(at) >> 3) & home.mask < 16)
                    as usize;
            }
            assert!(
                near * 10 >= entries.len() * 9,
                "{near} of {}",
                entries.len()
            );
        }
        let copy = table.clone();
        assert!(copy.prefetches());
        assert_ne!(
            home(&copy),
            home(&table),
            "the copy's entries are elsewhere"
        );
        for &(l, r, _, m) in &merges {
            assert_eq!(table.get(l, r) as u32, m);
            assert_eq!(copy.get(l, r), table.get(l, r));
        }
        assert_eq!(table.get(1, 2), ABSENT);
        let mut small = fill(1000);
        small.learn_homes();
        assert!(!small.prefetches());
        assert_eq!(
            small.get(merges[999].0, merges[999].1) as u32,
            merges[999].3
        );
    }
}
