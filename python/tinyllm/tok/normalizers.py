"""Normalizers: text -> text, applied before pre-tokenization (the `normalizer` of tokenizer.json).

Each stage is a small object with `normalize(text) -> str` and `to_json()`. Case mapping is done
one code point at a time, as Hugging Face does, so there is no final-sigma rule:
`Lowercase().normalize("ΟΔΟΣ") == "οδοσ"`, while Python's `str.lower` would give "οδος".

>>> Sequence([NFKC(), Lowercase()]).normalize("Ｆｉｌｅ")
'file'
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass


class Normalizer:
    type: str = ""

    def normalize(self, text: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def to_json(self) -> dict:
        return {"type": self.type}


@dataclass(frozen=True)
class NFC(Normalizer):
    type = "NFC"

    def normalize(self, text: str) -> str:
        return unicodedata.normalize("NFC", text)


@dataclass(frozen=True)
class NFKC(Normalizer):
    type = "NFKC"

    def normalize(self, text: str) -> str:
        return unicodedata.normalize("NFKC", text)


@dataclass(frozen=True)
class Lowercase(Normalizer):
    type = "Lowercase"

    def normalize(self, text: str) -> str:
        return "".join(ch.lower() for ch in text)


@dataclass(frozen=True)
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


SIMPLE = {"NFC": NFC, "NFKC": NFKC, "Lowercase": Lowercase}
