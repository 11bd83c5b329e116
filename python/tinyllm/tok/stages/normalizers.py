"""Normalizers: text -> text, applied before pre-tokenization (the `normalizer` of tokenizer.json).

Each stage is a small object with `normalize(text) -> str` and `to_json()`. Case mapping is done
one code point at a time, as Hugging Face does, so there is no final-sigma rule:
`Lowercase().normalize("ΟΔΟΣ") == "οδοσ"`, while Python's `str.lower` would give "οδος".

>>> Sequence([NFKC(), Lowercase()]).normalize("Ｆｉｌｅ")
'file'
>>> Sequence([Replace(" {2,}", True, " "), Strip(left=True, right=True)]).normalize("  a   b ")
'a b'
"""

from __future__ import annotations

from tinyllm._record import field, record
from tinyllm.tok.stages.oniguruma import oniguruma_matches, to_python_syntax

# The Unicode stages import their tables on first use (`compose`, `decompose` and the generated
# tables behind them: about 3 ms), which a file that encodes on the Rust engine never needs.


class Normalizer:
    type: str = ""

    def normalize(self, text: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def to_json(self) -> dict:
        return {"type": self.type}


@record
class NFC(Normalizer):
    """Canonical composition with HF's tables (see `tinyllm.tok.stages.compose`)."""

    type = "NFC"

    def normalize(self, text: str) -> str:
        from tinyllm.tok.stages.compose import nfc

        return nfc(text)

    def align(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The output and each character's span in `text` (for offsets)."""
        from tinyllm.tok.stages.compose import align

        return align(text, compat=False)


@record
class NFKC(Normalizer):
    """Compatibility composition with HF's tables: `NFKC().normalize("ﬁ") == "fi"`."""

    type = "NFKC"

    def normalize(self, text: str) -> str:
        from tinyllm.tok.stages.compose import nfkc

        return nfkc(text)

    def align(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The output and each character's span in `text` (for offsets)."""
        from tinyllm.tok.stages.compose import align

        return align(text, compat=True)


@record
class NFD(Normalizer):
    """Canonical decomposition with HF's tables (see `tinyllm.tok.stages.decompose`)."""

    type = "NFD"

    def normalize(self, text: str) -> str:
        from tinyllm.tok.stages.decompose import nfd

        return nfd(text)


@record
class NFKD(Normalizer):
    """Compatibility decomposition with HF's tables: `NFKD().normalize("ﬁ") == "fi"`."""

    type = "NFKD"

    def normalize(self, text: str) -> str:
        from tinyllm.tok.stages.decompose import nfkd

        return nfkd(text)


@record
class StripAccents(Normalizer):
    """Delete combining marks (Mn, Mc, Me), as they stand: HF does not decompose first, so a
    precomposed "é" stays and only a separate U+0301 goes (files put NFD / NFKD before it).

    >>> StripAccents().normalize("é e\u0301")
    'é e'
    """

    type = "StripAccents"

    def normalize(self, text: str) -> str:
        from tinyllm.tok.stages.decompose import strip_marks

        return strip_marks(text)


@record
class Prepend(Normalizer):
    """Put `prepend` in front of the text, unless the text is empty (HF's rule).

    The added characters come from the first source character, as in HF's alignments.

    >>> Prepend("▁").normalize("Hey"), Prepend("▁").normalize("")
    ('▁Hey', '')
    """

    prepend: str
    type = "Prepend"

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def align(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The output and each character's span in `text` (for offsets)."""
        if not text:
            return text, []
        return self.prepend + text, [(0, 1)] * len(self.prepend) + [(k, k + 1) for k in range(len(text))]

    def to_json(self) -> dict:
        return {"type": "Prepend", "prepend": self.prepend}


@record
class Lowercase(Normalizer):
    type = "Lowercase"

    def normalize(self, text: str) -> str:
        return "".join(ch.lower() for ch in text)


@record
class Sequence(Normalizer):
    normalizers: tuple = ()
    type = "Sequence"

    def __init__(self, normalizers) -> None:
        object.__setattr__(self, "normalizers", tuple(normalizers))

    def normalize(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize(text)
        return text

    def to_json(self) -> dict:
        return {"type": "Sequence", "normalizers": [n.to_json() for n in self.normalizers]}


# Rust's `char::is_whitespace` (the Unicode White_Space property), which Hugging Face's Strip uses.
# Python's `str.isspace` is not it: it also accepts U+001C..U+001F.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


@record
class Strip(Normalizer):
    """Remove White_Space characters at the left and/or right end.

    >>> Strip(left=True, right=False).normalize("\\u3000 a \\u3000") == "a \\u3000"
    True
    >>> Strip(left=True, right=True).normalize("\\x1c a")  # U+001C is not White_Space
    '\\x1c a'
    """

    left: bool = True
    right: bool = True
    type = "Strip"

    def normalize(self, text: str) -> str:
        return self.align(text)[0]

    def align(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The stripped text and each character's span in `text` (for offsets)."""
        start, end = 0, len(text)
        if self.left:
            start = end - len(text.lstrip(WHITE_SPACE))
        if self.right:
            end = start + len(text[start:].rstrip(WHITE_SPACE))
        return text[start:end], [(k, k + 1) for k in range(start, end)]

    def to_json(self) -> dict:
        return {"type": "Strip", "strip_left": self.left, "strip_right": self.right}


@record
class Replace(Normalizer):
    """Replace every match of `pattern` (a literal string, or a regex when `is_regex`) with `content`.

    Matches are found left to right without overlap, as Hugging Face's Oniguruma iteration does:
    an empty match right where the previous match ended is skipped, and an empty text is left
    alone. `content` is inserted literally (no group references).

    >>> Replace(" {2,}", True, " ").normalize("a  b     c")
    'a b c'
    >>> Replace("x*", True, "-").normalize("abxd")  # Python's regex.sub gives '-a-b--d-'
    '-a-b-d-'
    >>> Replace("", False, "-").normalize("ab")
    '-a-b-'

    Hugging Face compiles regexes with Oniguruma's Ruby syntax; we compile them with the `regex`
    module in MULTILINE mode, because in Ruby `^` and `$` always match at line breaks (and `^` is
    rewritten so that, as in Ruby, it does not match after a final newline). Constructs whose
    meaning differs between the two are rejected rather than silently misread: `\\h`, `\\H` (hex
    digits in Ruby), `\\Z`, and the inline flag `m` (dot-all in Ruby). Other rarely used
    Oniguruma-only syntax may still differ.

    >>> Replace("(?m)a.b", True, "")
    Traceback (most recent call last):
    ...
    ValueError: Replace: pattern '(?m)a.b': the inline flag 'm' means dot-all in Oniguruma (Hugging Face) but multi-line in Python; expected a pattern without it
    """

    pattern: str
    is_regex: bool
    content: str
    _compiled: object = field(init=False, repr=False, compare=False, default=None)
    type = "Replace"

    def __post_init__(self) -> None:
        if not self.is_regex:
            return
        import regex  # here, not at the top: only files with a Replace stage need it

        translated = to_python_syntax(self.pattern, "Replace")
        try:
            compiled = regex.compile(translated, regex.MULTILINE)
        except regex.error as exc:
            raise ValueError(f"Replace: pattern {self.pattern!r} is not a valid regex: {exc}") from None
        object.__setattr__(self, "_compiled", compiled)

    def normalize(self, text: str) -> str:
        if not text:
            return text
        if not self.is_regex:
            # Hugging Face escapes the string into a regex; for a literal, leftmost non-overlapping
            # matches are what `str.replace` finds (an empty pattern matches between every char).
            return text.replace(self.pattern, self.content)
        out = []
        copied = 0
        for start, end in oniguruma_matches(self._compiled, text):
            out.append(text[copied:start])
            out.append(self.content)
            copied = end
        out.append(text[copied:])
        return "".join(out)

    def to_json(self) -> dict:
        kind = "Regex" if self.is_regex else "String"
        return {"type": "Replace", "pattern": {kind: self.pattern}, "content": self.content}


SIMPLE = {"NFC": NFC, "NFKC": NFKC, "NFD": NFD, "NFKD": NFKD, "Lowercase": Lowercase, "StripAccents": StripAccents}
