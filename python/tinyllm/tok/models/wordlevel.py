"""WordLevel encoding: each pre-token is one vocabulary entry, or the unknown token.

No subwords: the pre-tokenizer does all the cutting, and a pre-token the vocabulary lacks becomes
`unk_token` whole (Hugging Face's WordLevel).

>>> model = WordLevelModel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]")
>>> model.tokenize("hello"), model.tokenize("there")
([(1, 0, 5)], [(0, 0, 5)])
"""

from __future__ import annotations

from typing import Optional

from tinyllm.tok.models.vocab import id_table, required_unk_id


class WordLevelModel:
    """The vocabulary and the one-lookup reference."""

    type = "WordLevel"

    def __init__(self, vocab: dict[str, int], *, unk_token: str = "<unk>", where: str = "model") -> None:
        self.vocab = dict(vocab)
        self.id_to_token: list[Optional[str]] = id_table(self.vocab)
        self.unk_id = required_unk_id(self.vocab, unk_token, where)
        self.unk_token = unk_token

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) of the one token of `word` (none for an empty word)."""
        if not word:
            return []
        return [(self.vocab.get(word, self.unk_id), 0, len(word))]

    def to_json(self) -> dict:
        return {"type": "WordLevel", "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
                "unk_token": self.unk_token}
