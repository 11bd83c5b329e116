//! The pieces of a SentencePiece `.model` file (a serialized `ModelProto`), read from the
//! protobuf wire format. The reference is `tinyllm.tok.formats.sentencepiece_proto`, whose module
//! docstring describes the format; this reader gives the same pieces and, on a corrupt file, the
//! same error message (the Python tests compare both on random and corrupted files).
//!
//! Only the pieces (field 1, hundreds of thousands of small messages) are decoded here. The other
//! top-level fields (trainer_spec, normalizer_spec, denormalizer_spec: a few hundred bytes) are
//! handed back as raw [`Field`]s, in file order, for the Python reader to decode. Reading stops at
//! the first error, which is returned along with everything read before it, so that the caller
//! can report an earlier error of a field it decodes itself first, exactly as the reference does.

use std::ops::Range;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LENGTH: u8 = 2;
const FIXED32: u8 = 5;

/// The piece types (`ModelProto.SentencePiece.Type`) in the words of the reference's errors.
const TYPE_NAMES: &str =
    "1 (NORMAL), 2 (UNKNOWN), 3 (CONTROL), 4 (USER_DEFINED), 5 (UNUSED), 6 (BYTE)";
const NORMAL: i32 = 1;

fn wire_name(wire: u8) -> &'static str {
    match wire {
        0 => "varint",
        1 => "fixed64",
        2 => "length-delimited",
        3 => "start-group",
        4 => "end-group",
        5 => "fixed32",
        _ => "unknown",
    }
}

/// The value of a field: the integer of a varint / fixed64 / fixed32 (raw bits), or the byte
/// range of a length-delimited value within the whole data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(u64),
    Bytes(Range<usize>),
}

/// One top-level field other than a piece; `offset` is where its value starts in the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub number: u64,
    pub wire: u8,
    pub value: Value,
    pub offset: usize,
}

/// What [`read_pieces`] found: the pieces as columns (texts as byte ranges of valid UTF-8 in the
/// data), the other known top-level fields, and the first error, if any.
#[derive(Debug, Default)]
pub struct ModelPieces {
    pub texts: Vec<Range<usize>>,
    pub scores: Vec<f32>,
    pub types: Vec<i32>,
    pub others: Vec<Field>,
    pub error: Option<String>,
}

/// A cursor over one message: `data[start..end]` of the whole file, offsets counted from the file
/// start (errors report them).
struct Message<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
}

impl Message<'_> {
    /// A varint at the cursor, as the reference's `read_varint` (`end` is where the enclosing
    /// message stops).
    fn varint(&mut self, what: &dyn Fn() -> String) -> Result<u64, String> {
        let start = self.pos;
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            if self.pos >= self.end {
                return Err(format!(
                    "{} at byte {start}: varint runs past the end of the data ({} bytes); the file is truncated",
                    what(),
                    self.end
                ));
            }
            let byte = self.data[self.pos];
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(format!(
                    "{} at byte {start}: varint exceeds 64 bits",
                    what()
                ));
            }
            value |= u64::from(byte & 0x7F) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(format!(
                    "{} at byte {start}: varint longer than 10 bytes",
                    what()
                ));
            }
        }
    }

    /// The next field (as the reference's `iter_fields`): number, wire type, value, value offset.
    /// `where_()` names the message and `label(number)` the field in errors (both are only
    /// formatted for an error: a file has a million fields).
    fn field(
        &mut self,
        where_: &dyn Fn() -> String,
        label: &dyn Fn(u64) -> String,
    ) -> Result<Field, String> {
        let key_at = self.pos;
        let key = self.varint(&|| format!("{} (field key)", where_()))?;
        if key >> 3 == 0 {
            return Err(format!(
                "{} at byte {key_at}: field number 0 is invalid",
                where_()
            ));
        }
        let (number, wire) = (key >> 3, (key & 7) as u8);
        let at = self.pos;
        let here = || format!("{}.{}", where_(), label(number));
        let (value, offset) = match wire {
            VARINT => (Value::Int(self.varint(&here)?), at),
            FIXED64 | FIXED32 => {
                let size = if wire == FIXED64 { 8 } else { 4 };
                if self.pos + size > self.end {
                    return Err(format!(
                        "{} at byte {at}: {} value needs {size} bytes, {} left; the file is truncated",
                        here(),
                        wire_name(wire),
                        self.end - self.pos
                    ));
                }
                let mut raw = [0u8; 8];
                raw[..size].copy_from_slice(&self.data[self.pos..self.pos + size]);
                self.pos += size;
                (Value::Int(u64::from_le_bytes(raw)), at)
            }
            LENGTH => {
                let length = self.varint(&here)?;
                if length > (self.end - self.pos) as u64 {
                    return Err(format!(
                        "{} at byte {at}: length {length} runs past the end of the data ({} bytes); the file is truncated",
                        here(),
                        self.end
                    ));
                }
                let start = self.pos;
                self.pos += length as usize;
                (Value::Bytes(start..self.pos), start)
            }
            _ => {
                return Err(format!(
                    "{} at byte {at}: wire type {wire} ({}) is not supported; expected varint, fixed64, \
                     length-delimited or fixed32",
                    here(),
                    wire_name(wire)
                ))
            }
        };
        Ok(Field {
            number,
            wire,
            value,
            offset,
        })
    }
}

