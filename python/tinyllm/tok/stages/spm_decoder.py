"""Decoding as sentencepiece's `DecodeIds` does it (sentencepiece_processor.cc, `Decode`).

Token by token:

* a CONTROL piece (`<s>`, `</s>`, ...) decodes to nothing;
* the UNKNOWN piece decodes to `unk_surface` (default " ⁇ ");
* a run of BYTE pieces (`<0xE4><0xB8><0xAD>`) decodes as UTF-8, one character at a time: a
  well-formed character where one starts, else one U+FFFD for that *single* byte (so
  `<0xE4><0xB8>` is two U+FFFD, not one as Python's "replace" would give);
* any other piece (NORMAL, USER_DEFINED, UNUSED) is its text with "▁" turned into spaces, except
  that while nothing has been written yet, a leading "▁" is dropped (when the model adds a dummy
  prefix or removes extra whitespace). Without `remove_extra_whitespaces` only the first such "▁" is
  dropped; with it, every piece's leading "▁" is dropped until some text has been written.

A piece is classified by its text, reserved types first (as sentencepiece maps ids to pieces and
back). Streaming (`stream()`) gives exactly the same text: bytes are held only while they may still
complete a character.

>>> d = SpmDecoder(control=("</s>",), unknown="<unk>", byte_fallback=True)
>>> d.decode_tokens(["▁Hello", "▁wor", "ld", "</s>", "<0xE4>", "<0xB8>", "<unk>"])
'Hello world��  ⁇ '
>>> d.decode_tokens(["<0xE4>", "<0xB8>", "<0xAD>", "<0xE4>"])
'中�'
"""

from __future__ import annotations

from typing import Sequence

from tinyllm.tok.models.spm_pieces import byte_piece
from tinyllm.tok.stages.decoders import Decoder
from tinyllm.tok.stages.spm_normalizer import SPACE_SYMBOL

REPLACEMENT = "\ufffd"
_BYTE_OF = {byte_piece(b): b for b in range(256)}


def _char_length(data: bytes, pos: int) -> int:
    """Length of the well-formed UTF-8 character at `pos`, or 0 if there is none."""
    lead = data[pos]
    n = 1 if lead < 0x80 else 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0
    if n == 0 or pos + n > len(data):
        return 0
    try:
        data[pos:pos + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return n


def _could_complete(rest: bytes) -> bool:
    """Whether `rest` (shorter than its lead byte announces) is a prefix of a well-formed character."""
    lead = rest[0]
    n = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0
    if len(rest) >= n:
        return False
    try:
        rest.decode("utf-8", "strict")
        return False
    except UnicodeDecodeError as e:
        return e.reason == "unexpected end of data"


def decode_byte_run(data: bytes) -> str:
    """sentencepiece's bytes -> text: well-formed characters, one U+FFFD per other byte.

    >>> decode_byte_run(bytes([0xE4, 0xB8, 0x41]))
    '��A'
    """
    return _decided_prefix(data, final=True)[0]


def _decided_prefix(data, final: bool) -> tuple[str, int]:
    """(text, bytes consumed) of the decided start of `data`: well-formed characters, one U+FFFD
    per other byte; unless `final`, it stops before a tail that could still complete a character."""
    out = []
    pos = 0
    while pos < len(data):
        n = _char_length(data, pos)
        if n:
            out.append(bytes(data[pos:pos + n]).decode("utf-8"))
            pos += n
        elif not final and _could_complete(bytes(data[pos:])):
            break
        else:
            out.append(REPLACEMENT)
            pos += 1
    return "".join(out), pos


class SpmDecoder(Decoder):
    """See the module docstring."""

    type = "SentencePieceDecoder"
    position_dependent = True

    def __init__(self, *, control: Sequence[str] = (), unknown: str = "<unk>", unk_surface: str = " \u2047 ",
                 byte_fallback: bool = False, add_dummy_prefix: bool = True, remove_extra_whitespaces: bool = True) -> None:
        self.control = frozenset(control)
        self.unknown = unknown
        self.unk_surface = unk_surface
        self.byte_fallback = bool(byte_fallback)
        self.add_dummy_prefix = bool(add_dummy_prefix)
        self.remove_extra_whitespaces = bool(remove_extra_whitespaces)
        self.strips_leading = self.add_dummy_prefix or self.remove_extra_whitespaces

    def to_json(self) -> dict:
        return {"type": self.type, "control": sorted(self.control), "unknown": self.unknown,
                "unk_surface": self.unk_surface, "byte_fallback": self.byte_fallback,
                "add_dummy_prefix": self.add_dummy_prefix, "remove_extra_whitespaces": self.remove_extra_whitespaces}

    def byte_of(self, token: str):
        """The byte of a BYTE piece, else None."""
        return _BYTE_OF.get(token) if self.byte_fallback else None

    def piece_text(self, token: str, at_start: bool) -> tuple[str, bool]:
        """(text, whether a leading ▁ was consumed that ends the start) of a non-byte piece."""
        if token in self.control:
            return "", False
        if token == self.unknown:
            return self.unk_surface, False
        consumed = False
        if at_start and self.strips_leading and token.startswith(SPACE_SYMBOL):
            token = token[1:]
            consumed = not self.remove_extra_whitespaces
        return token.replace(SPACE_SYMBOL, " "), consumed

    def token_bytes(self, token: str, first: bool = False) -> bytes:
        """Approximate per-token bytes (a byte piece is its byte; others their text, the first
        without its leading ▁); `decode_tokens` and `stream` are the exact decode."""
        b = self.byte_of(token)
        if b is not None:
            return bytes([b])
        return self.piece_text(token, first)[0].encode("utf-8")

    def decode_tokens(self, tokens: list[str]) -> str:
        stream = self.stream()
        return "".join(stream.push(t) for t in tokens) + stream.flush()

    def stream(self) -> "SpmTokenStream":
        return SpmTokenStream(self)


class SpmTokenStream:
    """Streaming form of `SpmDecoder` (the TokenStream interface): push(token) -> text, flush()."""

    def __init__(self, decoder: SpmDecoder) -> None:
        self._d = decoder
        self._reset()

    def _reset(self) -> None:
        self._run = bytearray()  # byte pieces not yet written
        self._written = False  # some text has been written
        self._ws_seen = False  # the last piece consumed the leading ▁
        self._at_start = True  # a leading ▁ may still be dropped (never true again once false)

    def _drain(self, final: bool) -> str:
        """Write the run's bytes that are decided; all of them when `final`."""
        text, pos = _decided_prefix(self._run, final)
        del self._run[:pos]
        if text:
            self._written = True
        return text

    def push(self, token: str) -> str:
        b = self._d.byte_of(token)
        if b is not None:
            self._run.append(b)
            return self._drain(False)
        text = self._drain(True)
        if self._ws_seen or self._written:
            self._at_start = False
        piece, self._ws_seen = self._d.piece_text(token, self._at_start)
        if piece:
            self._written = True
        return text + piece

    def flush(self) -> str:
        text = self._drain(True)
        self._reset()
        return text

    @property
    def pending_bytes(self) -> bytes:
        return bytes(self._run)
