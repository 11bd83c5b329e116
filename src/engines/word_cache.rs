//! A word cache for encoders: the ids of recently seen pieces, keyed by their exact bytes.
//!
//! Pre-tokens repeat (" the", "    ", "▁и"), and looking them up is far cheaper than running a
//! model again. The cache belongs to an engine and is split into fixed-size shards picked by
//! thread, each locked once per text rather than once per piece, so parallel batches do not
//! contend and the memory goes when the engine goes. Results never depend on what it holds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Pieces of at most this many bytes, with at most [`SLOT_IDS`] ids, are cached. Longer ones are
/// not: they rarely repeat (a CJK sentence is one GPT-2 piece).
pub const MAX_KEY: usize = 32;
const SLOT_IDS: usize = 7;
/// Slots per shard. The table is direct-mapped with a fixed size (4 MiB per shard), so a shard
/// never allocates after its first use and never rehashes: measured with examples/encode_file, a
/// growing hash map cleared at 128K entries was 1.5x slower on the multilingual corpus, where most
/// lookups miss and every miss walked cold memory.
const SLOTS: usize = 1 << 16;
/// At least this many shards; more on machines with more cores.
const MIN_SHARDS: usize = 16;

/// One cache line: the piece as [`key_words`], its length, and its ids.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Slot {
    key: [u64; 4],
    /// Number of ids in the low byte, piece length in the next; 0 marks an empty slot (pieces
    /// are never empty).
    meta: u32,
    ids: [u32; SLOT_IDS],
}

/// A piece of 1..=[`MAX_KEY`] bytes as four words read straight from it (no copy through a stack
/// buffer, whose store-then-load showed up as a quarter of the lookup time): bytes 0..8, 8..16,
/// n-16..n-8 and n-8..n for n >= 16, fewer for shorter pieces. The reads overlap but cover every
/// byte, so together with the length the words identify the piece, and [`Key::bytes`] rebuilds it.
#[inline]
fn key_words(piece: &[u8]) -> [u64; 4] {
    let n = piece.len();
    // The slices have exactly 8 and 4 bytes, so the conversions cannot fail.
    let word = |at: usize| u64::from_le_bytes(piece[at..at + 8].try_into().unwrap());
    let half = |at: usize| u32::from_le_bytes(piece[at..at + 4].try_into().unwrap()) as u64;
    if n >= 16 {
        [word(0), word(8), word(n - 16), word(n - 8)]
    } else if n >= 8 {
        [word(0), word(n - 8), 0, 0]
    } else if n >= 4 {
        [half(0) | (half(n - 4) << 32), 0, 0, 0]
    } else if n > 0 {
        let (a, b, c) = (piece[0] as u64, piece[n / 2] as u64, piece[n - 1] as u64);
        [a | (b << 8) | (c << 16), 0, 0, 0]
    } else {
        [0; 4]
    }
}

/// A piece ready for the cache: its words, length and slot. Computed ahead of the lookup, so
/// the slot's cache line can be fetched while earlier pieces are encoded.
#[derive(Clone, Copy, Default)]
pub struct Key {
    words: [u64; 4],
    len: usize,
    index: usize,
}

