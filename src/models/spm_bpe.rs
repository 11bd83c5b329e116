//! SentencePiece BPE (sentencepiece's bpe_model.cc): merges ordered by piece score (highest first,
//! leftmost on ties), user-defined symbols frozen, UNUSED pieces resegmented into the pair that
//! last formed them. The Python reference is `tinyllm.tok.models.spm_bpe`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use std::sync::Arc;

use crate::models::spm_pieces::{Finisher, SpmPieces, UNUSED, USER_DEFINED};
use crate::spec::Spec;
use crate::stages::spm_normalizer::PrefixMatcher;
use crate::Error;

pub struct SpmBpeModel {
    /// Shared with the Python model of a file the core read (`_core.SpmPieces`).
    pub pieces: Arc<SpmPieces>,
    matcher: PrefixMatcher,
    has_unused: bool,
}

struct Pair {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
}

impl PartialEq for Pair {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Pair {}
impl PartialOrd for Pair {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pair {
    // The heap's top: highest score, then the smallest left index (scores are finite).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| other.left.cmp(&self.left))
    }
}

struct Symbol {
    start: usize,
    end: usize,
    prev: isize,
    next: isize,
    frozen: bool,
}

/// Queue the pair (left, right) if it forms a piece (recording how an UNUSED piece was formed).
#[allow(clippy::too_many_arguments)]
fn add_pair<'t>(
    text: &'t str,
    p: &SpmPieces,
    has_unused: bool,
    left: isize,
    right: isize,
    symbols: &[Symbol],
    agenda: &mut BinaryHeap<Pair>,
    rev_merge: &mut FxHashMap<&'t str, (&'t str, &'t str)>,
) {
    if left < 0 || right < 0 {
        return;
    }
    let (l, r) = (&symbols[left as usize], &symbols[right as usize]);
    if l.frozen || r.frozen {
        return;
    }
    let Some(id) = p.normal_id(&text[l.start..r.end]) else {
        return;
    };
    agenda.push(Pair {
        score: p.scores[id as usize],
        left: left as usize,
        right: right as usize,
        size: r.end - l.start,
    });
    if has_unused && p.types[id as usize] == UNUSED {
        rev_merge.insert(
            &text[l.start..r.end],
            (&text[l.start..l.end], &text[r.start..r.end]),
        );
    }
}

impl SpmBpeModel {
    pub fn from_spec(spec: &Spec<'_, '_>) -> Result<Self, Error> {
        Ok(Self::from_pieces(SpmPieces::from_spec(spec)?))
    }

    pub fn from_pieces(pieces: impl Into<Arc<SpmPieces>>) -> Self {
        let pieces: Arc<SpmPieces> = pieces.into();
        let user: Vec<String> = (pieces.texts().zip(&pieces.types))
            .filter(|(_, &t)| t == USER_DEFINED)
            .map(|(p, _)| p.to_owned())
            .collect();
        let has_unused = pieces.types.contains(&UNUSED);
        SpmBpeModel {
            pieces,
            matcher: PrefixMatcher::new(&user),
            has_unused,
        }
    }

    /// Append the ids of `text` (a whole normalized text) to `out`.
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) {
        let mut finisher = Finisher::new(&self.pieces);
        self.segments(text, &mut |piece, id| finisher.push(piece, id, out));
    }

    /// [`encode`](Self::encode) with each token's byte span in `text`: (id, start, end).
    pub fn encode_spans(&self, text: &str, out: &mut Vec<(u32, usize, usize)>) {
        let mut finisher = Finisher::new(&self.pieces);
        let base = text.as_ptr() as usize;
        self.segments(text, &mut |piece, id| {
            // Every piece is a slice of `text` (merges and their undoing only cut it).
            let start = piece.as_ptr() as usize - base;
            finisher.push_span(piece, (start, start + piece.len()), id, out)
        });
    }

    /// The final pieces in order (slices of `text`) with their ids, before the unknown rules.
    fn segments<'t>(&self, text: &'t str, emit: &mut dyn FnMut(&'t str, u32)) {
        if text.is_empty() {
            return;
        }
        let bytes = text.as_bytes();
        let mut symbols: Vec<Symbol> = Vec::with_capacity(text.len());
        let mut at = 0;
        while at < bytes.len() {
            let m = self.matcher.matched(&bytes[at..]);
            let (end, frozen) = if m > 0 {
                (at + m, true)
            } else {
                let mut e = at + 1;
                while !text.is_char_boundary(e) {
                    e += 1;
                }
                (e, false)
            };
            let k = symbols.len() as isize;
            symbols.push(Symbol {
                start: at,
                end,
                prev: k - 1,
                next: k + 1,
                frozen,
            });
            at = end;
        }
        if let Some(last) = symbols.last_mut() {
            last.next = -1;
        }
        let p = &self.pieces;
        let mut agenda: BinaryHeap<Pair> = BinaryHeap::with_capacity(symbols.len());
        let mut rev_merge: FxHashMap<&str, (&str, &str)> = FxHashMap::default();
        let has_unused = self.has_unused;
        for k in 1..symbols.len() {
            add_pair(
                text,
                p,
                has_unused,
                k as isize - 1,
                k as isize,
                &symbols,
                &mut agenda,
                &mut rev_merge,
            );
        }
        while let Some(top) = agenda.pop() {
            let (l, r) = (&symbols[top.left], &symbols[top.right]);
            if l.start == l.end
                || r.start == r.end
                || (l.end - l.start) + (r.end - r.start) != top.size
            {
                continue; // stale: one side merged since this pair was queued
            }
            let right_next = r.next;
            symbols[top.left].end = symbols[top.right].end;
            symbols[top.left].next = right_next;
            if right_next >= 0 {
                symbols[right_next as usize].prev = top.left as isize;
            }
            let right = &mut symbols[top.right];
            right.end = right.start; // emptied
            let prev = symbols[top.left].prev;
            add_pair(
                text,
                p,
                has_unused,
                prev,
                top.left as isize,
                &symbols,
                &mut agenda,
                &mut rev_merge,
            );
            add_pair(
                text,
                p,
                has_unused,
                top.left as isize,
                right_next,
                &symbols,
                &mut agenda,
                &mut rev_merge,
            );
        }
        let mut k: isize = 0;
        while k >= 0 {
            let s = &symbols[k as usize];
            self.resegment(&text[s.start..s.end], &rev_merge, emit);
            k = s.next;
        }
    }

    fn resegment<'t>(
        &self,
        piece: &'t str,
        rev_merge: &FxHashMap<&'t str, (&'t str, &'t str)>,
        emit: &mut dyn FnMut(&'t str, u32),
    ) {
        let id = self.pieces.piece_to_id(piece);
        if self.pieces.types[id as usize] == UNUSED {
            if let Some(&(left, right)) = rev_merge.get(piece) {
                self.resegment(left, rev_merge, emit);
                self.resegment(right, rev_merge, emit);
                return;
            }
        }
        emit(piece, id);
    }
}
