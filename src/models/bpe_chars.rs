//! Characters (or their first bytes) that start a byte-level BPE word as one symbol, where that
//! gives the same ids.
//!
//! A CJK character is three bytes that nearly always end as the character's own token, after two
//! merges. Starting the word from that token saves the merges and two thirds of the symbols (a
//! 30-character CJK piece is 30 symbols for the linked list, not 90 for the heap). A multi-byte
//! character `c` starts as its token `T` when
//!
//! 1. its bytes alone merge to `T`, by merges ranked at most `R`;
//! 2. every merge with `T` on either side ranks after `R`;
//! 3. in this word, no merge can join an edge of `c` to a neighbour while `c` is unfinished: for
//!    each symbol `p` that stands at `c`'s left edge in its plain merge before `T` (a proper
//!    prefix of `c`), no merge `X p` ranked at or below the highest rank merged while `p` stands
//!    there has `X` spelled by the bytes just before `c`; the same at the right edge, for merges
//!    `s Y` with `Y` spelled by the bytes just after `c`. (A merge `X p` ranked above that never
//!    fires: while `p` stands, the next of `c`'s own merges is always there, ranked lower.)
//!
//! Rules 1 and 2 are settled once per character when the table is built; rule 3 is kept as, per
//! character, the few `X` and `Y` byte strings to look for around each occurrence, behind a filter
//! on the one byte next to it. Counting only the merges that can fire before the edge is merged
//! away, where any token that starts or ends inside a character used to count, leaves o200k's
//! Georgian letters 4 strings each instead of 27 and starts 59% of them as tokens instead of 51%:
//! 8% off the time of o200k's unseen multilingual text. The readable reference, with the
//! argument why the ids are the same, is `tinyllm.tok.models.bpe_chars`; tests hold the two to
//! the same characters and contexts.
//!
//! Nothing in the rules needs a whole character: a 3- or 4-byte character that may not start
//! whole here (most often because a merge joins the letter before it to its first two bytes
//! before its own last merge) may start from the token of its first two or three bytes, under the
//! same rules for those bytes, whose own merge ranks so low that hardly anything forbids it. On
//! o200k, Georgian words then start from 24% fewer symbols, Tamil, Devanagari and Bengali ones from
//! 13-18% fewer.
//!
//! A word's leading space and its first character are a token in most byte-level vocabularies
//! (`" п"`, `" ს"`), and the same rules let the two start as that one token at the word's first
//! byte (spaced starts), where a letter that may not start alone after a space (the o200k preset
//! built from its `.tiktoken` file ranks ` п` before `п` is built) would otherwise start from
//! three bytes: o200k's first-seen multilingual words start from 12% fewer symbols.
//!
//! Example: with merges `c3 a9` -> `é` (rank 0) and `a c3` -> `"a\xc3"` (rank 1), `é` starts as
//! its token everywhere: after `a` its own merge, ranked lower, goes first. With the ranks
//! swapped, after `a` it starts as bytes (`a c3` would take its first byte); elsewhere as its
//! token.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use crate::text::bits;

/// An entry of [`CharStarts::narrow`] (and `wide`) that is not a start.
const NOT_A_START: u32 = u32::MAX;
const ABSENT: u64 = u64::MAX;
const NO_BYTES: (u32, u32) = (u32::MAX, 0);

/// The strings that may not come just before a character, and those that may not come after.
type Forbidden<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>);

/// The byte strings around one character that forbid starting it as its token.
#[derive(Debug, Clone, Default)]
struct Context {
    /// Bit b: some `X` ends with byte b (a filter on the byte before the character).
    before_last: [u64; 4],
    /// Bit b: some `Y` starts with byte b.
    after_first: [u64; 4],
    /// Ranges of [`CharStarts::spans`].
    before: (u32, u32),
    after: (u32, u32),
}

