//! Byte-level BPE encoding of one pre-token: apply learned merge ranks.
//!
//! Among adjacent pairs present in the merge table, merge the one with the lowest rank (leftmost
//! on ties) and repeat until none applies. Words of up to 16 bytes use a flat scan over a small
//! array, words of up to 64 a linked list whose next merge is one vectorised minimum, and longer
//! words a (rank, position) min-heap over a linked list with lazy invalidation, so the work is
//! O(n log n) and never quadratic (`"a" * 100_000` stays fast). A word with a multi-byte character
//! starts from whole characters where [`crate::models::bpe_chars`] proves the ids the same, and
//! takes the path for its number of symbols instead.
//!
//! Example with merges `a b` (rank 0), `b c` (rank 1), `ab c` (rank 2): `abcbc` -> `abc` `bc`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::memory::huge_pages::Pages;
use crate::memory::zeroed_table::ZeroedTable;
use crate::models::bpe_chars::{token_bytes, CharStarts, Listed};
use crate::models::bpe_pairs::{OrderKeys, PairTable, Ties, ABSENT};
use crate::models::radix_queue::RadixQueue;
use crate::models::random::SplitMix64;
use crate::Error;

const NONE: u32 = u32::MAX;
/// Words up to this many bytes use the flat scan ([`BpeModel::merge_scan`]).
const SCAN_WORD: usize = 16;
/// Longer words up to this many bytes use the linked list ([`BpeModel::merge_linked`]); longer
/// ones the heap.
const SHORT_WORD: usize = 64;
/// Pairs of two internal ids below `GRID` are answered from a dense grid of `GRID * GRID`
/// answers (2 MiB): three quarters of the pair questions of first-seen English pieces.
const GRID_BITS: u32 = 9;
const GRID: u32 = 1 << GRID_BITS;
const GRID_CELLS: usize = 1 << (2 * GRID_BITS);
/// The linked list's keys are `rank << POS_BITS | position` (positions below SHORT_WORD).
const POS_BITS: u32 = 6;
const _: () = assert!(SHORT_WORD <= 1 << POS_BITS && SHORT_WORD % 8 == 0);

/// The answers (`rank << 32 | merged`) of the pairs of two ids below [`GRID`], stored negated so
/// that the zero of fresh memory is ABSENT: the 2 MiB table is then one region of the system's
/// zeroed huge pages ([`ZeroedTable`]), committed as merges are written, with no fill pass.
struct PairGrid(ZeroedTable<u64>);

impl PairGrid {
    fn new() -> PairGrid {
        // SAFETY: zero is a valid u64.
        PairGrid(unsafe { ZeroedTable::new(GRID_CELLS, Pages::Huge) })
    }

    /// The cell of two ids below GRID (masked, so that no pair of ids reads past the table).
    #[inline(always)]
    fn cell(left: u32, right: u32) -> usize {
        debug_assert!(left < GRID && right < GRID);
        (((left as usize) << GRID_BITS) | right as usize) & (GRID_CELLS - 1)
    }

    /// The answer of two ids below GRID.
    #[inline(always)]
    fn get(&self, left: u32, right: u32) -> u64 {
        // SAFETY: the cell is below GRID_CELLS, the table's length.
        !unsafe { self.0.get_unchecked(Self::cell(left, right)) }
    }

    fn set(&mut self, left: u32, right: u32, answer: u64) {
        if let Some(c) = self.0.get_mut(Self::cell(left, right)) {
            *c = !answer;
        }
    }

    /// Every pair with a merge, as (left, right, answer).
    fn entries(&self) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        (0..GRID_CELLS).filter_map(|k| {
            let answer = !*self.0.get(k)?;
            (answer != ABSENT).then_some((
                (k >> GRID_BITS) as u32,
                (k & (GRID as usize - 1)) as u32,
                answer,
            ))
        })
    }
}

impl Clone for PairGrid {
    fn clone(&self) -> PairGrid {
        let mut grid = PairGrid::new();
        for (l, r, answer) in self.entries() {
            grid.set(l, r, answer);
        }
        grid
    }
}

impl std::fmt::Debug for PairGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PairGrid({} merges)", self.entries().count())
    }
}

/// Reused buffers of the long-word path, one set per thread (no allocation per word).
#[derive(Default)]
struct LongScratch {
    ids: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    alive: Vec<bool>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
    queue: RadixQueue,
}

/// The pairs waiting in the long-word merge, smallest `(rank, position)` first.
trait PairQueue {
    /// False when the queue cannot take the pair (see [`RadixQueue::push`]).
    fn add(&mut self, rank: u32, at: u32) -> bool;
    fn take(&mut self) -> Option<(u32, u32)>;
}

impl PairQueue for BinaryHeap<Reverse<(u32, u32)>> {
    fn add(&mut self, rank: u32, at: u32) -> bool {
        self.push(Reverse((rank, at)));
        true
    }

    fn take(&mut self) -> Option<(u32, u32)> {
        self.pop().map(|Reverse(pair)| pair)
    }
}

impl PairQueue for RadixQueue {
    #[inline]
    fn add(&mut self, rank: u32, at: u32) -> bool {
        self.push((rank as u64) << 32 | at as u64)
    }

    #[inline]
    fn take(&mut self) -> Option<(u32, u32)> {
        self.pop().map(|key| ((key >> 32) as u32, key as u32))
    }
}

thread_local! {
    static LONG_SCRATCH: std::cell::RefCell<LongScratch> = std::cell::RefCell::new(LongScratch::default());
}

/// The tokens the merges name, other than the bytes' (`bytes` maps those), in the order they get
/// the internal ids from 256 on: by external id where the vocabulary is numbered in merge order
/// (GPT-2, tiktoken's ranks and the files converted from them), else in the order the merge
/// list names them. Either way the frequent early merges get small ids, for the grid.
///
/// By external id, the output id of every merged token is its internal id plus a constant
/// ([`BpeModel::ext`]), with no table to read. A Llama-3- or Qwen2-style file lists every split
/// of a token as a merge, so the list names some tokens (as a left or right part) before the
/// merge that makes them, and in that order the internal ids drift from the external ones: each
/// output id of a first-seen word then read the table, 10% of the merge time of English.
///
/// The test of "merge order": at least 3/4 of the first tokens the list names (as many as the
/// grid has rows past the bytes) are among as many smallest external ids. `b c` -> `bc` (id 9),
/// `a bc` -> `abc` (id 10), `a b` -> `ab` (id 8), with 0-7 bytes: the list names 9, 10, 8 and
/// the order is 8, 9, 10.
fn token_order(bytes: &FxHashMap<u32, u32>, merges: &[(u32, u32, u32, u32)]) -> Vec<u32> {
    let mut named: Vec<u32> = Vec::new();
    let mut seen: rustc_hash::FxHashSet<u32> = rustc_hash::FxHashSet::default();
    for &(l, r, _, m) in merges {
        for id in [l, r, m] {
            if !bytes.contains_key(&id) && seen.insert(id) {
                named.push(id);
            }
        }
    }
    let mut sorted = named.clone();
    sorted.sort_unstable();
    let early = ((GRID - 256) as usize).min(named.len());
    let Some(&bound) = early.checked_sub(1).and_then(|k| sorted.get(k)) else {
        return named;
    };
    let in_place = named[..early].iter().filter(|&&id| id <= bound).count();
    if 4 * in_place >= 3 * early {
        sorted
    } else {
        named
    }
}

