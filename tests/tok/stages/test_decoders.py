"""ByteFallback, Fuse, Strip, Replace and Sequence decoders: one-shot decoding equals Hugging
Face's for any token sequence, and streaming equals one-shot."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinyllm.tok import IncrementalDecoder
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.formats.tokenizer_json import parse_document

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

BYTES = [f"<0x{b:02X}>" for b in (0x20, 0x41, 0x61, 0x7F, 0x80, 0xA9, 0xAC, 0xBF, 0xC3, 0xE2, 0x82, 0xF0, 0x9F,
                                  0x98, 0x80, 0xFF, 0xC0)] + ["<0xe2>", "<0xZZ>", "<0x41"]
TOKENS = BYTES + ["▁", "▁▁", "▁a", "a▁", "a", "b", "ab", " ", "  ", "x y ", "é", "日本", "😀", "Ġ", "Ġa", "ab▁",
                  "<unk>", "##a", " .", "X", "aab", "ba"]


def llama2():
    return decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                              decoders.Strip(" ", 1, 0)])


DECODERS = {
    "llama2": llama2,
    "gemma": lambda: decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]),
    "metaspace": lambda: decoders.Metaspace(),
    "bytefallback": lambda: decoders.ByteFallback(),
    "fuse": lambda: decoders.Fuse(),
    "strip": lambda: decoders.Strip(" ", 2, 1),
    "replace-regex": lambda: decoders.Replace(Regex("a+|▁"), "-"),
    "replace-empty": lambda: decoders.Replace("", "|"),
    "bytefallback-metaspace": lambda: decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace()]),
    "fuse-strip-both": lambda: decoders.Sequence([decoders.Fuse(), decoders.Strip("a", 1, 2)]),
    "fuse-replace-strip": lambda: decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Replace("ab", "X"),
                                                     decoders.Strip("X", 0, 2)]),
    "fuse-replace-empty": lambda: decoders.Sequence([decoders.Fuse(), decoders.Replace("", "|")]),
    "fuse-metaspace": lambda: decoders.Sequence([decoders.Fuse(), decoders.Metaspace(), decoders.Fuse()]),
    "bytelevel-strip": lambda: decoders.Sequence([decoders.ByteFallback(), decoders.ByteLevel(), decoders.Strip(" ", 1, 1)]),
    "wordpiece-seq": lambda: decoders.Sequence([decoders.ByteFallback(), decoders.WordPiece(), decoders.Fuse()]),
    "strip-per-token-then-fuse": lambda: decoders.Sequence([decoders.Strip("▁", 1, 1), decoders.ByteFallback(),
                                                            decoders.Fuse(), decoders.Replace("aa", "b")]),
}


def ours_of(hf_decoder):
    doc = {"model": {"type": "BPE", "vocab": {}, "merges": []}, "decoder": json.loads(hf_decoder.__getstate__())}
    return parse_document(doc).decoder


token_lists = st.lists(st.sampled_from(TOKENS), max_size=14)


def hf_decode(decoder, tokens):
    try:
        return decoder.decode(tokens)
    except BaseException:  # HF's Strip panics on some inputs (empty token with stop > 0)
        return None


@pytest.mark.parametrize("name", sorted(DECODERS))
@settings(max_examples=300)
@given(tokens=token_lists)
def test_decode_and_stream_equal_hf(name, tokens):
    theirs = DECODERS[name]()
    ours = ours_of(theirs)
    want = hf_decode(theirs, tokens)
    got = ours.decode_tokens(tokens)
    if want is not None:
        assert got == want
    stream = ours.stream()
    chunks = [stream.push(t) for t in tokens]
    assert "".join(chunks) + stream.flush() == got
    assert stream.pending_bytes == b""
    # A second stream after flush starts over.
    assert "".join(stream.push(t) for t in tokens) + stream.flush() == got


def test_llama2_strips_only_the_first_space_of_the_whole_text():
    ours = ours_of(llama2())
    tokens = ["▁Hello", "▁world", "<0xE2>", "<0x82>", "<0xAC>", "▁"]
    assert ours.decode_tokens(tokens) == llama2().decode(tokens) == "Hello world€ "
    stream = ours.stream()
    # A complete run is still held: one more byte token could make the whole run invalid.
    assert [stream.push(t) for t in tokens] == ["Hello", " world", "", "", "", "€ "]


def test_a_byte_run_is_held_until_decided():
    stream = ours_of(decoders.ByteFallback()).stream()
    assert stream.push("<0xE2>") == "" and stream.pending_bytes == b"\xe2"
    assert stream.push("<0x82>") == ""
    assert stream.push("<0x41>") == "\ufffd\ufffd\ufffd"  # the run can no longer be valid: one U+FFFD per byte
    assert stream.push("<0x41>") == "\ufffd"
    assert stream.flush() == ""


@pytest.mark.parametrize("decoder, where", [
    ({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "ByteFallback"}]}, "decoder.decoders[1]: ByteFallback after"),
    ({"type": "Sequence", "decoders": [{"type": "ByteLevel"}, {"type": "Replace", "pattern": {"Regex": "a"}, "content": ""}]},
     "decoder.decoders[1]: a Regex Replace after"),
    ({"type": "Strip", "content": "ab", "start": 1, "stop": 0}, "decoder.content"),
    ({"type": "Strip", "content": " ", "start": -1, "stop": 0}, "decoder.start"),
    ({"type": "CTC"}, 'decoder.type: "CTC" is not supported'),
])
def test_refused_decoders_name_the_path(decoder, where):
    with pytest.raises(ValueError) as e:
        parse_document({"model": {"type": "BPE", "vocab": {}, "merges": []}, "decoder": decoder})
    assert where in str(e.value)


# -- through a tokenizer: IncrementalDecoder == decode == HF's decode -----------------------------
def unigram_with(decoder, metaspace=False):
    vocab = [("<unk>", 0.0)] + [(t, -1.0 - k / 10) for k, t in enumerate(dict.fromkeys(TOKENS[:17] + TOKENS[20:])) if t != "<unk>"]
    hf = Tokenizer(models.Unigram(vocab, unk_id=0))
    hf.pre_tokenizer = pre_tokenizers.Metaspace() if metaspace else None
    hf.decoder = decoder
    return hf, tokenizer_from_document(json.loads(hf.to_str()))


TOKENIZER_DECODERS = {"llama2": (llama2, False), "gemma": (DECODERS["gemma"], False),
                      "t5-metaspace": (lambda: decoders.Metaspace(), True)}


@pytest.mark.parametrize("name", sorted(TOKENIZER_DECODERS))
@settings(max_examples=200)
@given(data=st.data())
def test_incremental_decoder_equals_decode_equals_hf(name, data):
    make, metaspace = TOKENIZER_DECODERS[name]
    hf, ours = unigram_with(make(), metaspace)
    ids = data.draw(st.lists(st.integers(0, ours.vocab_size - 1), max_size=14))
    want = hf.decode(ids, skip_special_tokens=False)
    assert ours.decode(ids) == want
    d = IncrementalDecoder(ours)
    assert "".join(d.push(i) for i in ids) + d.flush() == want


@pytest.mark.parametrize("name", sorted(DECODERS))
@given(tokens=token_lists)
def test_token_bytes_are_exact_where_the_decoder_says_so(name, tokens):
    ours = ours_of(DECODERS[name]())
    joined = b"".join(ours.token_bytes(t, k == 0) for k, t in enumerate(tokens)).decode("utf-8", "replace")
    if ours.token_bytes_exact:
        assert joined == ours.decode_tokens(tokens)


def test_literal_replace_after_fuse_streams_like_the_left_to_right_scan():
    """Found by hypothesis: in "aaa" the matches of "aa" are [0, 2); the last "a" may still start a
    match with the next token, so the stream must hold it (HF gives "bb" for four a's)."""
    theirs = DECODERS["strip-per-token-then-fuse"]()
    tokens = ["<0x61>", "<0x61>", "▁a", "▁a"]
    ours = ours_of(theirs)
    stream = ours.stream()
    assert "".join(stream.push(t) for t in tokens) + stream.flush() == ours.decode_tokens(tokens) \
        == hf_decode(theirs, tokens) == "bb"
