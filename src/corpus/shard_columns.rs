//! The per-document columns of an encoded-dataset shard (`tinyllm.corpus.shards` is the Python
//! reference): each text's SHA-256, and the shard's `input_json`, what it was made from:
//! `[["document_id","source_id","<sha256 hex>"],...]` as compact JSON with the escapes of Python's
//! `json.dumps(ensure_ascii=False)` (`"`, `\`, `\n`, `\r`, `\t`, `\b`, `\f`, other controls below
//! U+0020 as `\u00xx`; everything else as itself).
//!
//! A corpus of short lines spends its time per document; here the hashes run in parallel and the
//! JSON is one buffer.

use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// The SHA-256 of each text's UTF-8, 32 bytes a text, in order.
pub fn text_digests(texts: &[&str]) -> Vec<u8> {
    let digests: Vec<[u8; 32]> = texts.par_iter().map(|t| Sha256::digest(t.as_bytes()).into()).collect();
    digests.concat()
}

/// `s` as a JSON string literal, as Python's `json.dumps(s, ensure_ascii=False)` writes it.
pub fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
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

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The shard's `input_json` (see the module docstring) from its ids, sources and text digests.
pub fn input_json(ids: &[&str], sources: &[&str], digests: &[u8]) -> String {
    let mut out = String::with_capacity(ids.len() * 100 + 2);
    out.push('[');
    for (k, (id, source)) in ids.iter().zip(sources).enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push('[');
        push_json_string(&mut out, id);
        out.push(',');
        push_json_string(&mut out, source);
        out.push_str(",\"");
        for byte in &digests[k * 32..(k + 1) * 32] {
            out.push(HEX[(byte >> 4) as usize] as char);
            out.push(HEX[(byte & 15) as usize] as char);
        }
        out.push_str("\"]");
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_python_json() {
        let mut s = String::new();
        push_json_string(&mut s, "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{7f}j\u{2028}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001i\u{7f}j\u{2028}é\"");
    }

    #[test]
    fn digests_and_rows() {
        let digests = text_digests(&["abc", ""]);
        assert_eq!(digests.len(), 64);
        let json = input_json(&["d1", "d\"2"], &["web", ""], &digests);
        assert!(json.starts_with(
            "[[\"d1\",\"web\",\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"],[\"d\\\"2\",\"\",\"e3b0"
        ));
        assert!(json.ends_with("\"]]"));
        assert_eq!(input_json(&[], &[], &[]), "[]");
    }
}
