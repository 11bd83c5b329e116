//! The word cache's table of lines ([`Lines`]), one per engine, read and written by every thread
//! that encodes with it, without a lock.
//!
//! Each thread once had a table of its own. In a batch, a thread then met as new every word the
//! other thread had already merged: 20% more CPU per MB for two threads than for one on unseen
//! English (`bench_encode.py`'s "CPU per MB, batched / single"), which kept the batch below 1.8x
//! one thread. Copying what one table learned into the other cost as much as the merges it saved
//! (a write to a cold line per piece per table; docs/benchmarks.md, thirteenth pass); one table
//! for all is learned once and written once.
//!
//! A line is guarded by a version in its third word, a seqlock: a writer claims the line by
//! making the version odd (a compare-and-swap; a writer that finds the line claimed just does
//! not keep its piece, which only costs a later miss), writes, and publishes the line with the
//! next even version. A reader takes the version, reads what it needs, and keeps the answer only
//! if the version is even and unchanged after the reads; otherwise the piece counts as a miss and
//! is merged, so a torn read can cost time but never give a wrong id. Every word is an atomic
//! (plain loads and stores on x86-64), so no read races a write in the language's sense.
//! The version has 15 bits: a reader would have to stall through 16,384 writes of one line to be
//! fooled by a wrapped version, while a write follows a merge of several hundred nanoseconds.
//!
//! A line's words (`W0`..`W7`, little-endian `u64`s; a slot's `meta` is its number of ids in the
//! low byte and the piece's length in the next):
//!
//! | word | two short slots | one long entry |
//! |---|---|---|
//! | 0, 1 | first slot's key | key bytes 0..16 |
//! | 2 | first `meta` (+ [`LONG`], version) and id 0 | `meta`, [`LONG`], version; id 0 |
//! | 3 | first slot's ids 1, 2 | ids 1, 2 |
//! | 4, 5 | second slot's key | ids 3..7 |
//! | 6 | second `meta` and id 0 | key bytes 16..24 |
//! | 7 | second slot's ids 1, 2 | key bytes 24..32 |

use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::engines::cache_key::{Key, MAX_KEY, MAX_LINE_BITS};
use crate::engines::seeds::Seeds;
use crate::memory::huge_pages::Pages;
use crate::memory::zeroed_table::ZeroedTable;

/// The most ids of a piece in a short slot, and in a long entry's line.
const SHORT_IDS: usize = 3;
pub const LONG_IDS: usize = 7;
/// The longest piece a short slot holds.
const SHORT_KEY: usize = 16;
/// The smallest table [`Lines::new`] makes (2 MiB).
pub const MIN_LINE_BITS: u32 = 15;

/// In word 2: this line holds one long entry.
const LONG: u64 = 1 << 16;
/// In word 2, the bits of the first slot's `meta` and [`LONG`]; all zero in an empty line.
const META: u64 = (1 << 17) - 1;
/// One step of the version (bits 17..32 of word 2); odd while a writer holds the line.
const VERSION: u64 = 1 << 17;
const VERSIONS: u64 = 0xFFFF_FFFF & !META;
/// Set in the length byte of a long entry whose ids are in the [`Overflow`] buffer (lengths are
/// at most [`MAX_KEY`], below it).
const IN_OVERFLOW: u64 = 0x80;

/// The words of a line as allocated: all zero is an empty line. Only ever read and written
/// through [`View::line`]'s atomic view.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub struct RawLine([u64; 8]);

const _: () = assert!(std::mem::size_of::<RawLine>() == 64);

type Line = [AtomicU64; 8];

const fn meta(count: usize, len: u64) -> u64 {
    count as u64 | len << 8
}

/// Two ids as one word, the first in the low half.
fn pair(ids: &[u32], at: usize) -> u64 {
    let id = |k: usize| ids.get(k).map_or(0, |&id| id as u64);
    id(at) | id(at + 1) << 32
}

