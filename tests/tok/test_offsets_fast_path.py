"""encode_pair / encode_structured on the Rust engines (`encode_offsets`) equal the reference.

Every field of the EncodedSequence (ids, pieces, mask, offsets in both coordinates, type ids,
sequence ids) must be the same as `tok.use_reference()` gives, for the shared tokenizer files and
small trained documents of every model kind, over arbitrary text with combining marks, CJK,
emoji, added-token text and whitespace runs; a spy proves the engine produced the offsets.
"""

from __future__ import annotations

import copy
import functools
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import hf_plain, ours, require_shared, SHARED
from tests.strategies import known_to_both, texts
from tests.support import stress
from tests.support.rust import assert_fast, needs_rust
from tinyllm import SlowPathWarning

pytestmark = needs_rust

COORDINATES = ("raw_codepoints", "raw_utf8_bytes")


class _Spy:
    """Forwards to an engine and counts `encode_offsets` calls."""

    def __init__(self, engine) -> None:
        self._engine = engine
        self.calls = 0

    def encode_offsets(self, *args):
        self.calls += 1
        return self._engine.encode_offsets(*args)

    def __getattr__(self, name):
        return getattr(self._engine, name)


def _spied(tok):
    """A copy of `tok` whose engine is spied on, and the spy."""
    assert_fast(tok)
    spied = copy.copy(tok)
    spied._fast = _Spy(tok._fast)
    return spied, spied._fast


# -- the tokenizers --------------------------------------------------------------------------------


def _shared(name: str):
    return ours(name)


def _spiece():
    from tinyllm.tok import load

    return load(require_shared(SHARED / "tokenizers" / "rut5-base" / "spiece.model"))


def _hf_doc(builder: str, **options):
    from tests.support import hf_models
    from tinyllm.tok.load import tokenizer_from_document

    return tokenizer_from_document(getattr(hf_models, builder)(**options))


def _with_pre(builder: str, pre_tokenizer: dict):
    from tests.support import hf_models
    from tinyllm.tok.load import tokenizer_from_document

    return tokenizer_from_document(dict(getattr(hf_models, builder)(), pre_tokenizer=pre_tokenizer))


def _spm(name: str):
    from tests.support.spm_models import spm_model
    from tinyllm.tok.formats.sentencepiece import parts_from_bytes
    from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer

    return SentencePieceTokenizer(parts_from_bytes(spm_model(name), name))


def _family(name: str):
    from tests.support.families import family_tokenizer

    tok, warned = family_tokenizer(name)  # built once per session, shared with the other family tests
    assert not warned, f"{name}: {warned}"
    return tok