/// The reference's `_wire_error`.
fn wire_error(here: &str, f: &Field, expected: &str) -> String {
    format!(
        "{here} at byte {}: found wire type {} ({}), expected {expected}",
        f.offset,
        f.wire,
        wire_name(f.wire)
    )
}

/// Why `bytes` is not UTF-8, in the words of Python's decoder ("invalid start byte at byte 3").
fn utf8_problem(bytes: &[u8]) -> Option<String> {
    let e = std::str::from_utf8(bytes).err()?;
    let at = e.valid_up_to();
    let reason = match e.error_len() {
        None => "unexpected end of data",
        Some(_) if matches!(bytes[at], 0x80..=0xC1 | 0xF5..=0xFF) => "invalid start byte",
        Some(_) => "invalid continuation byte",
    };
    Some(format!("{reason} at byte {at}"))
}

/// One `SentencePiece` message at `range` (the reference's `_decode` with `_PIECE_SCHEMA`, then
/// `_build_piece`): (text range, score, type).
fn read_piece(
    data: &[u8],
    range: Range<usize>,
    here: &dyn Fn() -> String,
) -> Result<(Range<usize>, f32, i32), String> {
    let mut msg = Message {
        data,
        pos: range.start,
        end: range.end,
    };
    let (mut text, mut score, mut kind) = (None, 0f32, NORMAL);
    let names = |number: u64| match number {
        1 => "piece".to_string(),
        2 => "score".to_string(),
        3 => "type".to_string(),
        n => format!("#{n}"),
    };
    while msg.pos < msg.end {
        let f = msg.field(here, &names)?;
        let (expected, name) = match f.number {
            1 => (LENGTH, "piece"),
            2 => (FIXED32, "score"),
            3 => (VARINT, "type"),
            _ => continue, // unknown field: skipped
        };
        let field_here = || format!("{}.{name}", here());
        if f.wire != expected {
            return Err(wire_error(&field_here(), &f, wire_name(expected)));
        }
        match (f.number, &f.value) {
            (1, Value::Bytes(r)) => {
                if let Some(problem) = utf8_problem(&data[r.clone()]) {
                    return Err(format!(
                        "{} at byte {}: not valid UTF-8 ({problem} of the string)",
                        field_here(),
                        f.offset
                    ));
                }
                text = Some(r.clone());
            }
            (2, Value::Int(bits)) => score = f32::from_bits(*bits as u32),
            (3, Value::Int(v)) => {
                // int32: sign-extended to 64 bits on the wire
                let signed = *v as i64;
                kind = i32::try_from(signed).map_err(|_| {
                    format!(
                        "{} at byte {}: {signed} is out of the int32 range",
                        field_here(),
                        f.offset
                    )
                })?;
            }
            _ => unreachable!("wire types checked above"),
        }
    }
    let text =
        text.ok_or_else(|| format!("{}.piece: missing; expected a non-empty string", here()))?;
    if !(1..=6).contains(&kind) {
        return Err(format!(
            "{}.type: found {kind}, expected one of {TYPE_NAMES}",
            here()
        ));
    }
    Ok((text, score, kind))
}

/// Read the pieces of a serialized `ModelProto` (`where_` names the message in errors, as the
/// reference's `where` argument). Fields 2, 3 and 5 are returned in [`ModelPieces::others`];
/// unknown fields are checked and skipped.
pub fn read_pieces(data: &[u8], where_: &str) -> ModelPieces {
    let mut out = ModelPieces::default();
    if let Err(e) = read_into(data, where_, &mut out) {
        out.error = Some(e);
    }
    out
}