/// The ids of the pieces of up to [`MAX_KEY`] bytes that have more than [`LONG_IDS`], which a
/// line cannot hold: a long entry's line keeps the piece's key and, in place of the ids, where
/// they are here and this buffer's generation. Appended to (under a lock: only merged pieces are
/// written), and emptied whole, a new generation, when it would pass its capacity.
///
/// Such pieces are rare in most text but not everywhere: GPT-2's vocabulary spells a code line's
/// indentation one space at a time, so `"\n" + 7 spaces` is 8 ids, and on the shared code corpus
/// 5% of the pieces (35% of the ids) are like it; each was merged again on every occurrence, 15%
/// of the time of code seen before.
///
/// A reader checks the generation before and after copying (the seqlock of the lines again): ids
/// are overwritten only after the generation has moved on.
struct Overflow {
    /// Allocated on first use, its pages committed as written; read and written as atomics.
    ids: OnceLock<ZeroedTable<u32>>,
    capacity: usize,
    generation: AtomicU32,
    /// Where the next ids go; held while writing.
    end: Mutex<usize>,
}

/// The most ids the [`Overflow`] buffer holds (1 MiB).
const OVERFLOW_IDS: usize = 1 << 18;

impl Overflow {
    fn new(capacity: usize) -> Self {
        Overflow {
            ids: OnceLock::new(),
            capacity,
            generation: AtomicU32::new(0),
            end: Mutex::new(0),
        }
    }

    /// The buffer as atomics (None before the first `push`).
    fn slots(&self) -> Option<&[AtomicU32]> {
        self.ids.get().map(atomics)
    }

    /// Keep `ids`; (where, generation) to store in the line.
    fn push(&self, ids: &[u32]) -> [u32; 2] {
        let mut end = self
            .end
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let buffer = atomics(self.ids.get_or_init(|| {
            // SAFETY: all-zero bytes are a valid u32.
            unsafe { ZeroedTable::new(self.capacity, Pages::Small) }
        }));
        let mut generation = self.generation.load(Ordering::Relaxed);
        if *end + ids.len() > buffer.len() {
            generation = generation.wrapping_add(1);
            self.generation.store(generation, Ordering::Relaxed);
            // A reader that sees an id written below has to see the new generation after it.
            fence(Ordering::Release);
            *end = 0;
        }
        let at = *end;
        for (slot, &id) in buffer[at..].iter().zip(ids) {
            slot.store(id, Ordering::Relaxed);
        }
        *end += ids.len();
        [at as u32, generation]
    }

    /// Append the `count` ids a line stored as `[where, generation]`, unless the buffer has been
    /// emptied since; false then, with `out` as it was.
    fn extend(&self, stored: [u32; 2], count: usize, out: &mut Vec<u32>) -> bool {
        let [at, generation] = stored;
        if self.generation.load(Ordering::Acquire) != generation {
            return false;
        }
        let Some(ids) = self
            .slots()
            .and_then(|b| b.get(at as usize..at as usize + count))
        else {
            return false;
        };
        let before = out.len();
        out.extend(ids.iter().map(|id| id.load(Ordering::Relaxed)));
        fence(Ordering::Acquire);
        if self.generation.load(Ordering::Relaxed) != generation {
            out.truncate(before);
            return false;
        }
        true
    }
}

/// The overflow buffer's entries as atomics.
fn atomics(table: &ZeroedTable<u32>) -> &[AtomicU32] {
    // SAFETY: `AtomicU32` has `u32`'s layout, the slice borrows the table, and the buffer's
    // entries are only ever accessed through this view.
    unsafe { std::slice::from_raw_parts(table.first().as_ptr().cast(), table.len()) }
}

