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

import functools
import re

from tinyllm._record import record
from tinyllm.tok.stages.normalizers import Normalizer
from tinyllm.tok.stages.pre_tokenizers import Piece, PreTokenizer

__all__ = ["BertNormalizer", "BertPreTokenizer", "WhitespaceSplit", "nfd"]


def nfd(text: str) -> str:
    """Canonical decomposition with HF's tables (`tinyllm.tok.stages.decompose.nfd`)."""
    from tinyllm.tok.stages.decompose import nfd as decompose

    return decompose(text)


class _Tables:
    """The normalizer's `str.translate` tables, made on first use from `bert_tables` (imported
    then: a file that encodes on the Rust engine never needs them, and they cost milliseconds)."""

    def __init__(self) -> None:
        from tinyllm.tok.stages import bert_tables as tables
        from tinyllm.tok.stages.decompose import RangeSet, Translation

        removed, to_space = RangeSet(tables.CLEAN_REMOVED), RangeSet(tables.CLEAN_TO_SPACE)
        cjk, stripped = RangeSet(tables.CJK), RangeSet(tables.STRIP_REMOVED)
        self.clean = Translation(lambda cp: None if cp in removed else " " if cp in to_space else cp)
        self.cjk = Translation(lambda cp: f" {chr(cp)} " if cp in cjk else cp)
        self.strip = Translation(lambda cp: None if cp in stripped else cp)
        self.lower = dict(tables.LOWERCASE)  # a missing key leaves the character as it is


@functools.lru_cache(maxsize=None)
def _tables() -> _Tables:
    return _Tables()


def _check_flag(name: str, value, *, optional: bool = False) -> None:
    if isinstance(value, bool) or (optional and value is None):
        return
    expected = "true, false or null (follow lowercase)" if optional else "true or false"
    raise ValueError(f"BertNormalizer: {name} = {value!r} must be {expected}")


@record
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
        tables = _tables()
        if self.clean_text:
            text = text.translate(tables.clean)
        if self.handle_chinese_chars:
            text = text.translate(tables.cjk)
        if self.strips_accents:
            # Marks are deleted only after reordering: a class-0 mark still ends a run in NFD.
            text = nfd(text).translate(tables.strip)
        if self.lowercase:
            text = text.translate(tables.lower)
        return text

    def to_json(self) -> dict:
        return {
            "type": self.type,
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
        }


@functools.lru_cache(maxsize=None)
def _bert_piece() -> re.Pattern:
    """Compiled on first use, like `_non_whitespace` (large classes; loading a file should not pay).
    The tables keep the two sets apart (a whitespace character is dropped before it could be
    isolated), so one pattern can both drop whitespace and isolate punctuation."""
    from tinyllm.tok.stages import bert_tables as tables
    from tinyllm.tok.stages.decompose import class_body as _class_body

    whitespace, punctuation = _class_body(tables.WHITESPACE), _class_body(tables.PUNCTUATION)
    return re.compile(f"[{punctuation}]|[^{whitespace}{punctuation}]+")


@functools.lru_cache(maxsize=None)
def _non_whitespace() -> re.Pattern:
    from tinyllm.tok.stages import bert_tables as tables
    from tinyllm.tok.stages.decompose import class_body as _class_body

    return re.compile(f"[^{_class_body(tables.WHITESPACE)}]+")


@record
class BertPreTokenizer(PreTokenizer):
    """Split at whitespace (dropped), then isolate each punctuation character.

    >>> BertPreTokenizer().split_piece("Hey friend!  How?!")
    [('Hey', 0, 3), ('friend', 4, 10), ('!', 10, 11), ('How', 13, 16), ('?', 16, 17), ('!', 17, 18)]
    """

    type = "BertPreTokenizer"

    def split_piece(self, text: str) -> list[Piece]:
        return [(m.group(), m.start(), m.end()) for m in _bert_piece().finditer(text)]


@record
class WhitespaceSplit(PreTokenizer):
    """Split at whitespace (Unicode White_Space, as Rust's `char::is_whitespace`), dropping it."""

    type = "WhitespaceSplit"

    def split_piece(self, text: str) -> list[Piece]:
        return [(m.group(), m.start(), m.end()) for m in _non_whitespace().finditer(text)]
