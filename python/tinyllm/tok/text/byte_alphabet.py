"""The GPT-2 byte map: each of the 256 byte values as one printable code point.

Byte-level BPE vocabularies spell tokens in this alphabet, so the byte tokenizer uses it for its
token strings (byte-level BPE with zero merges is exactly the byte tokenizer). Bytes that print
unambiguously ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the remaining 68 bytes, in
increasing order, take the code points from U+0100 on.

>>> bytes_to_unicode()[32], bytes_to_unicode()[10]
('Ġ', 'Ċ')
>>> token_string(b" cat"), token_bytes("Ġcat")
('Ġcat', b' cat')
"""

from __future__ import annotations

import functools

from tinyllm._native import core


def _printable(b: int) -> bool:
    return 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF


@functools.lru_cache(maxsize=None)
def _alphabet_reference() -> str:
    """The pure-Python reference: the alphabet as a 256-character string indexed by byte."""
    chars = []
    shifted = 0
    for b in range(256):
        if _printable(b):
            chars.append(chr(b))
        else:
            chars.append(chr(256 + shifted))
            shifted += 1
    return "".join(chars)


@functools.lru_cache(maxsize=None)
def byte_alphabet() -> str:
    """The 256 code points of the map as one string: `byte_alphabet()[b]` stands for byte `b`."""
    return core.byte_alphabet() if core is not None else _alphabet_reference()


@functools.lru_cache(maxsize=None)
def _char_to_byte() -> dict[str, int]:
    return {c: b for b, c in enumerate(byte_alphabet())}


def bytes_to_unicode() -> dict[int, str]:
    """Byte value -> its printable code point (a fresh dict each call)."""
    return dict(enumerate(byte_alphabet()))


def unicode_to_bytes() -> dict[str, int]:
    """Printable code point -> its byte value (the inverse of `bytes_to_unicode`)."""
    return dict(_char_to_byte())


def byte_of(ch: str) -> int | None:
    """The byte that the one-character string `ch` stands for, or None outside the alphabet."""
    return _char_to_byte().get(ch)


def token_string(data: bytes) -> str:
    """Spell raw bytes in the byte alphabet."""
    alphabet = byte_alphabet()
    return "".join(alphabet[b] for b in data)


def token_bytes(token: str) -> bytes:
    """The raw bytes behind a token string spelled in the byte alphabet.

    Raises ValueError naming the first character that is outside the alphabet.
    """
    if core is not None:
        return core.token_bytes(token)
    return _token_bytes_reference(token)


def _token_bytes_reference(token: str) -> bytes:
    table = _char_to_byte()
    out = bytearray()
    for position, ch in enumerate(token):
        b = table.get(ch)
        if b is None:
            raise ValueError(
                f"token string {token!r}: character {ch!r} at position {position} "
                "is not in the GPT-2 byte alphabet"
            )
        out.append(b)
    return bytes(out)
