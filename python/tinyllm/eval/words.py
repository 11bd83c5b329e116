r"""Reference word counts: the denominator of fertility, counted without any tokenizer.

Fertility (tokens per word, seed 003 line 2588) needs a word count w(x) "computed independently of
the tokenizer" (line 2586), or a tokenizer that splits words its own way would grade itself. The
default counter is `uax29_word_count`:

    A *word* is a segment between two consecutive Unicode default word boundaries (UAX #29, with
    the `regex` module's Unicode tables) that contains at least one letter (``\p{L}``), number
    (``\p{N}``) or ideograph (``\p{Ideographic}``).

So "can't", "3.14", "foo_bar" and "x2" are one word each, "e-mail" is two, spaces, punctuation
and emoji are none, and each Han ideograph or Hiragana character is a word of its own (UAX #29
has no dictionary; Katakana runs stay together):

>>> uax29_word_count("Hello, world! It's 3.14 -- e-mail foo_bar")
7
>>> uax29_word_count("你好 カタカナ 🦙 ...")
3
>>> uax29_word_counts(["a:b a.b 1,2 1.a __", ""])
[5, 0]

`uax29_word_counts` counts in the Rust core when it is selected (`tinyllm._core.uax29_word_counts`:
unicode-segmentation 1.13's `split_word_bounds`, the crate Hugging Face uses, and the rule above,
texts in parallel). Otherwise, and as the readable reference, it applies the UAX #29 rules (WB3 to
WB13b; WB3d and WB15/16 only join characters that are never words) to whole arrays of code points
with numpy, so counting costs a fraction of what the `regex` module's own word boundaries cost.
The two count the same words on every document of the shared corpora (the tests hold them equal
there and on random text).
`uax29_word_count_reference` counts with the `regex` module's WORD flag, ``(?w)``: the tests
hold the two equal, except where ``regex`` does not look through Extend, Format and ZWJ in
WB6/7 and WB11/12 (it splits "e\u0301:a", which UAX #29's WB4 keeps whole).

Any other counter can stand in (`evaluate(..., words=my_counter)`): a function from one text to a
non-negative int.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import regex

from tinyllm import _native

# Word_Break classes as small codes (UAX #29 table 3; Format joins Extend: the rules treat them
# alike), and for each the properties the rules test, as bits.
_CLASSES = ("Other", "CR", "LF", "Newline", "Extend", "Format", "ZWJ", "ALetter", "Hebrew_Letter", "Numeric",
            "Katakana", "ExtendNumLet", "MidLetter", "MidNum", "MidNumLet", "Single_Quote", "Double_Quote")
_K = 32  # codes fit in 5 bits, so a window of 4 codes is one index below 2**20
_AH, _HL, _NUM, _KATA, _ENL = 1, 2, 4, 8, 16      # AHLetter, Hebrew_Letter, Numeric, Katakana, ExtendNumLet
_MIDLETQ, _MIDNUMQ, _SQ, _DQ = 32, 64, 128, 256   # (MidLetter|MidNumLetQ), (MidNum|MidNumLetQ), the quotes
_CR, _LF, _NL, _E, _ZWJ = 512, 1024, 2048, 4096, 8192
_BITS = {
    "CR": _CR | _NL, "LF": _LF | _NL, "Newline": _NL, "Extend": _E, "Format": _E, "ZWJ": _E | _ZWJ,
    "ALetter": _AH, "Hebrew_Letter": _AH | _HL, "Numeric": _NUM, "Katakana": _KATA, "ExtendNumLet": _ENL,
    "MidLetter": _MIDLETQ, "MidNum": _MIDNUMQ, "MidNumLet": _MIDLETQ | _MIDNUMQ,
    "Single_Quote": _MIDLETQ | _MIDNUMQ | _SQ, "Double_Quote": _DQ,
}
_CR_CODE, _NEWLINE, _EXTEND, _ZWJ_CODE, _FIRST_MID = (_CLASSES.index(name) for name in
                                                   ("CR", "Newline", "Extend", "ZWJ", "MidLetter"))
_CODE_BITS = np.array([_BITS.get(name, 0) for name in _CLASSES] + [0] * (_K - len(_CLASSES)), dtype=np.uint16)

# Code points per chunk: the arrays of one chunk are a few bytes per code point each.
_CHUNK = 1 << 22


def _joins(before, left, right, after) -> np.ndarray:
    """Whether UAX #29 keeps `left` and `right` together, from the bits of the characters around
    the pair (WB4's ignored characters already removed): rules WB3 and WB5 to WB13b. WB3d (spaces)
    and WB15/16 (flags) are left out: they only join characters that are never words."""
    def has(x, bit):
        return (x & bit) != 0

    ah_l, ah_r, num_l, num_r = has(left, _AH), has(right, _AH), has(left, _NUM), has(right, _NUM)
    join = has(left, _CR) & has(right, _LF)                                         # WB3
    join |= ah_l & ah_r                                                             # WB5
    join |= ah_l & has(right, _MIDLETQ) & has(after, _AH)                           # WB6
    join |= has(before, _AH) & has(left, _MIDLETQ) & ah_r                           # WB7
    join |= has(left, _HL) & has(right, _SQ)                                        # WB7a
    join |= has(left, _HL) & has(right, _DQ) & has(after, _HL)                      # WB7b
    join |= has(before, _HL) & has(left, _DQ) & has(right, _HL)                     # WB7c
    join |= (num_l | ah_l) & num_r                                                  # WB8, WB9
    join |= num_l & ah_r                                                            # WB10
    join |= has(before, _NUM) & has(left, _MIDNUMQ) & num_r                         # WB11
    join |= num_l & has(right, _MIDNUMQ) & has(after, _NUM)                         # WB12
    join |= has(left, _KATA) & has(right, _KATA)                                    # WB13
    join |= has(left, _AH | _NUM | _KATA | _ENL) & has(right, _ENL)                 # WB13a
    join |= has(left, _ENL) & has(right, _AH | _NUM | _KATA)                        # WB13b
    return join


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(Word_Break code per code point, Extended_Pictographic per code point, letter-number-
    ideograph per code point, `_joins` of every window of four codes, a break for every pair of
    codes between two Other), from the `regex` module's Unicode tables, once (about 100 ms): a
    pair's decision is then one table look-up."""
    points = np.concatenate((np.arange(0xD800, dtype=np.uint32), np.arange(0xE000, 0x110000, dtype=np.uint32)))
    everything = points.tobytes().decode("utf-32-le")

    def mark(table, pattern, value):
        for m in regex.finditer(pattern + "+", everything):
            table[points[m.start()]:points[m.end() - 1] + 1] = value

    code = np.zeros(0x110000, dtype=np.uint8)
    for k, name in enumerate(_CLASSES[1:], start=1):
        mark(code, rf"\p{{WB={name}}}", k)
    pictographic = np.zeros(0x110000, dtype=bool)
    mark(pictographic, r"\p{Extended_Pictographic}", True)
    wordish = np.zeros(0x110000, dtype=bool)
    mark(wordish, r"[\p{L}\p{N}\p{Ideographic}]", True)
    window = np.arange(_K ** 4, dtype=np.uint32)
    b, l, r, a = (_CODE_BITS[(window >> shift) % _K] for shift in (15, 10, 5, 0))
    joins = _joins(b, l, r, a)
    # A break between two codes when nothing around them matters (before and after Other).
    splits = ~joins[(np.arange(_K * _K, dtype=np.uint32) << 5)]
    return code, pictographic, wordish, joins, splits


def _word_starts(text: str) -> np.ndarray:
    """Code-point positions in `text` of the first character of each word."""
    code_of, pictographic, wordish, joins, splits = _tables()
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    if not len(points):
        return np.zeros(0, dtype=np.int64)
    code = code_of[points]
    is_word = wordish[points]
    # WB4: Extend, Format and ZWJ belong to the character before them, except at the start of
    # text and after a newline (WB3a); the other rules look through them. The rules then run on
    # the skeleton of the characters that stay, each standing for its cluster.
    absorbed = (code - np.uint8(_EXTEND)) <= _ZWJ_CODE - _EXTEND
    absorbed[1:] &= (code[:-1] - np.uint8(_CR_CODE)) > _NEWLINE - _CR_CODE
    absorbed[0] = False
    zwj = np.flatnonzero(code[:-1] == _ZWJ_CODE) + 1
    at = np.flatnonzero(~absorbed) if absorbed.any() else None
    if at is not None:
        # A cluster holds a word character when any of its characters is one (a few Extend
        # characters are letters, e.g. U+FF9E).
        inside = np.flatnonzero(absorbed & is_word)
        code, is_word = code[at], is_word[at]
        is_word[np.searchsorted(at, inside, side="right") - 1] = True
    # Two-character rules by one look-up per pair (before and after taken as Other) ...
    breaks = np.empty(len(code), dtype=bool)
    breaks[0] = True
    pair = np.left_shift(code[:-1], 5, dtype=np.uint16)
    pair |= code[1:]
    np.take(splits, pair, out=breaks[1:])
    # ... then the pairs next to a Mid* or quote character, where WB6/7, WB7b/c and WB11/12 look
    # one character further, with the whole window of four.
    mid = np.flatnonzero(code >= _FIRST_MID)
    if len(mid):
        window = np.zeros(len(code) + 2, dtype=np.uint32)
        window[1:-1] = code
        j = np.concatenate((mid, mid + 1))  # pair j joins skeleton characters j - 1 and j
        j = j[(j >= 1) & (j < len(code))]
        index = (window[j - 1] << 15) | (window[j] << 10) | (window[j + 1] << 5) | window[j + 2]
        breaks[j] = ~joins[index]
    # WB3c: ZWJ × Extended_Pictographic, on the characters as they stand (ZWJ is rare: look there).
    glued = zwj[pictographic[points[zwj]] & ~absorbed[zwj]]
    if len(glued):
        breaks[np.searchsorted(at, glued) if at is not None else glued] = False
    segment = np.cumsum(breaks, dtype=np.int32)[is_word]
    where = np.flatnonzero(is_word)
    first = np.ones(len(where), dtype=bool)
    first[1:] = segment[1:] != segment[:-1]
    starts = where[first]
    return at[starts] if at is not None else starts


def uax29_word_counts(texts: Sequence[str]) -> list[int]:
    """The number of words (see the module docstring) in each of `texts`: in the Rust core when
    it is selected, else by `uax29_word_counts_numpy`."""
    core = _native.core
    if core is not None:
        return core.uax29_word_counts(list(texts))
    return uax29_word_counts_numpy(texts)


def uax29_word_counts_numpy(texts: Sequence[str]) -> list[int]:
    """`uax29_word_counts` with numpy, the reference of the Rust counter.

    Texts are joined with line feeds, which are word boundaries on both sides (WB3a, WB3b), and
    counted a few million code points at a time.

    >>> uax29_word_counts_numpy(["a:b a.b 1,2 1.a __", ""])
    [5, 0]
    """
    counts = [0] * len(texts)
    k = 0
    while k < len(texts):
        end, size = k, 0
        while end < len(texts) and (end == k or size + len(texts[end]) < _CHUNK):
            size += len(texts[end]) + 1
            end += 1
        starts = np.cumsum([0] + [len(t) + 1 for t in texts[k:end - 1]])
        owner = np.searchsorted(starts, _word_starts("\n".join(texts[k:end])), side="right") - 1
        for j, c in enumerate(np.bincount(owner, minlength=end - k).tolist()):
            counts[k + j] = c
        k = end
    return counts


def uax29_word_count(text: str) -> int:
    """The number of words in `text` (see the module docstring for what a word is).

    >>> uax29_word_count("naïve café, 3.14 d'accord")
    4
    """
    return uax29_word_counts([text])[0]


_WORD = regex.compile(
    # One segment holding a letter, number or ideograph: start at a boundary, cross only
    # non-boundaries until such a character, then run to the next boundary.
    r"(?wsV1)\b(?:[^\p{L}\p{N}\p{Ideographic}](?!\b))*[\p{L}\p{N}\p{Ideographic}].*?\b"
)


def uax29_word_count_reference(text: str) -> int:
    """`uax29_word_count` by the `regex` module's own word boundaries (its WORD flag, ``(?w)``):
    the independent implementation the numpy rules are tested against (it differs only after an
    Extend, Format or ZWJ character next to a Mid* or quote character; see the module docstring).

    >>> uax29_word_count_reference("naïve café, 3.14 d'accord")
    4
    """
    return len(_WORD.findall(text))