/// Internally every token is renumbered so that byte `b`'s token is id `b`, and the others as
/// [`token_order`] lists them, so the tokens of the frequent early merges have small ids. A pair
/// of two ids below [`GRID`] (every first-round pair of two bytes, and most later ones of English
/// text) is answered by one load from a dense grid; only the rest pay for hashing. Output ids are
/// mapped back.
#[derive(Debug, Clone)]
pub struct BpeModel {
    /// (left, right) -> rank << 32 | merged, internal ids, for pairs not both below GRID, with
    /// its buckets in huge pages (a cl100k-style file's 233,378 merges, probed at random by
    /// every first-seen word). hashbrown's tables beat a flat open-addressing one here: most
    /// lookups are of pairs without a merge, and hashbrown rejects those from its small control
    /// bytes without touching the (cold) slots. The ranks are order keys where the table is
    /// compact (see `bpe_pairs`).
    merges: PairTable,
    /// The answers of the pairs of two ids below GRID.
    grid: PairGrid,
    /// Whether byte `b` has a token (its internal id is then `b`).
    has_byte: [bool; 256],
    /// Every byte has a token: a word's symbols are its bytes.
    all_bytes: bool,
    /// Internal id -> external id.
    external: Vec<u32>,
    /// From this internal id on, the external id is the internal one plus `shift` (wrapping):
    /// [`Self::ext`] answers those without reading `external`. A vocabulary numbered in merge
    /// order (GPT-2, tiktoken's files) maps every merged token so; `external` is 0.8 MB for
    /// o200k, and reading it was a cache miss per output id of first-seen CJK words.
    shift_from: u32,
    shift: u32,
    /// With ignore_merges: whole pre-tokens that are themselves vocabulary entries (external ids).
    whole_words: Option<FxHashMap<Box<[u8]>, u32>>,
    /// Internal id of the unk token.
    unk: Option<u32>,
    /// Every rank fits the linked list's keys (below `(1 << (31 - POS_BITS)) - 1`, so that no key
    /// is NO_KEY); else the words it would take go to the heap.
    short_ranks: bool,
    /// The characters a word may start from as whole tokens, built on the first word that has
    /// one (a text of ASCII alone never pays for it). None without all 256 byte tokens.
    chars: std::sync::OnceLock<Option<CharStarts>>,
}

impl BpeModel {
    /// `merges` are (left, right, rank, merged) with the ranks already resolved (a pair listed
    /// twice keeps its last rank). `byte_ids[b]` is the id of byte `b`'s one-byte token.
    pub fn new(
        byte_ids: &[Option<u32>],
        merges: &[(u32, u32, u32, u32)],
        whole_words: Option<Vec<(Vec<u8>, u32)>>,
        unk: Option<u32>,
    ) -> Result<Self, Error> {
        if byte_ids.len() != 256 {
            return Err(Error::Invalid(format!(
                "byte_ids has {} entries, expected 256",
                byte_ids.len()
            )));
        }
        let mut internal: FxHashMap<u32, u32> = FxHashMap::default();
        let mut external: Vec<u32> = vec![NONE; 256];
        let mut has_byte = [false; 256];
        for (b, id) in byte_ids.iter().enumerate() {
            if let Some(id) = *id {
                if internal.insert(id, b as u32).is_some() {
                    return Err(Error::Invalid(format!("id {id} is the token of two bytes")));
                }
                external[b] = id;
                has_byte[b] = true;
            }
        }
        for id in token_order(&internal, merges) {
            internal.insert(id, external.len() as u32);
            external.push(id);
        }
        // Every token the merges name is numbered now: in the loop below `intern` only looks ids
        // up; here it numbers the unk token if no merge names it.
        let intern = |internal: &mut FxHashMap<u32, u32>, external: &mut Vec<u32>, id: u32| {
            *internal.entry(id).or_insert_with(|| {
                external.push(id);
                (external.len() - 1) as u32
            })
        };
        let unk = unk.map(|id| intern(&mut internal, &mut external, id));
        let short_limit = (1 << (31 - POS_BITS)) - 1;
        let short_ranks = merges.iter().all(|m| m.2 < short_limit);
        let keys = OrderKeys::of(
            merges,
            |m| internal.get(&m).copied(),
            external.len(),
            if short_ranks { short_limit } else { u32::MAX },
        );
        let mut table = PairTable::with_capacity(merges.len(), keys);
        let mut grid = PairGrid::new();
        let mut ties = Ties::default();
        for &(l, r, rank, merged) in merges {
            let mut id = |id| intern(&mut internal, &mut external, id);
            let (l, r, m) = (id(l), id(r), id(merged));
            let tie = ties.next(m);
            let rank = keys.map_or(rank, |keys| keys.key(m, tie));
            let answer = ((rank as u64) << 32) | m as u64;
            if l < GRID && r < GRID {
                grid.set(l, r, answer);
            } else {
                table.insert(l, r, answer);
            }
        }
        if external.len() >= NONE as usize {
            return Err(Error::Invalid("more than 2^32 - 1 distinct ids".into()));
        }
        let last = external.len() - 1;
        let shift = external[last].wrapping_sub(last as u32);
        let shift_from = (0..=last)
            .rev()
            .find(|&i| external[i] != (i as u32).wrapping_add(shift))
            .map_or(0, |i| i + 1) as u32;
        table.learn_homes();
        let whole_words = whole_words.map(|w| {
            w.into_iter()
                .map(|(k, v)| (k.into_boxed_slice(), v))
                .collect()
        });
        Ok(BpeModel {
            merges: table,
            grid,
            all_bytes: has_byte.iter().all(|&b| b),
            has_byte,
            external,
            shift_from,
            shift,
            whole_words,
            unk,
            short_ranks,
            chars: std::sync::OnceLock::new(),
        })
    }

    /// Every merge as (left, right, rank, merged), internal ids.
    fn merge_list(&self) -> Vec<(u32, u32, u32, u32)> {
        let grid = self.grid.entries();
        let table = self.merges.entries();
        grid.chain(table)
            .map(|(l, r, a)| (l, r, (a >> 32) as u32, a as u32))
            .collect()
    }

    /// The character starts, built on first use.
    fn char_starts(&self) -> Option<&CharStarts> {
        self.chars
            .get_or_init(|| {
                let merges = self.merge_list();
                CharStarts::build(&merges, self.external.len(), |l, r| self.pair(l, r))
            })
            .as_ref()
    }

    /// The bytes of every token the merges make (not the 256 bytes' own), in internal id order,
    /// each with the ids [`Self::encode_word`] gives those bytes (nearly always the token alone):
    /// what a word cache can be seeded with. `keep` picks the spellings worth encoding (by
    /// length); `found` gets each kept spelling and its ids.
    pub fn spelled_tokens(
        &self,
        keep: impl Fn(&[u8]) -> bool,
        mut found: impl FnMut(&[u8], &[u32]),
    ) {
        let (pool, spans) = token_bytes(&self.merge_list(), self.external.len());
        let mut out = Vec::new();
        for &(start, len) in spans.iter().skip(256) {
            let Some(bytes) = pool.get(start as usize..start as usize + len as usize) else {
                continue; // no chain of merges makes this token
            };
            if keep(bytes) {
                out.clear();
                self.encode_word(bytes, &mut out);
                found(bytes, &out);
            }
        }
    }

    /// Every character start by code point, with its external id; empty for a model without
    /// them.
    pub fn char_start_listing(&self) -> Vec<Listed<char>> {
        self.by_char(CharStarts::listing)
    }

    /// Every start of a space and a character, by the character, with its external id; empty
    /// for a model without them.
    pub fn spaced_start_listing(&self) -> Vec<Listed<char>> {
        self.by_char(CharStarts::spaced_listing)
    }

    fn by_char(&self, listing: impl Fn(&CharStarts) -> Vec<Listed<u32>>) -> Vec<Listed<char>> {
        let Some(starts) = self.all_bytes.then(|| self.char_starts()).flatten() else {
            return Vec::new();
        };
        (listing(starts).into_iter())
            .filter_map(|(cp, id, xs, ys)| {
                Some((char::from_u32(cp)?, self.external[id as usize], xs, ys))
            })
            .collect()
    }

