"""StreamEncoder: only committed ids leave, equal to batch encoding of each unit; cancel drops the rest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import ours
from tinyllm.seq.stream_encode import StreamEncoder
from tinyllm.tok.text.byte_alphabet import token_string
from tinyllm.tok.models.bpe import BPEModel


def seed_table():
    vocab = {token_string(bytes([b])): b for b in range(256)}
    pieces = [b"ab", b"bc", b"abc", None, b"\xe2\x82"]
    for k, piece in enumerate(pieces):
        if piece is not None:
            vocab[token_string(piece)] = 256 + k
    merges = [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"\xe2", b"\x82")]
    model = BPEModel(vocab, [(token_string(x), token_string(y)) for x, y in merges])
    return lambda data: [i for i, _, _ in model.tokenize(token_string(data))]


def test_abc_trace():
    s = StreamEncoder(seed_table())
    assert (s.push(b"a"), s.provisional_ids) == ([], [97])
    assert (s.push(b"b"), s.provisional_ids) == ([], [256])
    assert s.push(b"c", unit_boundary=True) == [258]
    assert s.committed_ids == [258] and s.pending_bytes == b""
    # Encoding the chunks one by one would have given a different, non-canonical answer.
    assert [seed_table()(c) for c in (b"a", b"b", b"c")] == [[97], [98], [99]]


def test_euro_trace_and_cancel():
    s = StreamEncoder(seed_table())
    assert (s.push(b"\xe2"), s.provisional_ids) == ([], [226])
    assert (s.push(b"\x82"), s.provisional_ids) == ([], [260])
    assert s.push(b"\xac", unit_boundary=True) == [260, 172]
    c = StreamEncoder(seed_table())
    c.push(b"\xe2")
    c.push(b"\x82")
    assert c.cancel() == []
    assert (c.committed_ids, c.pending_bytes, c.provisional_ids) == ([], b"", [])


def test_boundary_inside_a_character_is_refused_and_loses_nothing():
    tok = ours("gpt2")
    s = StreamEncoder(tok)
    s.push("price: ")
    with pytest.raises(ValueError, match="inside a UTF-8 character"):
        s.push(b"\xe2\x82", unit_boundary=True)
    assert s.pending_bytes == b"price: \xe2\x82" and s.committed_ids == []
    assert s.push(b"\xac", unit_boundary=True) == tok.encode("price: €")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=4), st.data())
def test_committed_ids_equal_batch_encoding_of_each_unit(units, data):
    tok = ours("gpt2")
    s = StreamEncoder(tok)
    emitted = []
    for unit in units:
        raw = unit.encode("utf-8")
        cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=4)))
        pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
        for piece in pieces[:-1]:
            assert s.push(piece) == []
        emitted += s.push(pieces[-1], unit_boundary=True)
    assert emitted == s.committed_ids == [i for u in units for i in tok.encode(u)]
    assert "<|endoftext|>" not in units or 50256 not in emitted


def test_special_text_in_a_stream_stays_ordinary():
    tok = ours("gpt2")
    s = StreamEncoder(tok)
    s.push("<|endof")
    assert 50256 not in s.push("text|>", unit_boundary=True)