/// The pieces of more than [`LONG_IDS`] ids that have missed once while their line was taken: a
/// fingerprint per slot, by line; each thread has its own. Such a piece takes a line that holds
/// other pieces only on its second miss while it is remembered here. On multilingual text they
/// are mostly words seen once (o200k, the shared corpus: 39 of 7,810 come back), and taking their
/// lines at once pushed out pieces that come back (0.956-0.972 on that text encoded again);
/// GPT-2's indentation pieces come back thousands of times, and an empty line alone was not
/// enough for them (1.053 on code against 1.081 for taking the line at once).
#[derive(Default)]
pub struct Knocks {
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

/// A line claimed by a writer ([`Lines::claim`]). Its words are written only by the `publish_*`
/// methods, each of which ends by publishing, with nothing between that can fail, so a claim
/// dropped unpublished has written nothing and the line goes back as it was.
struct Claim<'a> {
    line: &'a Line,
    /// Word 2 when claimed (version even).
    head: u64,
    done: bool,
}

impl Claim<'_> {
    fn word(&self, k: usize) -> u64 {
        self.line[k].load(Ordering::Relaxed)
    }

    fn set(&self, k: usize, value: u64) {
        self.line[k].store(value, Ordering::Relaxed);
    }

    /// Write word 2 (`meta`, [`LONG`] and id 0 of the first slot; the version is added here),
    /// making every write since the claim visible to readers at once.
    fn publish(mut self, head: u64) {
        // Only the `publish_*` methods call this, after their writes.
        let version = (self.head & VERSIONS).wrapping_add(2 * VERSION) & VERSIONS;
        self.line[2].store(head & !VERSIONS | version, Ordering::Release);
        self.done = true;
    }

    /// Make the line one long entry: the key's words, its length, its number of ids `count`,
    /// and `stored` (at most [`LONG_IDS`]) in the room for ids: the ids, or where [`Overflow`]
    /// keeps them.
    fn publish_long(self, words: [u64; 4], len: u64, count: usize, stored: &[u32]) {
        self.set(0, words[0]);
        self.set(1, words[1]);
        self.set(3, pair(stored, 1));
        self.set(4, pair(stored, 3));
        self.set(5, pair(stored, 5));
        self.set(6, words[2]);
        self.set(7, words[3]);
        self.publish(meta(count, len) | LONG | pair(stored, 0) << 32);
    }

    /// Put a short piece in the first slot, moving the piece there to the second (a long entry
    /// is dropped).
    fn publish_short(self, key: &Key, ids: &[u32]) {
        let head = self.head;
        if head & LONG != 0 {
            self.set(6, 0);
        } else {
            self.set(4, self.word(0));
            self.set(5, self.word(1));
            self.set(6, head & !VERSIONS);
            self.set(7, self.word(3));
        }
        self.set(0, key.words[0]);
        self.set(1, key.words[1]);
        self.set(3, pair(ids, 1));
        self.publish(meta(ids.len(), key.len as u64) | pair(ids, 0) << 32);
    }
}

impl Claim<'_> {
    /// Put a one-id piece in the empty second slot beside a short piece, which stays first.
    fn publish_second(self, key: &Key, id: u32) {
        self.set(4, key.words[0]);
        self.set(5, key.words[1]);
        self.set(6, meta(1, key.len as u64) | (id as u64) << 32);
        let head = self.head;
        self.publish(head);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Nothing was written: the line goes back as it was.
            self.line[2].store(self.head, Ordering::Release);
        }
    }
}

/// A table of lines, each a set of two short slots or one long entry, picked by the piece's
/// hash, with an [`Overflow`] buffer for the ids of pieces of more than [`LONG_IDS`]. Shared by
/// the threads of an engine (see the module's notes); results never depend on what it holds.
///
/// Nearly every piece has at most 16 bytes and 3 ids (98.7% of GPT-2's pieces of English, 90% of
/// code); such a piece takes a 32-byte slot, two to a line, so a line is a set of two ways (a new
/// piece takes the first and moves the one there to the second). Two ways keep a frequent piece
/// from being evicted by a rare one that shares its line, without a second cache line to fetch
/// (two ways of whole-line slots, two lines per lookup, measured slower than one way).
/// A longer piece, or one with 4 to 7 ids, takes the whole line. For a piece of more ids, the
/// line holds where they are in the [`Overflow`] buffer, and its length byte has [`IN_OVERFLOW`].
pub struct Lines {
    table: ZeroedTable<RawLine>,
    /// The table has `1 << (MAX_LINE_BITS - shift)` lines.
    shift: u32,
    overflow: Overflow,
    /// Some thread has put the engine's [`Seeds`] in (see [`Lines::seed`]).
    seeded: AtomicBool,
}

