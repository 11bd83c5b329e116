"""NFC and NFKC: the Rust fast path, the Python reference and Hugging Face agree.

* every code point, alone and in composition contexts, against HF (batched: one `normalize_str`
  per context; the reference's full context sweep is tools/gen_stage_tables.py --check);
* hypothesis text heavy in combining marks, Hangul jamo and compatibility characters: Rust equals
  the reference, text and alignment, and HF;
* long runs normalize in linear time (counted, never timed).
"""

from __future__ import annotations

import functools
import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tinyllm.tok.stages import bert_tables, compose, unicode_tables
from tinyllm.tok.stages.normalizers import NFC, NFKC, Sequence, StripAccents, NFD
from tinyllm.tok.text.alignment import normalize_with_alignment

from tests.strategies import script_chars
from tests.support.rust import core, needs_rust

tokenizers = pytest.importorskip("tokenizers")
hf_norm = tokenizers.normalizers

FORMS = {"NFC": (NFC(), hf_norm.NFC()), "NFKC": (NFKC(), hf_norm.NFKC())}
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
# Around each code point c: after a Hangul lead and before two marks out of canonical order (c
# composes with what precedes, takes marks, and the marks reorder), and after a composed e + acute.
CONTEXTS = ["{}", "\u1100{}\u0301\u0323", "e\u0301{}\u0308", "\uac00{}\u11a8"]
SEPARATOR = "\x00"  # a starter that joins nothing and that nothing maps to


@functools.lru_cache(maxsize=None)
def context_text(context: str, interesting_only: bool = False) -> str:
    points = INTERESTING if interesting_only else CODE_POINTS
    return SEPARATOR.join(context.replace("{}", chr(cp)) for cp in points)


def _interesting() -> list[int]:
    """Code points some table of NFC / NFKC mentions (and Hangul), for the slower reference."""
    points = set(bert_tables.DECOMPOSITION) | set(unicode_tables.COMPAT_DECOMPOSITION) | set(compose.SECONDS)
    points |= {cp for pair in unicode_tables.COMPOSITION for cp in pair} | set(unicode_tables.COMPOSITION.values())
    for lo, hi, _ in bert_tables.COMBINING_CLASS:
        points.update(range(lo, hi + 1))
    points.update(range(0x1100, 0x1200))
    points.update(range(0xAC00, 0xAC00 + 28 * 3))
    return sorted(p for p in points if not 0xD800 <= p <= 0xDFFF)


INTERESTING = _interesting()


def _first_difference(context: str, points, ours: str, theirs: str) -> str:
    mine, want = ours.split(SEPARATOR), theirs.split(SEPARATOR)
    for cp, a, b in zip(points, mine, want):
        if a != b:
            return f"U+{cp:04X} in {context!r}: ours {a!r}, HF {b!r}"
    return f"lengths differ: {len(mine)} vs {len(want)}"


@needs_rust
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_rust_equals_hf_on_every_code_point_in_context(form, context):
    text = context_text(context)
    theirs = FORMS[form][1].normalize_str(text)
    ours = core.normalize(json.dumps({"type": form}), text)
    assert ours == theirs, _first_difference(context, CODE_POINTS, ours, theirs)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_reference_equals_hf_on_every_table_code_point_in_context(form, context):
    text = context_text(context, interesting_only=True)
    theirs = FORMS[form][1].normalize_str(text)
    ours = FORMS[form][0].normalize(text)
    assert ours == theirs, _first_difference(context, INTERESTING, ours, theirs)


@pytest.mark.parametrize("form", FORMS)
def test_reference_equals_hf_on_every_code_point_alone(form):
    text = context_text("{}")
    theirs = FORMS[form][1].normalize_str(text)
    ours = FORMS[form][0].normalize(text)
    assert ours == theirs, _first_difference("{}", CODE_POINTS, ours, theirs)


def test_hf_is_not_pythons_unicodedata():
    """Why the reference has its own tables: this Python's Unicode composes pairs HF does not and
    orders marks HF treats as starters."""
    hf = hf_norm.NFC()
    assert unicodedata.normalize("NFC", "\U00011935\U00011930") == "\U00011938"
    assert hf.normalize_str("\U00011935\U00011930") == NFC().normalize("\U00011935\U00011930") == "\U00011935\U00011930"
    assert unicodedata.normalize("NFC", "a\u0898\u0323") != hf.normalize_str("a\u0898\u0323")
    assert NFC().normalize("a\u0898\u0323") == hf.normalize_str("a\u0898\u0323")


