"""A tiny protobuf writer for tests and benches: serializes what `sentencepiece_proto` reads.

Only the fields the reader knows, in field-number order (as protobuf writers do), so that
`read_model_proto(write_model_proto(p)) == p` and sentencepiece itself loads the result.
"""

from __future__ import annotations

import struct

from tinyllm.tok.formats.sentencepiece_proto import (
    _MODEL_SCHEMA, _NORMALIZER_SCHEMA, _PIECE_SCHEMA, _TRAINER_SCHEMA, ModelProto, NormalizerSpec, TrainerSpec,
)


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32 values are written sign-extended, 10 bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def scalar(number: int, kind: str, value) -> bytes:
    if kind in ("int32", "enum", "uint64"):
        return key(number, 0) + varint(int(value))
    if kind == "bool":
        return key(number, 0) + varint(1 if value else 0)
    if kind == "float":
        return key(number, 5) + struct.pack("<f", value)
    if kind == "string":
        value = value.encode("utf-8")
    return key(number, 2) + varint(len(value)) + bytes(value)


def message(number: int, body: bytes) -> bytes:
    return key(number, 2) + varint(len(body)) + body


def _fields(obj, schema: dict, defaults) -> bytes:
    out = bytearray()
    for number in sorted(schema):
        name, kind, repeated = schema[number]
        value = getattr(obj, name)
        if repeated:
            for v in value:
                out += scalar(number, kind, v)
        elif defaults is None or value != getattr(defaults, name):
            out += scalar(number, kind, value)
    return bytes(out)


def write_piece(piece) -> bytes:
    return _fields(piece, _PIECE_SCHEMA, None)


def write_model_proto(proto: ModelProto) -> bytes:
    out = bytearray()
    for p in proto.pieces:
        out += message(1, write_piece(p))
    out += message(2, _fields(proto.trainer_spec, _TRAINER_SCHEMA, TrainerSpec()))
    out += message(3, _fields(proto.normalizer_spec, _NORMALIZER_SCHEMA, NormalizerSpec()))
    if proto.denormalizer_spec is not None:
        out += message(5, _fields(proto.denormalizer_spec, _NORMALIZER_SCHEMA, NormalizerSpec()))
    assert 1 in _MODEL_SCHEMA
    return bytes(out)
