"""Word counting for the trainers: the Rust counter equals the reference on every pipeline."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import shared_corpus_lines
from tests.support.rust import count_core_calls, needs_rust
from tinyllm.tok.stages import normalizers
from tinyllm.tok.stages.bert import BertNormalizer, BertPreTokenizer
from tinyllm.tok.stages.pre_tokenizers import Metaspace
from tinyllm.train.common import check_special_tokens, corpus_texts, count_words, count_words_reference


PIPELINES = {
    "bert": (BertNormalizer(), BertPreTokenizer()),
    "sentencepiece": (normalizers.Sequence([normalizers.Replace(r"\s+", True, " "),
                                            normalizers.Strip(True, True)]), Metaspace()),
    "none": (None, None),
}


def test_specials_are_cut_out_before_counting():
    words = count_words(["a [SEP] b [SEP]a"], *PIPELINES["bert"], specials=["[SEP]"])
    assert words == [("a", 2), ("b", 1)]


def rust_words(texts, normalizer, pre, specials=(), batch=8192):
    """count_words, with proof that it ran the Rust WordCounter (count_words_reference never does)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = count_core_calls(monkeypatch)
        words = count_words(texts, normalizer, pre, specials, batch=batch)
    assert calls == {"WordCounter": 1}, "count_words did not run the Rust WordCounter"
    return words


@needs_rust
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_rust_counter_equals_reference_on_real_text(name):
    lines = shared_corpus_lines(every=40)
    normalizer, pre = PIPELINES[name]
    assert rust_words(lines, normalizer, pre, batch=97) == count_words_reference(lines, normalizer, pre)


@needs_rust
@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8"), max_size=30), max_size=8), st.sampled_from(sorted(PIPELINES)))
def test_rust_counter_equals_reference_on_random_text(texts, name):
    normalizer, pre = PIPELINES[name]
    assert rust_words(texts, normalizer, pre, ["<s>"], batch=3) == count_words_reference(texts, normalizer, pre, ["<s>"])


def test_errors_name_the_item():
    with pytest.raises(ValueError, match=r"texts\[1\]: expected a str"):
        count_words(["a", 3], None, None)
    with pytest.raises(ValueError, match="single str"):
        list(corpus_texts("abc"))
    with pytest.raises(ValueError, match=r"special_tokens\[1\]: '<s>' is listed twice"):
        check_special_tokens(["<s>", "<s>"])
    with pytest.raises(ValueError, match=r"special_tokens\[0\]: expected a non-empty str"):
        check_special_tokens([""])


@needs_rust
def test_lone_surrogates_count_alike_on_both_paths():
    # The Rust path receives the raw str and replaces lone surrogates itself.
    texts = ["ab\ud800cd [SEP] x\udc00\ud83d\ude00y", "\udfff"]
    for name, (normalizer, pre) in PIPELINES.items():
        assert rust_words(texts, normalizer, pre, ["[SEP]"]) == \
            count_words_reference(texts, normalizer, pre, ["[SEP]"]), name