/// One start as [`CharStarts::listing`] gives it: (character, id, the strings that may not come
/// just before it, those that may not come just after it).
pub type Listed<C> = (C, u32, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// The characters that may start as their tokens, and what forbids it around each.
#[derive(Debug, Clone)]
pub struct CharStarts {
    /// By code point below 0x10000: `context << id_bits | id`, `context` an index into
    /// `contexts` (0, an empty context, for none); [`NOT_A_START`] for the other code points.
    /// 32-bit entries keep the table at 256 KB, where a CJK text's characters are read from all
    /// over it.
    narrow: Vec<u32>,
    /// The same for the 4-byte characters.
    wide: FxHashMap<u32, u32>,
    /// Entries for the first two bytes of a 3-byte character, by their ten payload bits (see
    /// [`lead_slot`]): 4 KB.
    leads: Vec<u32>,
    /// Entries for the first two or three bytes of a 4-byte character, by [`wide_lead_key`].
    wide_leads: FxHashMap<u32, u32>,
    /// Entries for a space and the character after it, at a word's first byte, by the
    /// character's code point (asked once per word that begins so).
    spaced: FxHashMap<u32, u32>,
    /// Bits of an entry that hold the id.
    id_bits: u32,
    contexts: Vec<Context>,
    /// (start, length) of the byte strings in `pool`.
    spans: Vec<(u32, u32)>,
    pool: Vec<u8>,
}

/// The length a UTF-8 lead byte announces (0 for a byte that cannot lead a multi-byte character).
#[inline]
fn char_length(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 0,
    }
}

#[inline]
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// What a start stands for: a whole character (its code point), the first bytes of one, or a
/// space and a whole character (the character's code point).
enum Spelled<'a> {
    Char(u32),
    Lead(&'a [u8]),
    Spaced(u32),
}

/// The code point of `c` if it is exactly one multi-byte character.
fn whole_char(c: &[u8]) -> Option<u32> {
    let n = char_length(*c.first()?);
    if n != c.len() {
        return None;
    }
    let cp = std::str::from_utf8(c).ok()?.chars().next()?;
    Some(cp as u32)
}

