"""The Rust fast path of NFD, NFKD, StripAccents, Lowercase, Prepend, Whitespace, Punctuation,
CharDelimiterSplit and UnicodeScripts equals the Python reference and Hugging Face: each stage on
its own (hypothesis text, and one text holding every code point), then inside whole pipelines
(WordPiece, Unigram, character-level BPE, WordLevel, byte-level BPE) run by the Rust engines, on
hypothesis text and on the shared corpora.
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.stages import bert_tables, unicode_tables
from tinyllm.tok.stages.bert import WhitespaceSplit
from tinyllm.tok.stages import normalizers as norm
from tinyllm.tok.stages import pre_tokenizers as pre

from tests.peers import shared_corpus_lines, tokenizer_path
from tests.strategies import script_chars
from tests.support.hf_models import bpe_doc, hf_of, unigram_doc, wordlevel_doc
from tests.support.rust import PURE_PYTHON, assert_fast, core, count_engine_calls, needs_rust

tokenizers = pytest.importorskip("tokenizers")

NORMALIZERS = [norm.NFD(), norm.NFKD(), norm.StripAccents(), norm.Prepend("▁"), norm.Prepend("ab"),
               norm.Sequence([norm.NFKD(), norm.StripAccents(), norm.Prepend("▁")])]
# Digits and Split run in the text pipelines too: a literal Split, or a pattern a Rust scanner knows.
_GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PRE_TOKENIZERS = [pre.Whitespace(), pre.UnicodeScripts(), pre.CharDelimiterSplit("x"), pre.CharDelimiterSplit(" "),
                  *(pre.Punctuation(b) for b in pre.BEHAVIORS),
                  pre.Sequence([pre.Whitespace(), pre.Punctuation("Contiguous"), pre.UnicodeScripts()]),
                  pre.Digits(True), pre.Digits(False),
                  *(pre.Split(" ", False, b) for b in pre.BEHAVIORS), pre.Split("ab", False, "Isolated", True),
                  pre.Split(_GPT2_PATTERN, True, "Isolated"), pre.Split(_GPT2_PATTERN, True, "Removed", True),
                  pre.Sequence([pre.Whitespace(), pre.Digits(True)])]

marks = st.sampled_from(unicode_tables.COMBINING_MARKS).flatmap(lambda r: st.integers(r[0], r[1])).map(chr)
nonstarters = st.sampled_from(bert_tables.COMBINING_CLASS).flatmap(lambda r: st.integers(r[0], r[1])).map(chr)
compat = st.sampled_from(sorted(unicode_tables.COMPAT_DECOMPOSITION)).map(chr)
specials = st.sampled_from(list("éÅ\u212bﬁ²한 ▁x\t\n\u3000.,!?¿「」_-'ひらカ中ΩжКا١3") + ["\U0001f600"])
texts = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)), script_chars, marks, nonstarters, compat,
                          specials), max_size=40)


def _json(stage) -> str:
    return json.dumps(stage.to_json())


def _doc_with(normalizer=None, pre_tokenizer=None) -> dict:
    return {"version": "1.0", "added_tokens": [], "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
            "post_processor": None, "decoder": None,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}


# -- each stage on its own ------------------------------------------------------------------------

@needs_rust
@pytest.mark.parametrize("stage", NORMALIZERS, ids=str)
@given(text=texts)
def test_rust_normalizer_equals_reference_and_hf(stage, text):
    expected = stage.normalize(text)
    assert core.normalize(_json(stage), text) == expected
    assert _hf_normalizer(_json(stage)).normalize_str(text) == expected


@needs_rust
@pytest.mark.parametrize("stage", PRE_TOKENIZERS, ids=str)
@given(text=texts)
def test_rust_pre_tokenizer_equals_reference_and_hf(stage, text):
    expected = [piece for piece, _, _ in stage.pre_tokenize(text)]
    assert core.text_pre_tokenize(_json(stage), text) == expected
    assert [p for p, _ in _hf_pre_tokenizer(_json(stage)).pre_tokenize_str(text)] == expected


@functools.lru_cache(maxsize=None)
def _hf_normalizer(spec: str):
    return tokenizers.Tokenizer.from_str(json.dumps(_doc_with(normalizer=json.loads(spec)))).normalizer


@functools.lru_cache(maxsize=None)
def _hf_pre_tokenizer(spec: str):
    return tokenizers.Tokenizer.from_str(json.dumps(_doc_with(pre_tokenizer=json.loads(spec)))).pre_tokenizer


@functools.lru_cache(maxsize=None)
def every_code_point() -> str:
    """One text holding every code point but the surrogates, in order, with a space every 64
    (so that the pre-tokenizers cut it into many pieces)."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return " ".join("".join(chars[i:i + 64]) for i in range(0, len(chars), 64))


