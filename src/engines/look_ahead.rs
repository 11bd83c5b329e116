//! The encode loop over a text's pieces with the word cache's memory latency hidden ([`Ahead`]),
//! shared by both engines.

use crate::engines::cache_key::{Key, MAX_KEY};
use crate::engines::cache_lines::LONG_IDS;
use crate::engines::word_cache::WordCache;
use crate::stages::pre_tokenizers::SpanSink;

/// How many pieces are gathered before they are looked up together.
const AHEAD: usize = 32;

/// A piece's key is computed and its cache line prefetched when the piece arrives; the pieces are
/// looked up (and encoded on a miss, by `encode_word`) `AHEAD` (32) at a time, once the last of
/// them has arrived, by when the lines of all of them have been on their way together. A table of
/// several megabytes is larger than the CPU's own caches, so most lookups go to memory: waiting
/// on each in turn was three quarters of the lookup's time. A batch still waits for its first
/// line (half of `finish`'s samples sat on that load with 16 pieces a batch); 32 halve that wait
/// per piece: 3-5% faster on English and code (`bench_builds.py`), where 8 were 6% slower and
/// 64 no better than 32. The queue holds only keys, from which a missed piece is rebuilt, so no
/// piece is copied; pieces too long for a key flush the queue and are encoded at once, keeping
/// the output in order.
///
/// A batch, not a ring of the last `AHEAD` pieces in flight: the same wait hidden without the
/// ring's index arithmetic and key copies on every piece (8% of the instructions of English
/// encoded again, `benches/bench_instructions.py`). Gathering spans of the text instead of keys
/// measured 6% more; `push` is inlined into the scanner's loop instead, as a [`SpanSink`].
///
/// Pushing the pieces `a`, `b`, `c` and then calling [`Ahead::finish`] appends exactly what
/// `cache.encode` of `a`, then `b`, then `c` would.
pub struct Ahead<'a, F: FnMut(&[u8], &mut Vec<u32>)> {
    cache: &'a mut WordCache,
    out: &'a mut Vec<u32>,
    encode_word: F,
    queue: [Key; AHEAD],
    len: usize,
}

impl<'a, F: FnMut(&[u8], &mut Vec<u32>)> Ahead<'a, F> {
    pub fn new(cache: &'a mut WordCache, out: &'a mut Vec<u32>, encode_word: F) -> Self {
        Ahead {
            cache,
            out,
            encode_word,
            queue: [Key::default(); AHEAD],
            len: 0,
        }
    }

    /// Queue the piece `buf[start..end]` (the whole buffer is passed so that its key can be
    /// read without a branch on the piece's length, see [`Key::at`]).
    ///
    /// Small, so that it is inlined into a scanner's loop ([`SpanSink`]): the pieces near the
    /// buffer's end or too long for a key go out of line, to `push_rare`, and the key
    /// is built in one place, so it is not copied from one stack slot to another on its way to
    /// the queue.
    #[inline(always)]
    pub fn push(&mut self, buf: &[u8], start: usize, end: usize) {
        let n = end - start;
        match buf.get(start..start + MAX_KEY) {
            Some(window) if n <= MAX_KEY => self.queue(Key::in_window(window, n)),
            _ => self.push_rare(buf, start, end),
        }
    }

    #[inline(always)]
    fn queue(&mut self, key: Key) {
        self.cache.prefetch(&key);
        // `len < AHEAD` here (a full queue is emptied at once); the `%` spares the bounds check.
        self.queue[self.len % AHEAD] = key;
        self.len += 1;
        if self.len == AHEAD {
            self.finish();
        }
    }

    /// [`Ahead::push`] of a piece too long for a key (encoded at once, after the queued ones)
    /// or too near the end of its buffer to read a whole window.
    #[inline(never)]
    fn push_rare(&mut self, buf: &[u8], start: usize, end: usize) {
        if let Some(key) = Key::at(buf, start, end) {
            return self.queue(key);
        }
        self.finish();
        let piece = &buf[start..end];
        let encode_word = &mut self.encode_word;
        self.cache
            .encode_long(piece, self.out, |out| encode_word(piece, out));
    }

    /// Encode every queued piece. Room for every hit is reserved once, and again after a miss
    /// (whose ids may have taken it): a hit writes at most [`LONG_IDS`] ids.
    pub fn finish(&mut self) {
        let (cache, out) = (&mut *self.cache, &mut *self.out);
        let queue = &self.queue[..self.len];
        out.reserve(queue.len() * LONG_IDS);
        for (k, key) in queue.iter().enumerate() {
            // SAFETY: room for LONG_IDS ids for each piece from here on: reserved above or after
            // the last miss, and each hit since has used at most its LONG_IDS.
            if !unsafe { cache.extend_reserved(key, out) } {
                miss(cache, out, &mut self.encode_word, key);
                out.reserve((queue.len() - k) * LONG_IDS);
            }
        }
        self.len = 0;
    }
}

