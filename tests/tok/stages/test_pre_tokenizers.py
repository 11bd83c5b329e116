"""Whitespace, Punctuation, CharDelimiterSplit, UnicodeScripts and Split give exactly Hugging
Face's pieces and offsets.

The sweep of every code point lives in tools/gen_stage_tables.py (run with --check).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinyllm.tok.stages.pre_tokenizers import (BEHAVIORS, CharDelimiterSplit, Punctuation, Sequence, Split,
                                               UnicodeScripts, Whitespace)

from tests.peers import shared_corpus_lines
from tests.strategies import known_to_both, script_chars

tokenizers = pytest.importorskip("tokenizers")
hf_pre = tokenizers.pre_tokenizers

HF_BEHAVIOR = {"Removed": "removed", "Isolated": "isolated", "MergedWithPrevious": "merged_with_previous",
               "MergedWithNext": "merged_with_next", "Contiguous": "contiguous"}
SPECIALS = list(" \t\n\u3000\xa0_-.,!?¿「」'\"$+<=>^`|ひらカター中文日本한Ωαж١٢3x \u0301\u0903") + ["\U0001f600"]
text_chars = st.one_of(st.characters(blacklist_categories=("Cs",)), script_chars, st.sampled_from(SPECIALS))
texts = st.text(text_chars, max_size=40)


def hf_pieces(pre_tokenizer, text):
    return [(piece, start, end) for piece, (start, end) in pre_tokenizer.pre_tokenize_str(text)]


SIMPLE = [(Whitespace(), hf_pre.Whitespace()), (UnicodeScripts(), hf_pre.UnicodeScripts()),
          (CharDelimiterSplit("x"), hf_pre.CharDelimiterSplit("x")),
          (CharDelimiterSplit(" "), hf_pre.CharDelimiterSplit(" "))]
SIMPLE += [(Punctuation(b), hf_pre.Punctuation(HF_BEHAVIOR[b])) for b in BEHAVIORS]
SIMPLE_IDS = ["Whitespace", "UnicodeScripts", "CharDelimiterSplit-x", "CharDelimiterSplit-space"]
SIMPLE_IDS += [f"Punctuation-{b}" for b in BEHAVIORS]


@pytest.mark.parametrize("ours, theirs", SIMPLE, ids=SIMPLE_IDS)
@given(text=texts)
def test_pre_tokenizer_equals_hf_on_any_text(ours, theirs, text):
    assert ours.pre_tokenize(text) == hf_pieces(theirs, text)


@pytest.mark.parametrize("ours, theirs", SIMPLE[:2] + SIMPLE[5:6], ids=SIMPLE_IDS[:2] + SIMPLE_IDS[5:6])
def test_pre_tokenizer_equals_hf_on_the_shared_corpora(ours, theirs):
    for line in shared_corpus_lines(every=7):
        assert ours.pre_tokenize(line) == hf_pieces(theirs, line), line


def test_unicode_scripts_rules():
    # Hiragana, Katakana and U+30FC count as Han; a leading run of spaces is dropped; "Any"
    # characters stay with the piece before them.
    assert [p for p, _, _ in UnicodeScripts().pre_tokenize("  日本ひらがなカタカナー abc")] == ["日本ひらがなカタカナー ", "abc"]
    assert UnicodeScripts().pre_tokenize("   ") == []
    assert hf_pieces(hf_pre.UnicodeScripts(), "   ") == []


@pytest.mark.parametrize("ours, theirs", SIMPLE, ids=SIMPLE_IDS)
def test_json_is_hf_json(ours, theirs):
    assert ours.to_json() == json.loads(theirs.__getstate__())


# -- Split: every behaviour, invert, String and Regex patterns -----------------------------------
PATTERNS = [("String", " "), ("String", "ab"), ("String", "."), ("Regex", r"\s+"), ("Regex", r"\p{L}+"),
            ("Regex", r"\d"), ("Regex", r"[.!?]+"), ("Regex", r"'s|'t| ?\p{L}+| ?\p{N}+"), ("Regex", r"a*")]
split_chars = st.one_of(st.sampled_from(list("ab .!?'s1x\t") + ["ab", "é", "日"]), st.characters(blacklist_categories=("Cs",)))


def hf_split(kind, pattern, behavior, invert):
    pattern = tokenizers.Regex(pattern) if kind == "Regex" else pattern
    return hf_pre.Split(pattern, HF_BEHAVIOR[behavior], invert=invert)


@pytest.mark.parametrize("kind, pattern", PATTERNS, ids=[f"{k}:{p}" for k, p in PATTERNS])
@pytest.mark.parametrize("behavior", BEHAVIORS)
@pytest.mark.parametrize("invert", [False, True])
# known_to_both: the `regex` module's \p{L} knows letters newer than Oniguruma's tables (see
# docs/contract.md); those are the reference's documented difference, not the split logic's.
# 90 combinations: 50 texts of up to 20 characters from a dozen traps each (4500 in all) reach every
# empty match, run and edge of these one-line patterns; the profile's 200 each took 50 s.
@settings(max_examples=50)
@given(text=st.lists(split_chars, max_size=20).map("".join).map(known_to_both))
def test_split_equals_hf(kind, pattern, behavior, invert, text):
    ours = Split(pattern, kind == "Regex", behavior, invert)
    assert ours.pre_tokenize(text) == hf_pieces(hf_split(kind, pattern, behavior, invert), text)


@given(text=texts)
def test_sequence_of_new_stages_equals_hf(text):
    ours = Sequence([Whitespace(), Punctuation("Contiguous"), UnicodeScripts()])
    theirs = hf_pre.Sequence([hf_pre.Whitespace(), hf_pre.Punctuation("contiguous"), hf_pre.UnicodeScripts()])
    assert ours.pre_tokenize(text) == hf_pieces(theirs, text)


# -- the Rust byte-level engine's Split follows the same fold ------------------------------------
from tinyllm.tok.stages.pre_tokenizers import ByteLevel  # noqa: E402

from tests.support.rust import core, needs_rust  # noqa: E402

RUST_SPLITS = [("Regex", "a*", "Isolated", False), ("Regex", "a*", "MergedWithNext", False),
               ("Regex", "[aeiou]", "Contiguous", True), ("String", "", "MergedWithPrevious", False),
               ("Regex", "(?=b)", "Isolated", False), ("String", "ab", "Contiguous", True)]


@needs_rust
@pytest.mark.parametrize("kind, pattern, behavior, invert", RUST_SPLITS)
@given(text=st.lists(split_chars, max_size=20).map("".join).map(known_to_both))
def test_rust_split_equals_reference_and_hf(kind, pattern, behavior, invert, text):
    pre = Sequence([Split(pattern, kind == "Regex", behavior, invert), ByteLevel(use_regex=False, add_prefix_space=False)])
    reference = [p[0].encode("utf-8") for p in Split(pattern, kind == "Regex", behavior, invert).pre_tokenize(text)]
    assert core.pre_tokenize(json.dumps(pre.to_json()), text) == reference
    assert [p for p, _, _ in hf_pieces(hf_split(kind, pattern, behavior, invert), text)] == \
        [p.decode("utf-8") for p in reference]