impl<'a> Spelled<'a> {
    /// A whole character of 2-4 bytes, the first 2-3 bytes of a 3- or 4-byte character (a lead
    /// byte and continuation bytes), or a space and a whole character of 2-4 bytes; None for any
    /// other byte string.
    fn of(c: &'a [u8]) -> Option<Spelled<'a>> {
        if let Some(rest) = c.strip_prefix(b" ") {
            return whole_char(rest).map(Spelled::Spaced);
        }
        let n = char_length(*c.first()?);
        if c.len() < 2 || n < c.len() || !c[1..].iter().all(|&b| is_continuation(b)) {
            return None;
        }
        if n > c.len() {
            return Some(Spelled::Lead(c));
        }
        whole_char(c).map(Spelled::Char)
    }
}

/// `text.ends_with(s)` for the few short strings of a context, compared a byte at a time from the
/// end: most differ in their last byte or two, where a `memcmp` call costs more than the bytes.
#[inline(always)]
fn ends_with(text: &[u8], s: &[u8]) -> bool {
    s.len() <= text.len() && s.iter().rev().zip(text.iter().rev()).all(|(a, b)| a == b)
}

/// `text.starts_with(s)`, compared as [`ends_with`] does.
#[inline(always)]
fn starts_with(text: &[u8], s: &[u8]) -> bool {
    s.len() <= text.len() && s.iter().zip(text).all(|(a, b)| a == b)
}

/// The slot in [`CharStarts::leads`] of the first two bytes of a 3-byte character.
#[inline]
fn lead_slot(lead: u8, second: u8) -> usize {
    ((lead as usize & 0x0F) << 6) | (second as usize & 0x3F)
}

/// The key in [`CharStarts::wide_leads`] of the first two or three bytes of a 4-byte character:
/// the bytes, big-endian, zero-padded (a continuation byte is never zero).
#[inline]
fn wide_lead_key(bytes: &[u8]) -> u32 {
    let mut key = [0u8; 4];
    key[..bytes.len()].copy_from_slice(bytes);
    u32::from_be_bytes(key)
}

impl CharStarts {
    /// The table of a model whose internal ids 0-255 are the 256 bytes. `merges` are its pairs
    /// (left, right, rank, merged) as `pair` answers them (`rank << 32 | merged`, or u64::MAX),
    /// over ids below `id_count`. None when no character qualifies.
    pub fn build(
        merges: &[(u32, u32, u32, u32)],
        id_count: usize,
        pair: impl Fn(u32, u32) -> u64,
    ) -> Option<CharStarts> {
        let (pool, span) = token_bytes(merges, id_count);
        let bytes = |id: u32| -> Option<&[u8]> {
            let (start, len) = span[id as usize];
            (start != u32::MAX).then(|| &pool[start as usize..(start + len) as usize])
        };
        let mut first_use = vec![u32::MAX; id_count];
        let mut made = vec![false; id_count];
        for &(l, r, rank, m) in merges {
            first_use[l as usize] = first_use[l as usize].min(rank);
            first_use[r as usize] = first_use[r as usize].min(rank);
            made[m as usize] = true;
        }
        // Rules 1 and 2: the plain merges of the characters and of their first bytes, and the
        // symbols at their edges.
        let mut chars: Vec<(Spelled, Alone)> = Vec::new();
        let (mut left_edge, mut right_edge) = (vec![false; id_count], vec![false; id_count]);
        for id in (0..id_count as u32).filter(|&i| made[i as usize]) {
            let Some(c) = bytes(id) else { continue };
            let Some(spelled) = Spelled::of(c) else {
                continue;
            };
            let Some(alone) = merge_alone(c, &pair) else {
                continue;
            };
            if first_use[alone.token as usize] <= alone.highest {
                continue;
            }
            for &(p, _) in &alone.left {
                left_edge[p as usize] = true;
            }
            for &(s, _) in &alone.right {
                right_edge[s as usize] = true;
            }
            chars.push((spelled, alone));
        }
        // The merges with an edge symbol on that side: by right side (left, rank), by left side
        // (right, rank). Only these are kept (340 of o200k's 200,000 merges).
        let mut by_right: FxHashMap<u32, Vec<(u32, u32)>> = FxHashMap::default();
        let mut by_left: FxHashMap<u32, Vec<(u32, u32)>> = FxHashMap::default();
        for &(l, r, rank, _) in merges {
            if left_edge[r as usize] {
                by_right.entry(r).or_default().push((l, rank));
            }
            if right_edge[l as usize] {
                by_left.entry(l).or_default().push((r, rank));
            }
        }
        let mut starts = CharStarts {
            narrow: vec![NOT_A_START; 0x10000],
            wide: FxHashMap::default(),
            leads: vec![NOT_A_START; 1 << 10],
            wide_leads: FxHashMap::default(),
            spaced: FxHashMap::default(),
            id_bits: u32::BITS - (id_count.max(2) as u32 - 1).leading_zeros(),
            contexts: vec![Context::default()],
            spans: Vec::new(),
            pool: Vec::new(),
        };
        if starts.id_bits > 30 {
            return None;
        }
        let mut found = false;
        // Characters of one block share their contexts (o200k: 4,680 characters with a context,
        // 753 distinct ones), so a context is kept once and shared: tens of KB that stay in the
        // cache, where one per character was 400 KB (when every fragment token counted) and a
        // cache miss for nearly every CJK character of a first-seen word.
        let mut kept: FxHashMap<Forbidden, u64> = FxHashMap::default();
        for (spelled, alone) in &chars {
            let xs = crossing(&by_right, &alone.left, &bytes);
            let ys = crossing(&by_left, &alone.right, &bytes);
            let context = if xs.is_empty() && ys.is_empty() {
                0
            } else {
                match kept.entry((xs, ys)) {
                    Entry::Occupied(shared) => *shared.get(),
                    Entry::Vacant(new) => {
                        let (xs, ys) = new.key();
                        let mut ctx = Context::default();
                        xs.iter()
                            .for_each(|x| bits::set(&mut ctx.before_last, x[x.len() - 1] as usize));
                        ys.iter()
                            .for_each(|y| bits::set(&mut ctx.after_first, y[0] as usize));
                        ctx.before = starts.keep(xs);
                        ctx.after = starts.keep(ys);
                        starts.contexts.push(ctx);
                        *new.insert(starts.contexts.len() as u64 - 1)
                    }
                }
            };
            // A vocabulary too large for an id and a context in 32 bits has no character starts
            // (its words start from bytes, as without this table): none here comes close.
            let entry = u32::try_from(context << starts.id_bits | alone.token as u64).ok()?;
            if entry == NOT_A_START {
                return None;
            }
            let slot = match *spelled {
                Spelled::Char(cp) if cp < 0x10000 => &mut starts.narrow[cp as usize],
                Spelled::Char(cp) => starts.wide.entry(cp).or_insert(NOT_A_START),
                Spelled::Lead(c) if c.len() == 2 && c[0] < 0xF0 => {
                    &mut starts.leads[lead_slot(c[0], c[1])]
                }
                Spelled::Lead(c) => starts
                    .wide_leads
                    .entry(wide_lead_key(c))
                    .or_insert(NOT_A_START),
                Spelled::Spaced(cp) => starts.spaced.entry(cp).or_insert(NOT_A_START),
            };
            if *slot == NOT_A_START {
                *slot = entry;
                found = true;
            }
        }
        found.then_some(starts)
    }

