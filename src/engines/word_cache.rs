//! A word cache for encoders: the ids of recently seen pieces, keyed by their exact bytes.
//!
//! Pre-tokens repeat (" the", "    ", "▁и"), and looking them up is far cheaper than running a
//! model again. An engine's cache is one table of lines for pieces of up to 32 bytes, shared by
//! every thread that encodes with it ([`crate::engines::cache_lines`], lock-free), and a shard per
//! thread, locked once per text, for what is not shared: a spill store for pieces of 33 to 1,024
//! bytes, which a line cannot hold, and the knocks of pieces of many ids. Results never depend on
//! what the cache holds.
//!
//! The table (8 MiB) and the spill stores (at most half that each) are allocated on first use
//! and freed by `clear_cache`; the lines' memory is committed as lines are written
//! ([`crate::memory::zeroed_table`]; 2 MiB pages where the system has them), so a cache that has
//! seen little holds little. A BPE engine that has merged a few thousand pieces seeds the table
//! with the vocabulary's own words ([`crate::engines::seeds`]).

use std::hash::Hasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};

use rustc_hash::{FxHashMap, FxHasher};

use crate::engines::cache_key::{Key, MAX_LINE_BITS};
use crate::engines::cache_lines::{Knocks, Lines, RawLine, View, MIN_LINE_BITS};
use crate::engines::seeds::Seeds;
use crate::memory::huge_pages::Pages;

/// Pieces longer than [`MAX_KEY`](crate::engines::cache_key::MAX_KEY) bytes, up to this many,
/// are kept in the shard's [`Spill`] store, which is emptied when its keys and ids pass half the
/// size of the lines. Longer ones are not cached: one huge piece (a megabyte of one character)
/// must not fill it.
const MAX_SPILL_KEY: usize = 1024;
/// At least this many shards; more on machines with more cores.
const MIN_SHARDS: usize = 16;

/// Where a spilled piece's key and ids are in [`Spill`]'s buffers.
#[derive(Clone, Copy)]
struct Spilled {
    key_at: u32,
    key_len: u32,
    ids_at: u32,
    ids_len: u32,
}

/// The pieces too long for a line: 33 to [`MAX_SPILL_KEY`] bytes (a run of CJK characters is
/// one piece for the GPT-2 and o200k patterns, a long word in Cyrillic or Devanagari is 40 bytes
/// or more). Merging one of them again costs 1.5-5 µs, a lookup here well under a tenth of that.
/// A hash map from the piece's hash to its place in two append-only buffers, emptied whole when
/// they pass the shard's limit (each thread has its own store); a piece whose hash another piece
/// already holds is looked up by comparing the bytes and otherwise just not kept.
#[derive(Default)]
struct Spill {
    index: FxHashMap<u64, Spilled>,
    keys: Vec<u8>,
    ids: Vec<u32>,
}

#[inline]
fn spill_hash(piece: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(piece);
    h.finish()
}

impl Spill {
    /// Append the kept ids of `piece` (whose [`spill_hash`] is `hash`) to `out`; false when it is
    /// not kept.
    fn extend(&self, piece: &[u8], hash: u64, out: &mut Vec<u32>) -> bool {
        let Some(&at) = self.index.get(&hash) else {
            return false;
        };
        let key = &self.keys[at.key_at as usize..(at.key_at + at.key_len) as usize];
        if key != piece {
            return false;
        }
        out.extend_from_slice(&self.ids[at.ids_at as usize..(at.ids_at + at.ids_len) as usize]);
        true
    }

