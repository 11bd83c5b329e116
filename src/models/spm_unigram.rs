//! SentencePiece Unigram (sentencepiece's `EncodeOptimized` Viterbi, in its float32 arithmetic):
//! candidates are `f32(score + best_prefix)`, stored and compared as float32; USER_DEFINED pieces
//! score `f32(n * 0.1f) - 0.1` (n bytes; as measured on sentencepiece 0.2.3); UNUSED pieces are
//! not in the lattice; where no single-character piece starts, an unknown node scores
//! `min_score - 10`. Ties keep the earliest-starting last piece. The Python reference is
//! `tinyllm.tok.models.spm_unigram`.

use std::sync::Arc;

use crate::models::spm_pieces::{Finisher, SpmPieces, NORMAL, USER_DEFINED};
use crate::spec::Spec;
use crate::Error;

const USER_DEFINED_UNIT: f32 = 0.1;

pub struct SpmUnigramModel {
    /// Shared with the Python model of a file the core read (`_core.SpmPieces`).
    pub pieces: Arc<SpmPieces>,
    /// per id, the score a lattice candidate adds (a double: exact f32 for NORMAL pieces; NaN for
    /// the pieces not in the lattice: UNUSED and reserved ones). Lattice pieces are looked up in
    /// `pieces.normal_id`, which finds them all (and the UNUSED ones).
    lattice_scores: Vec<f64>,
    max_piece_bytes: usize,
    unk_score: f32,
}

impl SpmUnigramModel {
    pub fn from_spec(spec: &Spec<'_, '_>) -> Result<Self, Error> {
        Ok(Self::from_pieces(SpmPieces::from_spec(spec)?))
    }

    pub fn from_pieces(pieces: impl Into<Arc<SpmPieces>>) -> Self {
        let pieces: Arc<SpmPieces> = pieces.into();
        let min_score = pieces
            .scores
            .iter()
            .zip(&pieces.types)
            .filter(|(_, &t)| t == NORMAL)
            .map(|(&s, _)| s)
            .fold(f32::MAX, f32::min);
        let mut max_piece_bytes = 0;
        let lattice_scores = (pieces.texts().zip(&pieces.scores).zip(&pieces.types))
            .map(|((text, &score), &kind)| match kind {
                NORMAL | USER_DEFINED => {
                    max_piece_bytes = max_piece_bytes.max(text.len());
                    if kind == USER_DEFINED {
                        ((text.len() as f32) * USER_DEFINED_UNIT) as f64 - 0.1
                    } else {
                        score as f64
                    }
                }
                _ => f64::NAN, // UNUSED and reserved pieces are not in the lattice
            })
            .collect();
        SpmUnigramModel {
            pieces,
            lattice_scores,
            max_piece_bytes,
            unk_score: min_score - 10.0,
        }
    }

    /// The id of a lattice piece and the score a candidate adds.
    #[inline]
    fn lattice_piece(&self, text: &str) -> Option<(u32, f64)> {
        let id = self.pieces.normal_id(text)?;
        let score = self.lattice_scores[id as usize];
        (!score.is_nan()).then_some((id, score))
    }

    /// Append the ids of `text` (a whole normalized text) to `out`.
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) {
        let mut finisher = Finisher::new(&self.pieces);
        self.segments(text, &mut |s, e, id| finisher.push(&text[s..e], id, out));
    }

    /// [`encode`](Self::encode) with each token's byte span in `text`: (id, start, end).
    pub fn encode_spans(&self, text: &str, out: &mut Vec<(u32, usize, usize)>) {
        let mut finisher = Finisher::new(&self.pieces);
        self.segments(text, &mut |s, e, id| {
            finisher.push_span(&text[s..e], (s, e), id, out)
        });
    }

    /// The best path's pieces in order, as (start, end, id) byte spans, before the unknown rules.
    fn segments(&self, text: &str, emit: &mut dyn FnMut(usize, usize, u32)) {
        let n = text.len();
        if n == 0 {
            return;
        }
        // best path ending at each byte position: (score, start, id)
        let mut best: Vec<(f32, usize, u32)> = vec![(0.0, usize::MAX, 0); n + 1];
        let bytes = text.as_bytes();
        let mut start = 0;
        while start < n {
            let here = best[start].0;
            let mblen = crate::stages::spm_normalizer::one_char_len(bytes[start]).min(n - start);
            let mut has_single = false;
            let limit = (start + self.max_piece_bytes).min(n);
            let mut end = start + mblen;
            while end <= limit {
                if let Some((id, score)) = self.lattice_piece(&text[start..end]) {
                    let candidate = (score + here as f64) as f32;
                    let target = &mut best[end];
                    if target.1 == usize::MAX || candidate > target.0 {
                        *target = (candidate, start, id);
                    }
                    if end - start == mblen {
                        has_single = true;
                    }
                }
                end += 1;
                while end <= limit && !text.is_char_boundary(end) {
                    end += 1;
                }
            }
            if !has_single {
                let candidate = self.unk_score + here;
                let target = &mut best[start + mblen];
                if target.1 == usize::MAX || candidate > target.0 {
                    *target = (candidate, start, self.pieces.unk_id);
                }
            }
            start += mblen;
        }
        let mut path: Vec<(usize, usize, u32)> = Vec::new();
        let mut end = n;
        while end > 0 {
            let (_, s, id) = best[end];
            path.push((s, end, id));
            end = s;
        }
        for &(s, e, id) in path.iter().rev() {
            emit(s, e, id);
        }
    }
}
