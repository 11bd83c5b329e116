//! A word cache for encoders: the ids of recently seen pieces, keyed by their exact bytes.
//!
//! Pre-tokens repeat (" the", "    ", "▁и"), and looking them up is far cheaper than running a
//! model again. The cache belongs to an engine and is split into fixed-size shards picked by
//! thread, each locked once per text rather than once per piece, so parallel batches do not
//! contend and the memory goes when the engine goes. Results never depend on what it holds.
//!
//! A shard is a fixed table of cache lines (8 MiB on machines of up to 8 cores, less per shard on
//! bigger ones) for pieces of up to 32 bytes (the ids of a piece of more than 7 sit in a side
//! buffer of at most 1 MiB, [`Overflow`]), and a spill store, at most half the lines' size, for
//! pieces of 33 to 1,024 bytes, which a line cannot hold. Both are allocated on first
//! use and freed by `clear_cache`; the lines' memory is committed as lines are written
//! ([`crate::memory::zeroed_table`]; 2 MiB pages where the system has them), so a shard that
//! has seen little holds little. A BPE engine that has merged a few thousand pieces seeds its
//! shards with the vocabulary's own words ([`crate::engines::seeds`]).

use std::hash::Hasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};

use rustc_hash::{FxHashMap, FxHasher};

use crate::engines::seeds::Seeds;
use crate::memory::huge_pages::Pages;
use crate::memory::zeroed_table::ZeroedTable;

/// Pieces of at most this many bytes are cached in the lines (with their ids there when they
/// have at most [`LONG_IDS`], else in the [`Overflow`] buffer); longer ones in the [`Spill`]
/// store.
pub const MAX_KEY: usize = 32;
/// The most ids of a piece in a short slot, and in a long entry's line.
const SHORT_IDS: usize = 3;
const LONG_IDS: usize = 7;
/// The longest piece a short slot holds.
const SHORT_KEY: usize = 16;
/// Pieces longer than [`MAX_KEY`] bytes, up to this many, are kept in the shard's [`Spill`]
/// store, which is emptied when its keys and ids pass half the size of the shard's lines. Longer
/// ones are not cached: one huge piece (a megabyte of one character) must not fill it.
const MAX_SPILL_KEY: usize = 1024;
/// Lines per shard: `1 << MAX_LINE_BITS` (8 MiB) where the budget allows, down to
/// `1 << MIN_LINE_BITS` (2 MiB) on machines with many cores, so that the shards of every core
/// together hold about [`LINE_BUDGET`]: the first shards to be used, one per core, get that size,
/// and the shards of further threads (a service's thread pool larger than the machine) the
/// smallest. The table has a fixed size, so a shard never allocates after its first use and never
/// rehashes: measured with examples/encode_file, a growing hash map cleared at 128K entries was
/// 1.5x slower on the multilingual corpus, where most lookups miss and every miss walked cold
/// memory. 8 MiB against 4 MiB: +16% on English encoded again, +30%
/// on multilingual text (examples/engine_costs, 2 cores).
const MAX_LINE_BITS: u32 = 17;
const MIN_LINE_BITS: u32 = 15;
const LINE_BUDGET: usize = 64 << 20;
/// At least this many shards; more on machines with more cores.
const MIN_SHARDS: usize = 16;

/// `meta`: the number of ids in the low byte, the piece's length in the next; 0 marks an empty
/// slot (pieces are never empty). This bit marks a line that holds one long entry.
const LONG: u32 = 1 << 16;

/// One cache line: two short slots, or one long entry.
///
/// Nearly every piece has at most 16 bytes and 3 ids (98.7% of GPT-2's pieces of English, 90% of
/// code); such a piece takes a 32-byte slot, two to a line, so a line is a set of two ways (a new
/// piece takes the first and moves the one there to the second). Two ways keep a frequent piece
/// from being evicted by a rare one that shares its line, without a second cache line to fetch
/// (two ways of whole-line slots, two lines per lookup, measured slower than one way).
/// A longer piece, or one with 4 to 7 ids, takes the whole line: `meta0` then has [`LONG`], the
/// ids run on from `ids0` over `key1`, and the key's last two words sit in `meta1` and `ids1`.
/// For a piece of more ids, that room holds where they are in the [`Overflow`] buffer, and the
/// length byte has [`IN_OVERFLOW`] set.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line {
    key0: [u64; 2],
    meta0: u32,
    ids0: [u32; SHORT_IDS],
    key1: [u64; 2],
    meta1: u32,
    ids1: [u32; SHORT_IDS],
}

