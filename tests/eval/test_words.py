"""The Rust word counter (`tinyllm._core.uax29_word_counts`, src/text/words.rs) against the numpy
reference of `tinyllm.eval.words`: equal on random text of many scripts and on the shared corpora."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.peers import SHARED, require_shared
from tests.support.rust import count_core_calls, needs_rust
from tinyllm import _native
from tinyllm.eval.words import uax29_word_count, uax29_word_counts, uax29_word_counts_numpy

# Characters the UAX #29 rules treat differently, from many scripts: letters and digits (ALetter,
# Hebrew_Letter, Numeric), Extend/Format/ZWJ (combining marks, soft hyphen, halfwidth voicing mark
# U+FF9E, which is a letter), emoji with ZWJ and variation selectors, regional indicators, the
# Mid* and quote characters, ExtendNumLet, ideographs, kana, spaces and line breaks.
ASCII = list("aZe0795_.,;:'\"-/!? \t\n\r\x0b\x0c")
RICH = ASCII + [
    "é", "ß", "Ω", "ж", "Ж", "ش", "٣", "۵", "\u05d0", "\u05e9", "क", "\u093f", "\u094d", "ก", "\u0e31", "한", "ᄀ",
    "\u0301", "\u0308", "\u20dd", "\u00ad", "\u200b", "\u200d", "\u2060", "\ufeff", "\uff9e", "\ufe0f",
    "🦙", "👩", "💻", "❤", "\U0001f3fb", "\U0001f1eb", "\U0001f1f7", "©",
    "\u2019", "\u2018", "\u2024", "\ufe52", "\uff0e", "\u00b7", "\u0387", "\u055f", "\u05f4", "\u066c", "\u2044",
    "\u203f", "\u2040", "\uff3f", "\u202f",
    "中", "文", "字", "〇", "〆", "\U00020000", "\U0002a700", "ひ", "ら", "が", "カ", "タ", "ー", "ｶ", "ﾀ", "・",
    " ", "\u3000", "\u00a0", "\u2028", "\u2029", "\x85",
]
lines = st.one_of(st.text(st.sampled_from(RICH), max_size=40), st.text(st.sampled_from(ASCII), max_size=40))
# Lines joined by line feeds, so ASCII and non-ASCII lines alternate (Rust counts runs of ASCII
# lines on a faster path); "\r\n" comes from "\r" before a line feed.
texts = st.lists(lines, max_size=5).map("\n".join)


@needs_rust
@given(st.lists(texts, max_size=8))
def test_rust_counts_equal_the_reference(batch):
    with pytest.MonkeyPatch.context() as mp:
        calls = count_core_calls(mp)
        fast = uax29_word_counts(batch)
        assert calls["uax29_word_counts"] == 1
    assert fast == uax29_word_counts_numpy(batch)


@needs_rust
def test_rust_counts_the_shared_corpora_like_the_reference(monkeypatch):
    """Every shared corpus file, whole (long texts are cut into pieces counted in parallel) and
    line by line."""
    paths = sorted(require_shared(SHARED / "corpora").glob("*/*.txt"))
    assert {p.parent.name for p in paths} >= {"en", "code", "multi"}
    whole = [p.read_text(encoding="utf-8") for p in paths]
    calls = count_core_calls(monkeypatch)
    assert uax29_word_counts(whole) == uax29_word_counts_numpy(whole)
    every_line = [line for text in whole for line in text.splitlines(keepends=True)]
    assert uax29_word_counts(every_line) == uax29_word_counts_numpy(every_line)
    assert calls["uax29_word_counts"] == 2


@needs_rust
def test_lone_surrogates_count_as_replacement_characters(monkeypatch):
    calls = count_core_calls(monkeypatch)
    assert uax29_word_counts(["a\udc80b", "\ud83d", "x\ud83d\ude00y"]) == [2, 0, 2]
    assert calls["uax29_word_counts"] == 1
    assert uax29_word_counts_numpy(["a\ufffdb", "\ufffd", "x\U0001f600y"]) == [2, 0, 2]


@pytest.mark.parametrize("text, words", [
    ("can't", 1), ("3.14", 1), ("foo_bar", 1), ("e-mail", 2), ("中文字", 3), ("\U00020000", 1),
    ("e\u0301:a", 1), ("カタカナ", 1), ("ひらがな", 4), ("🦙 ... ___", 0), ("", 0),
])
def test_worked_examples_on_both_paths(monkeypatch, text, words):
    assert uax29_word_count(text) == words  # the core when it is selected
    monkeypatch.setattr(_native, "core", None)
    assert uax29_word_counts(["x", text]) == [1, words]  # the reference


def test_any_sequence_of_texts_is_counted(monkeypatch):
    assert uax29_word_counts(("a b", "c")) == [2, 1]
    assert uax29_word_counts([]) == []
    monkeypatch.setattr(_native, "core", None)
    assert uax29_word_counts(("a b", "c")) == [2, 1]
    assert uax29_word_counts([]) == []