MAKERS = {
    "bert-base-uncased": lambda: _shared("bert-base-uncased"),
    "gpt2": lambda: _shared("gpt2"),
    "smollm2": lambda: _shared("smollm2"),
    "gpt-4o-o200k": lambda: _shared("gpt-4o-o200k"),
    "rut5-base": lambda: _shared("rut5-base"),
    "rut5-base/spiece.model": _spiece,
    "bpe-metaspace": lambda: _hf_doc("bpe_doc"),
    "bpe-replace-no-pre": lambda: _hf_doc("bpe_doc", pre="none"),
    "bpe-unfused-few-bytes": lambda: _hf_doc("bpe_doc", fuse_unk=False, bytes_kept=range(0x30, 0x80)),
    "bpe-no-unk-no-bytes": lambda: _hf_doc("bpe_doc", byte_fallback=False, unk=False),
    "bpe-prefix-suffix": lambda: _hf_doc("bpe_doc", prefix="##", suffix="</w>"),
    "unigram-bytes": lambda: _hf_doc("unigram_doc"),
    "unigram-no-bytes": lambda: _hf_doc("unigram_doc", byte_fallback=False),
    "wordlevel-strip": lambda: _hf_doc("wordlevel_doc"),
    "wordlevel-digits-split": lambda: _with_pre("wordlevel_doc", {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Whitespace"}, {"type": "Digits", "individual_digits": True}]}),
    "spm-bpe-bytes": lambda: _spm("bpe_bytes"),
    "spm-bpe-suffix": lambda: _spm("bpe_suffix"),
    "spm-llama": lambda: _spm("llama"),
    "spm-unigram-cf": lambda: _spm("unigram_cf"),
    "spm-unigram-identity": lambda: _spm("unigram_identity"),
    "llama3": lambda: _family("llama3"),
    "deepseek-v3": lambda: _family("deepseek-v3"),
    "qwen2": lambda: _family("qwen2"),  # NFC: composition pieces align on the engine as on the reference
}


@functools.lru_cache(maxsize=None)
def tokenizer(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)  # every one of these must get its engine
        tok = MAKERS[name]()
    # encode_structured stamps every result with the tokenizer's semantic hash, computed once per
    # object and cached in its __dict__; computed here, the copies each check makes (`_spied`,
    # `use_reference`) share it instead of re-hashing the whole vocabulary (seconds at 200k) twice
    # per example. No field compared below depends on it.
    assert len(tok.semantic_hash) == 64
    return tok


# -- the texts -------------------------------------------------------------------------------------

_PARTS = (stress.WHITESPACE + stress.MARKS + stress.EMOJI + stress.LETTERS + stress.PUNCT + stress.DIGITS
          + ["e\u0301", "\u0301\u0316", "ﬁ", "①", "Ⅻ", "㍿", "\u3000", "  ", "   ", "\t\n", "İ", "ǅ", "ß"])


@st.composite
def mixed_text(draw, added: tuple):
    """Pieces from the stress parts, added-token contents and arbitrary text, joined."""
    piece = st.one_of(st.sampled_from(_PARTS), texts.map(known_to_both).map(lambda t: t[:6]),
                      *([st.sampled_from(added)] if added else []))
    return "".join(draw(st.lists(piece, max_size=10)))


def _fields(enc) -> tuple:
    return (enc.ids, enc.pieces, enc.special_tokens_mask, enc.offsets, enc.offset_coordinate, enc.type_ids,
            enc.sequence_ids)


def _check_same(tok, a, b, *, add_special: bool, allowed, coordinate: str) -> None:
    """One text (through encode_structured) or a pair (encode_pair): every field equal."""
    spied, spy = _spied(tok)
    reference = tok.use_reference()
    options = dict(allowed_special=allowed, offset_coordinate=coordinate)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)  # never silently on the reference
        if b is None:
            fast = spied.encode_structured(a, add_special, **options)
            slow = reference.encode_structured(a, add_special, **options)
        else:
            fast = spied.encode_pair(a, b, add_special, **options)
            slow = reference.encode_pair(a, b, add_special, **options)
    assert _fields(fast) == _fields(slow), (a, b, coordinate)
    assert spy.calls == (1 if b is None else 2)  # the engine produced every offset


@pytest.mark.parametrize("name", list(MAKERS))
@settings(max_examples=15)
@given(data=st.data())
def test_fast_pairs_equal_the_reference(name, data):
    tok = tokenizer(name)
    added = tuple(t.content for t in tok.added_tokens)
    a = data.draw(mixed_text(added), label="a")
    b = data.draw(st.none() | mixed_text(added), label="b")
    add_special = data.draw(st.booleans(), label="add_special")
    allowed = data.draw(st.sampled_from([(), "all"]), label="allowed_special")
    coordinate = data.draw(st.sampled_from(COORDINATES), label="offset_coordinate")
    _check_same(tok, a, b, add_special=add_special, allowed=allowed, coordinate=coordinate)


@pytest.mark.parametrize("name", list(MAKERS))
def test_fast_pairs_equal_the_reference_on_stress_strings(name):
    tok = tokenizer(name)
    # Short ones: the reference's BPE is quadratic in a piece's length.
    strings = [t for t in stress.stress_strings(60, seed=7) if len(t) <= 60][:24]
    for k, (a, b) in enumerate(zip(strings, strings[1:] + [None])):
        _check_same(tok, a, b if k % 3 else None, add_special=True, allowed="all", coordinate=COORDINATES[k % 2])


# -- against Hugging Face ----------------------------------------------------------------------------

_BERT_TEXT = st.lists(st.sampled_from(["Hello", "WORLD", "é", "e\u0301", "中文", "日本", ",", "!", " ", "  ", "\u00a0",
                                       "unwanted", "don't", "İ", "ß", "Ⅷ", "😀", "\t", "[SEP]", "x\u0300\u0323"]),
                      max_size=12).map("".join)


@settings(max_examples=100)
@given(_BERT_TEXT, _BERT_TEXT)
def test_bert_pair_offsets_equal_hf(a, b):
    tok = tokenizer("bert-base-uncased")
    spied, spy = _spied(tok)
    mine = spied.encode_pair(a, b, allowed_special="all")  # HF matches special text too
    theirs = hf_plain("bert-base-uncased").encode(a, b)
    assert spy.calls == 2
    assert mine.ids == theirs.ids
    assert mine.type_ids == theirs.type_ids
    assert mine.sequence_ids == theirs.sequence_ids
    # Hugging Face gives inserted specials (0, 0); tinyllm gives them no span.
    assert [o for o in mine.offsets if o is not None] == [
        tuple(o) for o, s in zip(theirs.offsets, theirs.sequence_ids) if s is not None]


def test_byte_level_split_character_keeps_exact_bytes_in_pairs():
    tok = tokenizer("gpt2")
    enc = tok.encode_pair("a€", "😀", False, offset_coordinate="raw_utf8_bytes")
    pieces = [tok.token_bytes(i) for i in enc.ids]
    sources = ["a€".encode(), "😀".encode()]
    for piece, (s, e), seq in zip(pieces, enc.offsets, enc.sequence_ids, strict=True):
        assert sources[seq][s:e] == piece


def test_a_pipeline_the_engine_cannot_span_warns_and_uses_the_reference():
    tok = tokenizer("gpt2")
    broken = copy.copy(tok)

    class NoSpans(_Spy):
        def encode_offsets(self, *args):
            raise ValueError("not supported by the fast path: offsets (test)")

    broken._fast = NoSpans(tok._fast)
    with pytest.warns(SlowPathWarning, match="offsets"):
        enc = broken.encode_structured("hello world")
    assert _fields(enc) == _fields(tok.use_reference().encode_structured("hello world"))


@pytest.mark.parametrize("name", ["bert-base-uncased", "gpt2", "rut5-base/spiece.model"])
def test_offsets_batch_equals_one_by_one(name):
    tok = tokenizer(name)
    tok.encode_structured("warm")  # a byte-level engine gets its token lengths on first use
    texts = stress.stress_strings(60, seed=3)
    matchable = sorted(tok._always)
    batch = tok._fast.encode_offsets_batch(texts, matchable)
    assert batch == [tok._fast.encode_offsets(t, matchable) for t in texts]
    assert [list(b[0]) for b in batch] == tok.encode_batch(texts)
