"""BERT's text stages as Hugging Face `tokenizers` runs them: BertNormalizer, BertPreTokenizer,
WhitespaceSplit.

BertNormalizer applies, in this order, each stage whose flag is on:

1. clean_text: delete NUL, U+FFFD and control, format and private-use characters (but not
   \\t \\n \\r), then turn every whitespace character into a plain space;
2. handle_chinese_chars: put a space before and after every CJK ideograph, so each is a word;
3. strip_accents (unset means: the same as lowercase): canonical decomposition (NFD) of the whole
   text, then delete the nonspacing marks;
4. lowercase: each code point on its own, so there is no final-sigma rule and 'İ' becomes the two
   code points 'i' + U+0307 (when strip_accents is off).

BertPreTokenizer splits at whitespace (dropped) and makes every punctuation character a piece of
its own; WhitespaceSplit only splits at whitespace. Punctuation here is ASCII punctuation (which
includes symbols such as $ + < = > ^ ` |) plus the Unicode P* categories.

Which characters count as control, whitespace, nonspacing mark, punctuation, what NFD and
lowercase give: all of it comes from `bert_tables`, measured from HF itself by
`tools/gen_bert_tables.py`, never from this Python's `unicodedata`. HF's Rust crates carry their
own, older Unicode versions (U+0890 is a format character HF keeps; many marks newer than HF's
tables survive strip_accents), and each Python release carries another.

>>> bert = BertNormalizer()
>>> bert.normalize("Héllo\\u00a0WÖRLD\\x00! 中文")
'hello world!  中  文 '
>>> bert.normalize("ΟΔΟΣ")  # one code point at a time: no final sigma
'οδοσ'
>>> BertNormalizer(strip_accents=False).normalize("İ")
'i̇'
>>> [piece for piece, _, _ in BertPreTokenizer().pre_tokenize("hello world! 'ok'")]
['hello', 'world', '!', "'", 'ok', "'"]
>>> WhitespaceSplit().pre_tokenize("a, b\\tc")
[('a,', 0, 2), ('b', 3, 4), ('c', 5, 6)]
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from tinyllm.tok.stages import bert_tables as tables
from tinyllm.tok.stages.normalizers import Normalizer
from tinyllm.tok.stages.pre_tokenizers import Piece, PreTokenizer

__all__ = ["BertNormalizer", "BertPreTokenizer", "WhitespaceSplit", "nfd"]

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


class _RangeSet:
    """Membership in sorted inclusive (start, end) code-point ranges."""

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


class _Translation(dict):
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


def _class_body(ranges) -> str:
    """The inside of a `re` character class for code-point ranges (no Unicode database involved)."""
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi, *_ in ranges)


def _one_of(ranges) -> str:
    """A `re` pattern for one character in `ranges`, quick on text that is mostly not in them.

    `re` tests a class's code points above U+FFFF one range at a time, for every character it
    rejects; testing them only after a cheap "is this astral at all" keeps the scan fast.
    """
    bmp = [(lo, min(hi, 0xFFFF)) for lo, hi, *_ in ranges if lo <= 0xFFFF]
    astral = [(max(lo, 0x10000), hi) for lo, hi, *_ in ranges if hi > 0xFFFF]
    if not astral:
        return f"[{_class_body(bmp)}]"
    return f"(?:[{_class_body(bmp)}]|[\\U00010000-\\U0010ffff](?<=[{_class_body(astral)}]))"


_REMOVED = _RangeSet(tables.CLEAN_REMOVED)
_TO_SPACE = _RangeSet(tables.CLEAN_TO_SPACE)
_CJK = _RangeSet(tables.CJK)
_STRIPPED = _RangeSet(tables.STRIP_REMOVED)
_COMBINING = _RangeSet(tables.COMBINING_CLASS)

_CLEAN_TABLE = _Translation(lambda cp: None if cp in _REMOVED else " " if cp in _TO_SPACE else cp)
_CJK_TABLE = _Translation(lambda cp: f" {chr(cp)} " if cp in _CJK else cp)
_STRIP_TABLE = _Translation(lambda cp: None if cp in _STRIPPED else cp)
_LOWER_TABLE = dict(tables.LOWERCASE)  # a missing key leaves the character as it is


def _decompose(cp: int) -> str | int:
    if HANGUL_FIRST <= cp <= HANGUL_LAST:
        # Unicode 3.12: a syllable is leading + vowel (+ trailing) jamo, computed rather than listed.
        lead, rest = divmod(cp - HANGUL_FIRST, 21 * 28)
        vowel, trail = divmod(rest, 28)
        jamo = chr(0x1100 + lead) + chr(0x1161 + vowel)
        return jamo + chr(0x11A7 + trail) if trail else jamo
    return tables.DECOMPOSITION.get(cp, cp)


def _combining_class(ch: str) -> int:
    found = _COMBINING.find(ord(ch))
    return found[2] if found else 0


_DECOMPOSE_TABLE = _Translation(_decompose)
_NONSTARTER_RUN = re.compile(f"{_one_of(tables.COMBINING_CLASS)}{{2,}}")


def nfd(text: str) -> str:
    """Canonical decomposition as HF's NFD gives it: decompose, then order each run of marks.

    Within a run of characters whose combining class is not 0, NFD sorts by class, keeping the
    original order among equal classes; a class-0 character ends the run.

    >>> [hex(ord(c)) for c in nfd("ệ")]  # e + dot below (class 220) + circumflex (class 230)
    ['0x65', '0x323', '0x302']
    >>> [hex(ord(c)) for c in nfd("e\\u0302\\u0323")]
    ['0x65', '0x323', '0x302']
    """
    text = text.translate(_DECOMPOSE_TABLE)
    return _NONSTARTER_RUN.sub(lambda m: "".join(sorted(m.group(), key=_combining_class)), text)


def _check_flag(name: str, value, *, optional: bool = False) -> None:
    if isinstance(value, bool) or (optional and value is None):
        return
    expected = "true, false or null (follow lowercase)" if optional else "true or false"
    raise ValueError(f"BertNormalizer: {name} = {value!r} must be {expected}")


@dataclass(frozen=True)
class BertNormalizer(Normalizer):
    """HF's BertNormalizer; see the module docstring for its stages.

    >>> BertNormalizer(lowercase=False).normalize("Crème\\tBrûlée")  # unset strip_accents follows lowercase
    'Crème Brûlée'
    >>> BertNormalizer(strip_accents=True, lowercase=False).normalize("Crème")
    'Creme'
    >>> BertNormalizer(strip_accents=False).normalize("Crème")
    'crème'
    """

    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True
    type = "BertNormalizer"

    def __post_init__(self) -> None:
        _check_flag("clean_text", self.clean_text)
        _check_flag("handle_chinese_chars", self.handle_chinese_chars)
        _check_flag("strip_accents", self.strip_accents, optional=True)
        _check_flag("lowercase", self.lowercase)

    @property
    def strips_accents(self) -> bool:
        """Whether strip_accents runs: its own value, or lowercase's when it is unset."""
        return self.lowercase if self.strip_accents is None else self.strip_accents

    def normalize(self, text: str) -> str:
        if self.clean_text:
            text = text.translate(_CLEAN_TABLE)
        if self.handle_chinese_chars:
            text = text.translate(_CJK_TABLE)
        if self.strips_accents:
            # Marks are deleted only after reordering: a class-0 mark still ends a run in NFD.
            text = nfd(text).translate(_STRIP_TABLE)
        if self.lowercase:
            text = text.translate(_LOWER_TABLE)
        return text

    def to_json(self) -> dict:
        return {
            "type": self.type,
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
        }


