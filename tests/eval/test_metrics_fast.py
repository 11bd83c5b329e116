"""The fast paths of `tinyllm.eval.metrics` against their references.

* `vocab_token_bytes()` (every id's bytes in one numpy pass, ByteLevel decoders) must equal
  `token_bytes(i)` and `token_bytes(i, first=True)` for every id; other decoders give None and
  `_Tables` asks `token_bytes` per id (`_per_id`, the reference).
* `_Tables._from_vocab` must build the same per-token tables as `_Tables._per_id`.
* `_suspects_fast` (one `tinyllm._core.joined_bytes_differ` call) must flag the same records as
  `_suspects` (numpy), and the core must have run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.peers import SHARED, require_shared, shared_corpus_lines
from tests.support.rust import count_core_calls, needs_rust
from tinyllm.eval import metrics
from tinyllm.eval.metrics import Report, _encode, _suspects, _suspects_fast, _Tables, evaluate
from tinyllm.eval.records import Record
from tinyllm.tok import load

PRESETS = ["gpt2", "o200k", "smollm2"]
SHARED_TOKENIZERS = ["bert-base-uncased", "rut5-base/spiece.model"]


def _tokenizer(name):
    if name in PRESETS:
        return load(name)
    return load(require_shared(SHARED / "tokenizers" / name))


def _ids_with_tokens(tok):
    for i in range(tok.vocab_size):
        try:
            yield i, tok.token_bytes(i)
        except ValueError:  # an id with no token (a hole in the vocabulary)
            continue


@pytest.mark.parametrize("name", PRESETS)
def test_vocab_token_bytes_are_token_bytes_of_every_id(name):
    tok = _tokenizer(name)
    blob, offsets = tok.vocab_token_bytes()
    assert len(offsets) == tok.vocab_size + 1 and offsets[-1] == len(blob)
    assert tok.vocab_token_bytes()[0] is blob  # built once per tokenizer
    assert not tok.decode_depends_on_position  # so `first` gives the same bytes
    data = blob.tobytes()
    for i, expected in _ids_with_tokens(tok):
        assert data[offsets[i]:offsets[i + 1]] == expected == tok.token_bytes(i, first=True), i


@pytest.mark.parametrize("name", SHARED_TOKENIZERS)
def test_other_decoders_keep_the_per_id_reference(name):
    """WordPiece (position dependent) and SentencePiece decoders: no vocabulary-wide bytes, so
    `_Tables` asks `token_bytes` per id, as before; the report still agrees with decoding."""
    tok = _tokenizer(name)
    assert getattr(tok, "vocab_token_bytes", lambda: None)() is None
    ids, offsets = _encode(tok, ["Hello world", "ok"])
    assert _Tables(tok, ids, offsets, placed=True).vocab is None
    records = _records(shared_corpus_lines(every=211))
    expected = tuple(r.record_id for r in records if tok.decode(tok.encode(r.text)) != r.text)
    assert evaluate(tok, records, words=len).reconstruction_failures == expected


def _records(lines, size=3):
    return [Record(f"r{k}", f"g{k}", "test", "".join(lines[k:k + size])) for k in range(0, len(lines), size)]


@pytest.mark.parametrize("name", PRESETS)
def test_tables_from_the_vocabulary_equal_the_per_id_tables(name):
    tok = _tokenizer(name)
    texts = [r.text for r in _records(shared_corpus_lines(every=53))] + ["", " ", "\n\n x"]
    ids, offsets = _encode(tok, texts)
    fast = _Tables(tok, ids, offsets, placed=True)
    reference = _Tables.__new__(_Tables)
    reference._per_id(tok, ids, offsets, placed=True)
    assert fast.vocab is not None and reference.vocab is None
    assert np.array_equal(fast.single, reference.single)
    assert np.array_equal(fast.placed_length, reference.placed_length)
    # Different blobs, the same bytes for every token.
    for k in range(len(ids)):
        a, b = fast.placed_start[k], reference.placed_start[k]
        n = fast.placed_length[k]
        assert fast.blob[a:a + n].tobytes() == reference.blob[b:b + n].tobytes()


def _both(tok, texts):
    ids, offsets = _encode(tok, texts)
    tables = _Tables(tok, ids, offsets, placed=True)
    utf8 = np.array([len(t.encode("utf-8")) for t in texts], dtype=np.int64)
    return _suspects(tables, offsets, texts, utf8), _suspects_fast(tables, ids, offsets, texts, utf8)


# The counter is made once per test and counts over all examples (hence the health check).
EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@needs_rust
@EXAMPLES
@given(texts=st.lists(st.text(st.sampled_from("ab é\n€😀\x00\txyz"), max_size=12), min_size=1, max_size=8))
def test_the_rust_comparison_equals_the_numpy_reference(monkeypatch, texts):
    tok = load("gpt2")
    counts = count_core_calls(monkeypatch) if not hasattr(monkeypatch, "_ev_counts") else monkeypatch._ev_counts
    monkeypatch._ev_counts = counts
    before = counts["joined_bytes_differ"]
    reference, fast = _both(tok, texts)
    assert counts["joined_bytes_differ"] == before + 1
    assert np.array_equal(reference, fast)


@needs_rust
@EXAMPLES
@given(data=st.data())
def test_the_rust_comparison_finds_tampered_records(monkeypatch, data):
    """Records whose ids do not spell their text (ids of other texts, dropped or added tokens)."""
    tok = load("gpt2")
    texts = data.draw(st.lists(st.text(st.sampled_from("ab é€😀 "), max_size=10), min_size=2, max_size=6))
    ids, offsets = _encode(tok, texts)
    shifted = texts[1:] + texts[:1]  # every record now claims the next one's text
    tables = _Tables(tok, ids, offsets, placed=True)
    utf8 = np.array([len(t.encode("utf-8")) for t in shifted], dtype=np.int64)
    counts = count_core_calls(monkeypatch) if not hasattr(monkeypatch, "_ev_counts") else monkeypatch._ev_counts
    monkeypatch._ev_counts = counts
    before = counts["joined_bytes_differ"]
    fast = _suspects_fast(tables, ids, offsets, shifted, utf8)
    assert counts["joined_bytes_differ"] == before + 1
    assert np.array_equal(fast, _suspects(tables, offsets, shifted, utf8))
    assert fast.tolist() == [a != b for a, b in zip(texts, shifted)]


@needs_rust
@pytest.mark.parametrize("name", PRESETS)
def test_evaluate_runs_the_core_comparison_and_agrees_with_decoding(name, monkeypatch):
    tok = _tokenizer(name)
    records = _records(shared_corpus_lines(every=97))
    counts = count_core_calls(monkeypatch)
    report = evaluate(tok, records, words=len)
    assert counts["joined_bytes_differ"] == 1
    expected = tuple(r.record_id for r in records if tok.decode(tok.encode(r.text)) != r.text)
    assert report.reconstruction_failures == expected
    monkeypatch.setattr(metrics._native, "core", None)  # the numpy reference: the same report
    reference = evaluate(tok, records, words=len)
    assert isinstance(reference, Report) and reference == report


@needs_rust
def test_a_text_without_utf8_always_differs():
    """A lone surrogate has no UTF-8: the core flags the record (the caller then decodes it)."""
    from tests.support.rust import core

    u32, u64 = (lambda xs: np.array(xs, np.uint32).tobytes()), (lambda xs: np.array(xs, np.uint64).tobytes())
    differ = core.joined_bytes_differ(u32([0, 0]), u64([0, 1, 2]), b"a", u64([0, 1]), ["a", "\udc80"])
    assert list(differ) == [0, 1]
    with pytest.raises(ValueError, match="outside"):
        core.joined_bytes_differ(u32([1]), u64([0, 1]), b"a", u64([0, 1]), ["a"])
