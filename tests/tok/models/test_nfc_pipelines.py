"""NFC and NFKC pipelines run in the Rust engines, without a SlowPathWarning, with Hugging Face's
ids: the Qwen2-style byte-level BPE (NFC + Split + ByteLevel, BpeEngine) and WordPiece / Unigram
with NFKC inside a Sequence (TextEngine), on the shared corpora and the stress strings."""

from __future__ import annotations

import functools
import json
import warnings

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.peers import shared_corpus_lines, tokenizer_path
from tests.support.families import FAMILIES, family_doc, family_tokenizer
from tests.support.hf_models import hf_of, unigram_doc
from tests.support.rust import assert_fast, count_engine_calls, needs_rust
from tests.support.stress import stress_strings
from tinyllm import SlowPathWarning
from tinyllm.tok.load import tokenizer_from_document

tokenizers = pytest.importorskip("tokenizers")
pytestmark = needs_rust

def _bert_nfkc() -> dict:
    doc = json.loads(tokenizer_path("bert-base-uncased").read_text(encoding="utf-8"))
    doc["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "StripAccents"},
                                                            {"type": "Lowercase"}]}
    doc["pre_tokenizer"] = {"type": "BertPreTokenizer"}
    return doc


def _unigram_nfkc() -> dict:
    return dict(unigram_doc(), normalizer={"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        {"type": "Prepend", "prepend": "▁"}]}, pre_tokenizer=None)


def _unigram_nfc() -> dict:
    return dict(unigram_doc(), normalizer={"type": "NFC"})


def _byte_level_nfkc() -> dict:
    """The Qwen2 pipeline with NFKC inside a Sequence (the byte-level engine's normalizer)."""
    return dict(family_doc("qwen2"), normalizer={"type": "Sequence", "normalizers": [
        {"type": "Strip", "strip_left": True, "strip_right": False}, {"type": "NFKC"}]})


DOCS = {"qwen2": lambda: family_doc("qwen2"), "byte-level-nfkc": _byte_level_nfkc, "wordpiece-nfkc": _bert_nfkc,
        "unigram-nfkc": _unigram_nfkc, "unigram-nfc": _unigram_nfc}


@functools.lru_cache(maxsize=None)
def pair(name: str):
    """(ours, HF) of a pipeline; loading ours must not warn."""
    doc = DOCS[name]()
    if name in FAMILIES:  # built once per session (tests.support.families), warnings recorded
        ours, warned = family_tokenizer(name)
        assert not warned, f"{name}: {warned}"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SlowPathWarning)
            ours = tokenizer_from_document(doc)
    hf = hf_of(doc)
    hf.no_padding()
    hf.no_truncation()
    return ours, hf


@pytest.mark.parametrize("name", DOCS)
def test_loads_on_the_rust_engine_without_a_warning(name):
    ours, _ = pair(name)
    assert_fast(ours)


@pytest.mark.parametrize("name", DOCS)
def test_ids_equal_hf_on_the_shared_corpora_and_stress_strings(name, monkeypatch):
    ours, hf = pair(name)
    calls = count_engine_calls(monkeypatch, ours)
    lines = _without_specials(ours, shared_corpus_lines(every={"qwen2": 3, "byte-level-nfkc": 11}.get(name, 5)) + stress_strings(2000))
    got = ours.encode_batch(lines)
    assert calls["encode_batch"] == 1
    want = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    bad = [k for k, (a, b) in enumerate(zip(got, want)) if a != b]
    assert not bad, f"{len(bad)} lines differ, first {lines[bad[0]]!r}"


def _without_specials(tok, lines: list[str]) -> list[str]:
    """HF matches special tokens in user text (`<|endoftext|>`); tinyllm never does unless asked
    (tinyllm.tok.stages.special_policy), a difference unrelated to the normalizer."""
    specials = [t.content for t in tok.added_tokens]
    return [t for t in lines if not any(s in t for s in specials)]


composing = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)),
                              st.sampled_from(list("e\u0301\u0323\u0308 ﬁ①Ｆ가\u1100\u1161\u11a8\u3131\u314f\u212b"))),
                    max_size=30)


@pytest.mark.parametrize("name", DOCS)
@settings(max_examples=60, deadline=None)
@given(text=composing)
def test_ids_equal_hf_on_composing_text(name, text):
    ours, hf = pair(name)
    assume(_without_specials(ours, [text]))
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_the_reference_agrees_on_the_qwen2_pipeline():
    ours, hf = pair("qwen2")
    reference = ours.use_reference()
    lines = _without_specials(ours, stress_strings(300)) + ["e\u0301" * 50, "\u0301" * 40, "\u1100\u1161\u11a8" * 20]
    assert [reference.encode(t) for t in lines] == [ours.encode(t) for t in lines]
    assert [ours.encode(t) for t in lines] == [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
