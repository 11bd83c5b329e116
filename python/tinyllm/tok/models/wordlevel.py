"""WordLevel encoding: each pre-token is one vocabulary entry, or the unknown token.

No subwords: the pre-tokenizer does all the cutting, and a pre-token the vocabulary lacks becomes
`unk_token` whole (Hugging Face's WordLevel).

>>> model = WordLevelModel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]")
>>> model.tokenize("hello"), model.tokenize("there")
([(1, 0, 5)], [(0, 0, 5)])
"""

from __future__ import annotations

from typing import Optional

from tinyllm.tok.models.vocab import ModelVocab, required_unk_id


class WordLevelModel(ModelVocab):
    """The vocabulary and the one-lookup reference. A model read from a tokenizer.json by the Rust
    core (`from_tables`) keeps its vocabulary in the shared tables (see `ModelVocab`)."""

    type = "WordLevel"

    def __init__(self, vocab: dict[str, int], *, unk_token: str = "<unk>", where: str = "model") -> None:
        self._use_dict(vocab)
        self.unk_id = required_unk_id(self._vocab, unk_token, where)
        self.unk_token = unk_token

    @classmethod
    def from_tables(cls, tables, *, unk_token: str = "<unk>", where: str = "model") -> "WordLevelModel":
        """The model over `tables` (a `tinyllm._core.BpeTables` holding the vocabulary alone)."""
        model = cls.__new__(cls)
        model._use_tables(tables)
        model.unk_id = model._table_unk_id(unk_token, where)
        model.unk_token = unk_token
        return model

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) of the one token of `word` (none for an empty word)."""
        if not word:
            return []
        token_id = self.token_id(word)
        return [(self.unk_id if token_id is None else token_id, 0, len(word))]

    def to_json(self) -> dict:
        return {"type": "WordLevel", "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
                "unk_token": self.unk_token}
