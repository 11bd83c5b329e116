"""Shard columns: the Rust core equals the reference (text hashes, input JSON, escapes, lone
surrogates), and the reference is what its docstring says."""

import hashlib
import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.rust import count_core_calls, needs_rust
from tinyllm import _native
from tinyllm.corpus.documents import Document
from tinyllm.corpus.shards import columns, reference_columns

TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)
DOCS = st.lists(st.builds(Document, TEXT, TEXT, TEXT), max_size=8)


def test_reference_is_json_of_ids_sources_and_hashes():
    docs = [Document('d"1', "abc", "web\n"), Document("d2", "", "")]
    digests, made_from = reference_columns(docs)
    assert digests[:32] == hashlib.sha256(b"abc").digest() and digests[32:] == hashlib.sha256(b"").digest()
    assert json.loads(made_from) == [['d"1', "web\n", hashlib.sha256(b"abc").hexdigest()],
                                     ["d2", "", hashlib.sha256(b"").hexdigest()]]


def test_lone_surrogates_hash_as_the_tokenizers_read_them():
    digests, _ = reference_columns([Document("a", "x\ud800y")])
    assert digests == hashlib.sha256("x\ufffdy".encode()).digest()


@needs_rust
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS)
def test_rust_columns_equal_the_reference(monkeypatch, docs):
    counts = count_core_calls(monkeypatch)
    assert columns(docs) == reference_columns(docs)
    assert counts["shard_columns"] == 1
    monkeypatch.undo()


@needs_rust
def test_rust_columns_with_surrogates_and_controls(monkeypatch):
    docs = [Document("\ud83d\ude00\ud800", "\x00\x1f\x7f\u2028\"\\", "\ud800")]
    counts = count_core_calls(monkeypatch)
    assert columns(docs) == reference_columns(docs)
    assert counts["shard_columns"] == 1


def test_without_the_core_the_reference_runs_and_says_so(monkeypatch):
    import tinyllm.corpus.shards as shards

    monkeypatch.setattr(_native, "core", None)
    monkeypatch.setattr(shards, "_warned", False)
    with pytest.warns(_native.SlowPathWarning, match="encode_dataset: shard columns"):
        assert columns([Document("a", "b")]) == reference_columns([Document("a", "b")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        columns([Document("a", "b")])  # once per process
