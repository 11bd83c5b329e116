"""What the vocabulary-keyed models (BPE, WordPiece, WordLevel) share: the id table, the unknown id,
and `ModelVocab`, the vocabulary as a dict or as the shared tables of a file the Rust core read.

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


class ModelVocab:
    """The vocabulary of a model: a dict, or the shared Rust tables of a file the core read
    (`tinyllm._core.BpeTables`). With tables, `vocab` and `id_to_token` are built on first use
    (by the reference, `to_json`, the semantic hash), and `token_id` / `token_of` / `id_count`
    answer from the tables without building them."""

    tables = None
    _vocab: Optional[dict[str, int]] = None
    _id_to_token: Optional[list[Optional[str]]] = None

    def _use_dict(self, vocab: dict[str, int]) -> None:
        self.tables = None
        self._vocab = dict(vocab)
        self._id_to_token = id_table(self._vocab)

    def _use_tables(self, tables) -> None:
        self.tables = tables
        self._vocab = self._id_to_token = None

    def _table_unk_id(self, unk_token: str, where: str) -> int:
        """`required_unk_id` over the tables."""
        unk_id = self.tables.token_id(unk_token)
        if unk_id is None:
            raise ValueError(f"{where}.unk_token: {unk_token!r} is not in {where}.vocab")
        return unk_id

    @property
    def vocab(self) -> dict[str, int]:
        if self._vocab is None:
            self._vocab = self.tables.vocab()
        return self._vocab

    @property
    def id_to_token(self) -> list[Optional[str]]:
        if self._id_to_token is None:
            self._id_to_token = self.tables.id_to_token()
        return self._id_to_token

    def token_id(self, token: str) -> Optional[int]:
        """The id of `token` in the model vocabulary, or None."""
        return self._vocab.get(token) if self._vocab is not None else self.tables.token_id(token)

    def token_of(self, i: int) -> Optional[str]:
        """The model token of id `i`, or None (a hole or past the end)."""
        if self._id_to_token is not None:
            return self._id_to_token[i] if 0 <= i < len(self._id_to_token) else None
        return self.tables.token(i) if i >= 0 else None

    @property
    def id_count(self) -> int:
        """The largest id + 1 (`len(id_to_token)`)."""
        return len(self._id_to_token) if self._id_to_token is not None else self.tables.id_count()
