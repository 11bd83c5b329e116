"""Unicode composition as Hugging Face's NFC and NFKC give it.

NFC is NFD followed by canonical composition (Unicode 3.11, UAX #15): walking the decomposed text,
a character C joins the last starter S when nothing between them blocks it (a character of class
0, or of a class >= C's) and (S, C) has a primary composite; NFKC is the same after NFKD. The pairs
are HF's, measured by tools/gen_stage_tables.py, never this Python's `unicodedata`: its newer
Unicode composes U+11935 U+11930 (HF leaves them apart) and knows combining classes HF does not.

>>> [hex(ord(c)) for c in nfc("e\\u0301\\u0323")]  # marks ordered first: e + dot below, then the acute
['0x1eb9', '0x301']
>>> nfc("\\u1100\\u1161\\u11a8"), nfkc("ﬁ\\u0301")
('각', 'fí')

Only the text near characters that can change is worked on: a segment is an unsafe character
run (characters that decompose differently, combine with what precedes them, or are not
starters) together with the character just before it, the starter they may join; everything
else is copied as it is.
"""

from __future__ import annotations

import functools
import re

from tinyllm.tok.stages import bert_tables, unicode_tables
from tinyllm.tok.stages.decompose import HANGUL_FIRST, HANGUL_LAST, _combining_class, nfd, nfkd, one_of

L_FIRST, V_FIRST, T_FIRST = 0x1100, 0x1161, 0x11A7  # T_FIRST itself is "no trailing consonant"
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28

COMPOSITION = unicode_tables.COMPOSITION
# Characters that may join the starter before them: second halves of pairs, Hangul vowels and trails.
SECONDS = frozenset(b for _, b in COMPOSITION) | frozenset(range(V_FIRST, V_FIRST + V_COUNT)) | frozenset(
    range(T_FIRST + 1, T_FIRST + T_COUNT))


def _composite(first: str, second: str) -> str | None:
    a, b = ord(first), ord(second)
    if L_FIRST <= a < L_FIRST + L_COUNT and V_FIRST <= b < V_FIRST + V_COUNT:
        return chr(HANGUL_FIRST + ((a - L_FIRST) * V_COUNT + b - V_FIRST) * T_COUNT)
    if HANGUL_FIRST <= a <= HANGUL_LAST and (a - HANGUL_FIRST) % T_COUNT == 0 and T_FIRST < b < T_FIRST + T_COUNT:
        return chr(a + b - T_FIRST)
    found = COMPOSITION.get((a, b))
    return chr(found) if found is not None else None


def compose(decomposed: str) -> str:
    """Canonical composition of text already decomposed and in canonical order."""
    out: list[str] = []
    starter = None  # index in `out` of the last starter, while marks may still join it
    last_class = None  # class of the last character kept after the starter; None: nothing yet
    for ch in decomposed:
        klass = _combining_class(ch)
        if starter is not None:
            blocked = last_class is not None and (last_class == 0 or last_class >= klass)
            joined = None if blocked else _composite(out[starter], ch)
            if joined is not None:
                out[starter] = joined
                continue
        if klass == 0:
            starter, last_class = len(out), None
        elif starter is not None:
            last_class = klass
        out.append(ch)
    return "".join(out)


def _decomposes_away(cp: int) -> bool:
    """Whether NFC changes the code point alone: it decomposes and is not a primary composite."""
    return cp in bert_tables.DECOMPOSITION and cp not in _PRIMARY


_PRIMARY = frozenset(COMPOSITION.values())


def _unsafe_ranges(compat: bool) -> list[tuple[int, int]]:
    points = set(SECONDS)
    points.update(cp for cp in bert_tables.DECOMPOSITION if _decomposes_away(cp))
    for lo, hi, _ in bert_tables.COMBINING_CLASS:
        points.update(range(lo, hi + 1))
    if compat:
        points.update(unicode_tables.COMPAT_DECOMPOSITION)
    out: list[list[int]] = []
    for cp in sorted(points):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [(lo, hi) for lo, hi in out]


@functools.lru_cache(maxsize=None)
def _segments(compat: bool) -> re.Pattern:
    """The runs NFC (NFKC when `compat`) may change, built on first use: the tables and the regex
    take a few milliseconds, which a process that normalizes on the Rust engine never pays."""
    # The character before a run of unsafe ones is a safe starter: the run's marks may join it.
    return re.compile(f"(?s).?{one_of(_unsafe_ranges(compat))}+")


def nfc(text: str) -> str:
    """HF's NFC."""
    return _segments(False).sub(lambda m: compose(nfd(m.group())), text)


def nfkc(text: str) -> str:
    """HF's NFKC."""
    return _segments(True).sub(lambda m: compose(nfkd(m.group())), text)


def _joins_back(first: str) -> bool:
    return _combining_class(first) != 0 or ord(first) in SECONDS


def align(text: str, compat: bool) -> tuple[str, list[tuple[int, int]]]:
    """NFC (NFKC when `compat`) of `text` and, per output character, the span of `text` it came from.

    The text is cut before every character whose decomposition starts with a starter that joins
    nothing before it; the pieces normalize on their own, and each output character maps to its
    whole piece.

    >>> align("xe\\u0301\\u0301", False)
    ('xé\\u0301', [(0, 1), (1, 4), (1, 4)])
    """
    decompose = nfkd if compat else nfd
    pieces: list[int] = []
    for k, ch in enumerate(text):
        first = decompose(ch)[:1] or ch
        if k == 0 or not _joins_back(first):
            pieces.append(k)
    pieces.append(len(text))
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    for start, end in zip(pieces, pieces[1:]):
        normalized = compose(decompose(text[start:end]))
        out.append(normalized)
        spans.extend([(start, end)] * len(normalized))
    return "".join(out), spans