impl Lines {
    /// A table of `1 << bits` lines (`MIN_LINE_BITS..=MAX_LINE_BITS`), its memory committed as
    /// lines are written, in `pages` where the system has them.
    pub fn new(bits: u32, pages: Pages) -> Self {
        Lines::with_overflow(bits, pages, OVERFLOW_IDS)
    }

    fn with_overflow(bits: u32, pages: Pages, overflow_ids: usize) -> Self {
        let bits = bits.clamp(MIN_LINE_BITS, MAX_LINE_BITS);
        Lines {
            // SAFETY: a line of zero bytes is an empty line.
            table: unsafe { ZeroedTable::new(1 << bits, pages) },
            shift: MAX_LINE_BITS - bits,
            overflow: Overflow::new(overflow_ids),
            seeded: AtomicBool::new(false),
        }
    }

    #[cfg(test)]
    pub fn line_count(&self) -> usize {
        self.table.len()
    }

    /// The table as a [`View`], for the lookups.
    pub fn view(&self) -> View {
        View {
            first: self.table.first().cast(),
            mask: self.table.len() - 1,
            shift: self.shift,
        }
    }

    fn line(&self, key: &Key) -> &Line {
        // SAFETY: the view's table is this one, borrowed for as long as the line is.
        unsafe { &*(self.view().line(key) as *const Line) }
    }

    /// See [`View::extend`].
    #[cfg(test)]
    pub fn extend(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        // SAFETY: the table outlives the call.
        unsafe { self.view().extend(key, out) }
    }

    /// [`View::extend`] for a piece of more than [`LONG_IDS`] ids, asked only after `extend` has
    /// missed: its line's length byte carries [`IN_OVERFLOW`], which no piece's length has, so
    /// `extend`, the path of every hit, never stops for it. False when the buffer has been
    /// emptied since it was kept (the piece is merged and kept again).
    pub fn extend_overflow(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        let line = self.line(key);
        let w = key.words;
        let flagged = key.len as u64 | IN_OVERFLOW;
        let head = line[2].load(Ordering::Acquire);
        let word = |k: usize| line[k].load(Ordering::Relaxed);
        let ours = (head & VERSION == 0)
            & (head & LONG != 0)
            & ((head >> 8) & 0xff == flagged)
            & (word(0) == w[0])
            & (word(1) == w[1])
            & (word(6) == w[2])
            & (word(7) == w[3]);
        let stored = [(head >> 32) as u32, word(3) as u32];
        fence(Ordering::Acquire);
        ours && line[2].load(Ordering::Relaxed) == head
            && self.overflow.extend(stored, (head & 0xff) as usize, out)
    }

    /// Claim the line of `key` for writing; None when another writer holds it.
    fn claim(&self, key: &Key) -> Option<Claim<'_>> {
        let line = self.line(key);
        let head = line[2].load(Ordering::Relaxed);
        if head & VERSION != 0 {
            return None;
        }
        line[2]
            .compare_exchange(head, head | VERSION, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // Readers that see any write below must then see the claimed version.
        fence(Ordering::Release);
        Some(Claim {
            line,
            head,
            done: false,
        })
    }

    /// Remember `ids` for the piece of `key` (unless another thread is writing its line). A
    /// piece of more than [`LONG_IDS`] ids takes a long entry with its ids in the [`Overflow`]
    /// buffer, if its line is empty or already its own or it knocks twice ([`Knocks`]). Such
    /// pieces once went to the spill store, whose lookup every missed piece then paid (2-7% on
    /// multilingual text seen once, examples/engine_costs); here they are found in the line a
    /// lookup reads anyway.
    pub fn insert(&self, key: &Key, ids: &[u32], knocks: &mut Knocks) {
        if ids.len() > MAX_KEY {
            return;
        }
        if let Some(claim) = self.claim(key) {
            self.store(claim, key, ids, knocks);
        }
    }

