"""Byte-level BPE encoding: apply learned merge ranks inside each pre-token.

Among adjacent pairs present in the merge table, merge the one with the lowest rank (leftmost on
ties) and repeat until none applies. Frequencies play no part at encode time. With `ignore_merges`
a pre-token that is itself in the vocabulary is emitted whole, before any merging.

Ranks are merge-list positions keyed by (left id, right id); when a pair is listed twice the later
position wins, as in Hugging Face.

>>> model = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
...                  [("a", "b"), ("b", "c"), ("ab", "c")])
>>> [t[0] for t in model.tokenize("abcbc")]
[5, 4]
"""

from __future__ import annotations

from typing import Optional, Sequence



class BPEModel:
    """The merge table and the reference merge loop."""

    type = "BPE"

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]], *,
                 unk_token: Optional[str] = None, ignore_merges: bool = False,
                 where: str = "model") -> None:
        self.vocab = dict(vocab)
        size = max(self.vocab.values(), default=-1) + 1
        self.id_to_token: list[Optional[str]] = [None] * size
        for token, i in self.vocab.items():
            self.id_to_token[i] = token
        self.merges = [tuple(m) for m in merges]
        self.ignore_merges = ignore_merges
        self.unk_token = unk_token
        self.unk_id = None
        if unk_token is not None:
            if unk_token not in self.vocab:
                raise ValueError(f"{where}.unk_token: {unk_token!r} is not in {where}.vocab")
            self.unk_id = self.vocab[unk_token]
        # (left id, right id) -> (rank, merged id); a later duplicate overwrites an earlier one.
        self.ranks: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(self.merges):
            for part in (left, right, left + right):
                if part not in self.vocab:
                    raise ValueError(
                        f"{where}.merges[{rank}]: {left + ' ' + right!r} uses {part!r}, which is not in {where}.vocab"
                    )
            self.ranks[(self.vocab[left], self.vocab[right])] = (rank, self.vocab[left + right])

    def to_json(self) -> dict:
        """The `model` object of tokenizer.json (vocab ordered by id, merges as pairs)."""
        return {
            "type": "BPE",
            "dropout": None,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": self.ignore_merges,
            "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
            "merges": [list(m) for m in self.merges],
        }

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) for each token of `word`; start and end count characters of `word`.

        A character missing from the vocabulary becomes `unk_token`, or is dropped when there is
        none (Hugging Face's behaviour; byte-level vocabularies contain every byte).
        """
        if self.ignore_merges and word in self.vocab:
            return [(self.vocab[word], 0, len(word))]
        symbols: list[list[int]] = []  # [id, start, end]
        for k, ch in enumerate(word):
            i = self.vocab.get(ch, self.unk_id)
            if i is not None:
                symbols.append([i, k, k + 1])
        while len(symbols) > 1:
            best = None
            for k in range(len(symbols) - 1):
                found = self.ranks.get((symbols[k][0], symbols[k + 1][0]))
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], k, found[1])
            if best is None:
                break
            _, k, merged = best
            symbols[k : k + 2] = [[merged, symbols[k][1], symbols[k + 1][2]]]
        return [(i, s, e) for i, s, e in symbols]

    def tokenize_dropout(self, word: str, p: float, rng) -> list[tuple[int, int, int]]:
        """Like `tokenize`, but each eligible merge occurrence is dropped with probability `p`.

        Each step lists the adjacent pairs that have a merge, ordered by (rank, position), and
        draws `rng.next_float()` once for each, in that order; an occurrence whose draw is below
        `p` is dropped for this step. The lowest-ranked, leftmost survivor merges; when none
        survives (or none was eligible) the word is done. p = 0 gives `tokenize` (every draw
        survives), p = 1 gives the single symbols (the first step drops everything). Whole-word
        vocabulary entries (`ignore_merges`) are not taken as such: dropout may split them.

        >>> model = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, [("a", "b"), ("ab", "c")])
        >>> class Draws:  # a pinned trace: keep rank 0, then drop rank 1
        ...     def __init__(self, values): self.values = iter(values)
        ...     def next_float(self): return next(self.values)
        >>> [model.id_to_token[i] for i, _, _ in model.tokenize_dropout("abc", 0.5, Draws([0.9, 0.1]))]
        ['ab', 'c']
        """
        symbols: list[list[int]] = []
        for k, ch in enumerate(word):
            i = self.vocab.get(ch, self.unk_id)
            if i is not None:
                symbols.append([i, k, k + 1])
        while len(symbols) > 1:
            eligible = []
            for k in range(len(symbols) - 1):
                found = self.ranks.get((symbols[k][0], symbols[k + 1][0]))
                if found is not None:
                    eligible.append((found[0], k, found[1]))
            eligible.sort()
            # Every eligible occurrence gets its draw, even after the first survivor, so the number
            # of draws per step does not depend on the outcomes.
            survivors = [e for e in eligible if not rng.next_float() < p]
            if not survivors:
                break
            _, k, merged = survivors[0]
            symbols[k : k + 2] = [[merged, symbols[k][1], symbols[k + 1][2]]]
        return [(i, s, e) for i, s, e in symbols]