@needs_rust
@pytest.mark.parametrize("stage", NORMALIZERS[:3], ids=str)
def test_rust_normalizer_on_every_code_point(stage):
    text = every_code_point()
    expected = _hf_normalizer(_json(stage)).normalize_str(text)
    assert core.normalize(_json(stage), text) == expected
    assert stage.normalize(text) == expected


@needs_rust
def test_rust_lowercase_equals_hf_on_every_code_point_and_the_reference_where_python_knows_it():
    """Rust's `char::to_lowercase` is what Hugging Face calls; Python's `str.lower` per character
    agrees on every code point the running Python's Unicode tables assign."""
    import unicodedata

    stage = norm.Lowercase()
    text = every_code_point()
    assert core.normalize(_json(stage), text) == _hf_normalizer(_json(stage)).normalize_str(text)
    known = "".join(ch for ch in text if unicodedata.category(ch) != "Cn")
    assert core.normalize(_json(stage), known) == stage.normalize(known)


@needs_rust
def test_lowercase_pipeline_runs_in_rust():
    doc = dict(wordlevel_doc(), normalizer={"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]},
               pre_tokenizer={"type": "Whitespace"})
    tok = tokenizer_from_document(doc)
    assert_fast(tok)
    lines = shared_corpus_lines(every=97)
    hf = hf_of(doc)
    assert tok.encode_batch(lines) == [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]


@needs_rust
@pytest.mark.parametrize("stage", [pre.Whitespace(), pre.UnicodeScripts(), pre.Punctuation("Isolated")], ids=str)
def test_rust_pre_tokenizer_on_every_code_point(stage):
    # Each character's class is what matters here (the behaviours are the hypothesis tests' job),
    # and the reference's own sweep against HF is tools/gen_stage_tables.py --check.
    text = every_code_point()
    expected = [p for p, _ in _hf_pre_tokenizer(_json(stage)).pre_tokenize_str(text)]
    assert core.text_pre_tokenize(_json(stage), text) == expected


@needs_rust
def test_rust_rejects_bad_stage_fields_by_name():
    with pytest.raises(ValueError, match=r"pre_tokenizer_json\.delimiter.*one character"):
        core.text_pre_tokenize(json.dumps({"type": "CharDelimiterSplit", "delimiter": "ab"}), "x")
    with pytest.raises(ValueError, match=r"pre_tokenizer_json\.behavior.*Isolated"):
        core.text_pre_tokenize(json.dumps({"type": "Punctuation", "behavior": "Sideways"}), "x")
    with pytest.raises(ValueError, match=r"normalizer_json\.prepend"):
        core.normalize(json.dumps({"type": "Prepend"}), "x")


# -- inside pipelines run by the engines ----------------------------------------------------------

def _bert_doc() -> dict:
    return json.loads(tokenizer_path("bert-base-uncased").read_text(encoding="utf-8"))


def _gpt2_doc() -> dict:
    return json.loads(tokenizer_path("gpt2").read_text(encoding="utf-8"))


def _seq_n(*stages):
    return {"type": "Sequence", "normalizers": [s.to_json() for s in stages]}


def _seq_p(*stages):
    return {"type": "Sequence", "pretokenizers": [s.to_json() for s in stages]}


_METASPACE = pre.Metaspace()
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}