nonstarters = st.sampled_from(bert_tables.COMBINING_CLASS).flatmap(lambda r: st.integers(r[0], r[1])).map(chr)
compat = st.sampled_from(sorted(unicode_tables.COMPAT_DECOMPOSITION)).map(chr)
pair_chars = st.sampled_from(sorted({cp for pair in unicode_tables.COMPOSITION for cp in pair})).map(chr)
jamo = st.one_of(st.integers(0x1100, 0x1112), st.integers(0x1161, 0x1175), st.integers(0x11A7, 0x11C3),
                 st.integers(0xAC00, 0xD7A3), st.integers(0x3131, 0x318E), st.integers(0xFFA0, 0xFFDC)).map(chr)
decomposing = st.sampled_from(sorted(bert_tables.DECOMPOSITION)).map(chr)
composing_text = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)), script_chars, nonstarters, compat,
                                   pair_chars, jamo, decomposing, st.sampled_from(list("ae \u0301\u0323\u0308"))),
                         max_size=40)


@needs_rust
@pytest.mark.parametrize("form", FORMS)
@given(text=composing_text)
def test_rust_equals_reference_and_hf_with_alignment(form, text):
    ours, theirs = FORMS[form]
    expected = ours.normalize(text)
    assert core.normalize(json.dumps({"type": form}), text) == expected  # the Rust path ran: core is the extension
    assert theirs.normalize_str(text) == expected
    assert core.compose_aligned(text, form == "NFKC") == ours.align(text)


@pytest.mark.parametrize("stage", [NFC(), NFKC(), Sequence([NFD(), StripAccents(), NFC()])], ids=str)
@given(text=composing_text)
def test_alignment_reproduces_the_text_and_spans_are_ordered(stage, text):
    out, align = normalize_with_alignment(stage, text)
    assert out == stage.normalize(text)
    assert len(align) == len(out)
    assert all(0 <= s < e <= len(text) for s, e in align)
    assert [s for s, _ in align] == sorted(s for s, _ in align)


def test_alignment_maps_composed_characters_to_their_sources():
    assert normalize_with_alignment(NFC(), "xe\u0301y") == ("xéy", [(0, 1), (1, 3), (3, 4)])
    assert normalize_with_alignment(NFKC(), "ﬁ\u0301") == ("fí", [(0, 2), (0, 2)])
    assert normalize_with_alignment(NFC(), "\u1100\u1161\u11a8!") == ("각!", [(0, 3), (3, 4)])


EDGE_CASES = [
    ("NFC", "e\u0301\u0323", "\u1eb9\u0301"),  # marks ordered first: e + dot below, then acute
    ("NFC", "a\u0301\u0301", "\u00e1\u0301"),  # the second acute is blocked by the first
    ("NFC", "\u0301a", "\u0301a"),  # no starter before the mark
    ("NFC", "\u212b\u2126", "\u00c5\u03a9"),  # singletons decompose for good
    ("NFC", "\uac00\u11a7", "\uac00\u11a7"),  # U+11A7 is "no trailing consonant": joins nothing
    ("NFC", "\uac00\u11a8", "\uac01"),
    ("NFC", "\uac01\u11a8", "\uac01\u11a8"),  # an LVT syllable takes no second trail
    ("NFKC", "\u1100\u3150", "\uac1c"),  # a compatibility vowel joins the lead before it
    ("NFKC", "Ｆｉｌｅ①²", "File12"),
]


@pytest.mark.parametrize("form, text, expected", EDGE_CASES)
def test_edge_cases(form, text, expected):
    ours, theirs = FORMS[form]
    assert theirs.normalize_str(text) == expected
    assert ours.normalize(text) == expected
    if core is not None:
        assert core.normalize(json.dumps({"type": form}), text) == expected


def test_json_is_hf_json():
    for ours, theirs in FORMS.values():
        assert ours.to_json() == json.loads(theirs.__getstate__())


@pytest.mark.parametrize("unit", ["\u0301", "e\u0301", "\u0323\u0301", "\u1100\u1161"])
def test_long_runs_are_linear(unit, monkeypatch):
    """The reference's composition looks at each decomposed character once: doubling a long run
    doubles the lookups (a run of marks is one segment, never re-scanned)."""
    calls = []
    real = compose._combining_class

    def counting(ch):
        calls.append(1)
        return real(ch)

    counts = []
    for n in (20_000, 40_000):
        calls.clear()
        monkeypatch.setattr(compose, "_combining_class", counting)
        out = NFC().normalize(unit * n)
        monkeypatch.undo()
        assert out == hf_norm.NFC().normalize_str(unit * n)
        counts.append(len(calls))
    assert 0 < counts[1] <= 2 * counts[0]
    if core is not None:  # the Rust side: one megabyte, once (no timing, only that it finishes and is right)
        big = unit * (1_000_000 // len(unit.encode()))
        assert core.normalize('{"type": "NFC"}', big) == NFC().normalize(big)
