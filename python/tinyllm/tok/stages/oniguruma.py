r"""Oniguruma patterns (Hugging Face's regex engine, Ruby syntax) read with Python's `regex`.

Hugging Face compiles the regexes of `Replace` and `Split` with Oniguruma's Ruby syntax. Most of
it reads the same in Python's `regex` module, compiled MULTILINE (in Ruby `^` and `$` always match
at line breaks). `to_python_syntax` rewrites what differs and can be rewritten, and refuses, with a
ValueError naming the stage, what cannot; `oniguruma_matches` iterates matches as Oniguruma does.

>>> import regex
>>> [m for m in oniguruma_matches(regex.compile("x*"), "abxd")]
[(0, 0), (1, 1), (2, 3), (4, 4)]
>>> to_python_syntax(r"\p{N}{1,3}+", "Split")
Traceback (most recent call last):
...
ValueError: Split: pattern '\\p{N}{1,3}+': '{...}+' repeats the interval in Oniguruma (Hugging Face) but is possessive in Python; expected a pattern without it (write (?:X{n,m})+ or (?>X{n,m}))
"""

from __future__ import annotations

import re

# `regex` (17 ms to import) is imported where patterns are compiled: loading a file whose Split
# runs on a Rust scanner should not pay for it. Translating a pattern reads plain ASCII syntax, `re`.


def oniguruma_matches(compiled, text: str):
    """Match spans in the order the Rust `onig` crate's `find_iter` yields them.

    Python's `regex.finditer` also yields an empty match that directly follows a non-empty one;
    `onig` skips it (and moves the search one character on), so "x*" finds 3 spans in "abxd",
    not 4.
    """
    position = 0
    last_end = None
    while position <= len(text):
        match = compiled.search(text, position)
        if match is None:
            return
        start, end = match.span()
        if start == end and end == last_end:
            position = end + 1
            continue
        yield start, end
        position = last_end = end


# Oniguruma's `^` (Ruby syntax) matches at the start and after a newline, but not at the very end
# of the text; Python's MULTILINE `^` also matches after a final newline.
_ONIGURUMA_LINE_START = r"(?:^(?!\z))"


def to_python_syntax(pattern: str, stage: str) -> str:
    """The Python `regex` spelling of an Oniguruma (Ruby syntax) pattern, compiled MULTILINE.

    Raises a ValueError naming `stage` for syntax the two read differently and that is not worth
    translating: `\\h`, `\\H` (hex digits in Ruby), `\\Z`, the inline flag `m` (dot-all in Ruby),
    and a `+` after an interval (`X{1,3}+` is possessive in Python and `(?:X{1,3})+` in Ruby).

    >>> to_python_syntax(r"^\\s+|[^a]", "Split")
    '(?:^(?!\\\\z))\\\\s+|[^a]'
    """
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped in ("h", "H", "Z"):
                raise ValueError(
                    f"{stage}: pattern {pattern!r}: \\{escaped} means something else in Oniguruma "
                    "(Hugging Face) than in Python; expected a pattern without it"
                )
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "^" and not in_class:
            out.append(_ONIGURUMA_LINE_START)
            i += 1
            continue
        elif ch == "(" and not in_class and pattern.startswith("(?", i):
            flags = re.match(r"\(\?([a-zA-Z-]*)[:)]", pattern[i:])
            if flags and "m" in flags.group(1):
                raise ValueError(
                    f"{stage}: pattern {pattern!r}: the inline flag 'm' means dot-all in Oniguruma "
                    "(Hugging Face) but multi-line in Python; expected a pattern without it"
                )
        elif ch == "}" and not in_class and pattern[i + 1 : i + 2] == "+" and _closes_interval(pattern, i):
            raise ValueError(
                f"{stage}: pattern {pattern!r}: '{{...}}+' repeats the interval in Oniguruma (Hugging Face) but is "
                "possessive in Python; expected a pattern without it (write (?:X{n,m})+ or (?>X{n,m}))"
            )
        out.append(ch)
        i += 1
    return "".join(out)


def _closes_interval(pattern: str, end: int) -> bool:
    """Whether the `}` at `end` closes an interval quantifier such as {3}, {1,3}, {2,} or {,4}."""
    start = pattern.rfind("{", 0, end)
    return start >= 0 and re.fullmatch(r"\d*,?\d*", pattern[start + 1 : end]) is not None and end > start + 1
