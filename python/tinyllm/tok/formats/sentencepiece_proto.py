"""Read SentencePiece `.model` files: the protobuf wire format of `sentencepiece_model.proto`.

A `.model` file is one serialized `ModelProto` message (proto2). The wire format is a sequence of
fields, each a key varint `(field_number << 3) | wire_type` followed by its value:

* wire type 0, varint: little-endian groups of 7 bits, high bit set on all but the last byte
  (at most 10 bytes; negative int32 values are sign-extended to 64 bits);
* wire type 1, fixed64: 8 bytes little-endian;
* wire type 2, length-delimited: a varint length, then that many bytes (strings, bytes, nested
  messages, packed repeated scalars);
* wire type 5, fixed32: 4 bytes little-endian (`float` fields such as a piece's score).

Unknown fields are skipped (newer writers add fields; sentencepiece's own reader skips them too).
For a field that is not repeated and appears twice, the last value wins, as protobuf specifies.
Groups (wire types 3 and 4) are refused: sentencepiece_model.proto has none.

`read_model_proto(data)` returns a `ModelProto`: the pieces, and the trainer, normalizer and
denormalizer specs with protobuf's declared defaults for absent fields. Errors are ValueError
naming the field path and the byte offset:

>>> read_model_proto(b"\\x0a\\x05\\x0a\\x01a")
Traceback (most recent call last):
...
ValueError: ModelProto.pieces[0] at byte 1: length 5 runs past the end of the data (5 bytes); the file is truncated
>>> proto = read_model_proto(b"\\x0a\\x0a\\x0a\\x01a\\x15\\x00\\x00\\x80\\xbf\\x18\\x01")
>>> proto.pieces
[Piece(piece='a', score=-1.0, type=1)]

Field numbers are those of google/sentencepiece's src/sentencepiece_model.proto.
"""

from __future__ import annotations

import struct
from typing import Callable, Iterable, Iterator, NamedTuple, Optional

from tinyllm import _native
from tinyllm._record import field, record
from tinyllm.tok.models.spm_pieces import NORMAL, PIECE_TYPES, PieceColumns

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_WIRE_NAMES = {0: "varint", 1: "fixed64", 2: "length-delimited", 3: "start-group", 4: "end-group", 5: "fixed32"}

# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPES = {UNIGRAM: "UNIGRAM", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}


def read_varint(data: bytes, pos: int, where: str, base: int = 0) -> tuple[int, int]:
    """(value, next position) of the varint at `pos`; the value is the raw unsigned 64-bit one.
    `base` (the offset of `data` in the file) only shifts the offsets errors report (and the end
    of the data they name: where the enclosing message ends in the file)."""
    value = shift = 0
    start = base + pos
    while True:
        if pos >= len(data):
            raise ValueError(f"{where} at byte {start}: varint runs past the end of the data ({base + len(data)} bytes); "
                             "the file is truncated")
        byte = data[pos]
        pos += 1
        if shift == 63 and byte > 1:
            raise ValueError(f"{where} at byte {start}: varint exceeds 64 bits")
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError(f"{where} at byte {start}: varint longer than 10 bytes")


class Field(NamedTuple):
    number: int
    wire_type: int
    value: object  # int for varint / fixed64 / fixed32 (raw bits), bytes for length-delimited
    offset: int  # where the value starts in the enclosing data


def iter_fields(data: bytes, where: str, base: int = 0,
                label: Optional[Callable[[int, int], str]] = None) -> Iterator[Field]:
    """The fields of one message, in order. `base` is the message's offset in the whole file, so
    offsets in errors count from the start of the file; `label(number)` names a field in errors."""
    pos = 0
    counts: dict[int, int] = {}
    while pos < len(data):
        key, next_pos = read_varint(data, pos, f"{where} (field key)", base)
        if key >> 3 == 0:
            raise ValueError(f"{where} at byte {base + pos}: field number 0 is invalid")
        pos = next_pos
        number, wire = key >> 3, key & 7
        at = base + pos
        k = counts.get(number, 0)
        counts[number] = k + 1
        name = label(number, k) if label is not None else f"#{number}"
        if wire == VARINT:
            value, pos = read_varint(data, pos, f"{where}.{name}", base)
        elif wire == FIXED64 or wire == FIXED32:
            size = 8 if wire == FIXED64 else 4
            if pos + size > len(data):
                raise ValueError(f"{where}.{name} at byte {at}: {_WIRE_NAMES[wire]} value needs {size} bytes, "
                                 f"{len(data) - pos} left; the file is truncated")
            value = int.from_bytes(data[pos:pos + size], "little")
            pos += size
        elif wire == LENGTH:
            length, pos = read_varint(data, pos, f"{where}.{name}", base)
            if pos + length > len(data):
                raise ValueError(f"{where}.{name} at byte {at}: length {length} runs past the end of the data "
                                 f"({base + len(data)} bytes); the file is truncated")
            value = data[pos:pos + length]
            at = base + pos
            pos += length
        else:
            raise ValueError(f"{where}.{name} at byte {at}: wire type {wire} ({_WIRE_NAMES.get(wire, 'unknown')}) "
                             "is not supported; expected varint, fixed64, length-delimited or fixed32")
        yield Field(number, wire, value, at)


