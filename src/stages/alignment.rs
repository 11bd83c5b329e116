//! Normalize a text and say, for each output character, which source characters produced it:
//! the rule of `tinyllm.tok.text.alignment` (the Python reference), reproduced exactly so the
//! engines' offsets equal the reference's.
//!
//! A top-level `Sequence` is aligned stage by stage and the spans composed. `Prepend`, `Strip`,
//! NFC/NFKC (composition pieces) and the SentencePiece normalizer know their own alignment. Any other stage is cut into chunks
//! that normalize independently: a chunk grows while `normalize(chunk + next)` differs from
//! `normalize(chunk) + normalize(next)` (a combining mark after its base, a second space that a
//! `Replace(" {2,}", " ")` folds); every output character of a chunk spans the chunk. Should the
//! chunks not rebuild the stage's output, every output character spans the whole text.
//!
//! Example, NFD then StripAccents over `"e\u{301}x"`: NFD leaves the text as it is, each
//! character its own chunk (appending the mark to `e` changes nothing); StripAccents deletes the
//! mark, so the output `ex` spans (0, 1) and (2, 3).
//!
//! Spans are `(start, end)` in characters of the stage's input, composed into characters of the
//! raw text; an inserted character (SentencePiece's dummy prefix) gets an empty span.

use crate::stages::compose::compose_aligned;
use crate::stages::normalizers::{Normalizer, Strip};

/// (start, end) in characters of the source text.
pub type Span = (u32, u32);

/// `normalizer` applied to `text` (exactly what [`Normalizer::run`] writes) into `out`, and in
/// `align` one source span per output character. `None` leaves the text as it is.
pub fn normalize_aligned(
    normalizer: Option<&Normalizer>,
    text: &str,
    out: &mut String,
    align: &mut Vec<Span>,
) {
    out.clear();
    align.clear();
    out.push_str(text);
    align.extend((0..text.chars().count() as u32).map(|i| (i, i + 1)));
    let Some(normalizer) = normalizer else {
        return;
    };
    let stages = match normalizer {
        Normalizer::Sequence(stages) => stages.as_slice(),
        other => std::slice::from_ref(other),
    };
    let mut next = String::new();
    let mut inner: Vec<Span> = Vec::new();
    let mut composed: Vec<Span> = Vec::new();
    for stage in stages {
        align_stage(stage, out, &mut next, &mut inner);
        composed.clear();
        composed.extend(inner.iter().map(|&(s, e)| {
            if s < e {
                (align[s as usize].0, align[e as usize - 1].1)
            } else {
                point(align, s as usize)
            }
        }));
        std::mem::swap(out, &mut next);
        std::mem::swap(align, &mut composed);
    }
}

/// An empty span at position `s` of a stage's input (a character the stage inserted).
fn point(align: &[Span], s: usize) -> Span {
    let p = match align.get(s) {
        Some(span) => span.0,
        None => align.last().map_or(0, |span| span.1),
    };
    (p, p)
}

fn run(stage: &Normalizer, text: &str, out: &mut String) {
    let mut spare = String::new();
    stage.run(text, out, &mut spare);
}

/// One stage: its output into `out` and, per output character, a span of `text`.
fn align_stage(stage: &Normalizer, text: &str, out: &mut String, align: &mut Vec<Span>) {
    out.clear();
    align.clear();
    match stage {
        Normalizer::Prepend(prefix) => {
            if text.is_empty() {
                return;
            }
            out.push_str(prefix);
            out.push_str(text);
            align.extend(std::iter::repeat_n((0, 1), prefix.chars().count()));
            align.extend((0..text.chars().count() as u32).map(|i| (i, i + 1)));
        }
        Normalizer::Strip(strip) => {
            let (left, right) = strip_sides(strip);
            let lead = if left {
                text.len() - text.trim_start_matches(char::is_whitespace).len()
            } else {
                0
            };
            let mut kept = &text[lead..];
            if right {
                kept = kept.trim_end_matches(char::is_whitespace);
            }
            let start = text[..lead].chars().count() as u32;
            out.push_str(kept);
            align.extend((start..start + kept.chars().count() as u32).map(|i| (i, i + 1)));
        }
        Normalizer::SentencePiece(n) => n.normalize_aligned(text, out, align),
        Normalizer::Nfc | Normalizer::Nfkc => {
            // Composition pieces, the reference's `compose.align` rule (coarser than chunks:
            // every character of `e` + three acutes spans all four).
            let (composed, spans) = compose_aligned(text, matches!(stage, Normalizer::Nfkc));
            out.push_str(&composed);
            align.extend(spans.into_iter().map(|(s, e)| (s as u32, e as u32)));
        }
        _ => chunk_align(stage, text, out, align),
    }
}

/// Which ends a [`Strip`] trims, read from what it does to two probes.
fn strip_sides(strip: &Strip) -> (bool, bool) {
    let mut out = String::new();
    strip.normalize(" x", &mut out);
    let left = out == "x";
    out.clear();
    strip.normalize("x ", &mut out);
    (left, out == "x")
}

