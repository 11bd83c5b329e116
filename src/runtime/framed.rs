//! Framed SHA-256, the hash every tinyllm identity uses (the reference is
//! `tinyllm.artifacts.canonical.framed_hash`):
//!
//! ```text
//! SHA-256( b"NUMINENS-TOKENIZER-MANIFEST\0" || u32be(len(domain)) || domain || u64be(len(C)) || C )
//! ```
//!
//! where `C` is the payload's canonical JSON bytes, which the caller writes.

use sha2::{Digest, Sha256};

pub const PREFIX: &[u8] = b"NUMINENS-TOKENIZER-MANIFEST\x00";

/// The 32-byte framed hash of `payload` (canonical JSON bytes) under `domain`.
pub fn framed_sha256(domain: &str, payload: &[u8]) -> [u8; 32] {
    let mut h = framed_hasher(domain, payload.len());
    h.update(payload);
    h.finalize().into()
}

/// A hasher that has taken the frame of a `payload_len`-byte payload under `domain`: feed it
/// exactly that many payload bytes, in pieces if need be, then finalize.
pub fn framed_hasher(domain: &str, payload_len: usize) -> Sha256 {
    let mut h = Sha256::new();
    h.update(PREFIX);
    h.update((domain.len() as u32).to_be_bytes());
    h.update(domain.as_bytes());
    h.update((payload_len as u64).to_be_bytes());
    h
}

/// Lowercase hex of a digest, as Python's `hexdigest()`.
pub fn hex(digest: &[u8; 32]) -> String {
    hex_bytes(digest).iter().map(|&b| b as char).collect()
}

/// The 64 lowercase hex digits of a digest, as ASCII bytes.
pub fn hex_bytes(digest: &[u8; 32]) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (k, &b) in digest.iter().enumerate() {
        out[2 * k] = DIGITS[(b >> 4) as usize];
        out[2 * k + 1] = DIGITS[(b & 15) as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_python_reference_on_its_doctest_values() {
        // framed_hash("tokenizer-semantic-v1", {}) and (..., None) from canonical.py's doctest.
        assert_eq!(
            hex(&framed_sha256("tokenizer-semantic-v1", b"{}")),
            "b8879b599b54834b7d5c867b4fdf0f35d19dcc4675cd076764ec3d2fc57aaefc"
        );
        assert_eq!(
            hex(&framed_sha256("tokenizer-semantic-v1", b"null")),
            "a82eeff338dc2a251080bd0a0cc7a1bc478358d89c5925bf0ffd71ec527fc0c2"
        );
    }
}
