//! Standard base64 decoding (RFC 4648 alphabet, `=` padding, whitespace ignored): the
//! `precompiled_charsmap` of a SentencePiece-derived tokenizer.json is stored this way.
//!
//! Decoding stops at the first `=`; any other byte outside the alphabet is an error naming its
//! position. `aGVsbG8=` -> `hello`.

use crate::Error;

/// Standard base64 (with `=` padding, whitespace ignored), for Precompiled charsmaps.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (position, ch) in text.bytes().enumerate() {
        let value = match ch {
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => match base64_digit(ch) {
                Some(v) => v,
                None => {
                    return Err(Error::Invalid(format!(
                        "base64: byte {ch:#04x} at position {position} is not a base64 digit"
                    )))
                }
            },
        };
        acc = (acc << 6) | value as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// The value of one digit of the standard alphabet (`A`-`Z`, `a`-`z`, `0`-`9`, `+`, `/`).
pub fn base64_digit(ch: u8) -> Option<u8> {
    Some(match ch {
        b'A'..=b'Z' => ch - b'A',
        b'a'..=b'z' => ch - b'a' + 26,
        b'0'..=b'9' => ch - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_values() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8hIQ==").unwrap(), b"hello!!");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("a$").is_err());
    }
}