    /// Every start of a character's first bytes, by those bytes, with its external id; empty for
    /// a model without them.
    pub fn lead_start_listing(&self) -> Vec<Listed<Vec<u8>>> {
        let Some(starts) = self.all_bytes.then(|| self.char_starts()).flatten() else {
            return Vec::new();
        };
        (starts.lead_listing().into_iter())
            .map(|(c, id, xs, ys)| (c, self.external[id as usize], xs, ys))
            .collect()
    }

    /// The external id of internal id `i`.
    #[inline(always)]
    fn ext(&self, i: u32) -> u32 {
        if i >= self.shift_from {
            i.wrapping_add(self.shift)
        } else {
            self.external[i as usize]
        }
    }

    /// `rank << 32 | merged` of the pair, or ABSENT.
    #[inline]
    fn pair(&self, left: u32, right: u32) -> u64 {
        if (left | right) < GRID {
            return self.grid.get(left, right);
        }
        self.merges.get(left, right)
    }

    #[inline]
    fn rank(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        let found = self.pair(left, right);
        (found != ABSENT).then_some(((found >> 32) as u32, found as u32))
    }

    /// Append the ids of `word` to `out`.
    pub fn encode_word(&self, word: &[u8], out: &mut Vec<u32>) {
        if let Some(whole) = &self.whole_words {
            if let Some(&id) = whole.get(word) {
                out.push(id);
                return;
            }
        }
        match word.len() {
            0..=8 => self.encode_short::<8>(word, out),
            9..=SCAN_WORD => self.encode_short::<SCAN_WORD>(word, out),
            17..=32 => self.encode_short::<32>(word, out),
            33..=SHORT_WORD => self.encode_short::<SHORT_WORD>(word, out),
            _ => self.encode_long(word, out),
        }
    }

    /// `encode_word` of a word of at most `N` bytes (the arrays are sized to the word's class, so
    /// a short word does not pay for initialising a long word's buffers).
    #[inline]
    fn encode_short<const N: usize>(&self, word: &[u8], out: &mut Vec<u32>) {
        if N > SCAN_WORD && !self.short_ranks {
            return self.encode_long(word, out);
        }
        let mut buf = [0u32; N];
        let n = if self.all_bytes {
            let mut high = 0;
            for (slot, &b) in buf.iter_mut().zip(word) {
                *slot = b as u32;
                high |= b;
            }
            if high >= 0x80 {
                if let Some(starts) = self.char_starts() {
                    return self.encode_from_chars(starts, word, out);
                }
            }
            word.len()
        } else {
            let mut n = 0;
            for &b in word {
                if let Some(id) = self.symbol_of(b) {
                    buf[n] = id;
                    n += 1;
                }
            }
            n
        };
        if n < 2 {
            out.extend(buf[..n].iter().map(|&i| self.ext(i)));
        } else if N <= SCAN_WORD {
            self.merge_scan(&mut buf, n, out);
        } else {
            self.merge_linked(&mut buf, n, out);
        }
    }

    /// `encode_word` of a word with a multi-byte character: the characters that may start as
    /// whole tokens do (see `bpe_chars`), so the merge path is chosen by the number of symbols.
    /// A word has at most as many symbols as bytes, so those of a word of up to 32 bytes are
    /// written into an array of the merge's own size and merged there, not copied into it (a
    /// 256-byte buffer cleared and copied from cost Korean words 12% of their merge time).
    fn encode_from_chars(&self, starts: &CharStarts, word: &[u8], out: &mut Vec<u32>) {
        if word.len() <= SCAN_WORD {
            let mut buf = [0u32; SCAN_WORD];
            let n = starts.symbols(word, &mut buf);
            if n < 2 {
                return out.extend(buf[..n].iter().map(|&i| self.ext(i)));
            }
            return self.merge_scan(&mut buf, n, out);
        }
        if word.len() <= 32 && self.short_ranks {
            let mut buf = [0u32; 32];
            let n = starts.symbols(word, &mut buf);
            if n > SCAN_WORD {
                return self.merge_linked(&mut buf, n, out);
            }
            return self.merge_symbols(&buf[..n], out);
        }
        let mut stack = [0u32; SHORT_WORD];
        let mut heap = Vec::new();
        let buf: &mut [u32] = if word.len() <= SHORT_WORD {
            &mut stack
        } else {
            heap.resize(word.len(), 0);
            &mut heap
        };
        let n = starts.symbols(word, buf);
        self.merge_symbols(&buf[..n], out);
    }

    /// Merge `symbols` (internal ids) by the path for their number and append the external ids.
    fn merge_symbols(&self, symbols: &[u32], out: &mut Vec<u32>) {
        fn sized<const N: usize>(symbols: &[u32]) -> [u32; N] {
            let mut buf = [0u32; N];
            buf[..symbols.len()].copy_from_slice(symbols);
            buf
        }
        let n = symbols.len();
        match n {
            0..=1 => out.extend(symbols.iter().map(|&i| self.ext(i))),
            2..=8 => self.merge_scan(&mut sized::<8>(symbols), n, out),
            9..=SCAN_WORD => self.merge_scan(&mut sized::<SCAN_WORD>(symbols), n, out),
            17..=32 if self.short_ranks => self.merge_linked(&mut sized::<32>(symbols), n, out),
            33..=SHORT_WORD if self.short_ranks => {
                self.merge_linked(&mut sized::<SHORT_WORD>(symbols), n, out)
            }
            _ => {
                let start = out.len();
                self.merge_long(symbols, out);
                for id in &mut out[start..] {
                    *id = self.ext(*id);
                }
            }
        }
    }

    fn encode_long(&self, word: &[u8], out: &mut Vec<u32>) {
        if self.all_bytes && !word.is_ascii() {
            if let Some(starts) = self.char_starts() {
                return self.encode_from_chars(starts, word, out);
            }
        }
        let symbols: Vec<u32> = word.iter().filter_map(|&b| self.symbol_of(b)).collect();
        self.merge_symbols(&symbols, out);
    }

    /// BPE-dropout: `encode_word` where each eligible merge occurrence is dropped with
    /// probability `p`. Each step lists the adjacent pairs that have a merge by (rank, position)
    /// and draws one `rng.next_f64()` per pair in that order (all of them, whatever the outcome);
    /// a draw below `p` drops the occurrence for this step. The lowest-ranked, leftmost survivor
    /// merges; with no survivor the word is done. Whole-word entries are not used. Identical to
    /// `BPEModel.tokenize_dropout` in the Python reference.
    ///
    /// The eligible pairs live in an ordered set keyed by (rank, start), over a linked list of
    /// symbols, so a step only draws until the first survivor and skips the rest of its draws
    /// in O(1) (the generator is a counter): expected O(log n) per merge for p < 1, not O(n).
    pub fn encode_word_dropout(
        &self,
        word: &[u8],
        p: f64,
        rng: &mut SplitMix64,
        out: &mut Vec<u32>,
    ) {
        let mut symbols: Vec<u32> = word.iter().filter_map(|&b| self.symbol_of(b)).collect();
        let n = symbols.len();
        if n < 2 {
            out.extend(symbols.iter().map(|&i| self.ext(i)));
            return;
        }
        // next[i] / prev[i]: neighbours of live symbol i (n / usize::MAX at the ends);
        // pair_at[i]: the (rank, merged) of the pair starting at live symbol i, if it has a merge.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut pair_at: Vec<Option<(u32, u32)>> = vec![None; n];
        let mut eligible: std::collections::BTreeSet<(u32, usize)> =
            std::collections::BTreeSet::new();
        for i in 0..n - 1 {
            if let Some((rank, merged)) = self.rank(symbols[i], symbols[i + 1]) {
                pair_at[i] = Some((rank, merged));
                eligible.insert((rank, i));
            }
        }
        while !eligible.is_empty() {
            let total = eligible.len() as u64;
            let mut drawn = 0u64;
            let mut survivor = None;
            for &(rank, i) in &eligible {
                drawn += 1;
                let dropped = rng.next_f64() < p; // never with p NaN, always with p >= 1
                if !dropped {
                    survivor = Some((rank, i));
                    break;
                }
            }
            rng.skip(total - drawn);
            let Some((_, i)) = survivor else { break };
            let j = next[i];
            let merged = pair_at[i].map_or(symbols[i], |(_, m)| m);
            for at in [prev[i], i, j] {
                if at < n {
                    if let Some((rank, _)) = pair_at[at].take() {
                        eligible.remove(&(rank, at));
                    }
                }
            }
            symbols[i] = merged;
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            for left in [prev[i], i] {
                if left < n && next[left] < n {
                    if let Some((rank, m)) = self.rank(symbols[left], symbols[next[left]]) {
                        pair_at[left] = Some((rank, m));
                        eligible.insert((rank, left));
                    }
                }
            }
        }
        let mut at = 0;
        while at < n {
            out.push(self.ext(symbols[at]));
            at = next[at];
        }
    }

