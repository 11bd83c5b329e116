//! The GPT-2 byte map: a bijection between the 256 byte values and 256 printable code points.
//!
//! Bytes that are already printable and unambiguous (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) map to
//! themselves; the other 68 bytes, in increasing order, map to U+0100, U+0101, ... So the space
//! 0x20 becomes `Ġ` (U+0120) and the newline 0x0A becomes `Ċ` (U+010A). Byte-level BPE
//! vocabularies spell their tokens in this alphabet.

use crate::Error;

const fn is_printable_byte(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

const fn build_byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next_shifted = 0u32;
    let mut b = 0usize;
    while b < 256 {
        let code = if is_printable_byte(b as u8) {
            b as u32
        } else {
            let c = 256 + next_shifted;
            next_shifted += 1;
            c
        };
        // Every value is either < 256 or in 256..324, all valid scalar values.
        table[b] = match char::from_u32(code) {
            Some(c) => c,
            None => '\0',
        };
        b += 1;
    }
    table
}

/// `BYTE_TO_CHAR[b]` is the printable code point that stands for byte `b`.
pub static BYTE_TO_CHAR: [char; 256] = BYTE_TO_CHAR_CONST;

const fn build_char_to_byte() -> [i16; 324] {
    let mut table = [-1i16; 324];
    let mut b = 0usize;
    while b < 256 {
        table[BYTE_TO_CHAR_CONST[b] as usize] = b as i16;
        b += 1;
    }
    table
}

const BYTE_TO_CHAR_CONST: [char; 256] = build_byte_to_char();
/// Indexed by code point (all of the alphabet lies below U+0144); -1 marks code points outside it.
static CHAR_TO_BYTE: [i16; 324] = build_char_to_byte();

/// The byte that code point `c` stands for, or `None` if `c` is outside the alphabet.
pub fn char_to_byte(c: char) -> Option<u8> {
    match CHAR_TO_BYTE.get(c as usize) {
        Some(&b) if b >= 0 => Some(b as u8),
        _ => None,
    }
}

/// Spell raw bytes in the byte alphabet, one code point per byte.
pub fn token_string(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| BYTE_TO_CHAR[b as usize]).collect()
}

/// The raw bytes behind a token string spelled in the byte alphabet.
pub fn token_bytes(token: &str) -> Result<Vec<u8>, Error> {
    token
        .chars()
        .enumerate()
        .map(|(position, ch)| {
            char_to_byte(ch).ok_or_else(|| Error::NotInByteAlphabet {
                token: token.to_owned(),
                ch,
                position,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_bytes() {
        assert_eq!(BYTE_TO_CHAR[b' ' as usize], 'Ġ');
        assert_eq!(BYTE_TO_CHAR[b'\n' as usize], 'Ċ');
        assert_eq!(BYTE_TO_CHAR[b'A' as usize], 'A');
        assert_eq!(BYTE_TO_CHAR[0], '\u{100}');
        assert_eq!(BYTE_TO_CHAR[0xAD], '\u{143}');
        assert_eq!(BYTE_TO_CHAR[0xFF], 'ÿ');
    }

    #[test]
    fn is_a_bijection() {
        let mut seen = std::collections::HashSet::new();
        for b in 0..=255u8 {
            let c = BYTE_TO_CHAR[b as usize];
            assert!(seen.insert(c), "{c:?} appears twice");
            assert_eq!(char_to_byte(c), Some(b));
        }
        assert_eq!(seen.len(), 256);
    }

    #[test]
    fn rejects_characters_outside_the_alphabet() {
        assert_eq!(char_to_byte(' '), None);
        assert_eq!(char_to_byte('\u{144}'), None);
        assert_eq!(char_to_byte('é'), Some(0xE9));
        let err = token_bytes("Ġa b").unwrap_err();
        assert_eq!(
            err,
            Error::NotInByteAlphabet {
                token: "Ġa b".into(),
                ch: ' ',
                position: 2
            }
        );
    }

    #[test]
    fn token_strings_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        let s = token_string(&all);
        assert_eq!(token_bytes(&s).unwrap(), all);
        assert_eq!(token_string(" cat".as_bytes()), "Ġcat");
    }
}
