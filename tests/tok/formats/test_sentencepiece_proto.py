"""The protobuf wire reader of `.model` files: round trips, unknown fields, and strict errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from tests.support.spm_proto_writer import key, message, varint, write_model_proto
from tinyllm._record import fields
from tinyllm.tok.formats.sentencepiece_proto import (
    ModelProto, NormalizerSpec, Piece, TrainerSpec, iter_fields, read_model_proto, read_varint,
)

f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8)
int32 = st.integers(-(2**31), 2**31 - 1)

pieces = st.lists(st.builds(Piece, text, f32, st.sampled_from([1, 2, 3, 4, 5, 6])), max_size=20)
trainers = st.builds(TrainerSpec, model_type=st.sampled_from([1, 2, 3, 4]), vocab_size=int32,
                     split_by_whitespace=st.booleans(), treat_whitespace_as_suffix=st.booleans(),
                     split_digits=st.booleans(), byte_fallback=st.booleans(),
                     control_symbols=st.lists(text, max_size=3), user_defined_symbols=st.lists(text, max_size=3),
                     unk_id=int32, bos_id=int32, eos_id=int32, pad_id=int32, unk_surface=st.text(max_size=4),
                     bos_piece=text, character_coverage=f32)
normalizers = st.builds(NormalizerSpec, name=st.text(max_size=10), precompiled_charsmap=st.binary(max_size=40),
                        add_dummy_prefix=st.booleans(), remove_extra_whitespaces=st.booleans(),
                        escape_whitespaces=st.booleans())
protos = st.builds(ModelProto, pieces, trainers, normalizers, st.none() | normalizers)


@given(protos)
def test_round_trip_through_the_wire_format(proto):
    assert read_model_proto(write_model_proto(proto)) == proto


@given(st.integers(0, 2**64 - 1))
def test_varint_round_trip(value):
    data = varint(value)
    assert read_varint(data, 0, "x") == (value, len(data))


def test_negative_int32_is_ten_bytes_sign_extended():
    proto = ModelProto([], TrainerSpec(pad_id=-1, unk_id=-(2**31)), NormalizerSpec(), None)
    data = write_model_proto(proto)
    assert varint(-1) == b"\xff" * 9 + b"\x01"
    assert read_model_proto(data).trainer_spec.pad_id == -1
    assert read_model_proto(data).trainer_spec.unk_id == -(2**31)


unknown_fields = st.lists(st.tuples(st.integers(60, 1000), st.sampled_from([0, 1, 2, 5]), st.binary(max_size=9)),
                          max_size=5)


def _unknown(fields) -> bytes:
    out = b""
    for number, wire, payload in fields:
        if wire == 0:
            out += key(number, 0) + varint(int.from_bytes(payload[:8], "little"))
        elif wire == 1:
            out += key(number, 1) + payload[:8].ljust(8, b"\0")
        elif wire == 5:
            out += key(number, 5) + payload[:4].ljust(4, b"\0")
        else:
            out += message(number, payload)
    return out


@given(protos, unknown_fields, unknown_fields)
def test_unknown_fields_are_skipped_everywhere(proto, before, after):
    data = _unknown(before) + write_model_proto(proto) + _unknown(after)
    assert read_model_proto(data) == proto
    # inside a piece too
    if proto.pieces:
        p = proto.pieces[0]
        body = _unknown(before) + message(1, p.piece.encode()) + key(2, 5) + struct.pack("<f", p.score) + _unknown(after)
        body += key(3, 0) + varint(p.type)
        assert read_model_proto(message(1, body)).pieces[0] == p


@given(protos, st.data())
def test_every_truncation_is_a_value_error_or_a_shorter_message(proto, data):
    blob = write_model_proto(proto)
    cut = data.draw(st.integers(0, max(len(blob) - 1, 0)))
    try:
        read_model_proto(blob[:cut])
    except ValueError as e:
        assert " at byte " in str(e) or "missing" in str(e) or "UTF-8" in str(e), str(e)


@given(st.binary(max_size=200))
def test_garbage_never_raises_anything_but_value_error(blob):
    try:
        read_model_proto(blob)
    except ValueError:
        pass


def test_last_value_wins_for_a_singular_field():
    body = key(4, 0) + varint(10) + key(4, 0) + varint(20)
    assert read_model_proto(message(2, body)).trainer_spec.vocab_size == 20


def test_defaults_apply_to_absent_fields():
    proto = read_model_proto(b"")
    assert proto.pieces == [] and proto.denormalizer_spec is None
    assert proto.trainer_spec.unk_surface == " \u2047 " and proto.trainer_spec.pad_id == -1
    assert proto.normalizer_spec.add_dummy_prefix is True


@pytest.mark.parametrize("data, message_part", [
    (b"\x0a\x05\x0a\x01a", "ModelProto.pieces[0] at byte 1: length 5 runs past the end"),
    (b"\x0d\x00\x00\x00\x00", "ModelProto.pieces[0] at byte 1: found wire type 5"),
    (b"\x12\x01\x20", "ModelProto.trainer_spec.vocab_size at byte 3: varint runs past the end"),
    (b"\x12\x02\x25\x00", "ModelProto.trainer_spec.vocab_size at byte 3: fixed32 value needs 4 bytes"),
    (b"\x0b", "at byte 1: wire type 3 (start-group) is not supported"),
    (b"\x00", "at byte 0: field number 0 is invalid"),
    (b"\x0a\x03\x0a\x01\xff", "ModelProto.pieces[0].piece at byte 4: not valid UTF-8"),
    (b"\x0a\x05\x0a\x01a\x18\x09", "ModelProto.pieces[0].type: found 9"),
    (b"\x0a\x02\x18\x01", "ModelProto.pieces[0].piece: missing"),
    (b"\x80" * 11, "ModelProto (field key) at byte 0: varint exceeds 64 bits"),
])
def test_bad_files_name_the_field_and_offset(data, message_part):
    with pytest.raises(ValueError) as e:
        read_model_proto(data)
    assert message_part in str(e.value)


def test_iter_fields_reports_offsets_from_the_file_start():
    fields = list(iter_fields(b"\x08\x96\x01\x12\x02hi", "m"))
    assert [(f.number, f.wire_type, f.value, f.offset) for f in fields] == [(1, 0, 150, 1), (2, 2, b"hi", 5)]


def test_dataclass_fields_match_the_schema_names():
    from tinyllm.tok.formats.sentencepiece_proto import _NORMALIZER_SCHEMA, _TRAINER_SCHEMA
    names = {f.name for f in fields(TrainerSpec)}
    assert {name for name, _, _ in _TRAINER_SCHEMA.values()} <= names
    assert {name for name, _, _ in _NORMALIZER_SCHEMA.values()} <= {f.name for f in fields(NormalizerSpec)}
