"""WordPiece encoding: greedy longest-match-first inside each pre-token.

At each position take the longest vocabulary entry that starts there; after the first piece the
entry must carry the continuation prefix (`##`). If some position has no match at all, or the
pre-token is longer than `max_input_chars_per_word` characters, the whole pre-token becomes the
single unknown token: partial matches are thrown away (BERT's rule, and Hugging Face's).

>>> vocab = {"[UNK]": 0, "un": 1, "##want": 2, "##ed": 3, "want": 4, "play": 5}
>>> model = WordPieceModel(vocab, unk_token="[UNK]")
>>> [model.id_to_token[i] for i, _, _ in model.tokenize("unwanted")]
['un', '##want', '##ed']
>>> [model.id_to_token[i] for i, _, _ in model.tokenize("playingx")]
['[UNK]']
"""

from __future__ import annotations

from typing import Optional

from tinyllm.tok.models.vocab import ModelVocab, required_unk_id


class WordPieceModel(ModelVocab):
    """The vocabulary and the reference longest-match loop. A model read from a tokenizer.json
    by the Rust core (`from_tables`) keeps its vocabulary in the shared tables (see `ModelVocab`)."""

    type = "WordPiece"

    def __init__(self, vocab: dict[str, int], *, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
                 max_input_chars_per_word: int = 100, where: str = "model") -> None:
        self._use_dict(vocab)
        self._options(required_unk_id(self._vocab, unk_token, where), unk_token, continuing_subword_prefix,
                      max_input_chars_per_word, where)

    @classmethod
    def from_tables(cls, tables, *, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
                    max_input_chars_per_word: int = 100, where: str = "model") -> "WordPieceModel":
        """The model over `tables` (a `tinyllm._core.BpeTables` holding the vocabulary alone)."""
        model = cls.__new__(cls)
        model._use_tables(tables)
        model._options(model._table_unk_id(unk_token, where), unk_token, continuing_subword_prefix,
                       max_input_chars_per_word, where)
        return model

    def _options(self, unk_id: int, unk_token: str, prefix: str, max_input_chars_per_word: int, where: str) -> None:
        if not isinstance(max_input_chars_per_word, int) or isinstance(max_input_chars_per_word, bool) \
                or max_input_chars_per_word < 0:
            raise ValueError(f"{where}.max_input_chars_per_word: expected a non-negative integer, "
                             f"found {max_input_chars_per_word!r}")
        self.unk_id = unk_id
        self.unk_token = unk_token
        self.prefix = prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        self._longest_token: Optional[int] = None

    @property
    def _longest(self) -> int:
        """The length of the longest vocabulary string (the reference's search starts there)."""
        if self._longest_token is None:
            self._longest_token = max((len(t) for t in self.vocab), default=0)
        return self._longest_token

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) per token, in code points of `word`."""
        if not word:
            return []
        if len(word) > self.max_input_chars_per_word:
            return [(self.unk_id, 0, len(word))]
        out = []
        start = 0
        while start < len(word):
            prefix = self.prefix if start > 0 else ""
            found = None
            # No entry is longer than the longest vocabulary string, so start the search there.
            for end in range(min(len(word), start + self._longest), start, -1):
                token_id = self.vocab.get(prefix + word[start:end])
                if token_id is not None:
                    found = (token_id, start, end)
                    break
            if found is None:
                return [(self.unk_id, 0, len(word))]
            out.append(found)
            start = found[2]
        return out

    def to_json(self) -> dict:
        return {
            "type": "WordPiece",
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
        }