# name: (base document, normalizer, pre-tokenizer); together they run every stage and behaviour.
PIPELINES = {
    "wordpiece-nfd-strip-whitespace": (_bert_doc, _seq_n(norm.NFD(), norm.StripAccents()), pre.Whitespace().to_json()),
    "wordpiece-nfkd-punct-isolated": (_bert_doc, norm.NFKD().to_json(),
                                      _seq_p(pre.CharDelimiterSplit(" "), pre.Punctuation("Isolated"))),
    "unigram-nfkd-strip-scripts": (unigram_doc, _seq_n(norm.NFKD(), norm.StripAccents()),
                                   _seq_p(pre.UnicodeScripts(), _METASPACE)),
    "unigram-prepend-punct-previous": (unigram_doc, _seq_n(norm.Prepend("▁"), norm.NFD()),
                                       _seq_p(pre.CharDelimiterSplit(" "), pre.Punctuation("MergedWithPrevious"))),
    "bpe-llama-prepend": (functools.partial(bpe_doc, "none"),
                          {"type": "Sequence", "normalizers": [norm.Prepend("▁").to_json(),
                                                               norm.Replace(" ", False, "▁").to_json()]}, None),
    "bpe-nfd-punct-next": (bpe_doc, norm.NFD().to_json(), _seq_p(pre.Punctuation("MergedWithNext"), _METASPACE)),
    "wordpiece-split-gpt2-digits": (_bert_doc, None, _seq_p(pre.Split(_GPT2_PATTERN, True, "Removed", True),
                                                          pre.Digits(True))),
    "unigram-split-literal-metaspace": (unigram_doc, None, _seq_p(pre.Split("-", False, "MergedWithPrevious"),
                                                                  _METASPACE)),
    "wordlevel-strip-whitespace-removed": (wordlevel_doc, norm.StripAccents().to_json(),
                                           _seq_p(pre.Whitespace(), pre.Punctuation("Removed"))),
    "wordlevel-nfkd-punct-contiguous": (wordlevel_doc, norm.NFKD().to_json(),
                                        _seq_p(WhitespaceSplit(), pre.Punctuation("Contiguous"))),
    "bytelevel-whitespace": (_gpt2_doc, None, {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
                                                                                    _BYTE_LEVEL]}),
    "bytelevel-nfkd-prepend-scripts-punct": (_gpt2_doc, _seq_n(norm.NFKD(), norm.StripAccents(), norm.Prepend("▁")),
                                             {"type": "Sequence", "pretokenizers": [
        {"type": "UnicodeScripts"}, {"type": "Punctuation", "behavior": "Contiguous"},
        {"type": "CharDelimiterSplit", "delimiter": "e"}, _BYTE_LEVEL]}),
}


@functools.lru_cache(maxsize=None)
def pipeline(name: str):
    """(HF tokenizer, ours, our reference) of a pipeline."""
    base, normalizer, pre_tokenizer = PIPELINES[name]
    doc = dict(base(), normalizer=normalizer, pre_tokenizer=pre_tokenizer)
    hf = hf_of(doc)
    hf.no_padding()  # BERT's file pads to 128, which tinyllm ignores
    hf.no_truncation()
    return hf, tokenizer_from_document(doc), tokenizer_from_document(doc).use_reference()


def hf_ids(hf, texts):
    return [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_runs_in_rust(name):
    _, tok, _ = pipeline(name)
    if not PURE_PYTHON:
        assert_fast(tok)


@pytest.mark.parametrize("name", sorted(PIPELINES))
@settings(max_examples=40)
@given(text=texts)
def test_pipeline_ids_equal_reference_and_hf(name, text):
    hf, tok, reference = pipeline(name)
    expected = hf.encode(text, add_special_tokens=False).ids
    assert tok.encode(text, allowed_special="all") == expected
    assert reference.encode(text, allowed_special="all") == expected


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_ids_equal_hf_on_the_shared_corpora(name, monkeypatch):
    hf, tok, reference = pipeline(name)
    lines = shared_corpus_lines(every=29 if not PURE_PYTHON else 290)
    expected = hf_ids(hf, lines)
    calls = None if PURE_PYTHON else count_engine_calls(monkeypatch, tok)
    assert tok.encode_batch(lines, allowed_special="all") == expected
    if calls is not None:
        assert calls["encode_batch"] >= 1, calls
    few = lines[::53]
    assert [reference.encode(t, allowed_special="all") for t in few] == expected[::53]


@settings(max_examples=40)
@given(text=texts, p=st.sampled_from([0.0, 0.3, 1.0]))
def test_byte_level_dropout_over_a_normalizer_equals_reference(text, p):
    # BPE-dropout goes through the same normalizer; pre-token k draws from the same stream.
    _, tok, reference = pipeline("bytelevel-nfkd-prepend-scripts-punct")
    assert tok.encode(text, dropout=p, seed=7) == reference.encode(text, dropout=p, seed=7)
