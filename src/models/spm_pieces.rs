//! The piece table of a SentencePiece model and what sentencepiece does after its model runs
//! (unknown pieces fused, or split into BYTE pieces with byte_fallback). The Python reference is
//! `tinyllm.tok.models.spm_pieces`.

use crate::models::text_index::TextIndex;
use crate::spec::Spec;
use crate::Error;

pub const NORMAL: u32 = 1;
pub const UNKNOWN: u32 = 2;
pub const CONTROL: u32 = 3;
pub const USER_DEFINED: u32 = 4;
pub const UNUSED: u32 = 5;
pub const BYTE: u32 = 6;

pub struct SpmPieces {
    /// Every piece's text, one after the other in id order; `ends[i]` is where piece i's ends.
    text: String,
    ends: Vec<u32>,
    pub scores: Vec<f32>,
    pub types: Vec<u32>,
    /// NORMAL, USER_DEFINED and UNUSED pieces: what text can be segmented into.
    normal: TextIndex,
    /// UNKNOWN, CONTROL and BYTE pieces (looked up first, as sentencepiece's PieceToId).
    reserved: TextIndex,
    pub unk_id: u32,
    pub byte_ids: Option<Vec<u32>>,
}

impl SpmPieces {
    fn empty(n: usize) -> Self {
        SpmPieces {
            text: String::new(),
            ends: Vec::with_capacity(n),
            scores: Vec::with_capacity(n),
            types: Vec::with_capacity(n),
            normal: TextIndex::default(),
            reserved: TextIndex::default(),
            unk_id: u32::MAX,
            byte_ids: None,
        }
    }

    /// Append piece `text` (id: the number of pieces so far) to the texts and to the index of its
    /// type; false when that index already holds the text.
    fn push(&mut self, text: &str, kind: u32) -> bool {
        let id = self.ends.len() as u32;
        let normal = matches!(kind, NORMAL | USER_DEFINED | UNUSED);
        let (texts, ends) = (&self.text, &self.ends);
        let text_of = |v: u32| piece_text(texts, ends, v);
        let index = if normal {
            &mut self.normal
        } else {
            &mut self.reserved
        };
        if index.insert(text, id, text_of).is_err() {
            return false;
        }
        self.text.push_str(text);
        self.ends.push(self.text.len() as u32);
        self.types.push(kind);
        true
    }

    /// The text of piece `id`.
    #[inline]
    pub fn text(&self, id: u32) -> &str {
        piece_text(&self.text, &self.ends, id)
    }

    /// Every piece's text, in id order.
    pub fn texts(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.ends.len() as u32).map(|id| self.text(id))
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The id of a NORMAL, USER_DEFINED or UNUSED piece.
    #[inline]
    pub fn normal_id(&self, text: &str) -> Option<u32> {
        self.normal.get(text, |v| self.text(v))
    }

    /// The id of an UNKNOWN, CONTROL or BYTE piece.
    #[inline]
    pub fn reserved_id(&self, text: &str) -> Option<u32> {
        self.reserved.get(text, |v| self.text(v))
    }
}

impl SpmPieces {
    /// From the engine spec: `pieces` [[text, score, type], ...] in id order, `byte_fallback`.
    pub fn from_spec(spec: &Spec<'_, '_>) -> Result<Self, Error> {
        let pieces: Vec<(String, f64, u32)> = spec.with_field("pieces", |pieces| {
            pieces.each_item(|item| {
                if item.value().as_array().is_none_or(|a| a.len() != 3) {
                    return Err(item.error("a [piece, score, type] triple"));
                }
                Ok((
                    item.with_item(0, |p| p.as_str())?.to_string(),
                    item.with_item(1, |s| s.as_f64())?,
                    item.with_item(2, |t| t.as_u32())?,
                ))
            })
        })?;
        let byte_fallback = spec.bool_or("byte_fallback", false)?;
        let mut columns = (Vec::new(), Vec::new(), Vec::new());
        for (text, score, kind) in pieces {
            columns.0.push(text);
            columns.1.push(score);
            columns.2.push(kind);
        }
        SpmPieces::new(
            &format!("{}.pieces", spec.path()),
            columns.0,
            &columns.1,
            &columns.2,
            byte_fallback,
        )
    }

    /// From the pieces as columns (texts, scores, types in id order); `path` names the pieces in
    /// errors. Refuses empty or duplicate pieces, bad types or scores, a missing UNKNOWN piece,
    /// and with `byte_fallback` a bad or missing BYTE piece.
    pub fn new(
        path: &str,
        texts: Vec<String>,
        scores: &[f64],
        types: &[u32],
        byte_fallback: bool,
    ) -> Result<Self, Error> {
        let n = texts.len();
        let bad = |i: usize, what: String| Error::Field {
            field: format!("{path}[{i}]"),
            expected: "a valid SentencePiece piece".into(),
            found: what,
        };
        if scores.len() != n || types.len() != n {
            return Err(bad(
                0,
                format!(
                    "{n} texts, {} scores and {} types",
                    scores.len(),
                    types.len()
                ),
            ));
        }
        let mut made = SpmPieces::empty(n);
        made.text.reserve(texts.iter().map(String::len).sum());
        made.normal = TextIndex::with_capacity(n);
        let mut byte_ids = vec![u32::MAX; 256];
        for (i, ((text, &score), &kind)) in texts.into_iter().zip(scores).zip(types).enumerate() {
            let id = u32::try_from(i).map_err(|_| bad(i, "more than 2^32 pieces".into()))?;
            if text.is_empty() || !(1..=6).contains(&kind) || !score.is_finite() {
                return Err(bad(
                    i,
                    format!("{text:?} with type {kind} and score {score}"),
                ));
            }
            if !made.push(&text, kind) {
                return Err(bad(i, format!("{text:?}, defined twice")));
            }
            if kind == UNKNOWN {
                made.unk_id = id;
            }
            if kind == BYTE && byte_fallback {
                let b =
                    byte_of_piece(&text).ok_or_else(|| bad(i, format!("BYTE piece {text:?}")))?;
                byte_ids[b as usize] = id;
            }
            made.scores.push(score as f32);
        }
        if made.unk_id == u32::MAX {
            return Err(bad(0, "no UNKNOWN piece".into()));
        }
        if byte_fallback {
            if let Some(b) = byte_ids.iter().position(|&i| i == u32::MAX) {
                return Err(bad(
                    0,
                    format!("byte_fallback without the BYTE piece of byte {b}"),
                ));
            }
            made.byte_ids = Some(byte_ids);
        }
        Ok(made)
    }

