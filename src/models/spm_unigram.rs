//! SentencePiece Unigram (sentencepiece's `EncodeOptimized` Viterbi, in its float32 arithmetic):
//! candidates are `f32(score + best_prefix)`, stored and compared as float32; USER_DEFINED pieces
//! score `f32(n * 0.1f) - 0.1` (n bytes; as measured on sentencepiece 0.2.3); UNUSED pieces are
//! not in the lattice; where no single-character piece starts, an unknown node scores
//! `min_score - 10`. Ties keep the earliest-starting last piece. The Python reference is
//! `tinyllm.tok.models.spm_unigram`.

use rustc_hash::FxHashMap;

use crate::models::spm_pieces::{Finisher, SpmPieces, NORMAL, UNUSED, USER_DEFINED};
use crate::spec::Spec;
use crate::Error;

const USER_DEFINED_UNIT: f32 = 0.1;

pub struct SpmUnigramModel {
    pub pieces: SpmPieces,
    /// lattice pieces: text -> (id, score as a double: exact f32 for NORMAL pieces)
    lattice: FxHashMap<String, (u32, f64)>,
    max_piece_bytes: usize,
    unk_score: f32,
}

impl SpmUnigramModel {
    pub fn from_spec(spec: &Spec<'_, '_>) -> Result<Self, Error> {
        Ok(Self::from_pieces(SpmPieces::from_spec(spec)?))
    }

    pub fn from_pieces(pieces: SpmPieces) -> Self {
        let min_score = pieces
            .scores
            .iter()
            .zip(&pieces.types)
            .filter(|(_, &t)| t == NORMAL)
            .map(|(&s, _)| s)
            .fold(f32::MAX, f32::min);
        let mut lattice = FxHashMap::default();
        let mut max_piece_bytes = 0;
        for (text, &id) in &pieces.normal {
            let kind = pieces.types[id as usize];
            if kind == UNUSED {
                continue;
            }
            let score = if kind == USER_DEFINED {
                ((text.len() as f32) * USER_DEFINED_UNIT) as f64 - 0.1
            } else {
                pieces.scores[id as usize] as f64
            };
            max_piece_bytes = max_piece_bytes.max(text.len());
            lattice.insert(text.clone(), (id, score));
        }
        SpmUnigramModel {
            pieces,
            lattice,
            max_piece_bytes,
            unk_score: min_score - 10.0,
        }
    }

    /// Append the ids of `text` (a whole normalized text) to `out`.
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) {
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
                if let Some(&(id, score)) = self.lattice.get(&text[start..end]) {
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
        let mut finisher = Finisher::new(&self.pieces);
        for &(s, e, id) in path.iter().rev() {
            finisher.push(&text[s..e], id, out);
        }
    }
}