    /// Keep `ids` for `piece`, whose [`spill_hash`] is `hash`.
    fn insert(&mut self, piece: &[u8], hash: u64, ids: &[u32], limit: usize) {
        if self.keys.len() + 4 * self.ids.len() + piece.len() + 4 * ids.len() > limit {
            self.index.clear();
            self.keys.clear();
            self.ids.clear();
        }
        let at = Spilled {
            key_at: self.keys.len() as u32,
            key_len: piece.len() as u32,
            ids_at: self.ids.len() as u32,
            ids_len: ids.len() as u32,
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = self.index.entry(hash) {
            slot.insert(at);
            self.keys.extend_from_slice(piece);
            self.ids.extend_from_slice(ids);
        }
    }
}

/// A thread's view of the cache: the engine's shared [`Lines`] and this thread's [`Spill`] store
/// and [`Knocks`]. On its own (tests, `WordCache::default()`), it makes a table of its own on
/// first insert.
pub struct WordCache {
    lines: Option<Arc<Lines>>,
    /// `lines`' table, or one empty line while there is none (set only by `set_lines`).
    view: View,
    /// The size of a table this cache makes itself, `1 << bits` lines.
    bits: u32,
    /// Which of the [`ShardedCache`]'s tables `lines` is (it makes a new one on `clear`).
    epoch: usize,
    spill: Spill,
    knocks: Knocks,
    /// A stand-in for a shard that another thread holds: shares the table, keeps no spill store.
    no_spill: bool,
    /// The pages the lines ask for.
    pages: Pages,
}

impl Default for WordCache {
    fn default() -> Self {
        WordCache::with_line_bits(MAX_LINE_BITS, Pages::Huge)
    }
}

impl WordCache {
    /// Append the ids of `piece` to `out`: from the cache, or from `encode` (then remembered).
    #[inline]
    pub fn encode(&mut self, piece: &[u8], out: &mut Vec<u32>, encode: impl FnOnce(&mut Vec<u32>)) {
        let Some(key) = Key::of(piece) else {
            self.encode_long(piece, out, encode);
            return;
        };
        if self.extend(&key, out) || self.extend_overflow(&key, out) {
            return;
        }
        let start = out.len();
        encode(out);
        self.insert(&key, &out[start..]);
    }

    /// [`WordCache::encode`] of a piece longer than [`MAX_KEY`](crate::engines::cache_key::MAX_KEY)
    /// bytes (no line holds it).
    pub fn encode_long(
        &mut self,
        piece: &[u8],
        out: &mut Vec<u32>,
        encode: impl FnOnce(&mut Vec<u32>),
    ) {
        // A piece too long to be kept is not hashed (a text without a pre-tokenizer is one piece).
        if self.no_spill || piece.len() > MAX_SPILL_KEY {
            encode(out);
            return;
        }
        let hash = spill_hash(piece);
        if self.spill.extend(piece, hash, out) {
            return;
        }
        let start = out.len();
        encode(out);
        let limit = self.spill_limit();
        self.spill.insert(piece, hash, &out[start..], limit);
    }

    /// A cache that makes a table of `1 << bits` lines (`MIN_LINE_BITS..=MAX_LINE_BITS`).
    fn with_line_bits(bits: u32, pages: Pages) -> Self {
        WordCache {
            lines: None,
            view: View::empty(),
            bits: bits.clamp(MIN_LINE_BITS, MAX_LINE_BITS),
            epoch: 0,
            spill: Spill::default(),
            knocks: Knocks::default(),
            no_spill: false,
            pages,
        }
    }

    /// The spill store's size limit in bytes: half the lines'.
    fn spill_limit(&self) -> usize {
        (std::mem::size_of::<RawLine>() << self.bits) / 2
    }

    /// Use `lines` (or none) from now on.
    fn set_lines(&mut self, lines: Option<Arc<Lines>>) {
        self.view = lines
            .as_ref()
            .map_or_else(View::empty, |lines| lines.view());
        self.lines = lines;
    }

    fn clear(&mut self) {
        self.set_lines(None);
        self.spill = Spill::default();
        self.knocks = Knocks::default();
    }

    /// Put the seeds in the table (once per table; see [`Lines::seed`]).
    pub fn seed(&mut self, seeds: &Seeds) {
        self.table().seed(seeds);
    }

    /// The table, made now if this cache has none.
    fn table(&mut self) -> &Lines {
        let (bits, pages) = (self.bits, self.pages);
        let lines = self
            .lines
            .get_or_insert_with(|| Arc::new(Lines::new(bits, pages)));
        self.view = lines.view();
        lines
    }

    /// Start fetching the line of `key` into the CPU cache (see [`Key`]).
    #[inline(always)]
    pub fn prefetch(&self, key: &Key) {
        self.view.prefetch(key);
    }

    /// Append the cached ids of the piece of `key` to `out`; false on a miss.
    #[inline(always)]
    pub fn extend(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        // SAFETY: the view is of `self.lines`' table, which `self` keeps alive (or of EMPTY).
        unsafe { self.view.extend(key, out) }
    }

