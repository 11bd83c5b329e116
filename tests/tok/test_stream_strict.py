"""IncrementalDecoder(errors="strict"): ill-formed UTF-8 raises with its byte position, never U+FFFD.

Positions count the bytes of the stream since the last flush (every token's exact bytes joined).
On well-formed text the strict decoder returns exactly what the replace mode returns.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import tinyllm.tok
from tests.strategies import interesting_byte, texts, utf8_fragments
from tinyllm.tok import ByteTokenizer, IncrementalDecoder
from tinyllm.tok.stream import IllFormedUtf8Error
from tinyllm.tok.text.byte_alphabet import byte_alphabet


class Pieces:
    """A toy tokenizer whose id i is the bytes pieces[i]; with `positional`, a first token loses
    its leading space (as WordPiece and Metaspace decoders do)."""

    special_ids: dict = {}

    def __init__(self, pieces, positional: bool = False) -> None:
        self.pieces = list(pieces)
        self.vocab_size = len(self.pieces)
        self.decode_depends_on_position = positional

    def token_bytes(self, i: int, first: bool = False) -> bytes:
        raw = self.pieces[i]
        return raw[1:] if first and self.decode_depends_on_position and raw.startswith(b" ") else raw


@functools.cache
def gpt2():
    return tinyllm.tok.load("gpt2")


def strict_error(tok, ids) -> IllFormedUtf8Error:
    """Push ids one at a time, then flush; return the error raised."""
    d = IncrementalDecoder(tok, errors="strict")
    with pytest.raises(IllFormedUtf8Error) as caught:
        for i in ids:
            d.push(i)
        d.flush()
    return caught.value


def strict_text(tok, ids) -> tuple[list[str], str]:
    d = IncrementalDecoder(tok, errors="strict")
    return [d.push(i) for i in ids], d.flush()


def test_invalid_byte_is_reported_at_its_position():
    e = strict_error(ByteTokenizer(), list(b"ok\xff"))
    assert (e.position, e.bad_bytes, e.reason) == (2, b"\xff", "invalid start byte")
    assert isinstance(e, ValueError) and "byte 2" in str(e) and r"b'\xff'" in str(e)
    e = strict_error(Pieces([b"ok\xff"]), [0])  # the same bytes as one token
    assert (e.position, e.bad_bytes) == (2, b"\xff")


def test_positions_count_bytes_across_tokens():
    tok = Pieces([b"ab", b"\xe2\x82", b"\xac", b"c\xff", b"a"])
    assert strict_text(tok, [0, 1, 2]) == (["ab", "", "€"], "")
    assert (strict_error(tok, [0, 1, 2, 3]).position, strict_error(tok, [0, 1, 2, 3]).bad_bytes) == (6, b"\xff")
    e = strict_error(tok, [0, 1, 4])  # e2 82 then "a": the character is broken off
    assert (e.position, e.bad_bytes, e.reason) == (2, b"\xe2\x82", "invalid continuation byte")


def test_a_split_character_that_never_completes_fails_at_flush():
    d = IncrementalDecoder(ByteTokenizer(), errors="strict")
    assert [d.push(i) for i in (104, 0xE2, 0x82)] == ["h", "", ""]
    with pytest.raises(IllFormedUtf8Error) as caught:
        d.flush()
    assert (caught.value.position, caught.value.bad_bytes) == (1, b"\xe2\x82")
    # The flush still ended the stream: the next one starts clean, counting from 0 again.
    assert d.pending_bytes == b""
    assert d.push(104) == "h"
    with pytest.raises(IllFormedUtf8Error) as caught:
        d.push(0xFF)
    assert caught.value.position == 1


@pytest.mark.parametrize("tok, ids", [(ByteTokenizer(), [0x61, 0xED, 0xA0, 0x80]),
                                      (Pieces([b"a", b"\xed\xa0\x80"]), [0, 1]),
                                      (Pieces([b"a\xed", b"\xa0\x80"]), [0, 1])])
def test_an_encoded_surrogate_is_ill_formed(tok, ids):
    e = strict_error(tok, ids)
    assert (e.position, e.bad_bytes) == (1, b"\xed")
    assert IncrementalDecoder(tok).push_many(ids) == "a\ufffd\ufffd\ufffd"  # replace mode: three U+FFFD


def test_a_push_that_raises_changes_nothing():
    d = IncrementalDecoder(ByteTokenizer(), errors="strict")
    assert d.push(0xED) == ""
    with pytest.raises(IllFormedUtf8Error):
        d.push(0xA0)  # ED A0 would be a surrogate
    assert d.pending_bytes == b"\xed"
    assert (d.push(0x9F), d.push(0x80), d.flush()) == ("", "\ud7c0", "")  # ED 9F 80 is U+D7C0


def test_position_dependent_tokens_are_checked_with_their_first_flag():
    tok = Pieces([b" a", b"\xff"], positional=True)
    d = IncrementalDecoder(tok, errors="strict")
    for _ in range(2):  # a flush makes the next token a first one again
        assert d.push(0) == "a"
        with pytest.raises(IllFormedUtf8Error) as caught:
            d.push(1)
        assert caught.value.position == 1  # " a" as the first token is the one byte "a"
        d.flush()


def test_pipeline_tokenizer_is_checked_through_its_token_bytes():
    tok = gpt2()
    ids = tok.encode("ok") + [tok.token_to_id(byte_alphabet()[0xFF])]
    e = strict_error(tok, ids)
    assert (e.position, e.bad_bytes) == (2, b"\xff")
    robot = tok.encode(" 🤖")  # a space and the emoji's four bytes, split across tokens
    assert len(robot) > 1
    e = strict_error(tok, robot[:-1])
    assert (e.position, e.bad_bytes[:1]) == (1, b"\xf0")


def test_bad_errors_values_and_tokenizers_without_bytes():
    for bad in ("ignore", "STRICT", None, 1):
        with pytest.raises(ValueError, match=rf"errors = {bad!r}; expected 'replace' or 'strict'"):
            IncrementalDecoder(ByteTokenizer(), errors=bad)

    class TextOnly:
        vocab_size = 2
        special_ids: dict = {}

        def decode(self, ids, skip_special=False):
            return "".join("ab"[i] for i in ids)

    with pytest.raises(ValueError, match="errors = 'strict' needs the tokenizer's exact token bytes"):
        IncrementalDecoder(TextOnly(), errors="strict")
    assert IncrementalDecoder(TextOnly()).push_many([0, 1]) == "ab"  # replace mode still works


@given(texts)
def test_strict_equals_replace_and_decode_on_valid_text(text):
    for tok in (gpt2(), ByteTokenizer()):
        ids = tok.encode(text)
        replace = IncrementalDecoder(tok)
        expected = ([replace.push(i) for i in ids], replace.flush())
        assert strict_text(tok, ids) == expected
        assert "".join(expected[0]) + expected[1] == tok.decode(ids)


# Short fragments end often inside a character, where strictness matters.
short_fragments = st.lists(st.lists(interesting_byte, max_size=3).map(bytes), max_size=12)
# A lead byte whose allowed second bytes are restricted (E0, ED, F0, F4) or not, then a second
# byte at a range edge, as separate tokens, then maybe a continuation byte.
split_leads = st.tuples(st.sampled_from(b"\xc2\xe0\xe2\xed\xf0\xf4"),
                        st.sampled_from(b"\x7f\x80\x8f\x90\x9f\xa0\xbf"),
                        st.sampled_from([b"", b"\x80", b"\x80\x80"])).map(lambda t: [bytes(t[:1]), bytes(t[1:2]), t[2]])


@given(st.one_of(st.lists(utf8_fragments, max_size=8), short_fragments, split_leads))
@example([b"\xed", b"\xa0", b"\x80"])
def test_strict_agrees_with_python_on_any_bytes_and_any_split(fragments):
    """The error is Python's one-shot strict error; until it, strict pushes return what the
    replace mode returns, and never a U+FFFD that stands for bad bytes."""
    tok = Pieces(fragments)
    data = b"".join(fragments)
    strict, replace = IncrementalDecoder(tok, errors="strict"), IncrementalDecoder(tok)
    shown, error = [], None
    try:
        for i in range(len(fragments)):
            shown.append(strict.push(i))
            assert shown[-1] == replace.push(i)
        shown.append(strict.flush())
    except IllFormedUtf8Error as e:
        error = e
    try:
        want = data.decode("utf-8")
    except UnicodeDecodeError as e:
        assert error is not None and (error.position, error.bad_bytes) == (e.start, data[e.start : e.end])
        assert data[: e.start].decode("utf-8").startswith("".join(shown))
    else:
        assert error is None and "".join(shown) == want