const _: () = assert!(std::mem::size_of::<Line>() == 64);

impl Line {
    /// The line's byte `offset` as a pointer of the whole line's provenance: a long entry's ids
    /// and key words run over several fields.
    #[inline]
    fn at<T>(&self, offset: usize) -> *const T {
        // SAFETY: callers pass the offset of a field; the result stays inside the line.
        unsafe { (self as *const Line as *const u8).add(offset) as *const T }
    }

    /// The ids of the first slot, or of a long entry (`LONG_IDS` of them: `ids0` and `key1`).
    #[inline]
    fn long_ids(&self) -> *const u32 {
        self.at(std::mem::offset_of!(Line, ids0))
    }

    /// A long entry's last two key words (where `meta1` and `ids1` are).
    #[inline]
    fn long_tail(&self) -> [u64; 2] {
        // SAFETY: repr(C): `meta1` and `ids1` are the line's last 16 bytes, 8-byte aligned.
        unsafe { std::ptr::read(self.at::<[u64; 2]>(std::mem::offset_of!(Line, meta1))) }
    }

    /// Make the line one long entry: the key's words, its length, its number of ids `count`,
    /// and `stored` in the room for ids (the ids, or where [`Overflow`] keeps them).
    #[inline]
    fn set_long(&mut self, words: [u64; 4], len: usize, count: usize, stored: &[u32]) {
        let stored = &stored[..stored.len().min(LONG_IDS)];
        self.key0 = [words[0], words[1]];
        self.meta0 = count as u32 | (len as u32) << 8 | LONG;
        let base = self as *mut Line as *mut u8;
        // SAFETY: repr(C): `ids0` and `key1` are 28 contiguous bytes, room for LONG_IDS ids;
        // `meta1` and `ids1` the last 16 bytes of the line, 8-byte aligned.
        unsafe {
            let at = base.add(std::mem::offset_of!(Line, ids0)) as *mut u32;
            std::ptr::copy_nonoverlapping(stored.as_ptr(), at, stored.len());
            let tail = base.add(std::mem::offset_of!(Line, meta1)) as *mut [u64; 2];
            std::ptr::write(tail, [words[2], words[3]]);
        }
    }
}

/// The little-endian word of `piece[at..at + r]` (1 <= r <= 8), zero above its `r` bytes, read
/// without a copy through a stack buffer (a store-then-load that showed up as a quarter of the
/// lookup time). The partial word is always the piece's last, so when the piece has 8 bytes or
/// more it is the piece's last 8 bytes shifted down.
#[inline]
fn word_of(piece: &[u8], at: usize, r: usize) -> u64 {
    let n = piece.len();
    let w64 = |i: usize| u64::from_le_bytes(piece[i..i + 8].try_into().unwrap());
    let w32 = |i: usize| u32::from_le_bytes(piece[i..i + 4].try_into().unwrap()) as u64;
    let w16 = |i: usize| u16::from_le_bytes(piece[i..i + 2].try_into().unwrap()) as u64;
    if r == 8 {
        w64(at)
    } else if n >= 8 {
        w64(n - 8) >> (8 * (8 - r))
    } else if r >= 4 {
        // Two overlapping reads; the shared bytes land on the same places.
        w32(0) | (w32(r - 4) << (8 * (r - 4)))
    } else if r >= 2 {
        w16(0) | (w16(r - 2) << (8 * (r - 2)))
    } else {
        piece[0] as u64
    }
}

/// A piece of 1..=[`MAX_KEY`] bytes as four little-endian words, zero-padded: bytes 0..8, 8..16,
/// 16..24 and 24..32. With the length, the words identify the piece, and [`Key::bytes`] gives
/// it back.
#[inline]
fn key_words(piece: &[u8]) -> [u64; 4] {
    let n = piece.len();
    let mut words = [0u64; 4];
    for (k, word) in words.iter_mut().enumerate() {
        if n > 8 * k {
            *word = word_of(piece, 8 * k, (n - 8 * k).min(8));
        }
    }
    words
}