_WHITESPACE = _class_body(tables.WHITESPACE)
_PUNCTUATION = _class_body(tables.PUNCTUATION)
# The tables keep the two sets apart (a whitespace character is dropped before it could be
# isolated), so one pattern can both drop whitespace and isolate punctuation.
_BERT_PIECE = re.compile(f"[{_PUNCTUATION}]|[^{_WHITESPACE}{_PUNCTUATION}]+")
_NON_WHITESPACE = re.compile(f"[^{_WHITESPACE}]+")


@dataclass(frozen=True)
class BertPreTokenizer(PreTokenizer):
    """Split at whitespace (dropped), then isolate each punctuation character.

    >>> BertPreTokenizer().split_piece("Hey friend!  How?!")
    [('Hey', 0, 3), ('friend', 4, 10), ('!', 10, 11), ('How', 13, 16), ('?', 16, 17), ('!', 17, 18)]
    """

    type = "BertPreTokenizer"

    def split_piece(self, text: str) -> list[Piece]:
        return [(m.group(), m.start(), m.end()) for m in _BERT_PIECE.finditer(text)]


@dataclass(frozen=True)
class WhitespaceSplit(PreTokenizer):
    """Split at whitespace (Unicode White_Space, as Rust's `char::is_whitespace`), dropping it."""

    type = "WhitespaceSplit"

    def split_piece(self, text: str) -> list[Piece]:
        return [(m.group(), m.start(), m.end()) for m in _NON_WHITESPACE.finditer(text)]
