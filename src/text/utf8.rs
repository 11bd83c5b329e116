//! Incremental UTF-8 decoding with maximal-subpart replacement.
//!
//! Bytes arrive in arbitrary chunks (one token's bytes at a time). The decoder emits every complete
//! character as soon as it is complete, replaces each maximal ill-formed subpart by one U+FFFD
//! (the Unicode "maximal subpart" practice, as `String::from_utf8_lossy` and Python's
//! `bytes.decode("utf-8", "replace")` do), and keeps a trailing sequence that could still complete
//! pending. So the concatenation of all chunks plus [`Utf8Decoder::finish`] always equals the lossy
//! decoding of all the bytes at once.
//!
//! Example: pushing `[0xC3]`, `[0xA9]`, `[0xFF]` yields `""`, `"é"`, `"\u{FFFD}"`.

/// The streaming decoder. At most three bytes are ever pending.
#[derive(Debug, Default, Clone)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes held back because they may still begin a valid character.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// Feed more bytes; return the text that is now final.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::with_capacity(self.pending.len());
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    out.push_str(valid);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid` is exactly the prefix from_utf8 just validated, so the default is never taken.
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{FFFD}');
                            rest = &after[n..];
                        }
                        None => {
                            // An incomplete sequence at the end: it may still complete.
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        let start = self.pending.len() - keep;
        self.pending.drain(..start);
        out
    }

    /// End of input: whatever is still pending is an incomplete sequence, so one U+FFFD (or nothing).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// Decode all bytes at once, with the same replacement rule as the streaming decoder.
pub fn decode_lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(chunks: &[&[u8]]) -> Vec<String> {
        let mut d = Utf8Decoder::new();
        let mut out: Vec<String> = chunks.iter().map(|c| d.push(c)).collect();
        let tail = d.finish();
        if let Some(last) = out.last_mut() {
            last.push_str(&tail);
        }
        out
    }

    #[test]
    fn seed_example_streams_e_acute_then_replacement() {
        assert_eq!(stream(&[&[195], &[169], &[255]]), vec!["", "é", "\u{FFFD}"]);
    }

    #[test]
    fn split_euro_sign_is_emitted_once() {
        assert_eq!(stream(&[&[0xE2], &[0x82, 0xAC]]), vec!["", "€"]);
    }

    #[test]
    fn truncated_sequence_is_one_replacement_at_the_end() {
        assert_eq!(stream(&[&[226, 130]]), vec!["\u{FFFD}"]);
        let mut d = Utf8Decoder::new();
        assert_eq!(d.push(&[b'a', 0xF0, 0x9F]), "a");
        assert_eq!(d.pending(), &[0xF0, 0x9F]);
        assert_eq!(d.push(b"b"), "\u{FFFD}b");
        assert!(d.pending().is_empty());
    }

    #[test]
    fn streaming_equals_lossy_decoding_for_every_split() {
        let cases: &[&[u8]] = &[
            b"plain ascii",
            &[
                0xE2, 0x82, 0xAC, 0xFF, 0xC3, 0x28, 0xED, 0xA0, 0x80, 0xF4, 0x90, 0x80, 0x80,
            ],
            &[0xF0, 0x9F, 0x98, 0x80, 0xF0, 0x9F, 0x98],
            &[
                0xE0, 0x80, 0xAF, 0xC0, 0xAF, 0x80, 0xBF, 0xF8, 0x88, 0x80, 0x80, 0x80,
            ],
        ];
        for bytes in cases {
            let whole = decode_lossy(bytes);
            for split in 0..=bytes.len() {
                let (a, b) = bytes.split_at(split);
                assert_eq!(
                    stream(&[a, b]).concat(),
                    whole,
                    "split at {split} of {bytes:?}"
                );
            }
            let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
            assert_eq!(stream(&one_by_one).concat(), whole);
        }
    }
}