/// `KEY_MASKS[n]`: the masks that keep the first `n` bytes of four little-endian words.
static KEY_MASKS: [[u64; 4]; MAX_KEY + 1] = {
    let mut table = [[0u64; 4]; MAX_KEY + 1];
    let mut n = 0;
    while n <= MAX_KEY {
        let mut k = 0;
        while k < 4 {
            let kept = n.saturating_sub(8 * k);
            table[n][k] = if kept >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * kept)) - 1
            };
            k += 1;
        }
        n += 1;
    }
    table
};

/// A piece ready for the cache: its words, length and line. Computed ahead of the lookup, so
/// the line can be fetched while earlier pieces are encoded.
#[derive(Clone, Copy, Default)]
pub struct Key {
    words: [u64; 4],
    len: u32,
    index: u32,
}

impl Key {
    /// Where the key's line is, in a table of the most lines: the order of [`Seeds`]
    /// (a smaller table's line is this shifted right, so the order holds for every size).
    pub fn line_index(&self) -> u32 {
        self.index
    }

    /// The key of `piece`, or None when it is too long to be cached.
    #[inline]
    pub fn of(piece: &[u8]) -> Option<Key> {
        if piece.len() > MAX_KEY {
            return None;
        }
        Some(Key::from_words(key_words(piece), piece.len()))
    }

    /// The key of the piece `buf[start..end]`, or None when it is too long to be cached.
    ///
    /// The same key as [`Key::of`] gives, built without a branch on the piece's length when
    /// [`MAX_KEY`] bytes from `start` lie inside `buf`: four whole words are read and the bytes
    /// past the piece masked off. Piece lengths vary from one piece to the next, so branches on
    /// them are mispredicted.
    #[inline(always)]
    pub fn at(buf: &[u8], start: usize, end: usize) -> Option<Key> {
        let n = end - start;
        if n > MAX_KEY {
            return None;
        }
        match buf.get(start..start + MAX_KEY) {
            Some(window) => Some(Key::in_window(window, n)),
            None => Key::of(&buf[start..end]),
        }
    }

    /// The key of the piece of the first `n` bytes of `window` (`n <= MAX_KEY`, and the window
    /// at least [`MAX_KEY`] bytes long): four whole words read and the bytes past the piece
    /// masked off, [`Key::at`]'s way without its checks.
    #[inline(always)]
    pub fn in_window(window: &[u8], n: usize) -> Key {
        let mask = &KEY_MASKS[n];
        let mut words = [0u64; 4];
        for (k, word) in words.iter_mut().enumerate() {
            *word = u64::from_le_bytes(window[8 * k..8 * k + 8].try_into().unwrap()) & mask[k];
        }
        Key::from_words(words, n)
    }