# -- field decoders: (expected wire type, convert(value, where) -> python value) --------------

def _int32(value: int, where: str) -> int:
    value &= (1 << 64) - 1
    signed = value - (1 << 64) if value >> 63 else value
    if not -(1 << 31) <= signed < (1 << 31):
        raise ValueError(f"{where}: {signed} is out of the int32 range")
    return signed


def _uint64(value: int, where: str) -> int:
    return value


def _bool(value: int, where: str) -> bool:
    return value != 0


def _float(value: int, where: str) -> float:
    return struct.unpack("<f", value.to_bytes(4, "little"))[0]


def _string(value: bytes, where: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not valid UTF-8 ({e.reason} at byte {e.start} of the string)") from None


def _bytes(value: bytes, where: str) -> bytes:
    return bytes(value)


_KINDS: dict[str, tuple[int, Callable]] = {
    "int32": (VARINT, _int32), "uint64": (VARINT, _uint64), "bool": (VARINT, _bool), "enum": (VARINT, _int32),
    "float": (FIXED32, _float), "string": (LENGTH, _string), "bytes": (LENGTH, _bytes),
}


def _decode(data: bytes, name: str, schema: dict, where: str, base: int, first: Optional[dict] = None) -> dict:
    """Fields of one message by the `schema` {number: (name, kind, repeated)}; nested messages are
    kinds given as (sub-message name, sub-schema, builder). `first`: repeated fields already read
    (their counts, so indices in errors stay right)."""
    def label(number: int, k: int) -> str:
        spec = schema.get(number)
        if spec is None:
            return f"#{number}"
        return f"{spec[0]}[{k + (first or {}).get(number, 0)}]" if spec[2] else spec[0]

    return _decode_fields(iter_fields(data, where, base, label), schema, where, first)


def _decode_fields(fields: Iterable[Field], schema: dict, where: str, first: Optional[dict] = None) -> dict:
    """`_decode` over fields already cut out of the message (each decoded, and its errors raised,
    before the next one is read: the first bad field in file order is the one reported)."""
    out: dict = {}
    counts: dict[int, int] = dict(first or {})
    for f in fields:
        spec = schema.get(f.number)
        if spec is None:
            continue  # unknown field: skipped, as protobuf readers do
        fname, kind, repeated = spec
        k = counts.get(f.number, 0)
        counts[f.number] = k + 1
        here = f"{where}.{fname}[{k}]" if repeated else f"{where}.{fname}"
        if isinstance(kind, tuple):  # nested message
            if f.wire_type != LENGTH:
                raise _wire_error(here, f, "length-delimited")
            sub_name, sub_schema, build = kind
            value = build(_decode(f.value, sub_name, sub_schema, here, f.offset), here)
        else:
            wire, convert = _KINDS[kind]
            if f.wire_type == LENGTH and wire != LENGTH and repeated:
                # packed repeated scalars (allowed by proto2 readers)
                values, pos = [], 0
                while pos < len(f.value):
                    v, pos = read_varint(f.value, pos, here, f.offset)
                    values.append(convert(v, here))
                out.setdefault(fname, []).extend(values)
                continue
            if f.wire_type != wire:
                raise _wire_error(here, f, _WIRE_NAMES[wire])
            value = convert(f.value, f"{here} at byte {f.offset}")
        if repeated:
            out.setdefault(fname, []).append(value)
        else:
            out[fname] = value  # last one wins
    return out


def _wire_error(where: str, f: Field, expected: str) -> ValueError:
    return ValueError(f"{where} at byte {f.offset}: found wire type {f.wire_type} ({_WIRE_NAMES.get(f.wire_type)}), "
                      f"expected {expected}")


# -- the messages -------------------------------------------------------------------------------

class Piece(NamedTuple):
    piece: str
    score: float
    type: int


@record(frozen=False)
class TrainerSpec:
    """The TrainerSpec fields that encoding and decoding read (others are skipped)."""

    model_type: int = UNIGRAM
    vocab_size: int = 8000
    split_by_unicode_script: bool = True
    split_by_number: bool = True
    split_by_whitespace: bool = True
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    split_digits: bool = False
    control_symbols: list = field(default_factory=list)
    user_defined_symbols: list = field(default_factory=list)
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    unk_surface: str = " \u2047 "
    max_sentencepiece_length: int = 16
    character_coverage: float = 0.9995


@record(frozen=False)
class NormalizerSpec:
    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalization_rule_tsv: str = ""


@record(frozen=False)
class ModelProto:
    """A parsed `.model` file. `pieces` is a list of `Piece`; `columns()` gives the same pieces as
    three lists (texts, scores, types). A proto read by the Rust reader holds its pieces in the
    core (`table()`, what the tokenizer builds from) and makes `pieces` and the columns on first
    access (a quarter of a million `Piece` tuples cost more than the rest of loading)."""

    pieces: list
    trainer_spec: TrainerSpec
    normalizer_spec: NormalizerSpec
    denormalizer_spec: Optional[NormalizerSpec]

    @classmethod
    def from_table(cls, table, trainer_spec: TrainerSpec, normalizer_spec: NormalizerSpec,
                   denormalizer_spec: Optional[NormalizerSpec]) -> "ModelProto":
        """The proto of pieces the Rust reader holds (`_core.SpmPieceTable`)."""
        proto = cls.__new__(cls)
        proto.__dict__.update(_table=table, trainer_spec=trainer_spec, normalizer_spec=normalizer_spec,
                              denormalizer_spec=denormalizer_spec)
        return proto

    def __getattr__(self, name: str):
        # only reached for attributes not set: `pieces` of a proto made by `from_table`
        if name != "pieces" or self.__dict__.get("_table") is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.pieces = list(map(Piece, *self.columns()))
        return self.pieces

    def table(self):
        """The Rust reader's `_core.SpmPieceTable` of these pieces, or None (the readable reader's
        proto, or one whose `pieces` were touched, which may have been edited)."""
        return self.__dict__.get("_table") if "pieces" not in self.__dict__ else None

    def columns(self) -> PieceColumns:
        """The pieces as (texts, scores, types) lists in id order (they follow edits of `pieces`)."""
        if "pieces" not in self.__dict__ and self.__dict__.get("_table") is not None:
            columns = self.__dict__.get("_columns")
            if columns is None:
                columns = self.__dict__["_columns"] = PieceColumns(*self._table.columns())
            return columns
        return PieceColumns([p.piece for p in self.pieces], [p.score for p in self.pieces],
                            [p.type for p in self.pieces])


_TRAINER_SCHEMA = {
    3: ("model_type", "enum", False), 4: ("vocab_size", "int32", False), 10: ("character_coverage", "float", False),
    20: ("max_sentencepiece_length", "int32", False), 21: ("split_by_unicode_script", "bool", False),
    22: ("split_by_whitespace", "bool", False), 23: ("split_by_number", "bool", False),
    24: ("treat_whitespace_as_suffix", "bool", False), 25: ("split_digits", "bool", False),
    26: ("allow_whitespace_only_pieces", "bool", False),
    30: ("control_symbols", "string", True), 31: ("user_defined_symbols", "string", True),
    35: ("byte_fallback", "bool", False),
    40: ("unk_id", "int32", False), 41: ("bos_id", "int32", False), 42: ("eos_id", "int32", False),
    43: ("pad_id", "int32", False), 44: ("unk_surface", "string", False), 45: ("unk_piece", "string", False),
    46: ("bos_piece", "string", False), 47: ("eos_piece", "string", False), 48: ("pad_piece", "string", False),
}
_NORMALIZER_SCHEMA = {
    1: ("name", "string", False), 2: ("precompiled_charsmap", "bytes", False), 3: ("add_dummy_prefix", "bool", False),
    4: ("remove_extra_whitespaces", "bool", False), 5: ("escape_whitespaces", "bool", False),
    6: ("normalization_rule_tsv", "string", False),
}


def _build_piece(fields: dict, where: str) -> Piece:
    if "piece" not in fields:
        raise ValueError(f"{where}.piece: missing; expected a non-empty string")
    kind = fields.get("type", NORMAL)
    if kind not in PIECE_TYPES:
        raise ValueError(f"{where}.type: found {kind}, expected one of "
                         + ", ".join(f"{v} ({n})" for v, n in sorted(PIECE_TYPES.items())))
    return Piece(fields["piece"], fields.get("score", 0.0), kind)


_PIECE_SCHEMA = {1: ("piece", "string", False), 2: ("score", "float", False), 3: ("type", "enum", False)}
_MODEL_SCHEMA = {
    1: ("pieces", ("SentencePiece", _PIECE_SCHEMA, _build_piece), True),
    2: ("trainer_spec", ("TrainerSpec", _TRAINER_SCHEMA, lambda f, w: TrainerSpec(**f)), False),
    3: ("normalizer_spec", ("NormalizerSpec", _NORMALIZER_SCHEMA, lambda f, w: NormalizerSpec(**f)), False),
    5: ("denormalizer_spec", ("NormalizerSpec", _NORMALIZER_SCHEMA, lambda f, w: NormalizerSpec(**f)), False),
}


_F32 = struct.Struct("<f")


def _fast_pieces(data: bytes, pos: int, pieces: list) -> int:
    """Read pieces written the usual way (field 1; inside: piece, score, type in that order, all
    lengths below 128) from `pos` on; return where that layout stops. Anything else (and every
    error) is left to the general reader, which then reads from the returned position. A 256k-piece
    file loads in a fraction of the general reader's time this way."""
    n = len(data)
    unpack = _F32.unpack_from
    while pos + 4 <= n and data[pos] == 0x0A:
        size = data[pos + 1]
        end = pos + 2 + size
        if size >= 0x80 or end > n or data[pos + 2] != 0x0A:
            break
        length = data[pos + 3]
        q = pos + 4 + length
        if length >= 0x80 or length == 0 or q > end:
            break
        try:
            text = data[pos + 4:q].decode("utf-8")
        except UnicodeDecodeError:
            break
        score, kind = 0.0, NORMAL
        if q < end and data[q] == 0x15 and q + 5 <= end:
            score = unpack(data, q + 1)[0]
            q += 5
        if q < end and data[q] == 0x18 and q + 2 <= end and data[q + 1] in PIECE_TYPES:
            kind = data[q + 1]
            q += 2
        if q != end:
            break
        pieces.append(Piece(text, score, kind))
        pos = end
    return pos


def read_model_proto(data: bytes, where: str = "ModelProto", *, reference: bool = False) -> ModelProto:
    """Parse a serialized ModelProto (see the module docstring); ValueError names the field and offset.

    The pieces are read by the Rust core when it is built (`tinyllm._core.read_spm_table`, the
    same pieces and the same errors as this module's reader, several times faster), else, or with
    `reference=True`, by the readable reader below."""
    data = bytes(data)
    core = _native.core
    if core is not None and not reference:
        return _read_with_core(core, data, where)
    pieces: list = []
    start = _fast_pieces(data, 0, pieces)
    fields = _decode(data[start:], "ModelProto", _MODEL_SCHEMA, where, start, first={1: len(pieces)})
    if pieces:
        fields["pieces"] = pieces + fields.get("pieces", [])
    return ModelProto(pieces=fields.get("pieces", []), trainer_spec=fields.get("trainer_spec", TrainerSpec()),
                      normalizer_spec=fields.get("normalizer_spec", NormalizerSpec()),
                      denormalizer_spec=fields.get("denormalizer_spec"))


_TOP_SCHEMA = {number: spec for number, spec in _MODEL_SCHEMA.items() if number != 1}


def _read_with_core(core, data: bytes, where: str) -> ModelProto:
    """The Rust reader cuts out the pieces (field 1) and hands back the other top-level fields in
    file order, with the first error it met; those fields are decoded here first, so an error in
    one of them that comes earlier in the file wins, as in the reference."""
    table, others, error = core.read_spm_table(data, where)
    fields = _decode_fields((Field(*f) for f in others), _TOP_SCHEMA, where)
    if error is not None:
        raise ValueError(error)
    return ModelProto.from_table(table, fields.get("trainer_spec", TrainerSpec()),
                                 fields.get("normalizer_spec", NormalizerSpec()), fields.get("denormalizer_spec"))
