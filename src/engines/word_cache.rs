//! A word cache for encoders: the ids of recently seen pieces, keyed by their exact bytes.
//!
//! Pre-tokens repeat (" the", "    ", "▁и"), and looking them up is far cheaper than running a
//! model again. The cache belongs to an engine and is split into fixed-size shards picked by
//! thread, each locked once per text rather than once per piece, so parallel batches do not
//! contend and the memory goes when the engine goes. Results never depend on what it holds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Pieces of at most this many bytes, with at most three ids, go to the short table.
const SHORT_KEY: usize = 16;
/// Longer pieces up to this size, with at most [`LONG_IDS`] ids, go to the long table. Longer
/// ones are not cached: they rarely repeat (a CJK sentence is one GPT-2 piece).
const LONG_KEY: usize = 32;
const LONG_IDS: usize = 8;
/// Slots per shard. The tables are direct-mapped with a fixed size (about 0.8 MB per shard), so a
/// shard never allocates after its first use and never rehashes: measured with
/// examples/encode_file, a growing hash map cleared at 128K entries was 1.5x slower on the
/// multilingual corpus, where most lookups miss and every miss walked cold memory.
const SHORT_SLOTS: usize = 1 << 14;
const LONG_SLOTS: usize = 1 << 12;
/// At least this many shards; more on machines with more cores.
const MIN_SHARDS: usize = 16;

#[derive(Clone, Copy, Default)]
struct ShortSlot {
    key: [u64; 2],
    ids: [u32; 3],
    /// Number of ids in the low byte, piece length in the next; 0 marks an empty slot (pieces
    /// are never empty).
    meta: u32,
}

#[derive(Clone, Copy)]
struct LongSlot {
    key: [u8; LONG_KEY],
    key_len: u8,
    n_ids: u8,
    ids: [u32; LONG_IDS],
}

const EMPTY_LONG: LongSlot = LongSlot {
    key: [0; LONG_KEY],
    key_len: 0,
    n_ids: 0,
    ids: [0; LONG_IDS],
};

/// The bytes of a piece of at most 16 bytes as two words, read without copying through a
/// stack buffer (whose store-then-load showed up as a quarter of the lookup time). Together
/// with the length, the words identify the piece: the reads overlap but cover every byte.
#[inline]
fn short_key(piece: &[u8]) -> [u64; 2] {
    let n = piece.len();
    // The slices have exactly 8 and 4 bytes, so the conversions cannot fail.
    let word = |at: usize| u64::from_le_bytes(piece[at..at + 8].try_into().unwrap());
    let half = |at: usize| u32::from_le_bytes(piece[at..at + 4].try_into().unwrap()) as u64;
    if n >= 8 {
        [word(0), word(n - 8)]
    } else if n >= 4 {
        [half(0) | (half(n - 4) << 32), 0]
    } else if n > 0 {
        let (a, b, c) = (piece[0] as u64, piece[n / 2] as u64, piece[n - 1] as u64);
        [a | (b << 8) | (c << 16), 0]
    } else {
        [0, 0]
    }
}

const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// A slot index of `bits` bits from a hash: the top bits of a product depend on every input bit.
#[inline]
fn slot_index(h: u64, bits: u32) -> usize {
    (h.wrapping_mul(MULTIPLIER) >> (64 - bits)) as usize
}

#[inline]
fn short_index(key: [u64; 2], len: usize) -> usize {
    let h = key[0]
        ^ (key[1] ^ len as u64)
            .wrapping_mul(0xA076_1D64_78BD_642F)
            .rotate_left(32);
    slot_index(h, SHORT_SLOTS.trailing_zeros())
}

#[inline]
fn long_index(piece: &[u8]) -> usize {
    let mut h = piece.len() as u64;
    for chunk in piece.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(w))
            .wrapping_mul(MULTIPLIER)
            .rotate_left(26);
    }
    slot_index(h, LONG_SLOTS.trailing_zeros())
}

/// A direct-mapped word cache: a new piece evicts whatever shared its slot. Results never depend
/// on what it holds.
#[derive(Default)]
pub struct WordCache {
    short: Vec<ShortSlot>,
    long: Vec<LongSlot>,
    /// A stand-in for a shard that another thread holds: remembers nothing.
    disabled: bool,
}

impl WordCache {
    /// Append the ids of `piece` to `out`: from the cache, or from `encode` (then remembered).
    #[inline]
    pub fn encode(&mut self, piece: &[u8], out: &mut Vec<u32>, encode: impl FnOnce(&mut Vec<u32>)) {
        if piece.len() > LONG_KEY {
            encode(out);
            return;
        }
        if self.extend(piece, out) {
            return;
        }
        let start = out.len();
        encode(out);
        self.insert(piece, &out[start..]);
    }