/// A piece the cache's lines do not hold: its ids from the overflow buffer when it has more than a
/// line holds and is kept there, else encoded and remembered. Kept out of line so that the hit
/// path, nearly every piece, stays small.
#[inline(never)]
fn miss(
    cache: &mut WordCache,
    out: &mut Vec<u32>,
    encode_word: &mut impl FnMut(&[u8], &mut Vec<u32>),
    key: &Key,
) {
    if cache.extend_overflow(key, out) {
        return;
    }
    let mut buf = [0u8; MAX_KEY];
    let n = key.bytes(&mut buf);
    let start = out.len();
    encode_word(&buf[..n], out);
    cache.insert(key, &out[start..]);
}

impl<F: FnMut(&[u8], &mut Vec<u32>)> SpanSink for Ahead<'_, F> {
    /// [`Ahead::push`], inlined into the scanner's loop.
    #[inline(always)]
    fn span(&mut self, buf: &[u8], start: usize, end: usize) {
        self.push(buf, start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in model: one id per byte, plus the piece's length, so a wrong piece, a lost
    /// piece or a reordering all change the output.
    fn ids_of(piece: &[u8], out: &mut Vec<u32>) {
        out.extend(piece.iter().map(|&b| b as u32));
        out.push(1000 + piece.len() as u32);
    }

    #[test]
    fn queued_output_equals_encoding_each_piece_in_turn() {
        let long = "x".repeat(MAX_KEY + 5);
        let tail = "e f gg hhh a bb ccc dd e ff g h i ".repeat(3);
        let text = format!("a bb a ccc {long} a dddd bb {long} {tail}j");
        let pieces: Vec<(usize, usize)> = {
            let mut spans = Vec::new();
            let mut start = 0;
            for (i, _) in text.match_indices(' ') {
                spans.push((start, i + 1));
                start = i + 1;
            }
            spans.push((start, text.len()));
            spans
        };
        assert!(pieces.len() > AHEAD + 2, "{} pieces", pieces.len());
        let mut expected = Vec::new();
        for &(s, e) in &pieces {
            ids_of(&text.as_bytes()[s..e], &mut expected);
        }
        // Twice through one cache: first every piece misses, then the short ones hit.
        let mut cache = WordCache::default();
        for _ in 0..2 {
            let mut out = Vec::new();
            let mut ahead = Ahead::new(&mut cache, &mut out, ids_of);
            for (k, &(s, e)) in pieces.iter().enumerate() {
                // Pieces from the text, from a copy and from a part of it, more than AHEAD
                // of them in all.
                if k % 5 == 3 {
                    let copy = text.as_bytes()[s..e].to_vec();
                    ahead.push(&copy, 0, copy.len());
                } else if k % 5 == 1 {
                    ahead.push(&text.as_bytes()[s..], 0, e - s);
                } else {
                    ahead.push(text.as_bytes(), s, e);
                }
            }
            ahead.finish();
            assert_eq!(out, expected);
        }
    }

    /// Many batches in which hits and misses alternate at random, after output that is already
    /// there (pieces of 6-7 bytes have 7-8 ids here, some more than a line keeps).
    #[test]
    fn hits_and_misses_in_any_order_keep_every_id() {
        let mut rng = crate::models::random::SplitMix64::new(7);
        let mut text = Vec::new();
        let mut pieces = Vec::new();
        for _ in 0..3000 {
            let len = 1 + (rng.next_u64() % 7) as usize;
            let start = text.len();
            // A small alphabet, so that pieces repeat (hits) and new ones keep coming (misses).
            text.extend((0..len).map(|_| b'a' + (rng.next_u64() % 3) as u8));
            pieces.push((start, text.len()));
        }
        let mut expected = vec![9, 9, 9];
        for &(s, e) in &pieces {
            ids_of(&text[s..e], &mut expected);
        }
        let mut cache = WordCache::default();
        let mut out = vec![9, 9, 9];
        let mut ahead = Ahead::new(&mut cache, &mut out, ids_of);
        for &(s, e) in &pieces {
            ahead.push(&text, s, e);
        }
        ahead.finish();
        assert_eq!(out, expected);
    }
}
