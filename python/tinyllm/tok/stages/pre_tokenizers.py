"""Pre-tokenizers: cut normalized text into pieces that the model encodes independently.

A piece is `(text, start, end)`: its text and the code-point span it came from. The text differs
from `source[start:end]` only where ByteLevel's `add_prefix_space` put a space in front (then the
span still covers just the original characters). Stages compose like Hugging Face's `Sequence`:
each stage re-splits every piece of the stage before it, independently.

>>> gpt2 = ByteLevel(add_prefix_space=False)
>>> [p[0] for p in gpt2.pre_tokenize("Hello world's  end")]
['Hello', ' world', "'s", ' ', ' end']
>>> [p[0] for p in Digits(individual_digits=True).pre_tokenize("ab 123")]
['ab ', '1', '2', '3']
"""

from __future__ import annotations

import functools
import unicodedata

from tinyllm import _native
from tinyllm._record import field, record
from tinyllm.tok.stages.byte_level import ByteLevelOptions
from tinyllm.tok.stages.oniguruma import oniguruma_matches, to_python_syntax

# The GPT-2 split pattern, as used by Hugging Face's ByteLevel pre-tokenizer and by tiktoken's r50k.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

Piece = tuple  # (text: str, start: int, end: int)

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def split_spans(runs: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
    """Turn (start, end, is_delimiter) runs that cover a text into piece spans.

    The five behaviours of Hugging Face's SplitDelimiterBehavior, as its fold computes them:

    * Removed: delimiters are dropped;
    * Isolated: every run is its own piece;
    * MergedWithPrevious: a delimiter that follows a non-delimiter is glued onto it;
    * MergedWithNext: a delimiter that precedes a non-delimiter is glued onto it;
    * Contiguous: consecutive runs with the same flag form one piece (consecutive delimiters, or
      consecutive non-delimiters, which an inverted pattern's adjacent matches become).

    Runs may be empty (a regex's empty match): they take part in the fold (an empty delimiter
    still cuts), and empty pieces are dropped at the end.

    >>> split_spans([(0, 1, False), (1, 2, True), (2, 3, True), (3, 4, False)], "MergedWithPrevious")
    [(0, 2), (2, 3), (3, 4)]
    >>> split_spans([(0, 1, False), (1, 1, True), (1, 2, False)], "Isolated")  # "bb" split by a*
    [(0, 1), (1, 2)]
    """
    if behavior not in BEHAVIORS:
        raise ValueError(f"split behavior {behavior!r} is not one of {', '.join(BEHAVIORS)}")
    if behavior == "Removed":
        spans = [(s, e) for s, e, delim in runs if not delim]
    elif behavior == "Isolated":
        spans = [(s, e) for s, e, _ in runs]
    elif behavior == "MergedWithNext":
        mirrored = [(-e, -s, d) for s, e, d in reversed(runs)]
        spans = [(-e, -s) for s, e in reversed(_fold(mirrored, lambda d, previous: d and not previous))]
    elif behavior == "MergedWithPrevious":
        spans = _fold(runs, lambda d, previous: d and not previous)
    else:
        spans = _fold(runs, lambda d, previous: d == previous)
    return [(s, e) for s, e in spans if s < e]


def _fold(runs, glue) -> list[tuple[int, int]]:
    """HF's fold: a run is glued onto the piece before it when `glue(is_delim, previous_is_delim)`."""
    out: list[list[int]] = []
    previous = False
    for s, e, delim in runs:
        if glue(delim, previous) and out:
            out[-1][1] = e
        else:
            out.append([s, e])
        previous = delim
    return [(s, e) for s, e in out]


def _cover(text: str, matches) -> list[tuple[int, int, bool]]:
    """(start, end, is_match) runs covering all of `text`, from non-overlapping match spans."""
    runs = []
    last = 0
    for s, e in matches:
        if s > last:
            runs.append((last, s, False))
        runs.append((s, e, True))
        last = e
    if last < len(text):
        runs.append((last, len(text), False))
    return runs


class PreTokenizer:
    type: str = ""

    def split_piece(self, text: str) -> list[Piece]:
        """Split one piece's text; spans are relative to `text`."""
        raise NotImplementedError  # pragma: no cover

    def pre_tokenize(self, text: str) -> list[Piece]:
        return self.apply([(text, 0, len(text))])

    def apply(self, pieces: list[Piece], at_text_start: bool = True) -> list[Piece]:
        """Split every piece. `at_text_start` says whether offset 0 of these pieces is the start of
        the whole input (it is not after an added token); only Metaspace's "first" scheme cares."""
        out: list[Piece] = []
        for text, start, end in pieces:
            shift = len(text) - (end - start)  # a prefix added earlier has no source span
            for sub, s, e in self._split(text, at_text_start and start == 0 and shift == 0):
                out.append((sub, start + max(s - shift, 0), start + max(e - shift, 0)))
        return out

    def _split(self, text: str, at_text_start: bool) -> list[Piece]:
        return self.split_piece(text)

    def to_json(self) -> dict:
        return {"type": self.type}


@functools.lru_cache(maxsize=None)
def _gpt2():
    """The compiled GPT-2 regex (compiled on first use: loading a file that never runs the
    reference should not pay for it)."""
    import regex  # here, not at the top: loading a file should not pay for it

    return regex.compile(GPT2_PATTERN)


@record
class ByteLevel(ByteLevelOptions, PreTokenizer):
    """GPT-2's pre-tokenizer: optional prefix space, then the GPT-2 regex (when use_regex)."""

    def split_piece(self, text: str) -> list[Piece]:
        if not text:
            return []
        added = 0
        if self.add_prefix_space and not text.startswith(" "):
            text, added = " " + text, 1
        if not self.use_regex:
            return [(text, 0, len(text) - added)]
        return _unprefixed([(m.group(), m.start(), m.end()) for m in _gpt2().finditer(text)], added)


def _unprefixed(pieces: list[Piece], added: int) -> list[Piece]:
    """Spans of pieces cut from a text with `added` characters put in front, in the coordinates of
    the text before the prefix (the prefix itself maps to nothing)."""
    return [(t, max(s - added, 0), max(e - added, 0)) for t, s, e in pieces]


def is_numeric(ch: str) -> bool:
    """Rust's `char::is_numeric`: general category Nd, Nl or No."""
    return unicodedata.category(ch) in ("Nd", "Nl", "No")


@record
class Digits(PreTokenizer):
    """Split out digits: each one alone (individual_digits) or runs of them together."""

    individual_digits: bool = False
    type = "Digits"

    def split_piece(self, text: str) -> list[Piece]:
        # Each digit is its own match, as a one-character pattern would find it.
        matches = [(i, i + 1) for i, ch in enumerate(text) if is_numeric(ch)]
        runs = _cover(text, matches)
        behavior = "Isolated" if self.individual_digits else "Contiguous"
        return [(text[s:e], s, e) for s, e in split_spans(runs, behavior)]

    def to_json(self) -> dict:
        return {"type": "Digits", "individual_digits": self.individual_digits}


@record
class Split(PreTokenizer):
    """Split on a literal string or a regex; `invert` makes the matches the pieces' content."""

    pattern: str
    is_regex: bool
    behavior: str
    invert: bool = False
    _compiled: object = field(default=None, compare=False, repr=False)
    type = "Split"

    def __post_init__(self) -> None:
        # A pattern the Rust core scans by hand is one of the common ones, which compile once
        # translated (a test holds that): only the translation, which refuses what Python would read
        # differently, runs now, and the compile on first use, so a load that encodes on the engine
        # never imports `regex` (17 ms). Any other pattern is compiled now, to refuse a bad one.
        if self.is_regex and _native.core is not None and _native.core.split_scanner(self.pattern):
            to_python_syntax(self.pattern, "Split")
        else:
            self._regex()

    def _regex(self):
        """The compiled pattern (on first use): a regex is Oniguruma's (Hugging Face's engine),
        read as Python's regex in MULTILINE mode."""
        if self._compiled is None:
            import regex

            if self.is_regex:
                try:
                    compiled = regex.compile(to_python_syntax(self.pattern, "Split"), regex.MULTILINE)
                except regex.error as exc:
                    raise ValueError(f"Split: pattern {self.pattern!r} is not a valid regex: {exc}") from None
            else:
                compiled = regex.compile(regex.escape(self.pattern))
            object.__setattr__(self, "_compiled", compiled)
        return self._compiled

    def split_piece(self, text: str) -> list[Piece]:
        # Empty matches count (they cut), found as Oniguruma's iteration finds them.
        matches = list(oniguruma_matches(self._regex(), text)) if text else []
        runs = [(s, e, flag != self.invert) for s, e, flag in _cover(text, matches)]
        return [(text[s:e], s, e) for s, e in split_spans(runs, self.behavior)]

    def to_json(self) -> dict:
        key = "Regex" if self.is_regex else "String"
        return {"type": "Split", "pattern": {key: self.pattern}, "behavior": self.behavior, "invert": self.invert}


@functools.lru_cache(maxsize=None)
def _whitespace_piece():
    r"""HF's Whitespace: `\w+|[^\w\s]+` with the regex crate's Unicode classes (measured, see
    tools/gen_stage_tables.py); the matches are the pieces, what lies between is dropped.
    Compiled on first use (a large class: tens of milliseconds)."""
    from tinyllm.tok.stages import unicode_tables
    from tinyllm.tok.stages.decompose import class_body

    word, space = class_body(unicode_tables.WORD), class_body(unicode_tables.SPACE)
    import regex

    return regex.compile(f"[{word}]+|[^{word}{space}]+")


@record
class Whitespace(PreTokenizer):
    """Runs of word characters, and runs of other non-space characters; spaces are dropped.

    >>> [p[0] for p in Whitespace().pre_tokenize("Hey, you_2!? é")]
    ['Hey', ',', 'you_2', '!?', 'é']
    """

    type = "Whitespace"

    def split_piece(self, text: str) -> list[Piece]:
        return [(m.group(), m.start(), m.end()) for m in _whitespace_piece().finditer(text)]


@functools.lru_cache(maxsize=None)
def _is_punctuation():
    """A `Translation`: code point -> whether it is punctuation (tables imported on first use)."""
    from tinyllm.tok.stages import bert_tables
    from tinyllm.tok.stages.decompose import RangeSet, Translation

    punctuation = RangeSet(bert_tables.PUNCTUATION)
    return Translation(lambda cp: cp in punctuation)


def _char_split(text: str, is_delimiter, behavior: str) -> list[Piece]:
    """HF's split on a character predicate: every matching character is a delimiter of its own."""
    matches = [(i, i + 1) for i, ch in enumerate(text) if is_delimiter(ch)]
    return [(text[s:e], s, e) for s, e in split_spans(_cover(text, matches), behavior)]


@record
class Punctuation(PreTokenizer):
    """Split at punctuation (ASCII punctuation plus Unicode P*, BertPreTokenizer's set) with one of
    the five behaviours (HF's default: Isolated).

    >>> [p[0] for p in Punctuation("MergedWithNext").pre_tokenize("a,b..c")]
    ['a', ',b', '.', '.c']
    """

    behavior: str = "Isolated"
    type = "Punctuation"

    def split_piece(self, text: str) -> list[Piece]:
        is_punctuation = _is_punctuation()
        return _char_split(text, lambda ch: is_punctuation[ord(ch)], self.behavior)

    def to_json(self) -> dict:
        return {"type": "Punctuation", "behavior": self.behavior}


@record
class CharDelimiterSplit(PreTokenizer):
    """Split at one character, which is dropped.

    >>> [p[0] for p in CharDelimiterSplit("x").pre_tokenize("axxbx")]
    ['a', 'b']
    """

    delimiter: str
    type = "CharDelimiterSplit"

    def split_piece(self, text: str) -> list[Piece]:
        return _char_split(text, lambda ch: ch == self.delimiter, "Removed")

    def to_json(self) -> dict:
        return {"type": "CharDelimiterSplit", "delimiter": self.delimiter}


@functools.lru_cache(maxsize=None)
def _script_of():
    """A `Translation`: code point -> its script class (tables imported on first use)."""
    from tinyllm.tok.stages import unicode_tables
    from tinyllm.tok.stages.decompose import RangeSet, Translation

    scripts = RangeSet(unicode_tables.SCRIPT_CLASS)
    return Translation(lambda cp: (scripts.find(cp) or (0, 0, 0))[2])


@record
class UnicodeScripts(PreTokenizer):
    """Cut wherever the script changes (SentencePiece's rule, in HF's version).

    Each character has a script class from HF's table (tools/gen_stage_tables.py), where Hiragana,
    Katakana and U+30FC count as Han, and the space and unassigned code points are "Any". A cut
    falls before a non-Any character whose script differs from the last non-Any one; Any characters
    stay with the piece before them, and those before the first non-Any character are dropped
    (HF's cut list starts at that character), as is a text of Any characters only.

    >>> [p[0] for p in UnicodeScripts().pre_tokenize(" abc αβ 日本ひらがな 12")]
    ['abc ', 'αβ ', '日本ひらがな ', '12']
    """

    type = "UnicodeScripts"

    def split_piece(self, text: str) -> list[Piece]:
        cuts = []
        last = None
        script_of = _script_of()
        for i, ch in enumerate(text):
            script = script_of[ord(ch)]
            if script == 0:
                continue
            if script != last:
                cuts.append(i)
            last = script
        cuts.append(len(text))
        return [(text[s:e], s, e) for s, e in zip(cuts, cuts[1:]) if s < e]


@record
class Metaspace(PreTokenizer):
    """SentencePiece's whitespace: spaces become `replacement` (▁), a ▁ is put in front, and the
    text is cut before every ▁ (when `split`).

    `prepend_scheme` "always" prefixes every piece that does not start with ▁, "first" only the
    piece at the very start of the input (not one after an added token), "never" none. Old files
    say `add_prefix_space: true` for "always" and false for "never".

    >>> [p[0] for p in Metaspace().pre_tokenize("Hey  you")]
    ['▁Hey', '▁', '▁you']
    """

    replacement: str = "\u2581"
    prepend_scheme: str = "always"
    split: bool = True
    type = "Metaspace"

    def split_piece(self, text: str) -> list[Piece]:
        return self._split(text, True)

    def _split(self, text: str, at_text_start: bool) -> list[Piece]:
        if not text:
            return []
        text = text.replace(" ", self.replacement)
        added = int(not text.startswith(self.replacement) and (
            self.prepend_scheme == "always" or (self.prepend_scheme == "first" and at_text_start)))
        text = self.replacement * added + text
        if self.split:
            marks = [(i, i + 1) for i, ch in enumerate(text) if ch == self.replacement]
            spans = split_spans(_cover(text, marks), "MergedWithNext")
        else:
            spans = [(0, len(text))]
        return _unprefixed([(text[s:e], s, e) for s, e in spans], added)

    def to_json(self) -> dict:
        return {"type": "Metaspace", "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split}


@record
class Sequence(PreTokenizer):
    pretokenizers: tuple = ()
    type = "Sequence"

    def __init__(self, pretokenizers) -> None:
        object.__setattr__(self, "pretokenizers", tuple(pretokenizers))

    def apply(self, pieces: list[Piece], at_text_start: bool = True) -> list[Piece]:
        for stage in self.pretokenizers:
            pieces = stage.apply(pieces, at_text_start)
        return pieces

    def to_json(self) -> dict:
        return {"type": "Sequence", "pretokenizers": [p.to_json() for p in self.pretokenizers]}