    /// Store byte strings in the pool; their range in `spans`.
    fn keep(&mut self, parts: &[&[u8]]) -> (u32, u32) {
        let first = self.spans.len() as u32;
        for p in parts {
            self.spans.push((self.pool.len() as u32, p.len() as u32));
            self.pool.extend_from_slice(p);
        }
        (first, self.spans.len() as u32)
    }

    fn strings(&self, range: (u32, u32)) -> impl Iterator<Item = &[u8]> {
        self.spans[range.0 as usize..range.1 as usize]
            .iter()
            .map(|&(s, l)| &self.pool[s as usize..(s + l) as usize])
    }

    /// Write the symbols `word` starts from into `out` (at least `word.len()` long): a leading
    /// space and the character after it as their token where they may start so, then each
    /// character that may start here as its token's internal id, else its first bytes as
    /// theirs where they may, every other byte as itself. Returns how many.
    pub fn symbols(&self, word: &[u8], out: &mut [u32]) -> usize {
        let (mut n, mut i) = (0, 0);
        if let Some((id, k)) = self.spaced_at(word) {
            out[0] = id;
            (n, i) = (1, k);
        }
        while i < word.len() {
            let b = word[i];
            if b >= 0xC2 {
                let start = match self.start_at(word, i) {
                    None if b >= 0xE0 => self.lead_at(word, i),
                    found => found,
                };
                if let Some((id, k)) = start {
                    out[n] = id;
                    n += 1;
                    i += k;
                    continue;
                }
            }
            out[n] = b as u32;
            n += 1;
            i += 1;
        }
        n
    }

    /// The token and byte length of the space and character a word begins with, if they start
    /// as one symbol.
    #[inline]
    fn spaced_at(&self, word: &[u8]) -> Option<(u32, usize)> {
        if word.len() < 3 || word[0] != b' ' || word[1] < 0xC2 || self.spaced.is_empty() {
            return None;
        }
        let k = 1 + char_length(word[1]);
        let entry = *self.spaced.get(&whole_char(word.get(1..k)?)?)?;
        self.allowed(entry, word, 0, k)
    }

    /// The token and byte length of the character at `word[i]` (a byte >= 0xC2), if it starts
    /// as one symbol here.
    #[inline]
    fn start_at(&self, word: &[u8], i: usize) -> Option<(u32, usize)> {
        let b = word[i] as u32;
        let cont = |k: usize| -> Option<u32> {
            let c = *word.get(i + k)?;
            is_continuation(c).then_some((c & 0x3F) as u32)
        };
        let (entry, k) = if b < 0xE0 {
            (self.narrow[((b & 0x1F) << 6 | cont(1)?) as usize], 2)
        } else if b < 0xF0 {
            let cp = (b & 0x0F) << 12 | cont(1)? << 6 | cont(2)?;
            (self.narrow[cp as usize], 3)
        } else if b <= 0xF4 && !self.wide.is_empty() {
            let cp = (b & 0x07) << 18 | cont(1)? << 12 | cont(2)? << 6 | cont(3)?;
            (*self.wide.get(&cp)?, 4)
        } else {
            return None; // F5-FF lead nothing (F8 90 80 80 would decode as U+10000)
        };
        // An overlong 3-byte form decodes below 0x800: those entries hold 2-byte characters.
        if k == 3 && b == 0xE0 && word[i + 1] < 0xA0 {
            return None;
        }
        self.allowed(entry, word, i, k)
    }

    /// The token and byte length of the first bytes of the 3- or 4-byte character at `word[i]`
    /// (a byte >= 0xE0), if they start as one symbol here: the longest that may.
    #[inline]
    fn lead_at(&self, word: &[u8], i: usize) -> Option<(u32, usize)> {
        let (b, second) = (word[i], *word.get(i + 1)?);
        if !is_continuation(second) {
            return None;
        }
        if b < 0xF0 {
            return self.allowed(self.leads[lead_slot(b, second)], word, i, 2);
        }
        if self.wide_leads.is_empty() {
            return None;
        }
        let entry = |k: usize| {
            self.wide_leads
                .get(&wide_lead_key(&word[i..i + k]))
                .copied()
        };
        let three = (word.get(i + 2).is_some_and(|&c| is_continuation(c)))
            .then(|| self.allowed(entry(3)?, word, i, 3))
            .flatten();
        three.or_else(|| self.allowed(entry(2)?, word, i, 2))
    }

