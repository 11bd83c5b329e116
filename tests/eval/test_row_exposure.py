"""Direct exposure versus reachability (seed 003 lines 2683-2699): the seed's "th" / "ing"
example on compact-268, partial UTF-8 rows, specials, and the soundness of `reachable`."""

from __future__ import annotations

import doctest
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyllm.eval.row_exposure as exposure_module
from tinyllm.eval.row_exposure import exposure, exposure_report, reachable
from tinyllm.eval.seed_candidates import (BALANCED_MERGES, COMPACT_MERGES, EXPANDED_MERGES, RESERVED_CONTROLS,
                                          SEED_RECORDS, byte_bpe)

FIT = [r.text for r in SEED_RECORDS if r.split == "fit"]


@pytest.fixture(scope="module")
def compact():
    return byte_bpe(COMPACT_MERGES)


@pytest.fixture(scope="module")
def expanded():
    return byte_bpe(EXPANDED_MERGES)


def test_module_examples_hold():
    result = doctest.testmod(exposure_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_seed_th_and_ing_are_never_emitted_in_fit_yet_reachable(compact):
    # Seed 003 lines 2685-2691: zero final emissions in the fit records, yet encode emits them alone.
    assert compact.vocab_size == 268
    assert compact.token_bytes(264) == b"th" and compact.token_bytes(267) == b"ing"
    counts = exposure(compact, FIT)
    assert counts[264] == 0 and counts[267] == 0
    assert counts[265] > 0 and counts[266] > 0  # "the" consumed every "th"; "in" is emitted
    assert compact.encode("th") == [264]
    assert compact.encode("ing") == [267]
    assert reachable(compact, 264) and reachable(compact, 267)


def test_exposure_counts_final_ids(compact):
    counts = exposure(compact, FIT)
    expected = Counter(i for text in FIT for i in compact.encode(text))
    assert counts == expected
    assert sum(counts.values()) == sum(len(compact.encode(t)) for t in FIT)
    assert exposure(compact, iter(FIT)) == expected  # any iterable
    assert exposure(compact, []) == Counter()


def test_exposure_report_lists_never_emitted_and_unreachable_separately(compact):
    report = exposure_report(compact, FIT)
    assert report.texts == len(FIT)
    assert report.rows == tuple(range(268))
    specials = tuple(range(256, 264))
    # Never emitted: th, ing, the controls, and many bytes; unreachable: the controls (not allowed)
    # and the bytes that are not UTF-8 on their own (0x80-0xFF).
    assert {264, 267, *specials} <= set(report.never_emitted)
    assert 265 not in report.never_emitted and 266 not in report.never_emitted
    assert set(report.unreachable) == set(specials) | set(range(0x80, 0x100))
    assert 264 in report.never_emitted_but_reachable and 267 in report.never_emitted_but_reachable
    assert not set(specials) & set(report.never_emitted_but_reachable)
    allowed = exposure_report(compact, FIT, rows=specials, allow_special=True)
    assert allowed.rows == specials and allowed.unreachable == ()
    assert allowed.never_emitted == specials


def test_partial_utf8_row_is_unreachable_alone_but_emitted_in_context(expanded):
    partial, full = 276, 277
    assert expanded.token_bytes(partial) == b"\xe4\xb8" and expanded.token_bytes(full) == "中".encode()
    assert not reachable(expanded, partial)
    assert reachable(expanded, full)
    assert exposure(expanded, ["中文"])[partial] == 0  # consumed by 中
    assert exposure(expanded, ["丁"])[partial] == 1  # E4 B8 81: the partial row, then byte 0x81
    assert exposure(expanded, FIT)[partial] == 0


def test_specials_only_when_allowed(compact):
    for k, content in enumerate(RESERVED_CONTROLS):
        assert not reachable(compact, 256 + k)
        assert reachable(compact, 256 + k, allow_special=True)
        assert compact.encode(content) != [256 + k]  # not allowed: the text is plain bytes


def test_byte_rows(compact):
    assert reachable(compact, ord("a")) and reachable(compact, ord(" "))
    assert not reachable(compact, 0x80) and not reachable(compact, 0xFF)


def test_consumed_rows_and_rows_the_pre_tokenizer_always_cuts():
    # Merges b+c (rank 0), a+b (rank 1), a+bc (rank 2): in "abc" the row "ab" is never built
    # (bc merges first), so it has no emission there, yet "ab" alone emits it.
    tok = byte_bpe(((b"b", b"c"), (b"a", b"b"), (b"a", b"bc")))
    ab, abc = tok.token_to_id("ab"), tok.token_to_id("abc")
    assert exposure(tok, ["abc", "abcabc"])[ab] == 0
    assert reachable(tok, ab) and reachable(tok, abc)
    # A row "x " (x then a space): GPT-2's split hands the space to the next pre-token, so no
    # input emits it alone: its own text encodes to two ids.
    cut = byte_bpe(((b"x", b" "),))
    assert cut.token_bytes(264) == b"x "
    assert cut.encode("x ") == [ord("x"), ord(" ")]
    assert not reachable(cut, 264)


ALPHABET = list("thingerfoba=10 中丁xy")


@pytest.mark.parametrize("merges", [COMPACT_MERGES, BALANCED_MERGES, EXPANDED_MERGES], ids=["c", "b", "e"])
def test_every_row_reachable_iff_own_text_encodes_alone(merges):
    tok = byte_bpe(merges)
    for i in range(tok.vocab_size):
        data = tok.token_bytes(i)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            assert not reachable(tok, i)
            continue
        special = i in set(tok.special_ids.values())
        assert reachable(tok, i) == (not special and tok.encode(text) == [i])


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=8).map("".join), max_size=6))
def test_reachable_is_sound_and_complete_for_single_token_texts(texts):
    # Any text that a candidate encodes to one id proves that id reachable (reachable never says
    # False for a row some input emits alone: exactness for a tokenizer without a normalizer).
    tok = byte_bpe(EXPANDED_MERGES)
    counts = exposure(tok, texts)
    assert sum(counts.values()) == sum(len(tok.encode(t)) for t in texts)
    for text in texts:
        ids = tok.encode(text)
        if len(ids) == 1:
            assert reachable(tok, ids[0])
            assert tok.decode(ids) == text


def test_errors_name_the_parameter(compact):
    with pytest.raises(ValueError, match=r"reachable: token_id = 268; expected an int in 0\.\.267"):
        reachable(compact, 268)
    with pytest.raises(ValueError, match=r"reachable: token_id = True \(a bool\)"):
        reachable(compact, True)
    with pytest.raises(ValueError, match=r"reachable: allow_special = 1; expected True or False"):
        reachable(compact, 5, allow_special=1)
    with pytest.raises(ValueError, match=r"exposure: texts is a str; expected an iterable of str"):
        exposure(compact, "the")
    with pytest.raises(ValueError, match=r"exposure: texts\[1\] is a bytes; expected a str"):
        exposure(compact, ["a", b"b"])
    with pytest.raises(ValueError, match=r"exposure_report: token_id = -1; expected an int in 0\.\.267"):
        exposure_report(compact, FIT, rows=[-1])