    /// [`Lines::insert`] into a line already claimed.
    fn store(&self, claim: Claim<'_>, key: &Key, ids: &[u32], knocks: &mut Knocks) {
        let head = claim.head;
        let flagged = key.len as u64 | IN_OVERFLOW;
        if ids.len() > LONG_IDS {
            let w = key.words;
            let own = (head & LONG != 0)
                && (head >> 8) & 0xff == flagged
                && [claim.word(0), claim.word(1), claim.word(6), claim.word(7)] == w;
            if head & META == 0 || own || knocks.second(key) {
                let stored = self.overflow.push(ids);
                claim.publish_long(w, flagged, ids.len(), &stored);
            }
        } else if !short(key, ids.len()) {
            claim.publish_long(key.words, key.len as u64, ids.len(), ids);
        } else {
            claim.publish_short(key, ids);
        }
    }

    /// Put each seed in an empty slot of its line, once per table (the first caller does it); a
    /// line with no room keeps what it has (the pieces the engine has met matter more than the
    /// vocabulary's). Seeds come in line order, so the lines are written front to back.
    pub fn seed(&self, seeds: &Seeds) {
        if self.seeded.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut knocks = Knocks::default();
        for (piece, id) in seeds.iter() {
            let Some(key) = Key::of(piece) else { continue };
            let Some(claim) = self.claim(&key) else {
                continue;
            };
            let head = claim.head;
            if head & META == 0 {
                self.store(claim, &key, &[id], &mut knocks);
            } else if head & LONG == 0 && claim.word(6) & META == 0 && short(&key, 1) {
                // The piece the engine learned stays first, where a lookup tries first (`insert`
                // would move it).
                claim.publish_second(&key, id);
            }
        }
    }

    /// Which slot holds the piece of `key`: 0 (or a long entry), 1, or None.
    #[cfg(test)]
    pub fn slot_of(&self, key: &Key) -> Option<usize> {
        let mut out = Vec::new();
        if !self.extend(key, &mut out) {
            return None;
        }
        let word = |k: usize| self.line(key)[k].load(Ordering::Relaxed);
        let first = [word(0), word(1)] == key.words[..2] && (word(2) >> 8) & 0xff == key.len as u64;
        Some(usize::from(!first))
    }
}

/// Where a [`Lines`] table's lines are, for the lookups: read straight from a thread's cache,
/// without going through the table's shared handle (one dependent load fewer on every piece).
/// [`View::empty`] is a table of one empty line, so a cache without a table yet needs no test.
#[derive(Clone, Copy)]
pub struct View {
    first: NonNull<Line>,
    /// The table's length less one (a power of two less one).
    mask: usize,
    shift: u32,
}

// SAFETY: a view only points into a table of atomics (shared by threads by design) or at EMPTY;
// whoever holds it keeps the table alive (`WordCache` keeps its `Arc<Lines>` beside it).
unsafe impl Send for View {}
unsafe impl Sync for View {}

/// The one line of [`View::empty`]: always empty, never written.
static EMPTY: Line = [const { AtomicU64::new(0) }; 8];

impl View {
    /// A view of one empty line: every lookup misses.
    pub fn empty() -> Self {
        View {
            first: NonNull::from(&EMPTY),
            mask: 0,
            shift: 0,
        }
    }

    /// The line of `key` (in the table, whatever the key: the mask keeps the index inside).
    #[inline(always)]
    fn line(&self, key: &Key) -> *const Line {
        let at = (key.index >> self.shift) as usize & self.mask;
        // `AtomicU64` has `u64`'s layout, and the table is only ever read and written as atomics.
        self.first.as_ptr().wrapping_add(at)
    }

