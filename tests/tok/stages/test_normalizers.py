"""NFD, NFKD, StripAccents and Prepend give exactly what Hugging Face gives, with alignments.

The sweep of every code point lives in tools/gen_stage_tables.py (run with --check); here random
text over all of Unicode, the shared corpora, edge cases, JSON forms and offsets.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tinyllm.tok.stages import bert_tables, unicode_tables
from tinyllm.tok.stages.normalizers import NFD, NFKD, Prepend, Sequence, StripAccents
from tinyllm.tok.text.alignment import normalize_with_alignment

from tests.peers import shared_corpus_lines
from tests.strategies import script_chars

tokenizers = pytest.importorskip("tokenizers")
hf_norm = tokenizers.normalizers

PAIRS = [(NFD(), hf_norm.NFD()), (NFKD(), hf_norm.NFKD()), (StripAccents(), hf_norm.StripAccents()),
         (Prepend("▁"), hf_norm.Prepend("▁")), (Prepend("ab"), hf_norm.Prepend("ab")),
         (Sequence([NFKD(), StripAccents()]), hf_norm.Sequence([hf_norm.NFKD(), hf_norm.StripAccents()])),
         (Sequence([Prepend("▁"), NFD()]), hf_norm.Sequence([hf_norm.Prepend("▁"), hf_norm.NFD()]))]
IDS = ["NFD", "NFKD", "StripAccents", "Prepend", "Prepend2", "NFKD+Strip", "Prepend+NFD"]

nonstarters = st.sampled_from(bert_tables.COMBINING_CLASS).flatmap(lambda r: st.integers(r[0], r[1])).map(chr)
compat = st.sampled_from(sorted(unicode_tables.COMPAT_DECOMPOSITION)).map(chr)
marks = st.sampled_from(unicode_tables.COMBINING_MARKS).flatmap(lambda r: st.integers(r[0], r[1])).map(chr)
unicode_text = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)), script_chars, nonstarters,
                                 compat, marks, st.sampled_from(list("éÅ\u212bﬁ²한 ▁"))), max_size=40)


@pytest.mark.parametrize("ours, theirs", PAIRS, ids=IDS)
@given(text=unicode_text)
def test_normalizer_equals_hf_on_any_text(ours, theirs, text):
    assert ours.normalize(text) == theirs.normalize_str(text)


@pytest.mark.parametrize("ours, theirs", PAIRS[:3], ids=IDS[:3])
def test_normalizer_equals_hf_on_the_shared_corpora(ours, theirs):
    for line in shared_corpus_lines(every=7):
        assert ours.normalize(line) == theirs.normalize_str(line), line


EDGE_CASES = [
    (NFD(), "é\u212b한", "e\u0301A\u030a\u1112\u1161\u11ab"),
    (NFKD(), "ﬁ²①ｶ\u3000", "fi21カ "),
    (NFKD(), "\u1e9b\u0323", "s\u0323\u0307"),  # long s with dot: compat then reordered marks
    (StripAccents(), "é", "é"),  # precomposed: nothing to strip without NFD first
    (StripAccents(), "e\u0301\u0903\u20dd", "e"),  # Mn, Mc and Me all go
    (Prepend("▁"), "", ""),
    (Prepend("▁"), " ", "▁ "),
]


@pytest.mark.parametrize("stage, text, expected", EDGE_CASES)
def test_edge_cases(stage, text, expected):
    hf = dict(zip(IDS, (p[1] for p in PAIRS)))
    theirs = {"NFD": hf["NFD"], "NFKD": hf["NFKD"], "StripAccents": hf["StripAccents"],
              "Prepend": hf_norm.Prepend(getattr(stage, "prepend", ""))}[stage.type]
    assert theirs.normalize_str(text) == expected
    assert stage.normalize(text) == expected


@pytest.mark.parametrize("ours, theirs", PAIRS[:5], ids=IDS[:5])
def test_json_is_hf_json(ours, theirs):
    assert ours.to_json() == json.loads(theirs.__getstate__())


@pytest.mark.parametrize("stage", [NFD(), NFKD(), StripAccents(), Prepend("▁"),
                                   Sequence([Prepend("▁"), NFKD(), StripAccents()])], ids=str)
@given(text=unicode_text)
def test_alignment_reproduces_the_text_and_spans_are_ordered(stage, text):
    out, align = normalize_with_alignment(stage, text)
    assert out == stage.normalize(text)
    assert len(align) == len(out)
    assert all(0 <= s < e <= len(text) for s, e in align)
    assert [s for s, _ in align] == sorted(s for s, _ in align)


def test_prepend_aligns_to_the_first_character():
    assert normalize_with_alignment(Prepend("▁"), "ab") == ("▁ab", [(0, 1), (0, 1), (1, 2)])