fn read_into(data: &[u8], where_: &str, out: &mut ModelPieces) -> Result<(), String> {
    let mut msg = Message {
        data,
        pos: 0,
        end: data.len(),
    };
    let label = |number: u64, pieces: usize| match number {
        1 => format!("pieces[{pieces}]"),
        2 => "trainer_spec".to_string(),
        3 => "normalizer_spec".to_string(),
        5 => "denormalizer_spec".to_string(),
        n => format!("#{n}"),
    };
    while msg.pos < msg.end {
        let k = out.texts.len();
        let f = msg.field(&|| where_.to_string(), &|n| label(n, k))?;
        match f.number {
            1 => {
                let here = || format!("{where_}.pieces[{k}]");
                let Value::Bytes(range) = &f.value else {
                    return Err(wire_error(&here(), &f, "length-delimited"));
                };
                let (text, score, kind) = read_piece(data, range.clone(), &here)?;
                out.texts.push(text);
                out.scores.push(score);
                out.types.push(kind);
            }
            2 | 3 | 5 => out.others.push(f),
            _ => {} // unknown field: skipped
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(text: &str, score: f32, kind: u8) -> Vec<u8> {
        let mut body = vec![0x0A, text.len() as u8];
        body.extend_from_slice(text.as_bytes());
        body.push(0x15);
        body.extend_from_slice(&score.to_le_bytes());
        body.extend_from_slice(&[0x18, kind]);
        let mut out = vec![0x0A, body.len() as u8];
        out.extend(body);
        out
    }

    #[test]
    fn reads_pieces_and_keeps_other_fields() {
        let mut data = piece("<unk>", 0.0, 2);
        data.extend(piece("▁a", -1.5, 1));
        data.extend([0x12, 0x02, 0x20, 0x05]); // trainer_spec { vocab_size: 5 }
        data.extend([0xA0, 0x06, 0x01]); // unknown field 100: skipped
        let read = read_pieces(&data, "ModelProto");
        assert_eq!(read.error, None);
        let texts: Vec<&str> = read
            .texts
            .iter()
            .map(|r| std::str::from_utf8(&data[r.clone()]).unwrap())
            .collect();
        assert_eq!(texts, ["<unk>", "▁a"]);
        assert_eq!(read.scores, [0.0, -1.5]);
        assert_eq!(read.types, [2, 1]);
        assert_eq!(read.others.len(), 1);
        assert_eq!(read.others[0].number, 2);
        assert_eq!(
            read.others[0].value,
            Value::Bytes(data.len() - 5..data.len() - 3)
        );
    }

    #[test]
    fn errors_name_the_field_and_offset() {
        let cases: [(&[u8], &str); 6] = [
            (b"\x0a\x05\x0a\x01a", "ModelProto.pieces[0] at byte 1: length 5 runs past the end of the data (5 bytes)"),
            (b"\x0d\x00\x00\x00\x00", "ModelProto.pieces[0] at byte 1: found wire type 5 (fixed32), expected length-delimited"),
            (b"\x0a\x03\x0a\x01\xff", "ModelProto.pieces[0].piece at byte 4: not valid UTF-8 (invalid start byte at byte 0 of the string)"),
            (b"\x0a\x05\x0a\x01a\x18\x09", "ModelProto.pieces[0].type: found 9, expected one of"),
            (b"\x0a\x02\x18\x01", "ModelProto.pieces[0].piece: missing"),
            (&[0x80; 11], "ModelProto (field key) at byte 0: varint exceeds 64 bits"),
        ];
        for (data, message) in cases {
            let error = read_pieces(data, "ModelProto").error.unwrap();
            assert!(error.starts_with(message), "{error}");
        }
    }

    #[test]
    fn stops_at_the_first_error_keeping_what_came_before() {
        let mut data = piece("a", 0.0, 1);
        data.extend([0x12, 0x00, 0x3b]);
        let read = read_pieces(&data, "M");
        assert_eq!(read.texts.len(), 1);
        assert_eq!(read.others.len(), 1);
        assert_eq!(
            read.error.unwrap(),
            format!("M.#7 at byte {}: wire type 3 (start-group) is not supported; expected varint, fixed64, length-delimited or fixed32", data.len())
        );
    }
}