    /// Start fetching the line of `key` into the CPU cache (see [`Key`]).
    #[inline(always)]
    pub fn prefetch(&self, key: &Key) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint; it never faults, and the address is in the table.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch(self.line(key) as *const i8, _MM_HINT_T0)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// Append the cached ids of the piece of `key` to `out`; false on a miss (or when a writer
    /// changed the line while it was read).
    ///
    /// # Safety
    /// The table this view was made from is alive.
    #[inline(always)]
    pub unsafe fn extend(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        out.reserve(LONG_IDS);
        // SAFETY: the caller's promise, and the room just reserved.
        unsafe { self.extend_reserved(key, out) }
    }

    /// [`View::extend`] into room already reserved: a hit writes [`LONG_IDS`] ids after the
    /// end of `out` (keeping its own), so a caller that looks up many pieces reserves once.
    ///
    /// Branches, not a branch-free match: with atomic loads the compiler can no longer load a
    /// word early, so each test loads only what it needs, and most lookups stop at the first.
    ///
    /// # Safety
    /// The table this view was made from is alive, and `out` has room for [`LONG_IDS`] more ids.
    #[inline(always)]
    pub unsafe fn extend_reserved(&self, key: &Key, out: &mut Vec<u32>) -> bool {
        // SAFETY: the table is alive (the caller's promise), and the line inside it.
        let line = unsafe { &*self.line(key) };
        let w = key.words;
        let len = key.len as u64;
        let word = |k: usize| line[k].load(Ordering::Relaxed);
        let head = line[2].load(Ordering::Acquire);
        let at = out.len();
        // SAFETY: there is room for LONG_IDS ids after `at` (the caller's promise); the new
        // length counts only the slot's ids, all written just before.
        unsafe {
            let to = out.as_mut_ptr().add(at);
            // The length byte and, in the same test, the claim bit (bit 9 above the byte's start).
            let first =
                (head >> 8) & (0xff | VERSION >> 8) == len && word(0) == w[0] && word(1) == w[1];
            let count = if first {
                // A short slot holds only pieces of at most 16 bytes, whose last two words are
                // zero; a long entry has the rest of its key in words 6 and 7.
                if head & LONG != 0 && (word(6) != w[2] || word(7) != w[3]) {
                    return false;
                }
                to.write((head >> 32) as u32);
                (to.add(1) as *mut u64).write_unaligned(word(3));
                (to.add(3) as *mut u64).write_unaligned(word(4));
                (to.add(5) as *mut u64).write_unaligned(word(5));
                head & 0xff
            } else {
                let second = word(6);
                if head & (VERSION | LONG) != 0
                    || (second >> 8) & 0xff != len
                    || word(4) != w[0]
                    || word(5) != w[1]
                {
                    return false;
                }
                to.write((second >> 32) as u32);
                (to.add(1) as *mut u64).write_unaligned(word(7));
                second & 0xff
            };
            fence(Ordering::Acquire);
            if line[2].load(Ordering::Relaxed) != head {
                return false;
            }
            out.set_len(at + count as usize);
        }
        true
    }
}