    /// The initial symbol of a byte: its token, else unk, else None (dropped, as Hugging Face
    /// does when a vocabulary lacks a byte and has no unk token).
    #[inline]
    fn symbol_of(&self, b: u8) -> Option<u32> {
        if self.has_byte[b as usize] {
            Some(b as u32)
        } else {
            self.unk
        }
    }

    /// Merge `symbols[..n]` (2 <= n <= N) and append the external ids to `out`. No allocation.
    ///
    /// `pairs[k]` is `rank << 32 | merged` for the pair (k, k+1), or ABSENT: the smallest value is
    /// the lowest rank, equal values are the same merge rule, and the strict `<` keeps the
    /// leftmost. A merge shifts the tails left by one and re-asks only the two pairs around it.
    /// (On words of up to 16 bytes this beats [`Self::merge_linked`], whose set-up and minimum
    /// over whole strides cost more than a few shifts; examples/merge_costs.)
    #[inline(always)] // one call per short word: 0.3% more instructions on unseen English
    fn merge_scan<const N: usize>(&self, symbols: &mut [u32; N], mut n: usize, out: &mut Vec<u32>) {
        // The shifts below index without bounds checks: this is what keeps them in the array.
        assert!((2..=N).contains(&n));
        let mut pairs = [ABSENT; N];
        for k in 0..n - 1 {
            pairs[k] = self.pair(symbols[k], symbols[k + 1]);
        }
        loop {
            let mut best = ABSENT;
            let mut at = 0;
            for (k, &p) in pairs[..n - 1].iter().enumerate() {
                if p < best {
                    best = p;
                    at = k;
                }
            }
            if best == ABSENT {
                break;
            }
            symbols[at] = best as u32;
            for k in at + 1..n - 1 {
                // SAFETY: k + 1 < n <= N.
                unsafe { *symbols.get_unchecked_mut(k) = *symbols.get_unchecked(k + 1) };
            }
            for k in at..n - 2 {
                // SAFETY: k + 1 < n - 1 < N.
                unsafe { *pairs.get_unchecked_mut(k) = *pairs.get_unchecked(k + 1) };
            }
            n -= 1;
            if at > 0 {
                pairs[at - 1] = self.pair(symbols[at - 1], symbols[at]);
            }
            pairs[at] = if at + 1 < n {
                self.pair(symbols[at], symbols[at + 1])
            } else {
                ABSENT
            };
        }
        out.extend(symbols[..n].iter().map(|&i| self.ext(i)));
    }

    /// Merge `symbols[..n]` (2 <= n <= N, N a multiple of 8) and append the external ids to `out`.
    /// No allocation, no shifting, no branch on which pair is lowest.
    ///
    /// The live symbols form a linked list over their first positions. `keys[k]` is
    /// `rank << POS_BITS | k` for the pair starting at live position k (NO_KEY without a merge,
    /// or once k is gone), so the smallest key is the lowest rank and, among equal ranks, the
    /// leftmost pair: one minimum over the whole array, in fixed strides of 8 that compile to
    /// vector instructions, picks the next merge. After a merge, the two pairs around the new
    /// symbol are asked first and the minimum over the other keys is taken while their answers
    /// come in (they often miss the CPU caches); the next merge is the lowest of the three.
    ///
    /// `a b c` with merges `a b` (rank 0), `ab c` (rank 2): keys [0 << 6 | 0, MAX, MAX] (`b c`
    /// has no merge), merge at 0, then keys [2 << 6 | 0, MAX, MAX], merge at 0: `abc`.
    fn merge_linked<const N: usize>(&self, ids: &mut [u32; N], n: usize, out: &mut Vec<u32>) {
        debug_assert!(n >= 2);
        let mut next = [0u8; N];
        let mut prev = [0u8; N];
        let mut keys = [NO_KEY; N];
        let mut made = [0u32; N];
        for k in 0..n {
            next[k] = (k + 1) as u8;
            prev[k] = (k as u8).wrapping_sub(1); // 255 before the first: out of range
        }
        let key = |answer: u64, k: usize| (((answer >> 32) as u32) << POS_BITS | k as u32) as i32;
        for k in 0..n - 1 {
            let answer = self.pair(ids[k], ids[k + 1]);
            if answer != ABSENT {
                (keys[k], made[k]) = (key(answer, k), answer as u32);
            }
        }
        let mut best = lowest_key(&keys, n - 1);
        while best != NO_KEY {
            let at = (best & ((1 << POS_BITS) - 1)) as usize;
            ids[at] = made[at];
            let gone = next[at] as usize;
            let right = next[gone] as usize;
            let left = prev[at] as usize;
            next[at] = right as u8;
            keys[gone] = NO_KEY;
            keys[at] = NO_KEY;
            let right_answer = if right < n {
                prev[right] = at as u8;
                self.pair(ids[at], ids[right])
            } else {
                ABSENT
            };
            let left_answer = if left < n {
                keys[left] = NO_KEY;
                self.pair(ids[left], ids[at])
            } else {
                ABSENT
            };
            let others = lowest_key(&keys, n - 1);
            if right_answer != ABSENT {
                (keys[at], made[at]) = (key(right_answer, at), right_answer as u32);
            }
            if left_answer != ABSENT {
                (keys[left], made[left]) = (key(left_answer, left), left_answer as u32);
            }
            best = others
                .min(keys[at])
                .min(if left < n { keys[left] } else { NO_KEY });
        }
        let mut k = 0;
        while k < n {
            out.push(self.ext(ids[k]));
            k = next[k] as usize;
        }
    }

