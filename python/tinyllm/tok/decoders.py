"""Decoders: token strings -> the bytes of the text (the `decoder` of tokenizer.json).

The ByteLevel decoder maps each token's characters back through the GPT-2 byte map. A token with a
character outside the byte alphabet (an added token such as `<|im_start|>` is inside it, but one with
a space or `中` is not) contributes its own UTF-8 bytes instead. The bytes of all tokens are joined
and decoded once, with replacement, so a character split across tokens survives.

>>> ByteLevel().token_bytes("Ġcaf")
b' caf'
>>> ByteLevel().token_bytes("a b")
b'a b'
"""

from __future__ import annotations

from dataclasses import dataclass

from tinyllm.tok.byte_level import ByteLevelOptions
from tinyllm.tok.bytemap import byte_of


class Decoder:
    type: str = ""

    def token_bytes(self, token: str) -> bytes:
        return token.encode("utf-8")

    def to_json(self) -> dict:
        return {"type": self.type}


@dataclass(frozen=True)
class ByteLevel(ByteLevelOptions, Decoder):
    def token_bytes(self, token: str) -> bytes:
        out = bytearray()
        for ch in token:
            b = byte_of(ch)
            if b is None:
                return token.encode("utf-8")
            out.append(b)
        return bytes(out)
