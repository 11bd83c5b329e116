"""BPE-dropout and Unigram sampling: limits, replayable keys, and Rust == reference."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import fixture_lines, ours, ours_reference
from tests.strategies import known_to_both
from tests.support.rust import assert_fast, assert_reference, count_engine_calls, needs_rust
from tinyllm.tok.models.bpe import BPEModel
from tinyllm.tok.stochastic import SplitMix64
from tinyllm.tok.stochastic import segmentation_key

texts = st.text(st.characters(codec="utf-8"), max_size=60).map(known_to_both)


@pytest.fixture(scope="module")
def gpt2():
    return ours("gpt2")


@pytest.fixture(scope="module")
def gpt2_reference():
    return ours_reference("gpt2")


class Pinned:
    """A draw sequence fixed in advance (seed 003's synthetic trace)."""

    def __init__(self, values):
        self.values = list(values)

    def next_float(self):
        return self.values.pop(0)


def test_seed_teaching_table_limits_and_pinned_trace():
    model = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, [("a", "b"), ("ab", "c")])
    tokens = lambda p, rng: [model.id_to_token[i] for i, _, _ in model.tokenize_dropout("abc", p, rng)]
    assert tokens(0.0, SplitMix64(1)) == ["abc"]
    assert tokens(1.0, SplitMix64(1)) == ["a", "b", "c"]
    assert tokens(0.5, Pinned([0.7, 0.2])) == ["ab", "c"]  # keep rank 0, drop rank 1


def test_one_draw_per_eligible_occurrence_in_rank_then_position_order():
    model = BPEModel({"a": 0, "b": 1, "ab": 2, "abab": 3}, [("a", "b"), ("ab", "ab")])
    # step 1: (a,b)@0, (a,b)@2 -> draws 0.1 (dropped), 0.9 (kept): merge at 2 -> a b ab
    # step 2: (a,b)@0 only -> 0.9 kept -> ab ab;  step 3: (ab,ab)@0 -> 0.1 dropped -> done
    rng = Pinned([0.1, 0.9, 0.9, 0.1])
    assert [model.id_to_token[i] for i, _, _ in model.tokenize_dropout("abab", 0.5, rng)] == ["ab", "ab"]
    assert rng.values == []


def test_dropout_limits_on_gpt2(gpt2):
    for text in fixture_lines()[:200]:
        assert gpt2.encode(text, dropout=0.0, seed=3) == gpt2.encode(text)
        ids = gpt2.encode(text, dropout=1.0, seed=3)
        assert len(ids) == len(text.encode("utf-8"))
        assert all(len(gpt2.token_bytes(i)) == 1 for i in ids)
        assert gpt2.decode(ids) == text


def test_dropout_is_replayable_and_keyed(gpt2):
    text = "Tokenization regularizes models: the unbelievable, indescribable lexicon."
    base = gpt2.encode(text, dropout=0.2, seed=11, epoch=2, sample_id=7, view=1)
    assert base == gpt2.encode(text, dropout=0.2, seed=11, epoch=2, sample_id=7, view=1)
    assert gpt2.decode(base) == text
    others = {tuple(gpt2.encode(text, dropout=0.2, seed=11, epoch=2, sample_id=s, view=1)) for s in range(30)}
    assert len(others) > 5  # the key changes the segmentation
    # Any worker order gives each sample the same ids.
    jobs = [(s, f"sample {s}: {text}") for s in range(40)]
    first = {s: gpt2.encode(t, dropout=0.3, seed=5, sample_id=s) for s, t in jobs}
    random.Random(0).shuffle(jobs)
    assert {s: gpt2.encode(t, dropout=0.3, seed=5, sample_id=s) for s, t in jobs} == first


@needs_rust
@settings(max_examples=120, deadline=None)
@given(texts, st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), st.integers(0, 2**64 - 1), st.integers(0, 3))
def test_dropout_rust_equals_reference(gpt2, gpt2_reference, text, p, seed, sample_id):
    assert_fast(gpt2)  # encode(dropout=...) runs BpeEngine.encode_dropout
    assert_reference(gpt2_reference)
    fast = gpt2.encode(text, dropout=p, seed=seed, sample_id=sample_id)
    assert fast == gpt2_reference.encode(text, dropout=p, seed=seed, sample_id=sample_id)