    fn merge_long(&self, symbols: &[u32], out: &mut Vec<u32>) {
        LONG_SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            self.merge_long_with(symbols, out, &mut scratch);
        })
    }

    /// The merge of a long word on a linked list, the pairs waiting in a queue by (rank,
    /// position). First on the radix queue, whose keys must climb; a vocabulary in which a merge
    /// can make a pair ranked at or below it (a merge listed before the merges of its parts)
    /// sends the word to the binary heap, from the start.
    fn merge_long_with(&self, symbols: &[u32], out: &mut Vec<u32>, s: &mut LongScratch) {
        let LongScratch {
            ids,
            next,
            prev,
            alive,
            heap,
            queue,
        } = s;
        queue.clear();
        if !self.merge_queued(symbols, ids, next, prev, alive, queue) {
            heap.clear();
            let done = self.merge_queued(symbols, ids, next, prev, alive, heap);
            debug_assert!(done, "the binary heap takes every pair");
        }
        let mut k = 0;
        while k < symbols.len() {
            out.push(ids[k]);
            k = next[k] as usize;
        }
    }

    /// Merge `symbols` on the linked list `ids` / `next` / `prev` / `alive` (overwritten), taking
    /// pairs from `queue` (empty) lowest (rank, position) first; false, with the merge
    /// unfinished, if the queue refused a pair.
    fn merge_queued<Q: PairQueue>(
        &self,
        symbols: &[u32],
        ids: &mut Vec<u32>,
        next: &mut Vec<u32>,
        prev: &mut Vec<u32>,
        alive: &mut Vec<bool>,
        queue: &mut Q,
    ) -> bool {
        let n = symbols.len();
        let none = n as u32;
        ids.clear();
        ids.extend_from_slice(symbols);
        next.clear();
        next.extend(1..=none);
        prev.clear();
        prev.extend((0..none).map(|k| if k == 0 { none } else { k - 1 }));
        alive.clear();
        alive.resize(n, true);
        for k in 0..n - 1 {
            if let Some((rank, _)) = self.rank(ids[k], ids[k + 1]) {
                if !queue.add(rank, k as u32) {
                    return false;
                }
            }
        }
        while let Some((rank, k)) = queue.take() {
            let k = k as usize;
            let nx = next[k];
            if !alive[k] || nx == none {
                continue;
            }
            let nx = nx as usize;
            let Some((current, merged)) = self.rank(ids[k], ids[nx]) else {
                continue;
            };
            if current != rank {
                continue; // stale: the pair at k changed since this entry was pushed
            }
            ids[k] = merged;
            alive[nx] = false;
            next[k] = next[nx];
            if next[k] != none {
                prev[next[k] as usize] = k as u32;
            }
            let pv = prev[k];
            if pv != none {
                if let Some((r, _)) = self.rank(ids[pv as usize], ids[k]) {
                    if !queue.add(r, pv) {
                        return false;
                    }
                }
            }
            if next[k] != none {
                if let Some((r, _)) = self.rank(ids[k], ids[next[k] as usize]) {
                    if !queue.add(r, k as u32) {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// A linked-list key for no pair: above every `rank << POS_BITS | position` of a short rank.
const NO_KEY: i32 = i32::MAX;

/// The smallest of `keys[..len]`, read in whole strides of 8 (the keys past `len` are NO_KEY):
/// a fixed shape the compiler turns into vector minimums, where a scalar `if key < best` would be
/// mispredicted on nearly every merge. The keys are signed (and never negative): baseline x86-64
/// vectors compare signed 32-bit lanes in one instruction and unsigned ones not at all, so an
/// unsigned minimum took three more instructions per four lanes.
#[inline(always)]
fn lowest_key<const N: usize>(keys: &[i32; N], len: usize) -> i32 {
    let mut lanes = [NO_KEY; 8];
    for chunk in keys[..(len + 7) & !7].chunks_exact(8) {
        for (lane, &k) in lanes.iter_mut().zip(chunk) {
            *lane = (*lane).min(k);
        }
    }
    lanes.into_iter().fold(NO_KEY, i32::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a=0 b=1 c=2 ab=3 bc=4 abc=5, merges: a b (0), b c (1), ab c (2).
    fn toy() -> BpeModel {
        let mut byte_ids = vec![None; 256];
        byte_ids[b'a' as usize] = Some(0);
        byte_ids[b'b' as usize] = Some(1);
        byte_ids[b'c' as usize] = Some(2);
        BpeModel::new(
            &byte_ids,
            &[(0, 1, 0, 3), (1, 2, 1, 4), (3, 2, 2, 5)],
            None,
            None,
        )
        .unwrap()
    }

    #[test]
    fn spelled_tokens_answer_as_encode_word_does() {
        // `a bc` makes a second `abc` that the merges never reach from the bytes: `a b` ranks
        // first, then `ab c`. Its spelling gets what encode_word gives, the first `abc`.
        let mut byte_ids = vec![None; 256];
        for (b, id) in [(b'a', 0), (b'b', 1), (b'c', 2)] {
            byte_ids[b as usize] = Some(id);
        }
        let merges = [(0, 1, 0, 3), (1, 2, 1, 4), (3, 2, 2, 5), (0, 4, 3, 6)];
        let model = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
        let mut got = Vec::new();
        model.spelled_tokens(
            |_| true,
            |bytes, ids| got.push((bytes.to_vec(), ids.to_vec())),
        );
        got.sort();
        let want: Vec<(Vec<u8>, Vec<u32>)> = vec![
            (b"ab".to_vec(), vec![3]),
            (b"abc".to_vec(), vec![5]),
            (b"abc".to_vec(), vec![5]),
            (b"bc".to_vec(), vec![4]),
        ];
        assert_eq!(got, want);
        let mut short = Vec::new();
        model.spelled_tokens(|b| b.len() < 3, |bytes, _| short.push(bytes.to_vec()));
        short.sort();
        assert_eq!(short, [b"ab".to_vec(), b"bc".to_vec()]);
    }

    #[test]
    fn shifted_ids_are_answered_as_the_table_answers_them() {
        // Bytes numbered 0-255 and merged tokens in merge order from `base` (a vocabulary in
        // merge order, shifted by its special tokens), with one out of order near the start.
        for base in [256u32, 300, 1000] {
            let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
            let mut merges = vec![(b'a' as u32, b'b' as u32, 0, base + 1)];
            merges.push((b'b' as u32, b'c' as u32, 1, base));
            for k in 2..40 {
                merges.push((b'x' as u32, k, k, base + k));
            }
            let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
            assert!(
                m.shift_from < m.external.len() as u32,
                "the tail is shifted"
            );
            for i in 0..m.external.len() as u32 {
                assert_eq!(m.ext(i), m.external[i as usize], "internal id {i}");
            }
            let mut out = Vec::new();
            m.encode_word(b"abc", &mut out);
            assert_eq!(out, [base + 1, b'c' as u32]);
        }
        let m = toy();
        for i in 0..m.external.len() as u32 {
            assert_eq!(m.ext(i), m.external[i as usize]);
        }
    }

    #[test]
    fn tokens_are_numbered_by_id_where_the_ids_follow_the_merges() {
        let bytes: FxHashMap<u32, u32> = (0..8).map(|b| (b, b)).collect();
        // The list names 9 (as a part) before the merge that makes 8: ids still in merge order.
        assert_eq!(
            token_order(&bytes, &[(1, 2, 0, 9), (0, 9, 1, 10), (0, 1, 2, 8)]),
            [8, 9, 10]
        );
        // Every split listed, as a Llama-3-style file does: merged ids rise, parts come early.
        let mut merges = Vec::new();
        for t in 8..400u32 {
            merges.push((t % 8, if t > 8 { t - 1 } else { 1 }, merges.len() as u32, t));
            merges.push((if t > 9 { t - 2 } else { 2 }, t % 8, merges.len() as u32, t));
        }
        let order = token_order(&bytes, &merges);
        assert!(order.windows(2).all(|w| w[0] < w[1]) && order.len() == 392);
        // A vocabulary numbered by something else (here: backwards) keeps the list's order.
        let backwards: Vec<_> = (0..400u32)
            .map(|k| (k % 8, (k + 1) % 8, k, 100_000 - k))
            .collect();
        let order = token_order(&bytes, &backwards);
        assert_eq!(order[..3], [100_000, 99_999, 99_998]);
        // In a model (bytes 0-255, the merged tokens from 308 on) every merged token's output id
        // is then its internal id plus a constant.
        let lift = |id: u32| if id < 8 { id } else { id + 300 };
        let lifted: Vec<_> = (merges.iter())
            .map(|&(l, r, rank, m)| (lift(l), lift(r), rank, lift(m)))
            .collect();
        let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
        let m = BpeModel::new(&byte_ids, &lifted, None, None).unwrap();
        assert_eq!((m.shift_from, m.shift), (256, 52));
    }

    fn naive(model: &BpeModel, word: &[u8]) -> Vec<u32> {
        let mut s: Vec<u32> = word.iter().filter_map(|&b| model.symbol_of(b)).collect();
        loop {
            let best = (0..s.len().saturating_sub(1))
                .filter_map(|k| model.rank(s[k], s[k + 1]).map(|(r, m)| (r, k, m)))
                .min();
            match best {
                Some((_, k, m)) => {
                    s[k] = m;
                    s.remove(k + 1);
                }
                None => return s.iter().map(|&i| model.external[i as usize]).collect(),
            }
        }
    }

    /// `encode_word` of `word` gives the ids of [`naive`].
    fn assert_as_naive(m: &BpeModel, word: &[u8]) {
        let mut out = Vec::new();
        m.encode_word(word, &mut out);
        assert_eq!(
            out,
            naive(m, word),
            "word {}",
            String::from_utf8_lossy(word)
        );
    }

    /// `word` starts from the symbols `expected` (external ids) and merges to the naive ids.
    fn assert_starts_as(m: &BpeModel, word: &str, expected: &[u32]) {
        let mut symbols = vec![0; word.len()];
        let n = m
            .char_starts()
            .unwrap()
            .symbols(word.as_bytes(), &mut symbols);
        let symbols: Vec<u32> = symbols[..n].iter().map(|&i| m.ext(i)).collect();
        assert_eq!(symbols, expected, "{word}");
        assert_as_naive(m, word.as_bytes());
    }

    /// The quadratic dropout loop of the specification: every step redraws every eligible pair.
    fn naive_dropout(model: &BpeModel, word: &[u8], p: f64, rng: &mut SplitMix64) -> Vec<u32> {
        let mut s: Vec<u32> = word.iter().filter_map(|&b| model.symbol_of(b)).collect();
        loop {
            let mut eligible: Vec<(u32, usize, u32)> = (0..s.len().saturating_sub(1))
                .filter_map(|k| model.rank(s[k], s[k + 1]).map(|(r, m)| (r, k, m)))
                .collect();
            eligible.sort_unstable();
            let draws: Vec<bool> = eligible
                .iter()
                .map(|_| {
                    let dropped = rng.next_f64() < p;
                    !dropped
                })
                .collect();
            match eligible.iter().zip(draws).find(|(_, kept)| *kept) {
                Some((&(_, k, m), _)) => {
                    s[k] = m;
                    s.remove(k + 1);
                }
                None => return s.iter().map(|&i| model.external[i as usize]).collect(),
            }
        }
    }

    /// The ids of `symbols` (internal ids) by the flat scan, the linked list and the heap, which
    /// must agree; each is given any length it can hold, so all three meet on every short word.
    fn every_path(m: &BpeModel, symbols: &[u32]) -> Vec<u32> {
        let n = symbols.len();
        let mut long = Vec::new();
        if n > 1 {
            m.merge_long(symbols, &mut long);
            long.iter_mut().for_each(|i| *i = m.external[*i as usize]);
        } else {
            long.extend(symbols.iter().map(|&i| m.external[i as usize]));
        }
        if (2..=SHORT_WORD).contains(&n) {
            let mut buf = [0u32; SHORT_WORD];
            buf[..n].copy_from_slice(symbols);
            let (mut scan, mut linked) = (Vec::new(), Vec::new());
            m.merge_scan(&mut buf.clone(), n, &mut scan);
            m.merge_linked(&mut buf, n, &mut linked);
            assert_eq!(
                scan, long,
                "the flat scan against the heap, symbols {symbols:?}"
            );
            assert_eq!(
                linked, long,
                "the linked list against the heap, symbols {symbols:?}"
            );
        }
        long
    }

    #[test]
    fn dropout_equals_the_quadratic_loop_and_its_limits() {
        let m = toy();
        let mut state = 0x1234_5678u64;
        for case in 0..3000u64 {
            state = SplitMix64::mix(state.wrapping_add(case));
            let len = (state % 24) as usize;
            let word: Vec<u8> = (0..len)
                .map(|k| b"abcx"[((state >> (2 * k % 60)) & 3) as usize])
                .collect();
            let p = [0.0, 0.1, 0.5, 0.9, 1.0][(state >> 61) as usize % 5];
            let (mut fast_rng, mut slow_rng) = (SplitMix64::new(case), SplitMix64::new(case));
            let mut out = Vec::new();
            m.encode_word_dropout(&word, p, &mut fast_rng, &mut out);
            assert_eq!(
                out,
                naive_dropout(&m, &word, p, &mut slow_rng),
                "word {word:?} p {p}"
            );
            assert_eq!(fast_rng, slow_rng, "the same number of draws");
            if p == 0.0 {
                let mut plain = Vec::new();
                m.encode_word(&word, &mut plain);
                assert_eq!(out, plain);
            }
            if p == 1.0 {
                assert!(out.iter().all(|&i| i < 3));
            }
        }
        // A long word: the ordered set keeps each step near-constant (the quadratic loop would
        // need ~10^10 draws here).
        let long: Vec<u8> = b"abc".iter().cycle().take(300_000).copied().collect();
        let mut out = Vec::new();
        m.encode_word_dropout(&long, 0.1, &mut SplitMix64::new(7), &mut out);
        assert!(out.len() >= 100_000 && out.len() < 300_000);
    }

    #[test]
    fn lowest_rank_then_leftmost() {
        let m = toy();
        let mut out = Vec::new();
        m.encode_word(b"abcbc", &mut out);
        assert_eq!(out, [5, 4]);
        out.clear();
        m.encode_word(b"bcab x", &mut out); // ' ' and 'x' have no token: dropped
        assert_eq!(out, [4, 3]);
    }

    #[test]
    fn short_and_long_paths_agree_with_the_naive_loop() {
        let m = toy();
        let mut state = 12345u64;
        for len in [0usize, 1, 2, 3, 10, 63, 64, 65, 200, 1000] {
            for _ in 0..20 {
                let word: Vec<u8> = (0..len)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        b"abc"[(state >> 33) as usize % 3]
                    })
                    .collect();
                let expected = naive(&m, &word);
                let symbols: Vec<u32> = word.iter().map(|&b| b as u32).collect();
                assert_eq!(every_path(&m, &symbols), expected);
                let mut public = Vec::new();
                m.encode_word(&word, &mut public);
                assert_eq!(public, expected);
            }
        }
    }

    /// A vocabulary of 1,500 random merges over `a`-`h`, with its ids shuffled: internal ids run
    /// past GRID, so pairs are answered from both the grid and the hash table.
    #[test]
    fn grid_and_hash_table_answer_as_the_merge_list_does() {
        let mut rng = SplitMix64::new(99);
        let alphabet = b"abcdefgh";
        let mut tokens: Vec<Vec<u8>> = alphabet.iter().map(|&b| vec![b]).collect();
        let mut merges = Vec::new(); // (left, right, rank, merged) as token indexes
        while merges.len() < 1500 {
            let l = (rng.next_u64() % tokens.len() as u64) as usize;
            let r = (rng.next_u64() % tokens.len() as u64) as usize;
            let joined = [tokens[l].clone(), tokens[r].clone()].concat();
            if joined.len() > 12 || tokens.contains(&joined) {
                continue;
            }
            tokens.push(joined);
            merges.push((l, r, merges.len() as u32, tokens.len() - 1));
        }
        // External ids: a fixed shuffle of the token indexes, far from the internal order.
        let id = |t: usize| ((t as u64 * 7919) % 100_003) as u32;
        let mut byte_ids = vec![None; 256];
        for (t, &b) in alphabet.iter().enumerate() {
            byte_ids[b as usize] = Some(id(t));
        }
        let list: Vec<(u32, u32, u32, u32)> = merges
            .iter()
            .map(|&(l, r, rank, m)| (id(l), id(r), rank, id(m)))
            .collect();
        let m = BpeModel::new(&byte_ids, &list, None, None).unwrap();
        assert!(m.external.len() > 3 * GRID as usize && !m.merges.is_empty());
        assert!(m.grid.entries().count() > 100);
        let by_pair: FxHashMap<(u32, u32), (u32, u32)> = list
            .iter()
            .map(|&(l, r, rank, m)| ((l, r), (rank, m)))
            .collect();
        for case in 0..2000 {
            let len = 1 + (rng.next_u64() % if case % 10 == 0 { 150 } else { 40 }) as usize;
            let word: Vec<u8> = (0..len)
                .map(|_| alphabet[(rng.next_u64() % 8) as usize])
                .collect();
            let mut s: Vec<u32> = word
                .iter()
                .map(|&b| byte_ids[b as usize].unwrap())
                .collect();
            while let Some((_, k, merged)) = (0..s.len().saturating_sub(1))
                .filter_map(|k| by_pair.get(&(s[k], s[k + 1])).map(|&(r, m)| (r, k, m)))
                .min()
            {
                s[k] = merged;
                s.remove(k + 1);
            }
            let mut out = Vec::new();
            m.encode_word(&word, &mut out);
            assert_eq!(out, s, "word {}", String::from_utf8_lossy(&word));
            let symbols: Vec<u32> = word.iter().map(|&b| b as u32).collect();
            assert_eq!(every_path(&m, &symbols), s);
        }
    }

    /// A merge ranked before the merges that make its parts can fire right after them, below the
    /// rank just merged: the radix queue refuses that pair and the word is merged again on the
    /// binary heap, with the ids of the merge list.
    #[test]
    fn a_merge_ranked_before_its_parts_goes_to_the_heap() {
        let mut byte_ids = vec![None; 256];
        byte_ids[b'a' as usize] = Some(0);
        byte_ids[b'b' as usize] = Some(1);
        byte_ids[b'c' as usize] = Some(2);
        // `ab c` (rank 0) before `a b` (rank 1).
        let m = BpeModel::new(&byte_ids, &[(3, 2, 0, 4), (0, 1, 1, 3)], None, None).unwrap();
        let word = b"abc".repeat(40);
        let symbols: Vec<u32> = word.iter().map(|&b| b as u32).collect();
        let mut s = LongScratch::default();
        let LongScratch {
            ids,
            next,
            prev,
            alive,
            queue,
            ..
        } = &mut s;
        assert!(!m.merge_queued(&symbols, ids, next, prev, alive, queue));
        let mut out = Vec::new();
        m.encode_word(&word, &mut out);
        assert_eq!(out, naive(&m, &word));
        assert_eq!(out, vec![4; 40]);

        // Random merge lists whose ranks are shuffled, long words: the same ids as the naive loop
        // through either queue.
        let mut rng = SplitMix64::new(5);
        let alphabet = b"abcd";
        for _ in 0..20 {
            let mut tokens: Vec<Vec<u8>> = alphabet.iter().map(|&b| vec![b]).collect();
            let mut merges = Vec::new();
            while merges.len() < 60 {
                let l = (rng.next_u64() % tokens.len() as u64) as u32;
                let r = (rng.next_u64() % tokens.len() as u64) as u32;
                let joined = [tokens[l as usize].clone(), tokens[r as usize].clone()].concat();
                if joined.len() > 6 || tokens.contains(&joined) {
                    continue;
                }
                tokens.push(joined);
                let rank = (rng.next_u64() % 1000) as u32 * 100 + merges.len() as u32;
                merges.push((l, r, rank, tokens.len() as u32 - 1));
            }
            merges.sort_by_key(|m| m.2);
            let mut byte_ids = vec![None; 256];
            for (t, &b) in alphabet.iter().enumerate() {
                byte_ids[b as usize] = Some(t as u32);
            }
            let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
            for len in [65, 100, 300] {
                let word: Vec<u8> = (0..len)
                    .map(|_| alphabet[(rng.next_u64() % 4) as usize])
                    .collect();
                assert_as_naive(&m, &word);
            }
        }
    }

    /// Merges that build `raw` from its bytes, bottom-up, cut at random.
    fn bracketing(raw: &[u8], rng: &mut SplitMix64, merges: &mut Vec<(Vec<u8>, Vec<u8>)>) {
        if raw.len() > 1 {
            let cut = 1 + (rng.next_u64() % (raw.len() as u64 - 1)) as usize;
            bracketing(&raw[..cut], rng, merges);
            bracketing(&raw[cut..], rng, merges);
            merges.push((raw[..cut].to_vec(), raw[cut..].to_vec()));
        }
    }

    /// Random tables over ASCII and multi-byte characters: some characters built by their own
    /// merges, pieces of a random text joined wherever they were cut (so many tokens start or
    /// end inside a character), a few character tokens merged before they are built, some
    /// tokens of a space and a character. Words, alone and after a space, start from characters
    /// where `bpe_chars` allows it, and must give the naive ids.
    #[test]
    fn character_starts_give_the_ids_of_the_plain_merge() {
        let alphabet = ["a", " ", "é", "ñ", "語", "本", "😀"];
        let mut rng = SplitMix64::new(5);
        let mut pick = move |n: usize| (rng.next_u64() % n as u64) as usize;
        let (mut with_starts, mut with_leads, mut with_spaced) = (0, 0, 0);
        for _ in 0..400 {
            let text: Vec<u8> = (0..16)
                .flat_map(|_| alphabet[pick(alphabet.len())].bytes())
                .collect();
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for _ in 0..pick(40) {
                match pick(11) {
                    0..=2 => {
                        let raw = alphabet[2 + pick(5)].as_bytes();
                        let mut local = SplitMix64::new(pick(1 << 30) as u64);
                        bracketing(raw, &mut local, &mut pairs);
                    }
                    10 => {
                        // A space and a character, as a word of a GPT-2-style split begins.
                        let raw = [b" ", alphabet[2 + pick(5)].as_bytes()].concat();
                        let mut local = SplitMix64::new(pick(1 << 30) as u64);
                        bracketing(&raw, &mut local, &mut pairs);
                    }
                    3 => pairs.push((
                        alphabet[2 + pick(5)].as_bytes().to_vec(),
                        alphabet[pick(alphabet.len())].as_bytes().to_vec(),
                    )),
                    _ => {
                        let start = pick(text.len() - 2);
                        let stop = start + 2 + pick(6.min(text.len() - start - 2) + 1);
                        let cut = start + 1 + pick(stop - start - 1);
                        pairs.push((text[start..cut].to_vec(), text[cut..stop].to_vec()));
                    }
                }
            }
            let mut ids: FxHashMap<Vec<u8>, u32> =
                (0..=255u8).map(|b| (vec![b], b as u32)).collect();
            let mut id_of = |t: &[u8]| {
                let next = ids.len() as u32;
                *ids.entry(t.to_vec()).or_insert(next)
            };
            let mut ranked: FxHashMap<(u32, u32), (u32, u32)> = FxHashMap::default();
            for (rank, (l, r)) in pairs.iter().enumerate() {
                let merged = id_of(&[l.as_slice(), r.as_slice()].concat());
                ranked.insert((id_of(l), id_of(r)), (rank as u32, merged));
            }
            let merges: Vec<(u32, u32, u32, u32)> = ranked
                .iter()
                .map(|(&(l, r), &(rank, m))| (l, r, rank, m))
                .collect();
            let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
            let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
            with_starts += !m.char_start_listing().is_empty() as usize;
            with_leads += !m.lead_start_listing().is_empty() as usize;
            with_spaced += !m.spaced_start_listing().is_empty() as usize;
            for _ in 0..8 {
                let longest = if pick(4) == 0 { 90 } else { 20 };
                let len = pick(longest);
                let word: Vec<u8> = (0..len)
                    .flat_map(|_| alphabet[pick(alphabet.len())].bytes())
                    .collect();
                assert_as_naive(&m, &word);
                assert_as_naive(&m, &[b" ", &word[..]].concat());
            }
        }
        assert!(
            with_starts > 100 && with_leads > 50 && with_spaced > 50,
            "only {with_starts} tables had character starts, {with_leads} lead starts, \
             {with_spaced} spaced starts"
        );
    }

    /// `a` + `語`'s first two bytes rank between `語`'s own merges, so after `a` the character
    /// may not start whole; its first two bytes start as their token there. The same for the
    /// first three bytes of `😀` after `b`.
    #[test]
    fn a_character_kept_whole_out_starts_from_its_first_bytes() {
        let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
        let (a, b) = (b'a' as u32, b'b' as u32);
        let merges = [
            (0xE8, 0xAA, 0, 256), // e8 aa
            (a, 256, 1, 257),     // a e8 aa
            (256, 0x9E, 2, 258),  // 語
            (0xF0, 0x9F, 3, 259), // f0 9f
            (259, 0x98, 4, 260),  // f0 9f 98
            (b, 260, 5, 261),     // b f0 9f 98
            (260, 0x80, 6, 262),  // 😀
        ];
        let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
        let leads: Vec<(Vec<u8>, u32)> = (m.lead_start_listing().into_iter())
            .map(|(bytes, id, _, _)| (bytes, id))
            .collect();
        assert_eq!(
            leads,
            [
                (vec![0xE8, 0xAA], 256),
                (vec![0xF0, 0x9F], 259),
                (vec![0xF0, 0x9F, 0x98], 260)
            ]
        );
        for (word, expected) in [
            ("a語語", vec![a, 256, 0x9E, 258]),
            ("b😀😀", vec![b, 260, 0x80, 262]),
            ("語a語", vec![258, a, 256, 0x9E]),
        ] {
            assert_starts_as(&m, word, &expected);
        }
    }

    /// ` п` is listed before the merge that builds `п` (as in o200k's preset), so `п` may not
    /// start alone; a word's leading space and `п` start as ` п`, unless an `a` follows
    /// (`bf a` ranks below `п`'s own merge).
    #[test]
    fn a_leading_space_and_its_character_start_as_their_token() {
        let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
        let (space, a) = (b' ' as u32, b'a' as u32);
        let merges = [
            (space, 258, 0, 256), // " п", with п = 258
            (0xBF, a, 1, 257),    // bf a
            (0xD0, 0xBF, 2, 258), // п
        ];
        let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
        assert!(m.char_start_listing().is_empty());
        assert_eq!(
            m.spaced_start_listing(),
            [('п', 256, vec![], vec![b"a".to_vec()])]
        );
        for (word, expected) in [
            (" пп", vec![256, 0xD0, 0xBF]),
            (" пa", vec![space, 0xD0, 0xBF, a]),
            (" п", vec![256]),
            ("пп", vec![0xD0, 0xBF, 0xD0, 0xBF]),
            ("a пп", vec![a, space, 0xD0, 0xBF, 0xD0, 0xBF]),
        ] {
            assert_starts_as(&m, word, &expected);
        }
    }

    /// `é`'s context forbids `xa` just before it (`xa c3` ranks below `c3 a9`) and `q` just
    /// after it (`a9 q` does too). The byte filters pass for any `a` before and any `q` after;
    /// only the whole string blocks, at either edge, and nothing blocks at the word's ends.
    #[test]
    fn a_character_is_blocked_by_whole_strings_not_by_the_filter_byte() {
        let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
        let [a, b, q, x, z] = [b'a', b'b', b'q', b'x', b'z'].map(u32::from);
        let merges = [
            (x, a, 0, 256),       // xa
            (256, 0xC3, 1, 257),  // xa c3
            (0xA9, q, 2, 258),    // a9 q
            (0xC3, 0xA9, 3, 259), // é
        ];
        let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
        assert_eq!(
            m.char_start_listing(),
            [('é', 259, vec![b"xa".to_vec()], vec![b"q".to_vec()])]
        );
        for (word, expected) in [
            ("baé", vec![b, a, 259]),
            ("xaé", vec![x, a, 0xC3, 0xA9]),
            ("éz", vec![259, z]),
            ("éq", vec![0xC3, 0xA9, q]),
            ("é", vec![259]),
            ("qéa", vec![q, 259, a]),
        ] {
            assert_starts_as(&m, word, &expected);
        }
    }

    /// A table where U+0080 (`c2 80`) and U+10000 (`f0 90 80 80`) start as their tokens: the
    /// overlong spelling `e0 82 80` and the invalid `f8 90 80 80`, which decode to them if the
    /// lead byte is not checked, are not those characters and stay bytes.
    #[test]
    fn an_invalid_spelling_is_not_a_character_start() {
        let byte_ids: Vec<Option<u32>> = (0..256).map(Some).collect();
        let merges = [
            (0xC2, 0x80, 0, 256),
            (0xF0, 0x90, 1, 257),
            (0x80, 0x80, 2, 258),
            (257, 258, 3, 259),
        ];
        let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
        assert_eq!(m.char_start_listing().len(), 2);
        for word in [
            &b"\xc2\x80x"[..],
            b"\xe0\x82\x80",
            b"a\xe0\x82\x80\xc2\x80",
            b"\xf0\x90\x80\x80",
            b"\xf8\x90\x80\x80",
            b"a\xf8\x90\x80\x80\xf0\x90\x80\x80",
        ] {
            let mut out = Vec::new();
            m.encode_word(word, &mut out);
            assert_eq!(out, naive(&m, word), "word {word:?}");
        }
    }

    /// `a aa a`, where `aa a` and `a aa` both make `aaa`: the lower rank goes first, with the
    /// ranks kept as order keys (merged ids rising along the list) and as they are (a last
    /// merge, `b b`, whose token has the smallest id).
    #[test]
    fn merges_of_one_token_go_in_rank_order_in_both_forms() {
        let mut byte_ids = vec![None; 256];
        byte_ids[b'a' as usize] = Some(0);
        byte_ids[b'b' as usize] = Some(1);
        for (swap, falls) in [(false, false), (true, false), (false, true), (true, true)] {
            // Listed in rank order, as the order keys need.
            let mut merges = if swap {
                vec![(0, 0, 0, 10), (0, 10, 1, 11), (10, 0, 2, 11)]
            } else {
                vec![(0, 0, 0, 10), (10, 0, 1, 11), (0, 10, 2, 11)]
            };
            if falls {
                merges.push((1, 1, 3, 5));
            }
            let m = BpeModel::new(&byte_ids, &merges, None, None).unwrap();
            assert_eq!(m.merges.is_compact(), !falls, "{merges:?}");
            let internal = |e: u32| m.external.iter().position(|&x| x == e).unwrap() as u32;
            let symbols = [b'a' as u32, internal(10), b'a' as u32];
            // `aa a` (rank 1) -> `a aaa`; with the ranks swapped, `a aa` -> `aaa a`.
            let expected = if swap { vec![11, 0] } else { vec![0, 11] };
            assert_eq!(every_path(&m, &symbols), expected, "{merges:?}");
        }
    }

    #[test]
    fn long_repeated_input_is_fast() {
        let m = toy();
        let word = vec![b'a'; 200_000];
        let mut out = Vec::new();
        m.encode_word(&word, &mut out);
        assert_eq!(out.len(), 200_000);
    }
}