    /// [`WordCache::extend`] into room already reserved (see [`View::extend_reserved`]).
    ///
    /// # Safety
    /// `out` has room for [`LONG_IDS`](crate::engines::cache_lines::LONG_IDS) more ids.
    #[inline(always)]
    pub unsafe fn extend_reserved(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        // SAFETY: as in `extend`; the room is the caller's promise.
        unsafe { self.view.extend_reserved(key, out) }
    }

    /// [`Lines::extend_overflow`]: a piece of more ids than a line holds, asked after a miss.
    pub fn extend_overflow(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        self.lines
            .as_ref()
            .is_some_and(|lines| lines.extend_overflow(key, out))
    }

    /// Remember `ids` for the piece of `key` (see [`Lines::insert`]).
    pub fn insert(&mut self, key: &Key, ids: &[u32]) {
        self.table();
        if let Some(lines) = &self.lines {
            lines.insert(key, ids, &mut self.knocks);
        }
    }
}

/// Threads take numbers in the order they first encode; thread k uses shard k modulo the shard
/// count, so the workers of a rayon pool never share one (hashing the thread id could put both
/// workers of a 2-core pool on one lock).
fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}

/// An engine's cache: one shared table of lines, and one shard per thread for the rest.
pub struct ShardedCache {
    shards: Vec<Mutex<WordCache>>,
    /// The table every shard uses, made when a thread first encodes.
    lines: Mutex<Option<Arc<Lines>>>,
    /// Counts `clear`s: a shard whose table is from an earlier epoch takes the current one.
    epoch: AtomicUsize,
    /// The pages the table asks for.
    pages: Pages,
    /// Given once by the engine ([`ShardedCache::set_seeds`]), which seeds the table in use; a
    /// table made later (after a `clear`) is seeded when made.
    seeds: OnceLock<Seeds>,
}

/// A locked shard, or (when another thread holds it) a stand-in with the same table and no spill
/// store.
pub enum CacheGuard<'a> {
    Shard(MutexGuard<'a, WordCache>),
    Busy(WordCache),
}

impl std::ops::Deref for CacheGuard<'_> {
    type Target = WordCache;
    fn deref(&self) -> &WordCache {
        match self {
            CacheGuard::Shard(guard) => guard,
            CacheGuard::Busy(cache) => cache,
        }
    }
}

impl std::ops::DerefMut for CacheGuard<'_> {
    fn deref_mut(&mut self) -> &mut WordCache {
        match self {
            CacheGuard::Shard(guard) => guard,
            CacheGuard::Busy(cache) => cache,
        }
    }
}

