"""BPE encoding: apply learned merge ranks inside each pre-token.

Among adjacent pairs present in the merge table, merge the one with the lowest rank (leftmost on
ties) and repeat until none applies. Frequencies play no part at encode time. With `ignore_merges`
a pre-token that is itself in the vocabulary is emitted whole, before any merging.

Ranks are merge-list positions keyed by (left id, right id); when a pair is listed twice the later
position wins, as in Hugging Face.

>>> model = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
...                  [("a", "b"), ("b", "c"), ("ab", "c")])
>>> [t[0] for t in model.tokenize("abcbc")]
[5, 4]

The word starts as one symbol per character (byte-level pipelines hand over words already spelled
in the byte alphabet), looked up as Hugging Face's `merge_word` does:

- `continuing_subword_prefix` goes in front of every character but the first, and
  `end_of_word_suffix` after the last (`"abc"` with `##` and `</w>`: `a`, `##b`, `##c</w>`); a merge
  `(left, right)` then makes `left + right` without right's first len(prefix) bytes
  (`a` + `##b` -> `ab`).
- A character (so decorated) missing from the vocabulary becomes, with `byte_fallback`, one
  `<0xNN>` token per UTF-8 byte of that string, if every one of them exists; otherwise the unknown
  token when `unk_token` is set, else nothing. With `fuse_unk`, consecutive unknowns are one token.
  An unknown is emitted only when the next character is known or the word ends, so byte tokens
  found in between come first (Hugging Face's order, kept for equal ids).

>>> vocab = {"<unk>": 0, "a": 1, "<0xC3>": 2, "<0xA9>": 3}
>>> model = BPEModel(vocab, [], unk_token="<unk>", byte_fallback=True, fuse_unk=True)
>>> model.tokenize("aéxy")      # é -> two byte tokens (each spans é), x and y fuse into one unk
[(1, 0, 1), (2, 1, 2), (3, 1, 2), (0, 2, 4)]
"""

from __future__ import annotations

from typing import Optional, Sequence

from tinyllm.tok.models.vocab import ModelVocab, required_unk_id


def byte_token(b: int) -> str:
    """The byte-fallback token of byte `b` (sentencepiece's spelling): `<0x0A>`, `<0xC3>`."""
    return f"<0x{b:02X}>"


def _merged(left: str, right: str, cut: int) -> Optional[str]:
    """Hugging Face's merged token: `left` + `right` without its first `cut` bytes (None where
    that is not a character boundary of `right`)."""
    raw = right.encode("utf-8")
    if len(raw) < cut:
        return None
    try:
        return left + raw[cut:].decode("utf-8")
    except UnicodeDecodeError:
        return None


