//! The per-document columns of an encoded-dataset shard (`tinyllm.corpus.batches.DocumentBatch`
//! is the Python reference): each text's SHA-256, and each document's record digest, what the
//! shard was made from:
//!
//! ```text
//! SHA-256( u64le(len(id)) || id || u64le(len(source)) || source || SHA-256(text) )
//! ```
//!
//! (ids and sources as UTF-8). The SHA-256 of a shard's record digests is its input digest, and
//! of all documents' record digests in order the dataset's corpus hash, so neither depends on
//! where shards are cut, and each costs 32 bytes a document to hash, whatever the ids.
//!
//! Also here: JSON string literals written as Python's `json.dumps(ensure_ascii=False)` writes
//! them (for `docs.json`).

use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// The SHA-256 of each text's UTF-8, 32 bytes a text, in order.
pub fn text_digests(texts: &[&str]) -> Vec<u8> {
    let digests: Vec<[u8; 32]> = texts
        .par_iter()
        .map(|t| Sha256::digest(t.as_bytes()).into())
        .collect();
    digests.concat()
}

/// `s` as a JSON string literal, as Python's `json.dumps(s, ensure_ascii=False)` writes it.
pub fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    // Most strings need no escape: copied whole.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The record digest of each document (see the module docs), 32 bytes a document, in order.
pub fn record_digests(ids: &[&str], sources: &[&str], text_digests: &[u8]) -> Vec<u8> {
    let rows: Vec<[u8; 32]> = (0..ids.len())
        .into_par_iter()
        .map(|k| {
            let mut sha = Sha256::new();
            sha.update((ids[k].len() as u64).to_le_bytes());
            sha.update(ids[k].as_bytes());
            sha.update((sources[k].len() as u64).to_le_bytes());
            sha.update(sources[k].as_bytes());
            sha.update(&text_digests[k * 32..(k + 1) * 32]);
            sha.finalize().into()
        })
        .collect();
    rows.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_python_json() {
        let mut s = String::new();
        push_json_string(&mut s, "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{7f}j\u{2028}é");
        assert_eq!(
            s,
            "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001i\u{7f}j\u{2028}é\""
        );
    }

    #[test]
    fn digests_and_records() {
        let digests = text_digests(&["abc", ""]);
        assert_eq!(digests.len(), 64);
        assert_eq!(digests[..32], Sha256::digest(b"abc")[..]);
        let records = record_digests(&["d1", "d2"], &["web", ""], &digests);
        let mut framed = Vec::new();
        framed.extend_from_slice(&2u64.to_le_bytes());
        framed.extend_from_slice(b"d1");
        framed.extend_from_slice(&3u64.to_le_bytes());
        framed.extend_from_slice(b"web");
        framed.extend_from_slice(&digests[..32]);
        assert_eq!(records[..32], Sha256::digest(&framed)[..]);
        assert_eq!(records.len(), 64);
        assert!(record_digests(&[], &[], &[]).is_empty());
    }
}