impl ShardedCache {
    /// A cache whose table asks for `pages` (see [`Pages`]: huge beside a BPE vocabulary).
    pub fn new(pages: Pages) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ShardedCache {
            shards: (0..cores.max(MIN_SHARDS))
                .map(|_| Mutex::new(WordCache::with_line_bits(MAX_LINE_BITS, pages)))
                .collect(),
            lines: Mutex::new(None),
            epoch: AtomicUsize::new(0),
            pages,
            seeds: OnceLock::new(),
        }
    }

    /// The slot of the current table, locked (a panic elsewhere leaves it valid).
    fn current(&self) -> MutexGuard<'_, Option<Arc<Lines>>> {
        self.lines
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The current table, made (and seeded, when the seeds are known) if there is none.
    fn table(&self) -> Arc<Lines> {
        let mut lines = self.current();
        let table = lines.get_or_insert_with(|| Arc::new(Lines::new(MAX_LINE_BITS, self.pages)));
        if let Some(seeds) = self.seeds.get() {
            table.seed(seeds);
        }
        table.clone()
    }

    /// Whether the seeds have been given.
    pub fn has_seeds(&self) -> bool {
        self.seeds.get().is_some()
    }

    /// How many seeds there are (0 before they are given).
    pub fn seed_count(&self) -> usize {
        self.seeds.get().map_or(0, Seeds::len)
    }

    /// Seed the table in use now, or the next one when it is made (see [`Seeds`]); later calls
    /// are ignored. Threads encoding meanwhile go on: a seed goes only into an empty slot, under
    /// its line's claim.
    pub fn set_seeds(&self, seeds: Seeds) {
        if self.seeds.set(seeds).is_err() {
            return;
        }
        let table = self.current().clone();
        if let (Some(table), Some(seeds)) = (table, self.seeds.get()) {
            table.seed(seeds);
        }
    }

    /// Forget every cached word: the table is dropped (freed when the last thread using it is
    /// done) and the shards emptied; the seeds stay, and the next table is seeded when made.
    pub fn clear(&self) {
        *self.current() = None;
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for shard in &self.shards {
            match shard.lock() {
                Ok(mut guard) => guard.clear(),
                Err(poisoned) => poisoned.into_inner().clear(),
            }
        }
    }

    /// This thread's shard, locked (hold it for a whole text, not per piece), with the current
    /// table. When more threads than shards encode at once and the shard is taken, the text
    /// still uses the shared table (a stand-in without a spill store) rather than waiting for
    /// the other thread's whole text.
    pub fn for_current_thread(&self) -> CacheGuard<'_> {
        let mut guard = match self.shards[thread_number() % self.shards.len()].try_lock() {
            Ok(guard) => guard,
            // A poisoned shard only means another thread panicked mid-insert; it stays valid.
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                let mut stand_in = WordCache {
                    no_spill: true,
                    ..WordCache::with_line_bits(MAX_LINE_BITS, self.pages)
                };
                stand_in.set_lines(Some(self.table()));
                return CacheGuard::Busy(stand_in);
            }
        };
        let epoch = self.epoch.load(Ordering::Acquire);
        if guard.lines.is_none() || guard.epoch != epoch {
            guard.set_lines(Some(self.table()));
            guard.epoch = epoch;
        }
        CacheGuard::Shard(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::cache_key::{test_pieces as pieces, MAX_KEY};
    use crate::engines::cache_lines::LONG_IDS;

    #[test]
    fn seeds_fill_only_empty_slots_and_come_back_after_a_clear() {
        // 32,768 lines (65,536 slots) and 100,000 seeds: lines overflow, and a piece the cache
        // has learned must never be pushed out by one.
        let mut cache = WordCache::with_line_bits(MIN_LINE_BITS, Pages::Small);
        let learned: Vec<Vec<u8>> = pieces().into_iter().step_by(7).take(600).collect();
        for (k, piece) in learned.iter().enumerate() {
            cache.insert(&Key::of(piece).unwrap(), &[k as u32, 7]);
        }
        let spelled: Vec<(Vec<u8>, u32)> = (0..100_000u32)
            .map(|k| (format!("s{k}").into_bytes(), k + 1000))
            .collect();
        let seeds = Seeds::build(|found| {
            for (piece, id) in &spelled {
                found(piece, &[*id]);
            }
        });
        assert_eq!(seeds.len(), spelled.len());
        let lookup = |cache: &WordCache, piece: &[u8]| {
            let mut out = Vec::new();
            cache
                .extend(&Key::of(piece).unwrap(), &mut out)
                .then_some(out)
        };
        // (Two learned pieces may already have pushed out a third from their line.)
        let held: Vec<(&Vec<u8>, Option<Vec<u32>>)> =
            learned.iter().map(|p| (p, lookup(&cache, p))).collect();
        assert!(held.iter().filter(|(_, ids)| ids.is_some()).count() > 550);
        // Which slot each is in: a seed must not move a learned piece out of the first.
        let first = |cache: &WordCache, piece: &[u8]| {
            let lines = cache.lines.as_ref().unwrap();
            lines.slot_of(&Key::of(piece).unwrap()) == Some(0)
        };
        let slots: Vec<bool> = learned.iter().map(|p| first(&cache, p)).collect();
        cache.seed(&seeds);
        for ((piece, ids), was_first) in held.into_iter().zip(slots) {
            assert_eq!(lookup(&cache, piece), ids, "{piece:?}");
            assert_eq!(first(&cache, piece), was_first, "{piece:?}");
        }
        let count_seeded = |cache: &WordCache| {
            let mut found = 0;
            for (piece, id) in &spelled {
                if let Some(ids) = lookup(cache, piece) {
                    assert_eq!(ids, [*id]);
                    found += 1;
                }
            }
            found
        };
        let first = count_seeded(&cache);
        assert!((40_000..65_536).contains(&first), "{first} seeds placed");
        cache.clear();
        assert!(cache.lines.is_none() && lookup(&cache, &spelled[0].0).is_none());
        cache.seed(&seeds);
        assert!(
            count_seeded(&cache) > first,
            "an empty table takes more of them"
        );
    }

    #[test]
    fn seeds_reach_the_table_in_use_and_the_next_one() {
        let cache = ShardedCache::new(Pages::Small);
        let key = Key::of(b"seed").unwrap();
        let found = |cache: &ShardedCache| {
            let mut out = Vec::new();
            cache
                .for_current_thread()
                .extend(&key, &mut out)
                .then_some(out)
        };
        assert_eq!(found(&cache), None); // the table is now in use
        cache.set_seeds(Seeds::build(|found| found(b"seed", &[42])));
        assert_eq!(found(&cache), Some(vec![42]));
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(found(&cache), Some(vec![42])));
        });
        cache.clear();
        assert!(cache.lines.lock().unwrap().is_none());
        assert_eq!(
            found(&cache),
            Some(vec![42]),
            "a new table is seeded when made"
        );
    }

    /// Pieces forced into one line: short ones share it two at a time, a long entry takes it
    /// whole, and whatever was evicted is a miss, never wrong ids.
    #[test]
    fn one_line_holds_two_short_pieces_or_one_long() {
        let key = |piece: &[u8]| Key {
            index: 0,
            ..Key::of(piece).unwrap()
        };
        let mut cache = WordCache::default();
        let lookup = |cache: &WordCache, piece: &[u8]| {
            let mut out = vec![99];
            cache
                .extend(&key(piece), &mut out)
                .then(|| out[1..].to_vec())
        };
        let long_piece = [b'x'; 20];
        cache.insert(&key(b"ab"), &[1, 2]);
        cache.insert(&key(b"cd"), &[3]);
        assert_eq!(lookup(&cache, b"ab"), Some(vec![1, 2]));
        assert_eq!(lookup(&cache, b"cd"), Some(vec![3]));
        cache.insert(&key(b"ef"), &[4, 5, 6]); // evicts "ab", the older
        assert_eq!(lookup(&cache, b"ab"), None);
        assert_eq!(lookup(&cache, b"cd"), Some(vec![3]));
        assert_eq!(lookup(&cache, b"ef"), Some(vec![4, 5, 6]));
        cache.insert(&key(b"gh"), &[7, 8, 9, 10, 11]); // four ids or more: a long entry
        assert_eq!(lookup(&cache, b"gh"), Some(vec![7, 8, 9, 10, 11]));
        assert_eq!(lookup(&cache, b"cd"), None);
        assert_eq!(lookup(&cache, b"ef"), None);
        cache.insert(&key(&long_piece), &[12, 13, 14, 15, 16, 17, 18]);
        assert_eq!(
            lookup(&cache, &long_piece),
            Some(vec![12, 13, 14, 15, 16, 17, 18])
        );
        assert_eq!(lookup(&cache, &long_piece[..19]), None);
        assert_eq!(lookup(&cache, b"gh"), None);
        cache.insert(&key(b"ij"), &[19]); // a short piece takes the line back, alone
        assert_eq!(lookup(&cache, b"ij"), Some(vec![19]));
        assert_eq!(lookup(&cache, &long_piece), None);
        assert_eq!(lookup(&cache, &long_piece[..2]), None);
        cache.insert(&key(b"kl"), &[20]);
        assert_eq!(lookup(&cache, b"ij"), Some(vec![19]));
        assert_eq!(lookup(&cache, b"kl"), Some(vec![20]));
    }

    /// `cache.encode` of `piece`, and whether the encoder ran (a miss).
    fn encode_counting(cache: &mut WordCache, piece: &[u8], ids: &[u32]) -> (Vec<u32>, bool) {
        let (mut out, mut ran) = (vec![7], false);
        cache.encode(piece, &mut out, |out| {
            ran = true;
            out.extend_from_slice(ids);
        });
        (out[1..].to_vec(), ran)
    }

    #[test]
    fn pieces_of_more_ids_than_a_line_holds_are_kept_until_the_overflow_buffer_is_emptied() {
        let mut cache = WordCache::with_line_bits(MIN_LINE_BITS, Pages::Small);
        // Pieces of 1-32 bytes with 8-32 ids each (ids that tell the piece), more of them than
        // the buffer holds at once, so it is emptied several times on the way.
        let pieces: Vec<(Vec<u8>, Vec<u32>)> = (0..40_000u32)
            .map(|k| {
                let piece = format!("{k:x}-{}", "s".repeat((k % 20) as usize)).into_bytes();
                let count = LONG_IDS as u32 + 1 + k % 25;
                (piece, (0..count).map(|j| k * 64 + j).collect())
            })
            .collect();
        let mut first_time = 0;
        for (piece, ids) in &pieces {
            assert_eq!(encode_counting(&mut cache, piece, ids), (ids.clone(), true));
            // Kept at once in an empty line, else on a second miss in a row (the knock).
            let (again, ran) = encode_counting(&mut cache, piece, ids);
            assert_eq!(again, *ids);
            first_time += !ran as usize;
            assert_eq!(
                encode_counting(&mut cache, piece, &[]),
                (ids.clone(), false)
            );
        }
        assert!((1_000..39_000).contains(&first_time), "{first_time}");
        // Every lookup gives the piece's own ids or misses: never a stale place in the buffer.
        let mut kept = 0;
        for (piece, ids) in &pieces {
            let (key, mut out) = (Key::of(piece).unwrap(), vec![5]);
            assert!(
                !cache.extend(&key, &mut out),
                "only extend_overflow finds them"
            );
            if cache.extend_overflow(&key, &mut out) {
                assert_eq!(&out[1..], &ids[..]);
                kept += 1;
            }
        }
        // The buffer holds about 13,100 of these pieces (19.5 ids each): it was emptied three
        // times, and most of the 678 pieces kept since then are found.
        assert!((500..13_200).contains(&kept), "{kept}");
    }

    #[test]
    fn pieces_longer_than_a_line_are_kept_in_the_spill_store() {
        let mut cache = WordCache::with_line_bits(MIN_LINE_BITS, Pages::Huge);
        let long = [b'x'; MAX_KEY + 8];
        let many: Vec<u32> = (0..LONG_IDS as u32 + 5).collect();
        let huge = vec![b'y'; MAX_SPILL_KEY + 1];
        for (piece, ids) in [
            (&long[..], &[1u32, 2][..]),
            (b"abc", &many[..]),
            (&huge[..], &[3]),
        ] {
            assert_eq!(
                encode_counting(&mut cache, piece, ids),
                (ids.to_vec(), true)
            );
        }
        assert_eq!(encode_counting(&mut cache, &long, &[]), (vec![1, 2], false));
        // A short piece of more ids than a line holds is kept too (its ids in the overflow
        // buffer); a piece too long for the spill store is not, and is encoded again.
        assert_eq!(
            encode_counting(&mut cache, b"abc", &[]),
            (many.clone(), false)
        );
        assert_eq!(encode_counting(&mut cache, &huge, &[3]), (vec![3], true));
        // A piece that shares a prefix with a kept one is not taken for it.
        assert_eq!(
            encode_counting(&mut cache, &long[1..], &[9]),
            (vec![9], true)
        );
    }

    #[test]
    fn a_full_spill_store_empties_and_answers_stay_right() {
        let mut cache = WordCache::with_line_bits(MIN_LINE_BITS, Pages::Huge);
        let limit = cache.spill_limit();
        let per_piece = 40 + 4 * 2;
        let count = 3 * limit / per_piece;
        let piece = |k: usize| format!("{k:040}").into_bytes();
        for k in 0..count {
            let ids = [k as u32, 1];
            assert_eq!(encode_counting(&mut cache, &piece(k), &ids).0, ids);
        }
        assert!(cache.spill.keys.len() + 4 * cache.spill.ids.len() <= limit);
        // The last pieces are kept, the first were emptied out; neither answers wrongly.
        assert!(!encode_counting(&mut cache, &piece(count - 1), &[]).1);
        assert_eq!(
            encode_counting(&mut cache, &piece(0), &[0, 1]),
            (vec![0, 1], true)
        );
    }

    /// What one thread's shard learns, every other thread finds: they share the table, and
    /// only the spill store is each thread's own.
    #[test]
    fn threads_share_one_table_and_keep_their_own_spill_store() {
        let cache = ShardedCache::new(Pages::Small);
        let long = [b'z'; MAX_KEY + 3];
        cache
            .for_current_thread()
            .encode(b"shared", &mut Vec::new(), |out| out.push(5));
        cache
            .for_current_thread()
            .encode(&long, &mut Vec::new(), |out| out.push(6));
        for _ in 0..3 {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let mut shard = cache.for_current_thread();
                    let (mut out, mut ran) = (Vec::new(), false);
                    shard.encode(b"shared", &mut out, |_| ran = true);
                    assert!(!ran && out == [5]);
                    shard.encode(&long, &mut out, |out| {
                        ran = true;
                        out.push(6)
                    });
                    assert!(
                        ran && out == [5, 6],
                        "the other thread's spill store is its own"
                    );
                });
            });
        }
        let table = cache.lines.lock().unwrap().clone().unwrap();
        assert_eq!(table.line_count(), 1 << MAX_LINE_BITS);
        let users = cache
            .shards
            .iter()
            .filter(|s| {
                s.lock()
                    .unwrap()
                    .lines
                    .as_ref()
                    .is_some_and(|l| Arc::ptr_eq(l, &table))
            })
            .count();
        assert!(users >= 2, "{users} shards on the table");
    }

    /// A thread whose shard another thread holds still reads and writes the shared table.
    #[test]
    fn a_busy_shard_stand_in_shares_the_table() {
        let cache = ShardedCache::new(Pages::Small);
        cache
            .for_current_thread()
            .encode(b"first", &mut Vec::new(), |out| out.push(1));
        let held = cache.shards[thread_number() % cache.shards.len()]
            .lock()
            .unwrap();
        let mut stand_in = cache.for_current_thread();
        assert!(matches!(stand_in, CacheGuard::Busy(_)));
        let (mut out, mut ran) = (Vec::new(), false);
        stand_in.encode(b"first", &mut out, |_| ran = true);
        assert!(!ran && out == [1]);
        stand_in.encode(b"second", &mut out, |out| out.push(2));
        let long = [b'y'; MAX_KEY + 1];
        stand_in.encode(&long, &mut out, |out| out.push(3));
        drop(stand_in);
        drop(held);
        let mut shard = cache.for_current_thread();
        assert!(matches!(shard, CacheGuard::Shard(_)));
        let (mut out, mut ran) = (Vec::new(), false);
        shard.encode(b"second", &mut out, |_| ran = true);
        assert!(
            !ran && out == [2],
            "the stand-in's insert went to the table"
        );
        shard.encode(&long, &mut out, |out| {
            ran = true;
            out.push(3)
        });
        assert!(ran && out == [2, 3], "but it kept no spill store");
    }

    #[test]
    fn every_table_size_gives_the_stored_answers() {
        let all = pieces();
        for bits in MIN_LINE_BITS..=MAX_LINE_BITS {
            let mut cache = WordCache::with_line_bits(bits, Pages::Huge);
            for p in &all {
                let ids = [p.len() as u32, p[0] as u32];
                assert_eq!(encode_counting(&mut cache, p, &ids).0, ids);
            }
            let mut hits = 0;
            for p in &all {
                let (ids, ran) = encode_counting(&mut cache, p, &[p.len() as u32, p[0] as u32]);
                assert_eq!(ids, [p.len() as u32, p[0] as u32], "piece {p:?}");
                hits += usize::from(!ran);
            }
            assert!(
                hits > all.len() / 2,
                "{bits} bits: {hits} hits of {}",
                all.len()
            );
            assert_eq!(cache.lines.as_ref().unwrap().line_count(), 1 << bits);
        }
    }

    #[test]
    fn cache_returns_only_what_was_stored_for_that_piece() {
        let all = pieces();
        let ids_of = |p: &[u8]| -> Vec<u32> {
            let n = 1 + p.len() % 9; // some too many ids for a slot
            (0..n as u32)
                .map(|k| k * 1000 + p.len() as u32 + p[0] as u32)
                .collect()
        };
        let mut cache = WordCache::default();
        for p in &all {
            cache.insert(&Key::of(p).unwrap(), &ids_of(p));
        }
        let (mut hits, mut out) = (0, Vec::new());
        for p in &all {
            out.clear();
            let key = Key::of(p).unwrap();
            cache.prefetch(&key);
            if cache.extend(&key, &mut out) {
                hits += 1;
                assert_eq!(out, ids_of(p), "piece {p:?}");
            } else {
                assert!(out.is_empty());
            }
        }
        assert!(
            hits > all.len() / 4,
            "only {hits} of {} pieces cached",
            all.len()
        );
    }
}
