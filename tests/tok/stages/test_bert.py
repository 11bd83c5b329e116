"""BertNormalizer, BertPreTokenizer and WhitespaceSplit give exactly what Hugging Face gives.

The full sweep of every code point lives in tools/gen_bert_tables.py (it runs when the tables are
generated, and with --check); these tests cover random text over all of Unicode, the shared
corpora, the edge cases one by one, and the JSON forms.
"""

from __future__ import annotations

import itertools
import json

import pytest
import tokenizers
from hypothesis import given
from hypothesis import strategies as st
from tinyllm.tok.stages import bert_tables as tables
from tinyllm.tok.stages.bert import BertNormalizer, BertPreTokenizer, WhitespaceSplit, nfd

from tests.peers import shared_corpus_lines, tokenizer_path
from tests.strategies import script_chars
from tests.support.rust import core, needs_rust

hf_normalizers = tokenizers.normalizers
hf_pre_tokenizers = tokenizers.pre_tokenizers

# (clean_text, handle_chinese_chars, strip_accents, lowercase)
EVERY_FLAGS = list(itertools.product([False, True], [False, True], [None, False, True], [False, True]))
DEFAULT_FLAGS = (True, True, None, True)


def hf_bert(flags):
    clean_text, handle_chinese_chars, strip_accents, lowercase = flags
    return hf_normalizers.BertNormalizer(
        clean_text=clean_text, handle_chinese_chars=handle_chinese_chars,
        strip_accents=strip_accents, lowercase=lowercase,
    )


def hf_pieces(pre_tokenizer, text):
    return [(piece, start, end) for piece, (start, end) in pre_tokenizer.pre_tokenize_str(text)]


# Characters where HF's tables and Python's differ or where the stages interact: deleted
# controls, whitespace of every kind, expanding lowercase, final sigma, marks of several combining
# classes (U+1D165 and U+1D16D are spacing marks that survive strip_accents), CJK ideographs and a
# compatibility ideograph that NFD maps to one, Hangul, format characters newer than HF's tables.
SPECIALS = list(
    "\x00\x7f\ufffd\x85\xa0\u200b\ufeff\t\n\r\x0b\x0c\x1c \u3000\u2028"
    "İIΣσςÅ\u212bé\u0301\u0302\u0316\u0323\u0334\u0345\u05b8\u0e48\u3099"
    "中文\uf900\U00020000한\u1100\u0890\u08e2\u00ad$+<=>^`|¿「」!?.,'"
) + ["\U0001d165", "\U0001d16d", "\U000110cd", "\U00013430", "\U0001e900"]
nonstarters = st.sampled_from(tables.COMBINING_CLASS).flatmap(lambda r: st.integers(r[0], r[1])).map(chr)
unicode_text = st.text(
    st.one_of(st.characters(blacklist_categories=("Cs",)), script_chars, st.sampled_from(SPECIALS), nonstarters),
    max_size=40,
)
flag_sets = st.sampled_from(EVERY_FLAGS)


# ---------------------------------------------------------------------------------------------
# BertNormalizer


@given(text=unicode_text, flags=flag_sets)
def test_normalizer_equals_hf_on_any_unicode_text(text, flags):
    assert BertNormalizer(*flags).normalize(text) == hf_bert(flags).normalize_str(text)


def test_normalizer_equals_hf_on_the_shared_corpora_with_bert_flags():
    ours, theirs = BertNormalizer(*DEFAULT_FLAGS), hf_bert(DEFAULT_FLAGS)
    for line in shared_corpus_lines(every=4):
        assert ours.normalize(line) == theirs.normalize_str(line), line


@pytest.mark.parametrize("flags", EVERY_FLAGS, ids=str)
def test_normalizer_equals_hf_on_shared_corpus_samples_under_every_flag_combination(flags):
    ours, theirs = BertNormalizer(*flags), hf_bert(flags)
    for line in shared_corpus_lines(every=97):
        assert ours.normalize(line) == theirs.normalize_str(line), line


