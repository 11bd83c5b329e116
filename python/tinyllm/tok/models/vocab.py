"""What the vocabulary-keyed models (BPE, WordPiece, WordLevel) share: the id table and the unknown id.

>>> id_table({"a": 0, "c": 2})
['a', None, 'c']
>>> required_unk_id({"a": 0}, "<unk>", "model")
Traceback (most recent call last):
...
ValueError: model.unk_token: '<unk>' is not in model.vocab
"""

from __future__ import annotations

from typing import Optional


def id_table(vocab: dict[str, int]) -> list[Optional[str]]:
    """The token of each id, None for an id no token has."""
    table: list[Optional[str]] = [None] * (max(vocab.values(), default=-1) + 1)
    for token, i in vocab.items():
        table[i] = token
    return table


def required_unk_id(vocab: dict[str, int], unk_token: str, where: str) -> int:
    """The id of `unk_token`. Hugging Face fails only when an unknown word shows up; encoding a str
    must never fail, so a file whose unknown token is not in the vocabulary is refused up front."""
    if unk_token not in vocab:
        raise ValueError(f"{where}.unk_token: {unk_token!r} is not in {where}.vocab")
    return vocab[unk_token]
