"""Unicode decomposition as Hugging Face's NFD and NFKD give it, and its combining marks.

Both decompose every code point fully (NFKD with the compatibility mappings too), then sort each
run of non-starters (combining class not 0) by class, keeping the original order among equal
classes. The tables are HF's, measured by tools/gen_bert_tables.py (canonical decompositions and
combining classes) and tools/gen_stage_tables.py (compatibility decompositions, combining marks),
never this Python's `unicodedata`, whose Unicode version differs.

>>> [hex(ord(c)) for c in nfd("ệ")]  # e + dot below (class 220) + circumflex (class 230)
['0x65', '0x323', '0x302']
>>> nfkd("ﬁ²")
'fi2'
>>> strip_marks("e\\u0301\\u0903")  # U+0903 is a spacing mark (Mc): also a combining mark
'e'
"""

from __future__ import annotations

import bisect
import functools
import re

from tinyllm.tok.stages import bert_tables, unicode_tables

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


class RangeSet:
    """Membership in sorted inclusive (start, end[, value]) code-point ranges."""

    def __init__(self, ranges) -> None:
        self._ranges = ranges
        self._starts = [lo for lo, *_ in ranges]

    def find(self, cp: int):
        i = bisect.bisect_right(self._starts, cp) - 1
        if i >= 0 and cp <= self._ranges[i][1]:
            return self._ranges[i]
        return None

    def __contains__(self, cp: int) -> bool:
        return self.find(cp) is not None


class Translation(dict):
    """A `str.translate` table that works out each code point's entry the first time it is seen.

    `str.translate` is the fastest per-character loop Python has; filling the table lazily keeps
    the cost proportional to the characters actually met instead of all 1.1M code points.
    """

    def __init__(self, rule) -> None:
        super().__init__()
        self._rule = rule

    def __missing__(self, cp: int):
        value = self[cp] = self._rule(cp)
        return value


def class_body(ranges) -> str:
    """The inside of a `re` character class for code-point ranges (no Unicode database involved)."""
    return "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi, *_ in ranges)


def one_of(ranges) -> str:
    """A `re` pattern matching one code point of `ranges`.

    `re` tests a class's code points above U+FFFF one range at a time, for every character it
    meets; the look-behind confines that cost to the rare astral characters.
    """
    bmp = [r for r in ranges if r[1] < 0x10000]
    astral = [r for r in ranges if r[1] >= 0x10000]
    if not astral:
        return f"[{class_body(bmp)}]"
    return f"(?:[{class_body(bmp)}]|[\\U00010000-\\U0010ffff](?<=[{class_body(astral)}]))"


def _decompose(cp: int) -> str | int:
    if HANGUL_FIRST <= cp <= HANGUL_LAST:
        # Unicode 3.12: a syllable is leading + vowel (+ trailing) jamo, computed rather than listed.
        lead, rest = divmod(cp - HANGUL_FIRST, 21 * 28)
        vowel, trail = divmod(rest, 28)
        jamo = chr(0x1100 + lead) + chr(0x1161 + vowel)
        return jamo + chr(0x11A7 + trail) if trail else jamo
    return bert_tables.DECOMPOSITION.get(cp, cp)


_COMBINING = RangeSet(bert_tables.COMBINING_CLASS)


def _combining_class(ch: str) -> int:
    found = _COMBINING.find(ord(ch))
    return found[2] if found else 0


_NFD_TABLE = Translation(_decompose)
_NFKD_TABLE = Translation(lambda cp: unicode_tables.COMPAT_DECOMPOSITION.get(cp) or _decompose(cp))
_MARKS = RangeSet(unicode_tables.COMBINING_MARKS)
_STRIP_MARKS_TABLE = Translation(lambda cp: None if cp in _MARKS else cp)


@functools.lru_cache(maxsize=None)
def _nonstarter_run() -> re.Pattern:
    """Runs of two or more combining marks (compiled on first use: a large class)."""
    return re.compile(f"{one_of(bert_tables.COMBINING_CLASS)}{{2,}}")


def _reorder(text: str) -> str:
    return _nonstarter_run().sub(lambda m: "".join(sorted(m.group(), key=_combining_class)), text)


def nfd(text: str) -> str:
    """Canonical decomposition (HF's NFD)."""
    return _reorder(text.translate(_NFD_TABLE))


def nfkd(text: str) -> str:
    """Compatibility decomposition (HF's NFKD)."""
    return _reorder(text.translate(_NFKD_TABLE))


def strip_marks(text: str) -> str:
    """Delete every combining mark (HF's StripAccents: general category Mn, Mc or Me in its
    tables), wherever it stands; nothing is decomposed first."""
    return text.translate(_STRIP_MARKS_TABLE)
