//! The pieces of a Unigram tokenizer.json (`model.vocab`, a list of `[piece, score]` pairs), read
//! straight from its JSON text (see [`crate::formats::json_spans`]) into two columns, for
//! `tinyllm.tok.formats.tokenizer_json`: a T5 vocabulary is 32,000 pairs, which Python's `json`
//! and the reader's loop take tens of milliseconds over.
//!
//! All or nothing, as `bpe_tables`: None for anything the strict Python reader would refuse (not a
//! list of pairs, an empty piece, a score that is not a finite number) or might read differently
//! (a lone surrogate escape; `-0`, which Python reads as the integer 0, hence +0.0, and serde_json
//! as -0.0). The caller then reads the file in Python, which words the error.
//!
//! Scores are what Python's `float()` gives: serde_json with `float_roundtrip` rounds decimal text
//! correctly, and an integer score is rounded to nearest as `float(int)` does.

/// (pieces, scores) in id order, or None (see the module docs).
pub fn read_unigram_pieces(vocab_json: &[u8]) -> Option<(Vec<String>, Vec<f64>)> {
    let pairs: Vec<(String, f64)> = serde_json::from_slice(vocab_json).ok()?;
    let usable = |(piece, score): &(String, f64)| {
        !piece.is_empty() && score.is_finite() && !(*score == 0.0 && score.is_sign_negative())
    };
    if !pairs.iter().all(usable) {
        return None;
    }
    Some(pairs.into_iter().unzip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pairs_as_python_does_and_refuses_what_it_would_not_take() {
        let (pieces, scores) =
            read_unigram_pieces(br#"[["a", 1.5], ["\u00e9b", -2], ["c", 1e-3]]"#).unwrap();
        assert_eq!(pieces, ["a", "éb", "c"]);
        assert_eq!(scores, [1.5, -2.0, 0.001]);
        for bad in [
            &br#"[["a", 1.5, 3]]"#[..],
            br#"[["a"]]"#,
            br#"[["a", true]]"#,
            br#"[["a", "1"]]"#,
            br#"[["", 1]]"#,
            br#"[["a", 1e400]]"#,
            br#"[["\ud800", 1]]"#,
            br#"[["a", -0]]"#,
            br#"{"a": 1}"#,
        ] {
            assert_eq!(
                read_unigram_pieces(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