EDGE_CASES = [
    # (text, flags, what HF gives)
    ("\x7f", DEFAULT_FLAGS, ""),
    ("a\x00b", DEFAULT_FLAGS, "ab"),
    ("a\ufffdb", DEFAULT_FLAGS, "ab"),
    ("a\x85b", DEFAULT_FLAGS, "ab"),  # NEL is whitespace but, being a control, is deleted first
    ("a\xa0b\u3000c\td\ne\rf", DEFAULT_FLAGS, "a b c d e f"),
    ("\x00\x7f", (False, False, False, False), "\x00\x7f"),
    ("a\u200bb\u0890c", DEFAULT_FLAGS, "ab\u0890c"),  # U+0890 is newer than HF's tables: kept
    ("İ", DEFAULT_FLAGS, "i"),  # NFD then strip leave 'I'
    ("İ", (True, True, False, True), "i\u0307"),  # lowercase alone expands to two code points
    ("ΟΔΟΣ ΟΔΟΣ.", DEFAULT_FLAGS, "οδοσ οδοσ."),  # no final sigma
    ("e\u0301", DEFAULT_FLAGS, "e"),
    ("e\u0301", (True, True, False, True), "e\u0301"),
    ("é", (True, True, False, False), "é"),
    ("é", (True, True, True, False), "e"),
    ("Å\u212b", DEFAULT_FLAGS, "aa"),
    ("中文ab", DEFAULT_FLAGS, " 中  文 ab"),
    ("中文", (True, False, None, True), "中文"),
    ("\uf900", DEFAULT_FLAGS, " \u8c48 "),  # spaced as CJK, then NFD maps it to U+8C48
    ("ệ", (False, False, True, False), "e"),
    ("a\U0001d16d\u0301\U0001d165", (False, False, True, False), "a\U0001d165\U0001d16d"),
    ("한", (False, False, True, False), "\u1112\u1161\u11ab"),
    ("", DEFAULT_FLAGS, ""),
]


@pytest.mark.parametrize("text, flags, expected", EDGE_CASES)
def test_normalizer_edge_cases(text, flags, expected):
    assert hf_bert(flags).normalize_str(text) == expected
    assert BertNormalizer(*flags).normalize(text) == expected


@pytest.mark.parametrize("text, flags, expected", tables.GOLDEN)
def test_golden_cases_shared_with_the_rust_tests_hold(text, flags, expected):
    assert BertNormalizer(*flags).normalize(text) == expected
    assert hf_bert(flags).normalize_str(text) == expected, (
        f"tokenizers {tokenizers.__version__} no longer gives the output measured with "
        f"{tables.TOKENIZERS_VERSION}: rerun tools/gen_bert_tables.py"
    )


def test_nfd_orders_marks_by_combining_class_and_keeps_equal_classes_in_order():
    assert nfd("a\u0301\u0316") == "a\u0316\u0301"  # 230 after 220
    assert nfd("a\u0301\u0300") == "a\u0301\u0300"  # both 230: order kept
    assert nfd("a\u0301b\u0316") == "a\u0301b\u0316"  # a starter ends the run
    assert nfd("\U0001d160") == "\U0001d158\U0001d165\U0001d16e"


@pytest.mark.parametrize("flags", EVERY_FLAGS, ids=str)
def test_normalizer_json_is_hf_json(flags):
    ours = BertNormalizer(*flags).to_json()
    assert ours == json.loads(hf_bert(flags).__getstate__())
    assert list(ours) == ["type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"]


