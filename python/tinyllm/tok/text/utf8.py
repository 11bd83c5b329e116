"""Streaming UTF-8 decoding with maximal-subpart replacement (the pure-Python reference).

Bytes arrive a token at a time. A complete character is emitted as soon as its last byte arrives;
a sequence that can no longer become a character is replaced by one U+FFFD per *maximal subpart*
(the longest prefix of a well-formed sequence, or a single bad byte); a trailing sequence that
could still complete stays pending. This is the rule of `bytes.decode("utf-8", "replace")`, so the
streamed chunks always concatenate to the one-shot decoding.

>>> d = Utf8StreamDecoder()
>>> [d.push(b"\\xc3"), d.push(b"\\xa9"), d.push(b"\\xff")]
['', 'é', '�']
>>> d.push(b"\\xe2\\x82"), d.flush()
('', '�')

The Rust twin is `tinyllm._core.Utf8Decoder`; `new_utf8_decoder()` picks whichever is active.
"""

from __future__ import annotations

from tinyllm._native import core

REPLACEMENT = "\ufffd"


def _sequence_shape(lead: int) -> tuple[int, int, int] | None:
    """For a lead byte: (sequence length, lowest and highest allowed second byte); None if invalid.

    These are the well-formed byte sequences of the Unicode Standard (table 3-7). Restricting the
    second byte rules out overlong forms (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code
    points past U+10FFFF (F4 90..).
    """
    if lead < 0x80:
        return (1, 0, 0)
    if 0xC2 <= lead <= 0xDF:
        return (2, 0x80, 0xBF)
    if lead == 0xE0:
        return (3, 0xA0, 0xBF)
    if 0xE1 <= lead <= 0xEC or 0xEE <= lead <= 0xEF:
        return (3, 0x80, 0xBF)
    if lead == 0xED:
        return (3, 0x80, 0x9F)
    if lead == 0xF0:
        return (4, 0x90, 0xBF)
    if 0xF1 <= lead <= 0xF3:
        return (4, 0x80, 0xBF)
    if lead == 0xF4:
        return (4, 0x80, 0x8F)
    return None


def _valid_prefix_length(buf: bytes | bytearray, start: int, length: int, lo: int, hi: int) -> int:
    """How many bytes from `start` form a well-formed prefix of a `length`-byte sequence."""
    n = 1
    while n < length and start + n < len(buf):
        b = buf[start + n]
        allowed = (lo <= b <= hi) if n == 1 else (0x80 <= b <= 0xBF)
        if not allowed:
            break
        n += 1
    return n


def incomplete_suffix_length(data: bytes | bytearray) -> int:
    """How many final bytes of `data` are the well-formed start of a character still missing
    bytes (0 to 3): what a streaming decoder would hold back.

    >>> incomplete_suffix_length(b"ok\\xe2\\x82"), incomplete_suffix_length(b"\\xe2\\x82\\xac"), incomplete_suffix_length(b"\\xff")
    (2, 0, 0)
    """
    for back in range(1, min(3, len(data)) + 1):
        start = len(data) - back
        shape = _sequence_shape(data[start])
        if shape is None or (data[start] & 0xC0) == 0x80:
            continue  # not a lead byte: look further back
        length, lo, hi = shape
        if length > back and _valid_prefix_length(data, start, length, lo, hi) == back:
            return back
        return 0
    return 0


class Utf8StreamDecoder:
    """Feed bytes with `push`, finish with `flush`. At most three bytes are ever pending."""

    def __init__(self) -> None:
        self._pending = bytearray()

    @property
    def pending(self) -> bytes:
        return bytes(self._pending)

    def push(self, data: bytes) -> str:
        self._pending += data
        buf = self._pending
        out: list[str] = []
        i = 0
        while i < len(buf):
            shape = _sequence_shape(buf[i])
            if shape is None:
                out.append(REPLACEMENT)
                i += 1
                continue
            length, lo, hi = shape
            n = _valid_prefix_length(buf, i, length, lo, hi)
            if n == length:
                out.append(bytes(buf[i : i + n]).decode("utf-8"))
                i += n
            elif i + n == len(buf):
                break  # a well-formed prefix that runs to the end: it may still complete
            else:
                out.append(REPLACEMENT)  # one replacement for the whole maximal subpart
                i += n
        del buf[:i]
        return "".join(out)

    def flush(self) -> str:
        out = REPLACEMENT if self._pending else ""
        self._pending.clear()
        return out


def new_utf8_decoder():
    """A streaming decoder from the active backend (Rust unless TINYLLM_PURE_PYTHON=1)."""
    return core.Utf8Decoder() if core is not None else Utf8StreamDecoder()
