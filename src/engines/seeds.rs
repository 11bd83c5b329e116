//! The vocabulary's own words, encoded once, for a word cache to start from ([`Seeds`]).
//!
//! Half of the pieces a warm cache misses in English or code are whole tokens of the vocabulary
//! (" unprecedented", "_buffer"). Such a piece is the costliest to merge, one merge per byte
//! after the first, each waiting on the pair tables, and its merge ends where it started: at the
//! token itself. Measured on the pieces a Llama-3-style file's cache misses, beyond the cost of a
//! hit: 292 ns for a whole token against 215 ns for other pieces (fastokens: 99 and 244).
//!
//! So once an engine has merged [`SEED_AFTER`] pieces (bulk work, not a call that encodes a
//! sentence), it encodes the spelling of every token of up to [`MAX_KEY`] bytes once, and the
//! cache's table is seeded with those that give one id. A seed is the model's own answer for that
//! piece, so no id can change: for a token whose bytes merge to something else (one the merge
//! order never reaches), the seed holds what the merges give, or is left out if that is several
//! ids. The call that crosses the mark pays for the seeds (15 ms for GPT-2's 50,000 merges, 50
//! for a Llama-3-style file's 100,000, 85-120 for 200,000) and seeds the table in use (2-25 ms;
//! a table made after a `clear` is seeded when made); `BpeEngine::seed_cache` pays up front.
//!
//! Seeds only fill empty slots ([`crate::engines::cache_lines::Lines::seed`]): a table that has
//! already learned pieces keeps them all. They are kept in line order, so seeding a table writes
//! its lines front to back.

use crate::engines::cache_key::{Key, MAX_KEY};

/// Pieces an engine merges before it builds its seeds: a call that encodes a sentence never pays
/// for them, a corpus pays at once.
pub const SEED_AFTER: usize = 4096;

/// The spellings of the tokens that encode to one id, in the order of their cache lines.
#[derive(Default)]
pub struct Seeds {
    /// The spellings, one after another.
    bytes: Vec<u8>,
    /// (the key's line index, start in `bytes`, length, id), sorted by line index.
    entries: Vec<(u32, u32, u32, u32)>,
}

impl Seeds {
    /// Seeds from `spelled`, which calls its argument with each token spelling and the ids the
    /// model gives it (see [`crate::models::bpe::BpeModel::spelled_tokens`]); spellings of
    /// 2..=[`MAX_KEY`] bytes are asked for.
    ///
    /// ```
    /// use tinyllm::engines::seeds::Seeds;
    /// let seeds = Seeds::build(|found: &mut dyn FnMut(&[u8], &[u32])| {
    ///     found(b" the", &[262]);
    ///     found(b"ing", &[278, 9]); // two ids: not a seed
    /// });
    /// let all: Vec<(Vec<u8>, u32)> = seeds.iter().map(|(k, id)| (k.to_vec(), id)).collect();
    /// assert_eq!(all, vec![(b" the".to_vec(), 262)]);
    /// ```
    pub fn build(spelled: impl FnOnce(&mut dyn FnMut(&[u8], &[u32]))) -> Seeds {
        let mut seeds = Seeds::default();
        spelled(&mut |piece: &[u8], ids: &[u32]| {
            let (true, Some(key), [id]) = (Seeds::wanted(piece), Key::of(piece), ids) else {
                return;
            };
            let start = seeds.bytes.len() as u32;
            seeds.bytes.extend_from_slice(piece);
            (seeds.entries).push((key.line_index(), start, piece.len() as u32, *id));
        });
        // Stable, and the spellings come in id order: the same seeds in the same order each time.
        seeds.entries.sort_by_key(|e| e.0);
        seeds
    }

    /// Whether a spelling is worth encoding for the seeds.
    pub fn wanted(piece: &[u8]) -> bool {
        (2..=MAX_KEY).contains(&piece.len())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every seed as (spelling, id), in line order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u32)> + '_ {
        (self.entries.iter())
            .map(|&(_, start, len, id)| (&self.bytes[start as usize..(start + len) as usize], id))
    }
}