    /// `(id, k)` for the start `entry` of `word[i..i + k]`, unless it is none or its neighbours
    /// here forbid it.
    ///
    /// The two byte filters are read without a branch between them (a start without a context
    /// has the empty one, index 0, whose filters pass nothing), so a character costs one branch
    /// on whether either neighbour could forbid it (about one character in ten on o200k's
    /// multilingual text); the strings are compared only then.
    #[inline(always)]
    fn allowed(&self, entry: u32, word: &[u8], i: usize, k: usize) -> Option<(u32, usize)> {
        if entry == NOT_A_START {
            return None;
        }
        let (context, id) = self.split(entry);
        let ctx = &self.contexts[context];
        let before = i.checked_sub(1).map_or(0, |p| word[p]);
        let after = word.get(i + k).copied().unwrap_or(0);
        let suspect = (i > 0) & bits::has(&ctx.before_last, before as usize)
            | (i + k < word.len()) & bits::has(&ctx.after_first, after as usize);
        if suspect && self.blocked(ctx, word, i, k) {
            return None;
        }
        Some((id, k))
    }

    /// A start's (context, internal id) from its entry.
    #[inline]
    fn split(&self, entry: u32) -> (usize, u32) {
        (
            (entry >> self.id_bits) as usize,
            entry & ((1 << self.id_bits) - 1),
        )
    }

    /// Whether a fragment token could join the character at `word[i..i + k]` to a neighbour
    /// (asked once a byte filter has passed: the rare path, kept out of line).
    #[inline(never)]
    fn blocked(&self, ctx: &Context, word: &[u8], i: usize, k: usize) -> bool {
        let (head, tail) = (&word[..i], &word[i + k..]);
        (i > 0
            && bits::has(&ctx.before_last, head[i - 1] as usize)
            && self.strings(ctx.before).any(|x| ends_with(head, x)))
            || (!tail.is_empty()
                && bits::has(&ctx.after_first, tail[0] as usize)
                && self.strings(ctx.after).any(|y| starts_with(tail, y)))
    }

    /// Every start of a character's first bytes, by those bytes, with its internal id: what the
    /// tests compare with the reference.
    pub fn lead_listing(&self) -> Vec<Listed<Vec<u8>>> {
        let narrow = (self.leads.iter().enumerate()).map(|(slot, &e)| {
            let bytes = vec![0xE0 | (slot >> 6) as u8, 0x80 | (slot & 0x3F) as u8];
            (bytes, e)
        });
        let wide = self.wide_leads.iter().map(|(&key, &e)| {
            let bytes = key.to_be_bytes();
            let n = 2 + (bytes[2] != 0) as usize;
            (bytes[..n].to_vec(), e)
        });
        let mut all: Vec<(Vec<u8>, u32)> = narrow
            .chain(wide)
            .filter(|&(_, e)| e != NOT_A_START)
            .collect();
        all.sort_unstable();
        all.into_iter().map(|(c, e)| self.listed(c, e)).collect()
    }

    /// A start as the listings give it.
    fn listed<C>(&self, c: C, entry: u32) -> Listed<C> {
        let (context, id) = self.split(entry);
        let ctx = &self.contexts[context];
        let list = |r| self.strings(r).map(<[u8]>::to_vec).collect();
        let (xs, ys) = (list(ctx.before), list(ctx.after));
        (c, id, xs, ys)
    }

    /// Every start by code point, with its internal id: what the tests compare with the
    /// reference.
    pub fn listing(&self) -> Vec<Listed<u32>> {
        let narrow = (self.narrow.iter().enumerate()).map(|(cp, &e)| (cp as u32, e));
        self.by_code_point(narrow.chain(self.wide.iter().map(|(&cp, &e)| (cp, e))))
    }

    /// Every start of a space and a character, by the character's code point, with its
    /// internal id: what the tests compare with the reference.
    pub fn spaced_listing(&self) -> Vec<Listed<u32>> {
        self.by_code_point(self.spaced.iter().map(|(&cp, &e)| (cp, e)))
    }

