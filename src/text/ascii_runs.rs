//! Runs of ASCII character classes found eight bytes a step (SWAR: one `u64` holds eight bytes).
//!
//! A scanner that reads a run of letters one byte at a time mispredicts the loop's exit once per
//! run, and in English most runs are a few bytes long. Here a word's eight bytes are classified
//! at once and the run's end is the first byte outside the class, found with `trailing_zeros`.
//!
//! Each function returns the first byte at or after `i` that is not in its class, or a position
//! within the last seven bytes of the text from which the caller must go on one byte at a time
//! (the helpers never read past the end). A non-ASCII byte is outside every class here, so a
//! caller whose class has non-ASCII members goes on from that byte with its own tables.
//!
//! ```
//! use tinyllm::text::ascii_runs::letters_end;
//! let text = b"hello, wonderful world!";
//! assert_eq!(letters_end(text, 0, true, true), 5);
//! assert_eq!(letters_end(text, 7, true, true), 16);
//! // Within the last seven bytes it may stop early: the caller finishes the run.
//! assert!(letters_end(text, 17, true, true) <= 22);
//! ```

/// The high bit of every byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Every byte of a word equal to `b`.
const fn splat(b: u8) -> u64 {
    (b as u64) * 0x0101_0101_0101_0101
}

/// The high bit of each byte of `w` that lies in `lo..=hi` (both below 0x80). Exact for every
/// byte before the first byte of `w` with its high bit set; later bytes may be wrong (a borrow
/// from that byte can run into them), which is why every run also stops at such a byte.
#[inline(always)]
fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
    ((w | HIGH).wrapping_sub(splat(lo)) & splat(0x80 + hi).wrapping_sub(w)) & HIGH
}

#[inline(always)]
fn letters(w: u64, lower: bool, upper: bool) -> u64 {
    match (lower, upper) {
        (true, true) => in_range(w | splat(0x20), b'a', b'z'),
        (true, false) => in_range(w, b'a', b'z'),
        (false, true) => in_range(w, b'A', b'Z'),
        (false, false) => 0,
    }
}

#[inline(always)]
fn digits(w: u64) -> u64 {
    in_range(w, b'0', b'9')
}

/// TAB, LF, VT, FF, CR and space: the ASCII `\s` of the patterns (not U+001C..U+001F).
#[inline(always)]
fn spaces(w: u64) -> u64 {
    in_range(w, 0x09, 0x0D) | in_range(w, b' ', b' ')
}

/// The first byte from `i` where `inside(word)` has no high bit, or where a non-ASCII byte
/// stands; stops within the last seven bytes.
#[inline(always)]
fn run_end(bytes: &[u8], mut i: usize, inside: impl Fn(u64) -> u64) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap());
        let stop = (!inside(w) & HIGH) | (w & HIGH);
        if stop != 0 {
            return i + (stop.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// The end of a run of ASCII letters from `i`: lowercase ones if `lower`, uppercase ones if
/// `upper`.
#[inline(always)]
pub fn letters_end(bytes: &[u8], i: usize, lower: bool, upper: bool) -> usize {
    run_end(bytes, i, |w| letters(w, lower, upper))
}

/// The end of a run of ASCII digits from `i`.
#[inline(always)]
pub fn digits_end(bytes: &[u8], i: usize) -> usize {
    run_end(bytes, i, digits)
}

/// The end of a run of ASCII whitespace (see [`spaces`]) from `i`.
#[inline(always)]
pub fn spaces_end(bytes: &[u8], i: usize) -> usize {
    run_end(bytes, i, spaces)
}

/// The end of a run of ASCII bytes that are neither letters, digits nor whitespace from `i`.
#[inline(always)]
pub fn others_end(bytes: &[u8], i: usize) -> usize {
    run_end(bytes, i, |w| {
        !(letters(w, true, true) | digits(w) | spaces(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each helper against a byte-at-a-time loop, at every start of texts that mix every ASCII
    /// byte with non-ASCII ones.
    #[test]
    fn runs_equal_the_byte_loop() {
        type Helper = fn(&[u8], usize) -> usize;
        type Member = fn(u8) -> bool;
        let helpers: [(Helper, Member); 7] = [
            (
                |b, i| letters_end(b, i, true, true),
                |c| c.is_ascii_alphabetic(),
            ),
            (
                |b, i| letters_end(b, i, true, false),
                |c| c.is_ascii_lowercase(),
            ),
            (
                |b, i| letters_end(b, i, false, true),
                |c| c.is_ascii_uppercase(),
            ),
            (|b, i| letters_end(b, i, false, false), |_| false),
            (digits_end, |c| c.is_ascii_digit()),
            (spaces_end, |c| matches!(c, 0x09..=0x0D | b' ')),
            (others_end, |c| {
                c < 0x80 && !c.is_ascii_alphanumeric() && !matches!(c, 0x09..=0x0D | b' ')
            }),
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..3000 {
            let len = (state % 40) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly ASCII, with runs: every byte value appears.
                    match state % 8 {
                        0 => (state >> 8) as u8,
                        1..=3 => b'a' + (state >> 8) as u8 % 26,
                        4 => b'A' + (state >> 8) as u8 % 26,
                        5 => b'0' + (state >> 8) as u8 % 10,
                        6 => b" \t\n\r\x0b\x0c\x1c"[(state >> 8) as usize % 7],
                        _ => (state >> 8) as u8 & 0x7f,
                    }
                })
                .collect();
            for (helper, member) in helpers {
                for i in 0..=text.len() {
                    let mut expected = i;
                    while expected < text.len() && member(text[expected]) {
                        expected += 1;
                    }
                    let got = helper(&text, i);
                    // Exact, or stopped short within the last seven bytes after members only.
                    let short = got < expected && got + 8 > text.len() && got >= i;
                    assert!(
                        got == expected || short,
                        "{text:?} from {i}: {got} vs {expected}"
                    );
                }
            }
        }
    }
}