impl Key {
    /// The key of `piece`, or None when it is too long to be cached.
    #[inline]
    pub fn of(piece: &[u8]) -> Option<Key> {
        if piece.len() > MAX_KEY {
            return None;
        }
        let words = key_words(piece);
        let h = (words[0] ^ piece.len() as u64).wrapping_mul(0xA076_1D64_78BD_642F)
            ^ words[1].wrapping_mul(0xE703_7ED1_A0B4_28DB).rotate_left(17)
            ^ (words[2] ^ words[3].rotate_left(32)).wrapping_mul(0x8EBC_6AF0_9C88_C6E3);
        // The top bits of a product depend on every input bit.
        let index =
            (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize;
        Some(Key {
            words,
            len: piece.len(),
            index,
        })
    }

    /// The piece's bytes, rebuilt from the words (the inverse of `key_words`).
    pub fn bytes(&self, buf: &mut [u8; MAX_KEY]) -> usize {
        let n = self.len;
        let w = self.words;
        let mut put = |at: usize, bytes: &[u8]| buf[at..at + bytes.len()].copy_from_slice(bytes);
        if n >= 16 {
            put(0, &w[0].to_le_bytes());
            put(8, &w[1].to_le_bytes());
            put(n - 16, &w[2].to_le_bytes());
            put(n - 8, &w[3].to_le_bytes());
        } else if n >= 8 {
            put(0, &w[0].to_le_bytes());
            put(n - 8, &w[1].to_le_bytes());
        } else if n >= 4 {
            put(0, &w[0].to_le_bytes()[..4]);
            put(n - 4, &w[0].to_le_bytes()[4..]);
        } else if n > 0 {
            let b = w[0].to_le_bytes();
            put(0, &b[..1]);
            put(n / 2, &b[1..2]);
            put(n - 1, &b[2..3]);
        }
        n
    }
}

#[inline]
fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, and the reference is valid anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(at as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// A direct-mapped word cache: a new piece evicts whatever shared its slot. Results never depend
/// on what it holds.
#[derive(Default)]
pub struct WordCache {
    slots: Vec<Slot>,
    /// A stand-in for a shard that another thread holds: remembers nothing.
    disabled: bool,
}

impl WordCache {
    /// Append the ids of `piece` to `out`: from the cache, or from `encode` (then remembered).
    #[inline]
    pub fn encode(&mut self, piece: &[u8], out: &mut Vec<u32>, encode: impl FnOnce(&mut Vec<u32>)) {
        let Some(key) = Key::of(piece) else {
            encode(out);
            return;
        };
        if self.extend(&key, out) {
            return;
        }
        let start = out.len();
        encode(out);
        self.insert(&key, &out[start..]);
    }

    fn clear(&mut self) {
        self.slots = Vec::new();
    }

    /// Start fetching the slot of `key` into the CPU cache (see [`Key`]).
    #[inline]
    pub fn prefetch(&self, key: &Key) {
        if let Some(slot) = self.slots.get(key.index) {
            prefetch(slot);
        }
    }

    /// Append the cached ids of the piece of `key` to `out`; false on a miss.
    #[inline]
    pub fn extend(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        if let Some(slot) = self.slots.get(key.index) {
            // Word by word with `&` rather than `[u64; 4] ==`, which calls memcmp.
            let w = key.words;
            let same = (slot.key[0] == w[0])
                & (slot.key[1] == w[1])
                & (slot.key[2] == w[2])
                & (slot.key[3] == w[3])
                & ((slot.meta >> 8) as usize == key.len);
            if same {
                // A fixed-size copy of the whole slot, then the length: no call to memmove
                // for a copy of a few ids.
                out.reserve(SLOT_IDS);
                let len = out.len();
                // SAFETY: the reserve leaves room for SLOT_IDS more ids after `len`; the new
                // length counts only the slot's ids, all of them written just before.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        slot.ids.as_ptr(),
                        out.as_mut_ptr().add(len),
                        SLOT_IDS,
                    );
                    out.set_len(len + (slot.meta & 0xff) as usize);
                }
                return true;
            }
        }
        false
    }

    /// Remember `ids` for the piece of `key` (when they fit in a slot).
    pub fn insert(&mut self, key: &Key, ids: &[u32]) {
        if self.disabled || ids.len() > SLOT_IDS {
            return;
        }
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); SLOTS];
        }
        let slot = &mut self.slots[key.index];
        slot.key = key.words;
        slot.ids[..ids.len()].copy_from_slice(ids);
        slot.meta = ids.len() as u32 | (key.len as u32) << 8;
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
    fn keys_identify_pieces_and_give_their_bytes_back() {
        let all = pieces();
        let keys: std::collections::HashSet<_> = all
            .iter()
            .map(|p| {
                let key = Key::of(p).unwrap();
                let mut buf = [0u8; MAX_KEY];
                let n = key.bytes(&mut buf);
                assert_eq!(&buf[..n], &p[..], "piece {p:?}");
                (key.words, key.len)
            })
            .collect();
        assert_eq!(keys.len(), all.len());
        assert!(Key::of(&[b'a'; MAX_KEY + 1]).is_none());
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
