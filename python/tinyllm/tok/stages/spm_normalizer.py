"""SentencePiece's normalizer (`normalizer_spec` of a `.model` file), exactly as sentencepiece runs it.

The input is read left to right, in UTF-8 bytes. At each position the first of these that applies
consumes a prefix and yields its replacement:

1. the longest user-defined symbol starting there: kept as it is (never normalized);
2. the longest rule of the precompiled charsmap that is a prefix there (note: sentencepiece takes
   the *longest* rule at each byte position; Hugging Face's `Precompiled` walks grapheme clusters
   and takes the shortest rule, which is why the two can differ);
3. otherwise one character, unchanged.

Then, with `remove_extra_whitespaces` (default), leading spaces of the result are dropped, a space
right after a space is dropped, and trailing spaces are dropped; with `escape_whitespaces` every
space becomes "▁" (U+2581); with `add_dummy_prefix` one "▁" goes in front (or at the end, when the
model treats whitespace as a suffix). A text that is empty or all spaces normalizes to "".

>>> n = SpmNormalizer(None)
>>> n.normalize("  Hello   world ")
'▁Hello▁world'
>>> SpmNormalizer(None, user_defined=("<sep>",)).normalize("a <sep>b")
'▁a▁<sep>b'
>>> SpmNormalizer(None, remove_extra_whitespaces=False).normalize(" a  b")
'▁▁a▁▁b'

`align(text)` also gives, for each normalized character, the span of source characters it came
from (sentencepiece's `norm_to_orig`): a token covering normalized characters a..b spans source
characters `align[a][0]` to `align[b-1][1]`.
"""

from __future__ import annotations

import base64
from typing import Optional, Sequence

from tinyllm.tok.stages.normalizers import Normalizer
from tinyllm.tok.stages.precompiled import Precompiled

SPACE_SYMBOL = "\u2581"
_SPACE_BYTES = SPACE_SYMBOL.encode("utf-8")


def one_char_len(lead: int) -> int:
    """sentencepiece's OneCharLen: the UTF-8 length announced by a lead byte (1 for a stray
    continuation byte)."""
    return (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)[lead >> 4]


class PrefixMatcher:
    """The longest of a set of strings that is a prefix of the input at a position (the user-defined
    symbols). Matching is by UTF-8 bytes, as sentencepiece's darts trie does."""

    def __init__(self, symbols: Sequence[str]) -> None:
        self.symbols = tuple(symbols)
        by_lead: dict[int, list[bytes]] = {}
        for s in sorted({s.encode("utf-8") for s in symbols if s}, key=len, reverse=True):
            by_lead.setdefault(s[0], []).append(s)
        self._by_lead = by_lead

    def match(self, data: bytes, pos: int) -> int:
        """Bytes matched at `pos` (0: no symbol starts there)."""
        for s in self._by_lead.get(data[pos], ()):
            if data.startswith(s, pos):
                return len(s)
        return 0