/// Whether a piece of `key` with `ids` ids takes a short slot.
#[inline]
fn short(key: &Key, ids: usize) -> bool {
    key.len as usize <= SHORT_KEY && ids <= SHORT_IDS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ids` for piece `k`: its own, so a wrong answer shows (1-20 ids: short slots, long
    /// entries and the overflow buffer).
    fn ids_of(k: u32) -> Vec<u32> {
        (0..1 + k % 20).map(|j| k * 32 + j).collect()
    }

    fn piece_of(k: u32) -> Vec<u8> {
        format!("{k:x}{}", "q".repeat((k % 23) as usize)).into_bytes()
    }

    /// Two threads write and read six lines at once, 24 pieces pushing each other out, with an
    /// overflow buffer so small it is emptied again and again: every hit gives the piece's own
    /// ids (a torn read that got through would give another piece's ids, or a mix).
    #[test]
    fn threads_sharing_a_table_read_only_whole_answers() {
        let lines = Lines::with_overflow(MIN_LINE_BITS, Pages::Small, 256);
        let keys: Vec<Key> = (0..24u32)
            .map(|k| Key {
                index: (k % 6) << (MAX_LINE_BITS - MIN_LINE_BITS),
                ..Key::of(&piece_of(k)).unwrap()
            })
            .collect();
        let (hits, from_overflow) = (AtomicU32::new(0), AtomicU32::new(0));
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let (lines, keys, hits, from_overflow) = (&lines, &keys, &hits, &from_overflow);
                s.spawn(move || {
                    let mut knocks = Knocks::default();
                    let mut out = Vec::new();
                    for round in 0..200_000u32 {
                        // Each piece four times in a row: a miss, then (mostly) hits.
                        let k = (round / 4 * 7 + t * 13) % 24;
                        let key = &keys[k as usize];
                        out.clear();
                        out.push(9);
                        let hit = lines.extend(key, &mut out);
                        let overflow = !hit && lines.extend_overflow(key, &mut out);
                        if hit || overflow {
                            assert_eq!(out[1..], ids_of(k), "piece {k}");
                            hits.fetch_add(1, Ordering::Relaxed);
                            from_overflow.fetch_add(overflow as u32, Ordering::Relaxed);
                        } else {
                            assert_eq!(out, [9]);
                            lines.insert(key, &ids_of(k), &mut knocks);
                        }
                    }
                });
            }
        });
        let (hits, from_overflow) = (hits.into_inner(), from_overflow.into_inner());
        eprintln!("{hits} hits, {from_overflow} from the overflow buffer");
        assert!(
            hits > 1_000 && from_overflow > 100,
            "{hits} hits, {from_overflow} overflow"
        );
    }

    #[test]
    fn a_claimed_line_is_a_miss_and_is_not_written() {
        let lines = Lines::new(MIN_LINE_BITS, Pages::Small);
        let key = Key::of(b"claimed").unwrap();
        lines.insert(&key, &[1, 2], &mut Knocks::default());
        let claim = lines.claim(&key).unwrap();
        let mut out = Vec::new();
        assert!(!lines.extend(&key, &mut out) && out.is_empty());
        assert!(lines.claim(&key).is_none(), "one writer at a time");
        lines.insert(&key, &[3], &mut Knocks::default());
        drop(claim);
        assert!(lines.extend(&key, &mut out) && out == [1, 2]);
    }

    #[test]
    fn the_version_wraps_inside_its_bits() {
        let lines = Lines::new(MIN_LINE_BITS, Pages::Small);
        let key = Key::of(b"v").unwrap();
        for k in 0..(1u32 << 15) + 10 {
            lines.insert(&key, &[k, k + 1], &mut Knocks::default());
            let head = lines.line(&key)[2].load(Ordering::Relaxed);
            assert_eq!(head >> 32, k as u64, "id 0 untouched by the version");
            assert_eq!(head & META, meta(2, 1));
        }
        let mut out = Vec::new();
        let last = (1u32 << 15) + 9;
        assert!(lines.extend(&key, &mut out) && out == [last, last + 1]);
    }

    #[test]
    fn a_line_of_zero_bytes_is_an_empty_line() {
        // The table's memory comes zeroed from the system (`ZeroedTable`): zero must mean empty.
        // SAFETY: `RawLine` is 64 bytes of integers without padding (the assert beside it).
        let bytes: [u8; 64] = unsafe { std::mem::transmute(RawLine::default()) };
        assert!(bytes.iter().all(|&b| b == 0));
        let lines = Lines::new(MIN_LINE_BITS, Pages::Huge);
        let key = Key::of(b"hello").unwrap();
        let mut out = Vec::new();
        assert!(!lines.extend(&key, &mut out) && !lines.extend_overflow(&key, &mut out));
        lines.insert(&key, &[1, 2], &mut Knocks::default());
        for other in [&b"hellp"[..], b"a", b"0123456789abcdef0123"] {
            assert!(!lines.extend(&Key::of(other).unwrap(), &mut out));
        }
        assert!(lines.extend(&key, &mut out) && out == [1, 2]);
    }
}
