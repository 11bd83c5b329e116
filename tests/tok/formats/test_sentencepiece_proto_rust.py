"""The Rust reader of `.model` pieces (`tinyllm._core.read_spm_table`) equals the readable one:
the same proto on valid files, the same ValueError message (field, offset, reason) on corrupt ones,
and the Rust reader provably ran."""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings, strategies as st

from tests.support.rust import count_core_calls, needs_rust
from tests.support.spm_proto_writer import key, message, varint, write_model_proto
from tests.tok.formats.test_sentencepiece_proto import _unknown, protos, unknown_fields
from tinyllm.tok.formats.sentencepiece_proto import read_model_proto

pytestmark = needs_rust


def _outcome(data: bytes, **kw) -> str:
    """What reading `data` gives: the proto's repr (so NaN scores compare equal), or the error."""
    try:
        proto = read_model_proto(data, **kw)
    except ValueError as e:
        return f"ValueError: {e}"
    return repr((proto, proto.columns()))


def assert_same(data: bytes) -> str:
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = count_core_calls(monkeypatch)
        fast = _outcome(data)
    assert calls == {"read_spm_table": 1}, "read_model_proto did not run the Rust reader"
    reference = _outcome(data, reference=True)
    assert fast == reference
    return fast


@given(protos, unknown_fields, unknown_fields)
def test_rust_reader_equals_reference_on_valid_files(proto, before, after):
    data = _unknown(before) + write_model_proto(proto) + _unknown(after)
    assert not assert_same(data).startswith("ValueError")


@st.composite
def corrupted(draw):
    """A valid file with truncations, flipped, inserted or deleted bytes."""
    blob = bytearray(write_model_proto(draw(protos)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(blob)))
        edit = draw(st.sampled_from(["cut", "set", "insert", "delete"]))
        if edit == "cut":
            del blob[at:]
        elif edit == "insert":
            blob[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif at < len(blob):
            if edit == "set":
                blob[at] = draw(st.integers(0, 255))
            else:
                del blob[at]
    return bytes(blob)


@settings(max_examples=400)
@given(corrupted())
def test_rust_reader_equals_reference_on_corrupt_files(data):
    assert_same(data)


@given(st.binary(max_size=200))
def test_rust_reader_equals_reference_on_garbage(data):
    assert_same(data)


def _piece_message(body: bytes) -> bytes:
    return message(1, body)


@given(st.binary(max_size=8), st.integers(-(2**63), 2**64 - 1), st.binary(max_size=6))
@example(b"\xe0\x80", 1, b"")  # invalid continuation
@example(b"\xe0\xa0", 1, b"")  # unexpected end
@example(b"\xed\xa0\x80", 1, b"")  # a surrogate
@example(b"a", 2**31, b"")  # type out of the int32 range
@example(b"a", -1, b"")  # type -1: sign-extended, then refused
def test_rust_reader_equals_reference_on_bad_pieces(text, kind, tail):
    body = message(1, text) + key(2, 5) + struct.pack("<f", 0.5) + key(3, 0) + varint(kind % 2**64) + tail
    data = _piece_message(body) + _piece_message(body[::-1])
    assert_same(data)


def test_errors_of_both_readers_name_the_same_field():
    data = message(1, message(1, b"a") + key(3, 0) + varint(9))
    assert assert_same(data).startswith("ValueError: ModelProto.pieces[0].type: found 9")
    data = message(1, message(1, b"\xc3")) + message(2, key(4, 0))
    assert "ModelProto.pieces[0].piece at byte 4: not valid UTF-8 (unexpected end of data" in assert_same(data)
    # an earlier error in a field decoded in Python wins over a later one in the pieces
    data = message(2, key(4, 0)) + message(1, b"\x18\x09")
    assert assert_same(data).startswith("ValueError: ModelProto.trainer_spec.vocab_size at byte 3: varint runs past")


def test_pieces_are_built_on_first_use_and_columns_follow_edits():
    data = write_model_proto(read_model_proto(message(1, message(1, b"a") + key(3, 0) + varint(2)), reference=True))
    proto = read_model_proto(data)
    assert "pieces" not in proto.__dict__
    assert proto.columns().texts == ["a"]
    proto.pieces.append(proto.pieces[0]._replace(piece="b"))
    assert proto.columns().texts == ["a", "b"]