    /// The pieces as the Python reader (`tinyllm.tok.models.spm_pieces.SpmPieces`) accepts them,
    /// from columns in id order (types as the file holds them): None for anything it refuses
    /// (an empty piece, a type outside 1..=6, a score that is not finite, a piece defined twice
    /// among the vocabulary or among the reserved pieces, no UNKNOWN piece or two, a BYTE piece
    /// without `byte_fallback` or that is not `<0x00>`..`<0xFF>`, `byte_fallback` without all 256),
    /// so that it reads them again and words the error.
    pub fn strict<'a>(
        texts: impl ExactSizeIterator<Item = &'a str>,
        scores: &[f32],
        types: &[i32],
        byte_fallback: bool,
    ) -> Option<Self> {
        let n = texts.len();
        if scores.len() != n || types.len() != n {
            return None;
        }
        let mut made = SpmPieces::empty(n);
        made.scores = scores.to_vec();
        made.normal = TextIndex::with_capacity(n);
        let mut byte_ids = vec![u32::MAX; 256];
        for (i, ((text, &score), &kind)) in texts.zip(scores).zip(types).enumerate() {
            let id = u32::try_from(i).ok()?;
            if text.is_empty() || !(1..=6).contains(&kind) || !score.is_finite() {
                return None;
            }
            let kind = kind as u32;
            if !made.push(text, kind) {
                return None;
            }
            if kind == UNKNOWN {
                if made.unk_id != u32::MAX {
                    return None;
                }
                made.unk_id = id;
            }
            if kind == BYTE {
                if !byte_fallback {
                    return None;
                }
                byte_ids[byte_of_piece(text)? as usize] = id;
            }
        }
        if made.unk_id == u32::MAX {
            return None;
        }
        if byte_fallback {
            if byte_ids.contains(&u32::MAX) {
                return None;
            }
            made.byte_ids = Some(byte_ids);
        }
        Some(made)
    }

    pub fn max_id(&self) -> u32 {
        self.ends.len().saturating_sub(1) as u32
    }

    #[inline]
    pub fn piece_to_id(&self, text: &str) -> u32 {
        (self.reserved_id(text))
            .or_else(|| self.normal_id(text))
            .unwrap_or(self.unk_id)
    }
}

/// The text of piece `id` in the pieces' buffer.
#[inline]
fn piece_text<'t>(text: &'t str, ends: &[u32], id: u32) -> &'t str {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &text[start..ends[i] as usize]
}

/// The byte of a BYTE piece's text: `<0x41>` -> 0x41 (upper-case hex, as sentencepiece writes it).
fn byte_of_piece(text: &str) -> Option<u8> {
    text.strip_prefix("<0x")
        .and_then(|t| t.strip_suffix('>'))
        .filter(|h| {
            h.len() == 2
                && h.bytes()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
        })
        .and_then(|h| u8::from_str_radix(h, 16).ok())
}

/// Collects the (text, id) tokens of a model and applies sentencepiece's unknown handling.
pub struct Finisher<'a> {
    pieces: &'a SpmPieces,
    prev_unk: bool,
}

impl<'a> Finisher<'a> {
    pub fn new(pieces: &'a SpmPieces) -> Self {
        Finisher {
            pieces,
            prev_unk: false,
        }
    }

    #[inline]
    pub fn push(&mut self, text: &str, id: u32, out: &mut Vec<u32>) {
        let is_unk = id == self.pieces.unk_id;
        if is_unk {
            if let Some(bytes) = &self.pieces.byte_ids {
                out.extend(text.bytes().map(|b| bytes[b as usize]));
            } else if !self.prev_unk {
                out.push(id);
            }
        } else {
            out.push(id);
        }
        self.prev_unk = is_unk;
    }
    /// [`push`](Self::push) with the piece's byte span in the text: a fused unknown run spans
    /// the run, each byte piece of an unknown piece spans that piece.
    #[inline]
    pub fn push_span(
        &mut self,
        text: &str,
        span: (usize, usize),
        id: u32,
        out: &mut Vec<(u32, usize, usize)>,
    ) {
        let is_unk = id == self.pieces.unk_id;
        let (start, end) = span;
        if is_unk {
            if let Some(bytes) = &self.pieces.byte_ids {
                out.extend(text.bytes().map(|b| (bytes[b as usize], start, end)));
            } else if self.prev_unk {
                if let Some(last) = out.last_mut() {
                    last.2 = end;
                }
            } else {
                out.push((id, start, end));
            }
        } else {
            out.push((id, start, end));
        }
        self.prev_unk = is_unk;
    }
}