def test_normalizer_json_of_bert_base_uncased_round_trips():
    section = json.loads(tokenizer_path("bert-base-uncased").read_text(encoding="utf-8"))["normalizer"]
    normalizer = BertNormalizer(**{k: v for k, v in section.items() if k != "type"})
    assert normalizer == BertNormalizer()
    assert normalizer.to_json() == section


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"clean_text": 1}, "clean_text = 1 must be true or false"),
        ({"handle_chinese_chars": None}, "handle_chinese_chars = None must be true or false"),
        ({"strip_accents": "yes"}, "strip_accents = 'yes' must be true, false or null"),
        ({"lowercase": "true"}, "lowercase = 'true' must be true or false"),
    ],
)
def test_normalizer_rejects_flags_that_are_not_booleans(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertNormalizer(**kwargs)


# ---------------------------------------------------------------------------------------------
# BertPreTokenizer and WhitespaceSplit

PRE_TOKENIZERS = [
    (BertPreTokenizer(), hf_pre_tokenizers.BertPreTokenizer()),
    (WhitespaceSplit(), hf_pre_tokenizers.WhitespaceSplit()),
]


@pytest.mark.parametrize("ours, theirs", PRE_TOKENIZERS, ids=["BertPreTokenizer", "WhitespaceSplit"])
@given(text=unicode_text)
def test_pre_tokenizers_equal_hf_on_any_unicode_text(ours, theirs, text):
    assert ours.split_piece(text) == hf_pieces(theirs, text)


@pytest.mark.parametrize("ours, theirs", PRE_TOKENIZERS, ids=["BertPreTokenizer", "WhitespaceSplit"])
def test_pre_tokenizers_equal_hf_on_the_shared_corpora(ours, theirs):
    normalizer = BertNormalizer()
    for line in shared_corpus_lines(every=11):
        for text in (line, normalizer.normalize(line)):
            assert ours.split_piece(text) == hf_pieces(theirs, text), text


@pytest.mark.parametrize("text", SPECIALS + ["Hey friend!     How are you?!?", "a$b+c<d=e>f^g`h|i", "x\x85y\x1cz"])
@pytest.mark.parametrize("ours, theirs", PRE_TOKENIZERS, ids=["BertPreTokenizer", "WhitespaceSplit"])
def test_pre_tokenizers_edge_cases_equal_hf(ours, theirs, text):
    assert ours.split_piece(text) == hf_pieces(theirs, text)


def test_bert_pre_tokenizer_isolates_ascii_symbols_and_unicode_punctuation():
    pieces = BertPreTokenizer().split_piece("Hey friend!  a$b ¿qué?")
    assert pieces == [
        ("Hey", 0, 3), ("friend", 4, 10), ("!", 10, 11), ("a", 13, 14), ("$", 14, 15), ("b", 15, 16),
        ("¿", 17, 18), ("qué", 18, 21), ("?", 21, 22),
    ]


def test_whitespace_split_drops_unicode_whitespace_but_not_information_separators():
    assert WhitespaceSplit().split_piece("a\x85b\u3000c\x1cd ") == [("a", 0, 1), ("b", 2, 3), ("c\x1cd", 4, 7)]


def test_pre_tokenizers_shift_spans_of_earlier_pieces():
    pieces = BertPreTokenizer().apply([("ab, cd", 10, 16)])
    assert pieces == [("ab", 10, 12), (",", 12, 13), ("cd", 14, 16)]


def test_pre_tokenizer_json_is_hf_json():
    for ours, theirs in PRE_TOKENIZERS:
        assert ours.to_json() == json.loads(theirs.__getstate__())


# ---------------------------------------------------------------------------------------------
# The Rust fast path (tinyllm._core, called directly) against the Python stages above


@needs_rust
@given(text=unicode_text, flags=flag_sets)
def test_rust_normalizer_equals_the_reference(text, flags):
    assert core.bert_normalize(text, *flags) == BertNormalizer(*flags).normalize(text)


@needs_rust
@given(text=unicode_text)
def test_rust_pre_tokenizers_equal_the_reference(text):
    assert core.bert_pre_tokenize(text) == [p for p, _, _ in BertPreTokenizer().split_piece(text)]
    assert core.whitespace_split(text) == [p for p, _, _ in WhitespaceSplit().split_piece(text)]
