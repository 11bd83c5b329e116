//! A piece as the word cache keys it ([`Key`]): its bytes as four little-endian words, its
//! length, and its line in the table, computed once when the piece is found so that the line can
//! be fetched while earlier pieces are looked up.

/// Pieces of at most this many bytes are kept in the cache's lines
/// ([`crate::engines::cache_lines`]); longer ones in a thread's spill store.
pub const MAX_KEY: usize = 32;
/// A key's line is given for a table of `1 << MAX_LINE_BITS` lines (8 MiB); a smaller table
/// keeps its top bits, so the order of lines is the same for every size.
pub const MAX_LINE_BITS: u32 = 17;

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
    /// Bytes 0..8, 8..16, 16..24 and 24..32 of the piece, zero-padded.
    pub words: [u64; 4],
    /// The piece's length in bytes.
    pub len: u32,
    /// The line in a table of `1 << MAX_LINE_BITS` lines.
    pub index: u32,
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
        // The line in the largest table; a smaller one keeps its top bits (`View::line`).
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
}

/// Test pieces: 1..=32 bytes bytes over a tiny alphabet (with zero bytes, which the padding of
/// `key_words` must not confuse with the piece), so that many share prefixes and suffixes.
#[cfg(test)]
pub fn test_pieces() -> Vec<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_identify_pieces_and_give_their_bytes_back() {
        let all = test_pieces();
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
    fn keys_read_in_place_equal_keys_of_copied_pieces() {
        for p in test_pieces() {
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
}