class SpmNormalizer(Normalizer):
    """The normalizer of a SentencePiece model (see the module docstring)."""

    type = "SentencePieceNormalizer"

    def __init__(self, charsmap: Optional[bytes], *, add_dummy_prefix: bool = True,
                 remove_extra_whitespaces: bool = True, escape_whitespaces: bool = True,
                 treat_whitespace_as_suffix: bool = False, user_defined: Sequence[str] = ()) -> None:
        self.charsmap = bytes(charsmap) if charsmap else b""
        self.precompiled = Precompiled(self.charsmap) if self.charsmap else None
        self.add_dummy_prefix = bool(add_dummy_prefix)
        self.remove_extra_whitespaces = bool(remove_extra_whitespaces)
        self.escape_whitespaces = bool(escape_whitespaces)
        self.treat_whitespace_as_suffix = bool(treat_whitespace_as_suffix)
        self.user_defined = tuple(user_defined)
        self._matcher = PrefixMatcher(self.user_defined)

    def to_json(self) -> dict:
        return {
            "type": self.type,
            "precompiled_charsmap": base64.b64encode(self.charsmap).decode("ascii") if self.charsmap else None,
            "add_dummy_prefix": self.add_dummy_prefix,
            "remove_extra_whitespaces": self.remove_extra_whitespaces,
            "escape_whitespaces": self.escape_whitespaces,
            "treat_whitespace_as_suffix": self.treat_whitespace_as_suffix,
            "user_defined_symbols": list(self.user_defined),
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpmNormalizer) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(self.charsmap)

    # -- one step -----------------------------------------------------------------------------

    def _prefix(self, data: bytes, pos: int) -> tuple[bytes, int]:
        """sentencepiece's NormalizePrefix: (replacement bytes, bytes consumed) at `pos`."""
        matched = self._matcher.match(data, pos)
        if matched:
            return data[pos:pos + matched], matched
        if self.precompiled is not None:
            rule = self.precompiled.longest_rule(data, pos)
            if rule is not None:
                return rule[1].encode("utf-8"), rule[0]
        n = min(one_char_len(data[pos]), len(data) - pos)
        return data[pos:pos + n], n

    # -- the whole text -----------------------------------------------------------------------

    def normalize_bytes(self, data: bytes) -> tuple[bytes, list[int]]:
        """(normalized UTF-8, norm_to_orig): for each normalized byte the source byte offset it
        came from, plus one final entry (the end), as sentencepiece's Normalize returns them."""
        out = bytearray()
        to_orig: list[int] = []
        if not data:
            return b"", [0]
        pos = 0
        consumed = 0
        if self.remove_extra_whitespaces:  # drop leading spaces (as normalized)
            while pos < len(data):
                rep, n = self._prefix(data, pos)
                if rep != b" ":
                    break
                pos += n
                consumed += n
        if pos == len(data):
            return b"", [consumed]
        space = _SPACE_BYTES if self.escape_whitespaces else b" "

        def add_ws() -> None:
            out.extend(space)
            to_orig.extend([consumed] * len(space))

        if not self.treat_whitespace_as_suffix and self.add_dummy_prefix:
            add_ws()
        is_prev_space = self.remove_extra_whitespaces
        while pos < len(data):
            rep, n = self._prefix(data, pos)
            if is_prev_space:
                rep = rep.lstrip(b" ")
            if rep:
                for b in rep:
                    if b == 0x20 and self.escape_whitespaces:
                        out.extend(_SPACE_BYTES)
                        to_orig.extend([consumed] * 3)
                    else:
                        out.append(b)
                        to_orig.append(consumed)
                is_prev_space = rep.endswith(b" ")
            consumed += n
            pos += n
            if not self.remove_extra_whitespaces:
                is_prev_space = False
        if self.remove_extra_whitespaces:
            while out.endswith(space):
                length = len(out) - len(space)
                consumed = to_orig[length]
                del out[length:]
                del to_orig[length:]
        if self.treat_whitespace_as_suffix and self.add_dummy_prefix:
            add_ws()
        to_orig.append(consumed)
        return bytes(out), to_orig

    def normalize(self, text: str) -> str:
        return self.normalize_bytes(text.encode("utf-8"))[0].decode("utf-8", "replace")

    def align(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The normalized text and, per normalized character, its (start, end) source characters:
        start is where the rule that wrote it began, end where the next character's rule began
        (so a token's span is the source text sentencepiece reports as its surface)."""
        data = text.encode("utf-8")
        out, to_orig = self.normalize_bytes(data)
        normalized = out.decode("utf-8", "replace")
        char_at = [0] * (len(data) + 1)  # source byte offset -> source character index
        k = 0
        for i, ch in enumerate(text):
            n = len(ch.encode("utf-8"))
            for j in range(n):
                char_at[k + j] = i
            k += n
        char_at[len(data)] = len(text)
        starts = []
        b = 0
        for ch in normalized:
            starts.append(b)
            b += len(ch.encode("utf-8"))
        starts.append(len(out))
        spans = [(char_at[to_orig[starts[k]]], char_at[to_orig[starts[k + 1]]]) for k in range(len(normalized))]
        return normalized, spans
