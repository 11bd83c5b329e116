"""Ids and decodes equal Hugging Face tokenizers and tiktoken on real files and trap strings."""

import pytest

from tests.peers import fixture_lines, hf, ours, shared_corpus_lines, tiktoken_gpt2
from tests.support.rust import PURE_PYTHON
from tests.support.stress import stress_strings

NAMES = ["gpt2", "smollm2", "gpt-4o-o200k"]

# Seed 003 / PERFORMANCE traps with the pieces they must give.
GPT2_SPLITS = {
    "\x0b't": ["\x0b", "'t"],
    "\n't": ["\n", "'t"],
    "a  b": ["a", " ", " b"],
    "x\r\n\r\ny": ["x", "\r\n\r", "\n", "y"],
    "e\u0301t": ["e", "\u0301", "t"],
    "Ⅷ12": ["Ⅷ12"],
}


def _assert_same(name, texts):
    ref, tok = hf(name), ours(name)
    theirs = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    mine = tok.encode_batch(texts, allowed_special="all")
    for text, a, b in zip(texts, mine, theirs, strict=True):
        assert a == b, f"{name}: ids differ for {text!r}"
    decoded = ref.decode_batch(theirs, skip_special_tokens=False)
    for text, a, d in zip(texts, mine, decoded, strict=True):
        assert tok.decode(a) == d, f"{name}: decode differs for {text!r}"


@pytest.mark.parametrize("name", NAMES)
def test_ids_and_decodes_equal_hf_on_fixture_code(name):
    _assert_same(name, fixture_lines())


@pytest.mark.parametrize("name", NAMES)
def test_ids_and_decodes_equal_hf_on_stress_strings(name):
    _assert_same(name, stress_strings(3000))


@pytest.mark.parametrize("name", NAMES)
def test_ids_equal_hf_on_shared_corpora_sample(name):
    # Pure-Python mode runs the reference's merge loop on every line: every 28th line there (8k
    # lines, every corpus file) instead of every 7th (51 s for the three files).
    _assert_same(name, shared_corpus_lines(every=7 if not PURE_PYTHON else 28))


def test_gpt2_splits_the_known_traps_exactly():
    from tinyllm.tok.stages.pre_tokenizers import ByteLevel

    for text, pieces in GPT2_SPLITS.items():
        assert [p[0] for p in ByteLevel(add_prefix_space=False).pre_tokenize(text)] == pieces
        assert ours("gpt2").encode(text) == hf("gpt2").encode(text).ids


def test_gpt2_ids_equal_tiktoken():
    enc, tok = tiktoken_gpt2(), ours("gpt2")
    texts = fixture_lines() + stress_strings(3000)
    for text in texts:
        assert tok.encode(text) == enc.encode_ordinary(text), repr(text)
    assert tok.encode("<|endoftext|>", allowed_special="all") == enc.encode("<|endoftext|>", allowed_special="all")


def test_gpt2_ids_equal_tiktoken_on_shared_corpora_sample():
    enc, tok = tiktoken_gpt2(), ours("gpt2")
    lines = shared_corpus_lines(every=5)
    assert tok.encode_batch(lines) == enc.encode_ordinary_batch(lines)


def test_worked_examples():
    gpt2 = ours("gpt2")
    assert gpt2.encode(" cat") == [3797]
    assert gpt2.encode("Hello world") == [15496, 995]
    assert gpt2.decode([15496, 995]) == "Hello world"
    assert ours("smollm2").encode("abc 123") == hf("smollm2").encode("abc 123").ids


def test_legacy_gpt2_file_without_model_type_loads_and_matches(tmp_path):
    from tests.peers import SHARED, require_shared
    from tinyllm.tok import load

    path = require_shared(SHARED / "tokenizers" / "gpt2" / "legacy-2020" / "tokenizer.json")
    legacy = load(path)
    texts = fixture_lines()[:300] + stress_strings(500)
    assert legacy.encode_batch(texts) == ours("gpt2").encode_batch(texts)
