"""Special-token authority: user text never turns into a control token by accident.

A special token's text (say `<eos>`) typed by a user is ordinary text unless the caller names it in
`allowed_special`. The policy mirrors tiktoken's keywords with a safer default:

* `allowed_special`: `"all"` or a collection of special texts that may be matched in the input;
  default: none.
* `disallowed_special`: `"all"` or a collection of special texts whose presence in the input is an
  error; `"all"` means every special that is not allowed. Default: none, so such text stays text.

Matching is leftmost, and longest first where two specials start at the same position.

>>> policy = SpecialPolicy.resolve({"<eos>": 2}, allowed_special="all", disallowed_special=())
>>> split_on_specials("hi<eos>", policy)
[('hi', False), ('<eos>', True)]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from typing import Literal, Union

from tinyllm._record import record

SpecialSet = Union[Literal["all"], Collection[str]]


def _names(value: SpecialSet, known: Collection[str], parameter: str) -> frozenset[str]:
    if isinstance(value, str):
        if value == "all":
            return frozenset(known)
        raise ValueError(
            f"{parameter}: found the string {value!r}; expected \"all\" or a collection of special-token texts"
        )
    names = frozenset(value)
    for name in sorted(names - frozenset(known)):
        listed = ", ".join(repr(k) for k in sorted(known)) or "none"
        raise ValueError(
            f"{parameter}: {name!r} is not a special token of this tokenizer (its special tokens: {listed})"
        )
    return names


@record
class SpecialPolicy:
    """Which special texts are matched as control tokens, and which are refused."""

    allowed: frozenset[str] = frozenset()
    disallowed: frozenset[str] = frozenset()

    @classmethod
    def resolve(
        cls,
        special_ids: Mapping[str, int],
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = (),
    ) -> "SpecialPolicy":
        allowed = _names(allowed_special, special_ids, "allowed_special")
        if disallowed_special == "all":
            disallowed = frozenset(special_ids) - allowed
        else:
            disallowed = _names(disallowed_special, special_ids, "disallowed_special") - allowed
        return cls(allowed, disallowed)


@functools.lru_cache(maxsize=256)
def leftmost_longest(texts: frozenset[str]) -> re.Pattern | None:
    if not texts:
        return None
    # Longest first, so that at one position the longest special wins.
    ordered = sorted(texts, key=lambda t: (-len(t), t))
    return re.compile("|".join(re.escape(t) for t in ordered))


def raise_if_disallowed(text: str, policy: SpecialPolicy) -> None:
    """ValueError naming the first disallowed special in `text` and its code-point position."""
    refused = leftmost_longest(policy.disallowed)
    found = refused.search(text) if refused is not None else None
    if found is not None:
        raise ValueError(
            f"encode: the text contains the special token {found.group()!r} at position {found.start()}, "
            "which disallowed_special forbids; pass it in allowed_special to encode it as a control "
            "token, or leave it out of disallowed_special to encode it as ordinary text"
        )


def find_all(text: str, texts: frozenset[str]) -> list[tuple[int, int]]:
    """Non-overlapping (start, end) spans of `texts` in `text`: leftmost, then longest."""
    pattern = leftmost_longest(texts)
    if pattern is None:
        return []
    return [m.span() for m in pattern.finditer(text)]


def split_on_specials(text: str, policy: SpecialPolicy) -> list[tuple[str, bool]]:
    """Split `text` into (segment, is_special) runs under `policy`.

    Raises ValueError if a disallowed special appears (see `raise_if_disallowed`).
    Empty ordinary segments are dropped.
    """
    raise_if_disallowed(text, policy)
    parts: list[tuple[str, bool]] = []
    last = 0
    for start, end in find_all(text, policy.allowed):
        if start > last:
            parts.append((text[last:start], False))
        parts.append((text[start:end], True))
        last = end
    if last < len(text):
        parts.append((text[last:], False))
    return parts