    /// The starts among `entries` (code point, entry), in code point order.
    fn by_code_point(&self, entries: impl Iterator<Item = (u32, u32)>) -> Vec<Listed<u32>> {
        let mut all: Vec<(u32, u32)> = entries.filter(|&(_, e)| e != NOT_A_START).collect();
        all.sort_unstable();
        all.into_iter().map(|(cp, e)| self.listed(cp, e)).collect()
    }
}

/// The byte strings of the neighbours that some merge may join to an edge of a character while
/// the edge stands: for each (edge, highest rank merged while it stands), the other sides of the
/// merges with that edge ranked at most that. Sorted, each once.
fn crossing<'a>(
    by_side: &FxHashMap<u32, Vec<(u32, u32)>>,
    edges: &[(u32, u32)],
    bytes: &impl Fn(u32) -> Option<&'a [u8]>,
) -> Vec<&'a [u8]> {
    let mut all: Vec<&[u8]> = edges
        .iter()
        .filter_map(|&(edge, until)| Some((by_side.get(&edge)?, until)))
        .flat_map(|(merges, until)| {
            merges
                .iter()
                .filter(move |&&(_, rank)| rank <= until)
                .filter_map(|&(other, _)| bytes(other))
        })
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The bytes of every token the merges can make from bytes: (pool, span by id). Ids 0-255 are
/// the bytes; a merged token gets its two sides joined as soon as some merge making it has both
/// sides made (all such merges spell the same bytes in a vocabulary read from text). Tokens that
/// no chain of merges reaches get [`NO_BYTES`]: they can never stand in a word.
pub(crate) fn token_bytes(
    merges: &[(u32, u32, u32, u32)],
    id_count: usize,
) -> (Vec<u8>, Vec<(u32, u32)>) {
    // The merges each id takes part in, as one array cut by offsets.
    let mut offsets = vec![0u32; id_count + 1];
    for &(l, r, _, _) in merges {
        offsets[l as usize + 1] += 1;
        offsets[r as usize + 1] += 1;
    }
    for k in 0..id_count {
        offsets[k + 1] += offsets[k];
    }
    let mut fill = offsets.clone();
    let mut uses = vec![0u32; 2 * merges.len()];
    for (k, &(l, r, _, _)) in merges.iter().enumerate() {
        for side in [l, r] {
            uses[fill[side as usize] as usize] = k as u32;
            fill[side as usize] += 1;
        }
    }
    let mut pool: Vec<u8> = (0..=255u8).collect();
    let mut span = vec![NO_BYTES; id_count];
    let mut ready: Vec<u32> = (0..256.min(id_count) as u32).collect();
    for &b in &ready {
        span[b as usize] = (b, 1);
    }
    while let Some(id) = ready.pop() {
        let (from, to) = (offsets[id as usize], offsets[id as usize + 1]);
        for &k in &uses[from as usize..to as usize] {
            let (l, r, _, m) = merges[k as usize];
            if span[m as usize] != NO_BYTES
                || span[l as usize] == NO_BYTES
                || span[r as usize] == NO_BYTES
            {
                continue;
            }
            let start = pool.len() as u32;
            for side in [l, r] {
                let (s, n) = span[side as usize];
                pool.extend_from_within(s as usize..(s + n) as usize);
            }
            span[m as usize] = (start, pool.len() as u32 - start);
            ready.push(m);
        }
    }
    (pool, span)
}

/// The plain merge of one character's bytes.
struct Alone {
    token: u32,
    /// The highest rank used.
    highest: u32,
    /// The symbols at its left edge before the last, each with the highest rank merged while
    /// it stood there (the merge that replaced it included).
    left: Vec<(u32, u32)>,
    /// The same at its right edge.
    right: Vec<(u32, u32)>,
}

/// The plain merge of one character's bytes, or None if it does not end as one token.
fn merge_alone(c: &[u8], pair: &impl Fn(u32, u32) -> u64) -> Option<Alone> {
    let mut symbols: Vec<u32> = c.iter().map(|&b| b as u32).collect();
    let mut highest = 0;
    let mut left = vec![(symbols[0], 0)];
    let mut right = vec![(symbols[symbols.len() - 1], 0)];
    while symbols.len() > 1 {
        let (answer, k) = (0..symbols.len() - 1)
            .map(|k| (pair(symbols[k], symbols[k + 1]), k))
            .min()?;
        if answer == ABSENT {
            return None;
        }
        let rank = (answer >> 32) as u32;
        highest = highest.max(rank);
        for edges in [&mut left, &mut right] {
            if let Some(edge) = edges.last_mut() {
                edge.1 = edge.1.max(rank);
            }
        }
        symbols[k] = answer as u32;
        symbols.remove(k + 1);
        if left.last().map(|e| e.0) != Some(symbols[0]) {
            left.push((symbols[0], 0));
        }
        if right.last().map(|e| e.0) != Some(symbols[symbols.len() - 1]) {
            right.push((symbols[symbols.len() - 1], 0));
        }
    }
    left.pop();
    right.pop();
    Some(Alone {
        token: symbols[0],
        highest,
        left,
        right,
    })
}
