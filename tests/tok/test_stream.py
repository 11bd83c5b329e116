"""Streaming decode: chunks concatenate to decode(all ids), for any tokenizer (seed 000)."""

import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import raw_bytes, texts, utf8_fragments
from tinyllm.tok import ByteTokenizer, CharTokenizer, IncrementalDecoder
from tinyllm.tok.text.utf8 import Utf8StreamDecoder


def stream(tok, ids, **kw):
    d = IncrementalDecoder(tok, **kw)
    chunks = [d.push(i) for i in ids]
    tail = d.flush()
    return chunks, tail


def test_seed_example_streams_e_acute_then_replacement():
    chunks, tail = stream(ByteTokenizer(), [195, 169, 255])
    assert chunks == ["", "é", "\ufffd"]
    assert tail == ""


def test_split_euro_sign_is_emitted_once():
    d = IncrementalDecoder(ByteTokenizer())
    assert d.push(0xE2) == ""
    assert d.push(0x82) == ""
    assert d.pending_bytes == b"\xe2\x82"
    assert d.push(0xAC) == "€"
    assert d.pending_bytes == b""


def test_unfinished_character_is_flushed_as_one_replacement():
    chunks, tail = stream(ByteTokenizer(), [104, 226, 130])
    assert chunks == ["h", "", ""]
    assert tail == "\ufffd"


def test_push_rejects_bad_ids():
    d = IncrementalDecoder(ByteTokenizer())
    for bad in (256, -1, True, 1.0, "a", None):
        with pytest.raises(ValueError, match="push: token_id"):
            d.push(bad)
    assert d.push(104) == "h"  # the decoder is still usable


@given(raw_bytes)
def test_streaming_equals_decode_on_random_bytes(data):
    tok = ByteTokenizer()
    chunks, tail = stream(tok, list(data))
    assert "".join(chunks) + tail == tok.decode(list(data))


@given(st.lists(utf8_fragments, max_size=8))
def test_reference_decoder_matches_python_codec_on_any_chunking(fragments):
    ours = Utf8StreamDecoder()
    codec = codecs.getincrementaldecoder("utf-8")("replace")
    got = "".join(ours.push(f) for f in fragments) + ours.flush()
    want = "".join(codec.decode(f) for f in fragments) + codec.decode(b"", final=True)
    assert got == want == b"".join(fragments).decode("utf-8", "replace")


@given(st.lists(texts, min_size=1, max_size=4), st.lists(st.integers(0, 10_000), max_size=30))
def test_char_tokenizer_stream_equals_decode(corpus, picks):
    tok = CharTokenizer.train(corpus, specials=("<bos>", "<eos>"))
    ids = [p % tok.vocab_size for p in picks]
    for skip in (False, True):
        chunks, tail = stream(tok, ids, skip_special=skip)
        assert "".join(chunks) + tail == tok.decode(ids, skip_special=skip)


def test_works_for_a_tokenizer_without_token_bytes():
    class Upper:
        vocab_size = 3
        special_ids = {"<s>": 0}
        unk_id = None

        def decode(self, ids, skip_special=False):
            return "".join("<s>AB"[i + 2 if i else 0 : i + 3 if i else 3] for i in ids)

    chunks, tail = stream(Upper(), [0, 1, 2])
    assert "".join(chunks) + tail == "<s>AB"
    chunks, _ = stream(Upper(), [0, 1, 2], skip_special=True)
    assert chunks == ["", "A", "B"]