@needs_rust
def test_dropout_rust_equals_reference_on_real_text_with_specials(monkeypatch):
    tok, ref = ours("smollm2"), ours_reference("smollm2")
    assert_reference(ref)
    calls = count_engine_calls(monkeypatch, tok)
    lines = fixture_lines()[:300]
    for k, line in enumerate(lines):
        text = line + "<|im_end|>" + line[:20]
        args = dict(dropout=0.25, seed=k, allowed_special="all")
        assert tok.encode(text, **args) == ref.encode(text, **args)
    assert calls == {"encode_dropout": len(lines)}


def test_parameter_errors_are_named(gpt2):
    for bad in (-0.1, 1.5, "0.1", True, float("nan")):
        with pytest.raises(ValueError, match="dropout"):
            gpt2.encode("x", dropout=bad)
    for name in ("seed", "epoch", "sample_id", "view"):
        with pytest.raises(ValueError, match=name):
            gpt2.encode("x", dropout=0.1, **{name: -1})


def test_segmentation_key_fields_are_independent():
    keys = {segmentation_key(s, e, i, v) for s in range(3) for e in range(3) for i in range(3) for v in range(3)}
    assert len(keys) == 81
    assert segmentation_key(1, 0) != segmentation_key(0, 1)


# -- Unigram sampling ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rut5():
    return ours("rut5-base")


@needs_rust
@settings(max_examples=60, deadline=None)
@given(texts, st.sampled_from([0.05, 0.5, 1.0, 3.0]), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_unigram_sampling_rust_equals_reference(rut5, text, alpha, seed, sample_id):
    ref = ours_reference("rut5-base")
    assert_fast(rut5)  # encode(sample=True) runs TextEngine.encode_sample
    assert_reference(ref)
    args = dict(sample=True, alpha=alpha, seed=seed, sample_id=sample_id)
    assert rut5.encode(text, **args) == ref.encode(text, **args)


@needs_rust
def test_unigram_sampling_runs_in_the_rust_engine(monkeypatch):
    tok, ref = ours("rut5-base"), ours_reference("rut5-base")
    assert_reference(ref)
    calls = count_engine_calls(monkeypatch, tok)
    lines = [line for line in fixture_lines()[:200] if line.strip()]
    for k, line in enumerate(lines):
        args = dict(sample=True, alpha=0.2, seed=k, sample_id=k)
        assert tok.encode(line, **args) == ref.encode(line, **args)
    assert calls == {"encode_sample": len(lines)}


def test_unigram_sampling_limits_and_keys(rut5):
    text = "Привет, как дела? Subword regularization samples segmentations."
    viterbi = rut5.encode(text)
    assert rut5.encode(text, sample=True, alpha=1000.0, seed=1) == viterbi  # sharp: the best path
    draws = {tuple(rut5.encode(text, sample=True, alpha=0.1, seed=1, sample_id=s)) for s in range(30)}
    assert len(draws) > 5
    assert all(rut5.decode(list(d)) == rut5.decode(viterbi) for d in draws)
    assert rut5.encode(text, sample=True, alpha=0.1, seed=1, epoch=4) == rut5.encode(text, sample=True, alpha=0.1,
                                                                                      seed=1, epoch=4)
    with pytest.raises(ValueError, match="alpha"):
        rut5.encode(text, sample=True, alpha=float("inf"))
    with pytest.raises(ValueError, match="view"):
        rut5.encode(text, sample=True, view=2**64)


def test_the_sampling_encoders_keep_their_variables_out_of_cells():
    """`encode` hands the model's method to the drawn path instead of a closure: a closure would
    make `self` and the parameter cells, which every plain call pays for (20-40 ns of a
    500 ns `encode("hello")`)."""
    from tinyllm.tok.models.bpe_tokenizer import BPETokenizer
    from tinyllm.tok.models.unigram_tokenizer import UnigramTokenizer

    for cls in (BPETokenizer, UnigramTokenizer):
        assert cls.encode.__code__.co_cellvars == (), cls.__name__