    #[inline(always)]
    fn from_words(words: [u64; 4], len: usize) -> Key {
        let h = (words[0] ^ len as u64).wrapping_mul(0xA076_1D64_78BD_642F)
            ^ words[1].wrapping_mul(0xE703_7ED1_A0B4_28DB).rotate_left(17)
            ^ (words[2] ^ words[3].rotate_left(32)).wrapping_mul(0x8EBC_6AF0_9C88_C6E3);
        // The top bits of a product depend on every input bit.
        // The line in the largest table; a smaller one keeps its top bits (`WordCache::line`).
        let index = (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MAX_LINE_BITS)) as usize;
        Key {
            words,
            len: len as u32,
            index: index as u32,
        }
    }

    /// The piece's bytes, rebuilt from the words (the inverse of `key_words`).
    pub fn bytes(&self, buf: &mut [u8; MAX_KEY]) -> usize {
        for (k, word) in self.words.iter().enumerate() {
            buf[8 * k..8 * k + 8].copy_from_slice(&word.to_le_bytes());
        }
        self.len as usize
    }

    /// This key as a long entry with its ids in the [`Overflow`] buffer has it: its length byte
    /// with [`IN_OVERFLOW`], so that [`Key::in_first`] of the plain key never matches that entry.
    fn overflowed(&self) -> Key {
        Key {
            len: self.len | IN_OVERFLOW,
            ..*self
        }
    }

    /// Whether the first slot (or the long entry) of `line` holds this piece.
    #[inline(always)]
    fn in_first(&self, line: &Line) -> bool {
        let w = self.words;
        let long = line.meta0 & LONG != 0;
        let tail = line.long_tail();
        // A short slot holds only pieces of at most 16 bytes, whose last two words are zero.
        (line.key0[0] == w[0])
            & (line.key0[1] == w[1])
            & ((line.meta0 >> 8) & 0xff == self.len)
            & (!long | ((tail[0] == w[2]) & (tail[1] == w[3])))
    }

    /// Whether the second slot of `line` holds this piece (never in a long entry's line).
    #[inline(always)]
    fn in_second(&self, line: &Line) -> bool {
        let w = self.words;
        (line.meta0 & LONG == 0)
            & (line.key1[0] == w[0])
            & (line.key1[1] == w[1])
            & ((line.meta1 >> 8) & 0xff == self.len)
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

/// Where a spilled piece's key and ids are in [`Spill`]'s buffers.
#[derive(Clone, Copy)]
struct Spilled {
    key_at: u32,
    key_len: u32,
    ids_at: u32,
    ids_len: u32,
}

/// The pieces too long for a [`Line`]: 33 to [`MAX_SPILL_KEY`] bytes (a run of CJK characters is
/// one piece for the GPT-2 and o200k patterns, a long word in Cyrillic or Devanagari is 40 bytes
/// or more). Merging one of them again costs 1.5-5 µs, a lookup here well under a tenth of that.
/// A hash map from the piece's hash to its place in two append-only buffers, emptied whole when
/// they pass the shard's limit; a piece whose hash another piece already holds is looked up by
/// comparing the bytes and otherwise just not kept.
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

/// The ids of the pieces of up to [`MAX_KEY`] bytes that have more than [`LONG_IDS`], which a
/// line cannot hold: a long entry's line keeps the piece's key and, in place of the ids, where
/// they are here and this buffer's generation. Appended to, and emptied whole (a new generation,
/// so that no line finds its old place) when it would pass [`OVERFLOW_IDS`].
///
/// Such pieces are rare in most text but not everywhere: GPT-2's vocabulary spells a code line's
/// indentation one space at a time, so `"\n" + 7 spaces` is 8 ids, and on the shared code corpus
/// 5% of the pieces (35% of the ids) are like it; each was merged again on every occurrence, 15%
/// of the time of code seen before.
#[derive(Default)]
struct Overflow {
    ids: Vec<u32>,
    generation: u32,
}

/// The most ids the [`Overflow`] buffer holds (1 MiB).
const OVERFLOW_IDS: usize = 1 << 18;
/// Set in the length byte of a long entry whose ids are in the [`Overflow`] buffer (lengths are
/// at most [`MAX_KEY`], below it).
const IN_OVERFLOW: u32 = 0x80;

impl Overflow {
    /// Keep `ids`; (where, generation) to store in the line. (Only a line written with what
    /// this returns carries [`IN_OVERFLOW`], so no line can name a generation before the first.)
    fn push(&mut self, ids: &[u32]) -> [u32; 2] {
        if self.ids.len() + ids.len() > OVERFLOW_IDS {
            self.ids.clear();
            self.generation = self.generation.wrapping_add(1);
        }
        let at = self.ids.len() as u32;
        self.ids.extend_from_slice(ids);
        [at, self.generation]
    }

    /// The `count` ids a line stored as `[where, generation]`, unless the buffer has been
    /// emptied since.
    fn get(&self, stored: [u32; 2], count: usize) -> Option<&[u32]> {
        let [at, generation] = stored;
        (generation == self.generation)
            .then(|| self.ids.get(at as usize..at as usize + count))
            .flatten()
    }
}

/// The pieces of more than [`LONG_IDS`] ids that have missed once while their line was taken: a
/// fingerprint per slot, by line. Such a piece takes a line that holds other pieces only on its
/// second miss while it is remembered here. On multilingual text they are mostly words seen once
/// (o200k, the shared corpus: 39 of 7,810 come back), and taking their lines at once pushed out
/// pieces that come back (0.956-0.972 on that text encoded again); GPT-2's indentation pieces
/// come back thousands of times, and an empty line alone was not enough for them (1.053 on code
/// against 1.081 for taking the line at once).
#[derive(Default)]
struct Knocks {
    fingerprints: Vec<u32>,
}

/// Slots of [`Knocks`] (16 KB).
const KNOCKS: usize = 4096;

impl Knocks {
    /// Whether `key`'s piece was the last to knock at its slot (then forgotten); if not, it is
    /// remembered as the last.
    fn second(&mut self, key: &Key) -> bool {
        if self.fingerprints.is_empty() {
            self.fingerprints = vec![0; KNOCKS];
        }
        let w = key.words;
        // Never 0, the empty slot's value. A collision only lets a piece in early.
        let fingerprint =
            ((w[0] ^ w[1].rotate_left(19) ^ w[2].rotate_left(38) ^ w[3]) as u32 ^ key.len) | 1;
        let slot = &mut self.fingerprints[key.index as usize % KNOCKS];
        let again = *slot == fingerprint;
        *slot = if again { 0 } else { fingerprint };
        again
    }
}

/// A word cache of [`Line`]s, each a set of two short slots or one long entry, picked by the
/// piece's hash, with an [`Overflow`] buffer for the ids of pieces of more than
/// [`LONG_IDS`], and a [`Spill`] store for the pieces no line can hold. Results never depend on
/// what it holds.
#[derive(Default)]
pub struct WordCache {
    lines: ZeroedTable<Line>,
    /// The table has `1 << (MAX_LINE_BITS - shift)` lines.
    shift: u32,
    /// The shift was chosen for this cache (a shard is sized when a thread first takes it).
    sized: bool,
    spill: Spill,
    overflow: Overflow,
    knocks: Knocks,
    /// A stand-in for a shard that another thread holds: remembers nothing.
    disabled: bool,
    /// The pages the lines ask for.
    pages: Pages,
    /// The engine's [`Seeds`] are in the lines (until the next `clear`).
    seeded: bool,
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

    /// [`WordCache::encode`] of a piece longer than [`MAX_KEY`] bytes (no line holds it).
    pub fn encode_long(
        &mut self,
        piece: &[u8],
        out: &mut Vec<u32>,
        encode: impl FnOnce(&mut Vec<u32>),
    ) {
        // A piece too long to be kept is not hashed (a text without a pre-tokenizer is one piece).
        if self.disabled || piece.len() > MAX_SPILL_KEY {
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

    /// A cache whose table has `1 << bits` lines (`MIN_LINE_BITS..=MAX_LINE_BITS`).
    fn with_line_bits(bits: u32, pages: Pages) -> Self {
        WordCache {
            pages,
            shift: MAX_LINE_BITS - bits.clamp(MIN_LINE_BITS, MAX_LINE_BITS),
            sized: true,
            ..WordCache::default()
        }
    }

    fn line_count(&self) -> usize {
        1 << (MAX_LINE_BITS - self.shift)
    }

    /// The spill store's size limit in bytes: half the lines'.
    fn spill_limit(&self) -> usize {
        self.line_count() * std::mem::size_of::<Line>() / 2
    }

    /// Where the line of `key` is in this table.
    #[inline(always)]
    fn line_at(&self, key: &Key) -> usize {
        (key.index >> self.shift) as usize
    }

    /// The line of `key` in this table (absent until the first insert).
    #[inline(always)]
    fn line(&self, key: &Key) -> Option<&Line> {
        self.lines.get(self.line_at(key))
    }

    #[inline(always)]
    fn line_mut(&mut self, key: &Key) -> Option<&mut Line> {
        let at = self.line_at(key);
        self.lines.get_mut(at)
    }

    fn clear(&mut self) {
        self.lines = ZeroedTable::default();
        self.spill = Spill::default();
        self.overflow = Overflow::default();
        self.knocks = Knocks::default();
        self.seeded = false;
    }

    /// Put each seed in an empty slot of its line; a line with no room keeps what it has (the
    /// pieces this cache has met matter more than the vocabulary's). Seeds come in line order,
    /// so the lines are written front to back.
    pub fn seed(&mut self, seeds: &Seeds) {
        self.seeded = true;
        if self.disabled {
            return;
        }
        for (piece, id) in seeds.iter() {
            let Some(key) = Key::of(piece) else { continue };
            match self.line_mut(&key) {
                Some(line) if line.meta0 != 0 => {
                    // Beside a short piece, in the empty second slot: the piece the cache learned
                    // stays first, where a lookup tries first (`insert` would move it).
                    if line.meta0 & LONG == 0 && line.meta1 == 0 && short(&key, 1) {
                        (line.key1, line.meta1) = ([key.words[0], key.words[1]], 1 | key.len << 8);
                        line.ids1[0] = id;
                    }
                }
                // An empty line, or no table yet: the seed takes the first slot.
                _ => self.insert(&key, &[id]),
            }
        }
    }

    /// Start fetching the line of `key` into the CPU cache (see [`Key`]).
    #[inline(always)]
    pub fn prefetch(&self, key: &Key) {
        if let Some(line) = self.line(key) {
            prefetch(line);
        }
    }

    /// Append the cached ids of the piece of `key` to `out`; false on a miss.
    #[inline(always)]
    pub fn extend(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        let Some(line) = self.line(key) else {
            return false;
        };
        out.reserve(LONG_IDS);
        let len = out.len();
        // Fixed-size copies of a slot's id room, then the length: no call to memmove for a copy
        // of a few ids.
        // SAFETY: the reserve leaves room for LONG_IDS more ids after `len`; the first slot's
        // room (`ids0` and `key1`, repr(C)) holds LONG_IDS ids, the second's SHORT_IDS; the new
        // length counts only the slot's ids, all of them written just before.
        unsafe {
            let to = out.as_mut_ptr().add(len);
            if key.in_first(line) {
                std::ptr::copy_nonoverlapping(line.long_ids(), to, LONG_IDS);
                out.set_len(len + (line.meta0 & 0xff) as usize);
                return true;
            }
            if key.in_second(line) {
                std::ptr::copy_nonoverlapping(line.ids1.as_ptr(), to, SHORT_IDS);
                out.set_len(len + (line.meta1 & 0xff) as usize);
                return true;
            }
        }
        false
    }

    /// [`WordCache::extend`] for a piece of more than [`LONG_IDS`] ids, asked only after
    /// `extend` has missed: its line's length byte carries [`IN_OVERFLOW`], which no piece's
    /// length has, so `extend`, the path of every hit, never stops for it. False when the
    /// buffer has been emptied since it was kept (the piece is merged and kept again).
    #[inline(never)]
    pub fn extend_overflow(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        let Some(line) = self.line(key) else {
            return false;
        };
        if !key.overflowed().in_first(line) {
            return false;
        }
        let stored = [line.ids0[0], line.ids0[1]];
        match self.overflow.get(stored, (line.meta0 & 0xff) as usize) {
            Some(ids) => {
                out.extend_from_slice(ids);
                true
            }
            None => false,
        }
    }

    /// Remember `ids` for the piece of `key`. A piece of more than [`LONG_IDS`] ids takes a long
    /// entry with its ids in the [`Overflow`] buffer, if its line is empty or already its own or
    /// it knocks twice ([`Knocks`]). Such pieces once went to the spill store, whose lookup every
    /// missed piece then paid (2-7% on multilingual text seen once, examples/engine_costs);
    /// here they are found in the line a lookup reads anyway.
    pub fn insert(&mut self, key: &Key, ids: &[u32]) {
        if self.disabled || ids.len() > MAX_KEY {
            return;
        }
        if self.lines.is_empty() {
            // SAFETY: a line of zero bytes is `Line::default()`, two empty slots.
            self.lines = unsafe { ZeroedTable::new(self.line_count(), self.pages) };
        }
        let at = self.line_at(key);
        // Borrowed field by field: the line is written while the knocks and the buffer are asked.
        let Some(line) = self.lines.get_mut(at) else {
            return;
        };
        if ids.len() > LONG_IDS {
            let flagged = key.overflowed();
            if line.meta0 == 0 || flagged.in_first(line) || self.knocks.second(key) {
                let stored = self.overflow.push(ids);
                line.set_long(key.words, flagged.len as usize, ids.len(), &stored);
            }
            return;
        }
        if !short(key, ids.len()) {
            line.set_long(key.words, key.len as usize, ids.len(), ids);
            return;
        }
        if line.meta0 & LONG != 0 {
            line.meta1 = 0;
        } else {
            (line.key1, line.meta1, line.ids1) = (line.key0, line.meta0, line.ids0);
        }
        line.key0 = [key.words[0], key.words[1]];
        line.meta0 = ids.len() as u32 | key.len << 8;
        line.ids0[..ids.len()].copy_from_slice(ids);
    }
}

/// Whether a piece of `key` with `ids` ids takes a short slot.
#[inline]
fn short(key: &Key, ids: usize) -> bool {
    key.len as usize <= SHORT_KEY && ids <= SHORT_IDS
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
    /// How many more shards may take `full_bits` lines; the rest take the fewest.
    full: AtomicUsize,
    full_bits: u32,
    /// The pages every shard's lines ask for.
    pages: Pages,
    /// Given once by the engine ([`ShardedCache::set_seeds`]), which seeds the shards in use;
    /// the others are seeded when a thread first takes them, and each again after a `clear`.
    seeds: OnceLock<Seeds>,
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

impl ShardedCache {
    /// Shards whose lines ask for `pages` (see [`Pages`]: huge beside a BPE vocabulary).
    pub fn new(pages: Pages) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let lines = LINE_BUDGET / std::mem::size_of::<Line>() / cores;
        ShardedCache {
            shards: (0..cores.max(MIN_SHARDS))
                .map(|_| Mutex::new(WordCache::default()))
                .collect(),
            full: AtomicUsize::new(cores),
            full_bits: lines.max(1).ilog2().clamp(MIN_LINE_BITS, MAX_LINE_BITS),
            pages,
            seeds: OnceLock::new(),
        }
    }

    /// Give a shard its size the first time a thread takes it (see [`MAX_LINE_BITS`]).
    fn size(&self, shard: &mut WordCache) {
        if shard.sized {
            return;
        }
        let full = self
            .full
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        let bits = if full { self.full_bits } else { MIN_LINE_BITS };
        *shard = WordCache::with_line_bits(bits, self.pages);
    }

    /// Whether the seeds have been given.
    pub fn has_seeds(&self) -> bool {
        self.seeds.get().is_some()
    }

    /// How many seeds there are (0 before they are given).
    pub fn seed_count(&self) -> usize {
        self.seeds.get().map_or(0, Seeds::len)
    }

    /// Seed every shard in use now, and each other one when a thread first takes it (see
    /// [`Seeds`]); later calls are ignored. A shard another thread is encoding with is waited for:
    /// it is held for one text at a time, and seeding it here keeps the cost out of the batch
    /// that thread is in.
    pub fn set_seeds(&self, seeds: Seeds) {
        if self.seeds.set(seeds).is_err() {
            return;
        }
        let Some(seeds) = self.seeds.get() else {
            return;
        };
        for shard in &self.shards {
            let mut guard = shard
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if guard.sized && !guard.seeded {
                guard.seed(seeds);
            }
        }
    }

    /// Forget every cached word (frees the lines; the seeds stay, and a shard taken again is
    /// seeded again).
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
        let mut guard = match self.shards[thread_number() % self.shards.len()].try_lock() {
            Ok(guard) => guard,
            // A poisoned shard only means another thread panicked mid-insert; the slots stay valid.
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return CacheGuard::Busy(WordCache {
                    disabled: true,
                    ..WordCache::default()
                })
            }
        };
        self.size(&mut guard);
        if let Some(seeds) = self.seeds.get() {
            if !guard.seeded {
                guard.seed(seeds);
            }
        }
        CacheGuard::Shard(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces of 1..=32 bytes over a tiny alphabet (with zero bytes, which the padding of
    /// `key_words` must not confuse with the piece), so that many share prefixes and suffixes.
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
    fn a_line_of_zero_bytes_is_the_empty_default_line() {
        // The table's memory comes zeroed from the system (`ZeroedTable`): zero must mean empty.
        // SAFETY: `Line` is 64 bytes of integers without padding (the assert beside it).
        let bytes: [u8; 64] = unsafe { std::mem::transmute(Line::default()) };
        assert!(bytes.iter().all(|&b| b == 0));
        let mut cache = WordCache::with_line_bits(MIN_LINE_BITS, Pages::Huge);
        let piece = b"hello";
        let key = Key::of(piece).unwrap();
        cache.insert(&key, &[1, 2]);
        let mut out = Vec::new();
        for other in [&b"hellp"[..], b"a", b"0123456789abcdef0123"] {
            assert!(!cache.extend(&Key::of(other).unwrap(), &mut out));
        }
        assert!(cache.extend(&key, &mut out) && out == [1, 2]);
    }

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
            let key = Key::of(piece).unwrap();
            cache.line(&key).is_some_and(|line| key.in_first(line))
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
        assert!(!cache.seeded && lookup(&cache, &spelled[0].0).is_none());
        cache.seed(&seeds);
        assert!(
            count_seeded(&cache) > first,
            "an empty table takes more of them"
        );
    }

    #[test]
    fn seeds_reach_the_shards_in_use_at_once_and_the_others_when_taken() {
        let cache = ShardedCache::new(Pages::Small);
        let key = Key::of(b"seed").unwrap();
        let found = |cache: &ShardedCache| {
            let mut out = Vec::new();
            cache
                .for_current_thread()
                .extend(&key, &mut out)
                .then_some(out)
        };
        assert_eq!(found(&cache), None); // this thread's shard is now in use
        cache.set_seeds(Seeds::build(|found| found(b"seed", &[42])));
        let mine = thread_number() % cache.shards.len();
        assert!(cache.shards[mine].lock().unwrap().seeded);
        let unused = cache
            .shards
            .iter()
            .filter(|s| !s.lock().unwrap().seeded)
            .count();
        assert_eq!(unused, cache.shards.len() - 1);
        assert_eq!(found(&cache), Some(vec![42]));
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(found(&cache), Some(vec![42])));
        });
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

    /// Threads beyond one per core (a thread pool larger than the machine) get the smallest
    /// tables, so that the memory of the lines stays near the budget.
    #[test]
    fn only_one_shard_per_core_takes_the_budgeted_size() {
        let cache = ShardedCache::new(Pages::Huge);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for _ in 0..MIN_SHARDS + 4 {
            // One thread at a time: each takes a shard of its own (threads are numbered).
            std::thread::scope(|s| {
                s.spawn(|| {
                    let mut shard = cache.for_current_thread();
                    assert!(shard.sized);
                    shard.insert(&Key::of(b"x").unwrap(), &[1]);
                    let mut out = Vec::new();
                    assert!(shard.extend(&Key::of(b"x").unwrap(), &mut out) && out == [1]);
                });
            });
        }
        let sizes: Vec<usize> = cache
            .shards
            .iter()
            .map(|s| s.lock().unwrap().lines.len())
            .collect();
        // Other tests' threads take numbers too, so some shards may go unused here.
        let used = sizes.iter().filter(|&&n| n > 0).count();
        let full = sizes.iter().filter(|&&n| n == 1 << cache.full_bits).count();
        let small = sizes.iter().filter(|&&n| n == 1 << MIN_LINE_BITS).count();
        assert!(used > 0, "{sizes:?}");
        if cache.full_bits > MIN_LINE_BITS {
            let expected_full = cores.min(used);
            assert_eq!(
                (full, small),
                (expected_full, used - expected_full),
                "{sizes:?}"
            );
        }
    }

    #[test]
    fn every_table_size_gives_the_stored_answers() {
        let all = pieces();
        for bits in MIN_LINE_BITS..=MAX_LINE_BITS {
            let mut cache = WordCache::with_line_bits(bits, Pages::Huge);
            assert_eq!(cache.line_count(), 1 << bits);
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
            assert_eq!(cache.lines.len(), 1 << bits);
        }
    }

    #[test]
    fn keys_read_in_place_equal_keys_of_copied_pieces() {
        for p in pieces() {
            let expected = Key::of(&p).unwrap();
            // The piece at the start, in the middle and at the end of a buffer: with room to
            // read whole words past it, and without.
            for (before, after) in [(0, 0), (0, 40), (3, 5), (5, 31), (7, 32), (1, 100)] {
                let mut buf = vec![0xEEu8; before];
                buf.extend_from_slice(&p);
                buf.extend(std::iter::repeat_n(0xAB, after));
                let key = Key::at(&buf, before, before + p.len()).unwrap();
                assert_eq!(
                    (key.words, key.len, key.index),
                    (expected.words, expected.len, expected.index),
                    "piece {p:?} with {before} bytes before and {after} after"
                );
            }
        }
        let long = [b'a'; MAX_KEY + 1];
        assert!(Key::at(&long, 0, long.len()).is_none());
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