/// Whether appending an ASCII character to any text normalizes as the two parts alone: true for
/// the stages that map each character on its own after canonical reordering, which an ASCII
/// character (a starter that composes with nothing) cannot take part in.
fn ascii_is_independent(stage: &Normalizer) -> bool {
    matches!(
        stage,
        Normalizer::Bert(_)
            | Normalizer::Nfd
            | Normalizer::Nfkd
            | Normalizer::StripAccents
            | Normalizer::Lowercase
    )
}

const ASCII_UNKNOWN: u8 = 0xFF;
const ASCII_EMPTY: u8 = 0xFE;
const ASCII_OTHER: u8 = 0xFD;

/// The chunk rule of the module docs.
fn chunk_align(stage: &Normalizer, text: &str, out: &mut String, align: &mut Vec<Span>) {
    let mut expected = String::new();
    run(stage, text, &mut expected);
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let n = bounds.len() - 1;
    let ascii_fast = ascii_is_independent(stage);
    // What each ASCII character alone normalizes to under such a stage: at most one ASCII
    // character (a lowercase letter, a space for whitespace, nothing for a control). Filled on
    // first use: ASCII_UNKNOWN, ASCII_EMPTY or the byte.
    let mut ascii_memo = [ASCII_UNKNOWN; 128];
    // normalize(text[start..i]) once known, carried while the chunk grows.
    let mut chunk: Option<String> = None;
    let (mut joined, mut single) = (String::new(), String::new());
    let mut start = 0;
    for i in 1..=n {
        if i < n && !(ascii_fast && text.as_bytes()[bounds[i]] < 0x80) {
            let current = chunk.get_or_insert_with(|| {
                let mut s = String::new();
                run(stage, &text[bounds[start]..bounds[i]], &mut s);
                s
            });
            run(stage, &text[bounds[start]..bounds[i + 1]], &mut joined);
            run(stage, &text[bounds[i]..bounds[i + 1]], &mut single);
            let independent = joined.len() == current.len() + single.len()
                && joined.starts_with(current.as_str())
                && joined.ends_with(single.as_str());
            if !independent {
                std::mem::swap(current, &mut joined);
                continue; // text[i] interacts with the chunk: keep growing it
            }
        }
        let lead = text.as_bytes()[bounds[start]];
        if ascii_fast && chunk.is_none() && i == start + 1 && lead < 0x80 {
            if ascii_memo[lead as usize] == ASCII_UNKNOWN {
                let mut s = String::new();
                run(stage, &text[bounds[start]..bounds[i]], &mut s);
                ascii_memo[lead as usize] = match s.as_bytes() {
                    [] => ASCII_EMPTY,
                    [b] if *b < 0x80 => *b,
                    _ => ASCII_OTHER,
                };
            }
            match ascii_memo[lead as usize] {
                ASCII_EMPTY => {
                    start = i;
                    continue;
                }
                b if b < 0x80 => {
                    align.push((start as u32, i as u32));
                    out.push(b as char);
                    start = i;
                    continue;
                }
                _ => {} // longer than one ASCII character: normalize it below
            }
        }
        let normalized = match chunk.take() {
            Some(s) => s,
            None => {
                let mut s = String::new();
                run(stage, &text[bounds[start]..bounds[i]], &mut s);
                s
            }
        };
        let span = (start as u32, i as u32);
        align.extend(std::iter::repeat_n(span, normalized.chars().count()));
        out.push_str(&normalized);
        start = i;
    }
    if *out != expected {
        align.clear();
        align.extend(std::iter::repeat_n((0, n as u32), expected.chars().count()));
    }
    out.clear();
    out.push_str(&expected);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(spec: serde_json::Value, text: &str) -> (String, Vec<Span>) {
        let n = Normalizer::from_json(&spec, "n").unwrap();
        let (mut out, mut align) = (String::new(), Vec::new());
        normalize_aligned(Some(&n), text, &mut out, &mut align);
        (out, align)
    }

    #[test]
    fn strip_accents_keeps_each_base_on_its_own_character() {
        let spec = serde_json::json!({"type": "Sequence", "normalizers": [
            {"type": "NFD"}, {"type": "StripAccents"}]});
        assert_eq!(
            aligned(spec, "e\u{301}x"),
            ("ex".to_string(), vec![(0, 1), (2, 3)])
        );
    }

    #[test]
    fn replace_of_space_runs_spans_the_run() {
        let spec =
            serde_json::json!({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "});
        assert_eq!(
            aligned(spec, "a   b"),
            ("a b".to_string(), vec![(0, 1), (1, 4), (4, 5)])
        );
    }

    #[test]
    fn prepend_and_strip_know_their_alignment() {
        let spec = serde_json::json!({"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": true, "strip_right": true},
            {"type": "Prepend", "prepend": "▁"}]});
        assert_eq!(
            aligned(spec, "  ab "),
            ("▁ab".to_string(), vec![(2, 3), (2, 3), (3, 4)])
        );
    }
}