    fn clear(&mut self) {
        self.short = Vec::new();
        self.long = Vec::new();
    }

    /// Append the cached ids of `piece` to `out`; false on a miss.
    #[inline]
    fn extend(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        if piece.len() <= SHORT_KEY {
            let key = short_key(piece);
            if let Some(slot) = self.short.get(short_index(key, piece.len())) {
                if slot.key == key && (slot.meta >> 8) as usize == piece.len() {
                    out.extend_from_slice(&slot.ids[..(slot.meta & 0xff) as usize]);
                    return true;
                }
            }
        }
        if let Some(slot) = self.long.get(long_index(piece)) {
            if slot.key_len as usize == piece.len() && &slot.key[..piece.len()] == piece {
                out.extend_from_slice(&slot.ids[..slot.n_ids as usize]);
                return true;
            }
        }
        false
    }

    fn insert(&mut self, piece: &[u8], ids: &[u32]) {
        if self.disabled {
            return;
        }
        if piece.len() <= SHORT_KEY && ids.len() <= 3 {
            if self.short.is_empty() {
                self.short = vec![ShortSlot::default(); SHORT_SLOTS];
            }
            let key = short_key(piece);
            let slot = &mut self.short[short_index(key, piece.len())];
            slot.key = key;
            slot.ids[..ids.len()].copy_from_slice(ids);
            slot.meta = ids.len() as u32 | (piece.len() as u32) << 8;
        } else if piece.len() <= LONG_KEY && ids.len() <= LONG_IDS {
            if self.long.is_empty() {
                self.long = vec![EMPTY_LONG; LONG_SLOTS];
            }
            let slot = &mut self.long[long_index(piece)];
            slot.key[..piece.len()].copy_from_slice(piece);
            slot.key_len = piece.len() as u8;
            slot.ids[..ids.len()].copy_from_slice(ids);
            slot.n_ids = ids.len() as u8;
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

/// One cache shard per thread.
pub struct ShardedCache {
    shards: Vec<Mutex<WordCache>>,
}

/// A locked shard, or (when another thread holds it) a cache that remembers nothing.
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

impl Default for ShardedCache {
    fn default() -> Self {
        Self::new()
    }
}

impl ShardedCache {
    pub fn new() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ShardedCache {
            shards: (0..cores.max(MIN_SHARDS))
                .map(|_| Mutex::new(WordCache::default()))
                .collect(),
        }
    }

    /// Forget every cached word (frees the memory).
    pub fn clear(&self) {
        for shard in &self.shards {
            match shard.lock() {
                Ok(mut guard) => guard.clear(),
                Err(poisoned) => poisoned.into_inner().clear(),
            }
        }
    }

    /// This thread's shard, locked (hold it for a whole text, not per piece). When more threads
    /// than shards encode at once and the shard is taken, the text goes uncached rather than
    /// waiting for the other thread's whole text.
    pub fn for_current_thread(&self) -> CacheGuard<'_> {
        match self.shards[thread_number() % self.shards.len()].try_lock() {
            Ok(guard) => CacheGuard::Shard(guard),
            // A poisoned shard only means another thread panicked mid-insert; the slots stay valid.
            Err(TryLockError::Poisoned(poisoned)) => CacheGuard::Shard(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => CacheGuard::Busy(WordCache {
                disabled: true,
                ..WordCache::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of 1..=32 bytes over a tiny alphabet, so that many share prefixes, suffixes
    /// and the overlapping words of `short_key`.
    fn pieces() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut state = 12345u64;
        for len in 1..=32 {
            for _ in 0..200 {
                let piece = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        b"ab\x00\xff"[(state >> 62) as usize]
                    })
                    .collect();
                out.push(piece);
            }
        }
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn short_keys_identify_pieces() {
        let short: Vec<_> = pieces()
            .into_iter()
            .filter(|p| p.len() <= SHORT_KEY)
            .collect();
        let keys: std::collections::HashSet<_> =
            short.iter().map(|p| (short_key(p), p.len())).collect();
        assert_eq!(keys.len(), short.len());
    }

    #[test]
    fn cache_returns_only_what_was_stored_for_that_piece() {
        let all = pieces();
        let ids_of = |p: &[u8]| -> Vec<u32> {
            let n = 1 + p.len() % 9; // some too many ids for either table
            (0..n as u32)
                .map(|k| k * 1000 + p.len() as u32 + p[0] as u32)
                .collect()
        };
        let mut cache = WordCache::default();
        for p in &all {
            cache.insert(p, &ids_of(p));
        }
        let (mut hits, mut out) = (0, Vec::new());
        for p in &all {
            out.clear();
            if cache.extend(p, &mut out) {
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