class BPEModel(ModelVocab):
    """The merge table and the reference merge loop.

    A model read from a tokenizer.json by the Rust core (`from_tables`) keeps its vocabulary and
    merges in the shared `tinyllm._core.BpeTables`: `vocab`, `id_to_token`, `merges`, `ranks`
    and `byte_ids` are built on first use (by the reference, `to_json`, the semantic hash), and
    `token_id` / `token_of` / `id_count` answer from the tables without building them.
    """

    type = "BPE"

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]], *,
                 unk_token: Optional[str] = None, ignore_merges: bool = False, byte_fallback: bool = False,
                 fuse_unk: bool = False, continuing_subword_prefix: Optional[str] = None,
                 end_of_word_suffix: Optional[str] = None, where: str = "model") -> None:
        self._options(unk_token, ignore_merges, byte_fallback, fuse_unk, continuing_subword_prefix,
                      end_of_word_suffix)
        self._use_dict(vocab)
        self._merges: Optional[list[tuple[str, str]]] = [tuple(m) for m in merges]
        self._byte_ids: Optional[list[Optional[int]]] = None
        self.unk_id = None if unk_token is None else required_unk_id(self._vocab, unk_token, where)
        # A merge's result drops the prefix (its length in UTF-8 bytes) from the right part.
        cut = len(self.prefix.encode("utf-8")) if self.prefix else 0
        # (left id, right id) -> (rank, merged id); a later duplicate overwrites an earlier one.
        ranks: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(self._merges):
            name = f"{where}.merges[{rank}]: {left + ' ' + right!r}"
            merged = _merged(left, right, cut)
            if merged is None:
                raise ValueError(f"{name}: cannot drop the {cut}-byte continuing_subword_prefix "
                                 f"{self.prefix!r} from {right!r} (Hugging Face fails on this merge)")
            for part in (left, right, merged):
                if part not in self._vocab:
                    raise ValueError(f"{name} uses {part!r}, which is not in {where}.vocab")
            ranks[(self._vocab[left], self._vocab[right])] = (rank, self._vocab[merged])
        self._ranks: Optional[dict[tuple[int, int], tuple[int, int]]] = ranks

    def _options(self, unk_token, ignore_merges, byte_fallback, fuse_unk, prefix, suffix) -> None:
        self.ignore_merges = ignore_merges
        self.byte_fallback = byte_fallback
        self.fuse_unk = fuse_unk
        self.prefix = prefix
        self.suffix = suffix
        self.unk_token = unk_token

    @classmethod
    def from_tables(cls, tables, *, unk_token: Optional[str] = None, ignore_merges: bool = False,
                    byte_fallback: bool = False, fuse_unk: bool = False,
                    continuing_subword_prefix: Optional[str] = None, end_of_word_suffix: Optional[str] = None,
                    where: str = "model") -> "BPEModel":
        """The model over `tables` (a `tinyllm._core.BpeTables`, whose reading already checked
        every merge against the vocabulary under this `continuing_subword_prefix`)."""
        model = cls.__new__(cls)
        model._options(unk_token, ignore_merges, byte_fallback, fuse_unk, continuing_subword_prefix,
                       end_of_word_suffix)
        model._use_tables(tables)
        model._merges = model._ranks = model._byte_ids = None
        model.unk_id = None if unk_token is None else model._table_unk_id(unk_token, where)
        return model

    # -- the merge tables, built on first use when the model came from BpeTables ---------------
    @property
    def merges(self) -> list[tuple[str, str]]:
        if self._merges is None:
            self._merges = self.tables.merges()
        return self._merges

    @property
    def ranks(self) -> dict[tuple[int, int], tuple[int, int]]:
        if self._ranks is None:
            self._ranks = self.tables.ranks()
        return self._ranks

    @property
    def byte_ids(self) -> list[Optional[int]]:
        """byte_ids[b]: the id of `<0xNN>` for byte b, or None."""
        if self._byte_ids is None:
            self._byte_ids = [self.token_id(byte_token(b)) for b in range(256)]
        return self._byte_ids

    @property
    def plain(self) -> bool:
        """Whether words start as plain character lookups (no prefix, suffix, byte fallback or
        fused unknowns): what the byte-level engine implements."""
        return not (self.prefix or self.suffix or self.byte_fallback or self.fuse_unk)

    def to_json(self) -> dict:
        """The `model` object of tokenizer.json (vocab ordered by id, merges as pairs)."""
        return {
            "type": "BPE",
            "dropout": None,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.prefix,
            "end_of_word_suffix": self.suffix,
            "fuse_unk": self.fuse_unk,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": self.ignore_merges,
            "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
            "merges": [list(m) for m in self.merges],
        }

    def symbols(self, word: str) -> list[list[int]]:
        """The word's starting symbols, [id, start, end] each (character positions), before any
        merge; see the module docstring for the rules."""
        symbols: list[list[int]] = []
        pending: Optional[list[int]] = None  # an unknown not yet emitted
        last = len(word) - 1
        vocab = self.vocab
        for k, ch in enumerate(word):
            s = ch
            if k > 0 and self.prefix:
                s = self.prefix + s
            if k == last and self.suffix:
                s = s + self.suffix
            i = vocab.get(s)
            if i is not None:
                if pending is not None:
                    symbols.append(pending)
                    pending = None
                symbols.append([i, k, k + 1])
                continue
            if self.byte_fallback:
                ids = [self.byte_ids[b] for b in s.encode("utf-8")]
                if None not in ids:
                    # Every byte token spans the whole character, as Hugging Face's offsets do.
                    symbols.extend([b, k, k + 1] for b in ids)
                    continue  # a pending unknown stays pending: it comes after these bytes
            if self.unk_id is None:
                continue  # dropped, as Hugging Face does without unk_token
            if pending is not None and self.fuse_unk:
                pending[2] = k + 1
            else:
                if pending is not None:
                    symbols.append(pending)
                pending = [self.unk_id, k, k + 1]
        if pending is not None:
            symbols.append(pending)
        return symbols

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) for each token of `word`; start and end count characters of `word`.

        A character missing from the vocabulary becomes byte tokens, `unk_token`, or is dropped
        (see the module docstring; byte-level vocabularies contain every byte).
        """
        if self.ignore_merges and word in self.vocab:
            return [(self.vocab[word], 0, len(word))]
        symbols = self.symbols(word)
        ranks = self.ranks
        while len(symbols) > 1:
            best = None
            for k in range(len(symbols) - 1):
                found = ranks.get((symbols[k][0], symbols[k + 1][0]))
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
        symbols = self.symbols(word)
        ranks = self.ranks
        while len(symbols) > 1:
            eligible = []
            for k in range(len(symbols) - 1):
                found = ranks.get((symbols[k][0], symbols[k + 1][0]))
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
