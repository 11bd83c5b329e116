"""Today's families (Llama-3, Qwen2, DeepSeek-V3 pipelines; tests/support/families.py) load on the
Rust core without a warning and give Hugging Face's ids on the shared corpora and stress strings."""

from __future__ import annotations

import functools
import warnings

import pytest

from tests.peers import shared_corpus_lines
from tests.support.families import FAMILIES, family_file, family_specials
from tests.support.rust import PURE_PYTHON, needs_rust
from tests.support.stress import stress_strings
from tinyllm import SlowPathWarning
from tinyllm.tok import load


@functools.lru_cache(maxsize=None)
def _pair(name: str, directory: str):
    import tokenizers

    path = family_file(name, directory)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)  # a fallback fails the test, naming the component
        ours = load(path)
    return ours, tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def family_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("families"))


@needs_rust
@pytest.mark.parametrize("name", FAMILIES)
def test_a_family_runs_on_the_core(name, family_dir):
    ours, _ = _pair(name, family_dir)
    assert ours.uses_fast_path


@pytest.mark.parametrize("name", FAMILIES)
def test_a_family_gives_hugging_faces_ids(name, family_dir):
    ours, hf = _pair(name, family_dir)
    specials = family_specials(name)
    # Pure-Python mode encodes with the reference's merge loop over a 100k/200k vocabulary: every
    # 100th line there (44 s for every 25th), every file of the corpora either way.
    texts = (shared_corpus_lines(every=25 if not PURE_PYTHON else 100)
             + [s for s in stress_strings(300) if not any(t in s for t in specials)])
    expected = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    got = ours.encode_batch(texts)
    wrong = [(t, g, e) for t, g, e in zip(texts, got, expected) if g != e]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ; first: {wrong[0]}"


@pytest.mark.parametrize("name", FAMILIES)
def test_a_familys_specials_and_template_match_hugging_face(name, family_dir):
    ours, hf = _pair(name, family_dir)
    specials = family_specials(name)
    text = f"{specials[-1]}Hello, world!  1234567 你好{specials[0]}"
    assert ours.encode(text, add_special=True, allowed_special="all") == hf.encode(text).ids
