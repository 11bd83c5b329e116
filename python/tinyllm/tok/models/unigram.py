"""Unigram encoding: the most probable segmentation of a pre-token into vocabulary pieces.

Every piece has a score, its log-probability. The pieces that spell a pre-token out form a lattice
over its character positions; a segmentation is a path through it and its score is the sum of its
pieces' scores (computed left to right in floating point). `tokenize` returns the best path
(Viterbi), `nbest` the n best, `sample` draws one path from the tempered distribution
q(z) = P(z)^alpha / sum over z' of P(z')^alpha (subword regularization).

Rules, as in Hugging Face `tokenizers` (models/unigram, the sentencepiece port):

- Ties go to the path whose last piece starts earliest, then recursively the same rule on the
  prefix (start positions are scanned in order and a later candidate must be strictly better).
- A character that starts no piece of its own length gets an unknown node: `unk_id` with score
  `min(score) - 10`. Consecutive nodes carrying `unk_id` fuse into one token; when the fused text
  happens to be a piece, that piece's id is emitted instead (HF looks tokens up by text).
- With `unk_id` None the lattice has no unknown nodes, and a pre-token that no path covers raises
  ValueError naming the character. (HF raises as soon as an unknown node would be the best way to
  reach a position, even when a longer piece spans it; where HF succeeds the ids are the same.)

Worked example from the specification: pieces a, b (p = 1/4 each), ab (7/20), aba (1/10),
bab (1/20). `abab` has six segmentations; Viterbi picks ab + ab (49/400), not the greedy aba + b:

>>> from math import exp, log
>>> probs = [("a", 1/4), ("b", 1/4), ("ab", 7/20), ("aba", 1/10), ("bab", 1/20)]
>>> model = UnigramModel([(p, log(q)) for p, q in probs], unk_id=None)
>>> model.tokenize("abab")
[(2, 0, 2), (2, 2, 4)]
>>> [(ids, round(exp(score), 6)) for ids, score in model.nbest("abab", 3)]
[([2, 2], 0.1225), ([3, 1], 0.025), ([0, 1, 2], 0.021875)]

Sampling is reproducible: the same word, alpha and seed give the same path, here and in Rust.

>>> model.sample("abab", 1.0, 7) == model.sample("abab", 1.0, SplitMix64(7))
True
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Sequence, Union

from tinyllm.tok.stochastic import SplitMix64

#: Score gap below the lowest piece score given to an unknown character (sentencepiece's
#: kUnkPenalty, copied by HF), so that one unknown node scores below every piece.
UNK_PENALTY = 10.0

class Edge(NamedTuple):
    """One lattice node: piece `id` covers characters start..end of the word."""

    start: int
    end: int
    id: int
    score: float


class UnigramModel:
    """The piece table and the reference lattice algorithms (see the module docstring)."""

    type = "Unigram"

    def __init__(self, pieces: Sequence[tuple[str, float]], unk_id: Optional[int],
                 byte_fallback: bool = False, *, where: str = "model", checked: bool = False) -> None:
        """`pieces`: (piece, score) pairs, by id. `checked`: they are already (non-empty text,
        finite float) pairs, not checked again. (The tokenizer.json reader, which words its own
        errors, hands its checked pieces over as two columns: see `from_columns`.)"""
        _check_byte_fallback(byte_fallback, where)
        pieces = list(pieces) if checked else [
            _check_piece(entry, f"{where}.vocab[{i}]") for i, entry in enumerate(pieces)]
        texts, scores = [piece for piece, _ in pieces], [score for _, score in pieces]
        self._setup(texts, scores, unk_id, byte_fallback, where)

    @classmethod
    def from_columns(cls, texts: list[str], scores: list[float], unk_id: Optional[int],
                     byte_fallback: bool = False, *, where: str = "model") -> UnigramModel:
        """The model of the pieces `texts[i]` with scores `scores[i]`, two lists of one length
        already checked (non-empty texts, finite floats), as the core reads them from a
        tokenizer.json (`_core.read_unigram_pieces`). The model keeps the two lists as they are."""
        _check_byte_fallback(byte_fallback, where)
        model = cls.__new__(cls)
        model._setup(texts, scores, unk_id, byte_fallback, where)
        return model

    def _setup(self, texts: list[str], scores: list[float], unk_id: Optional[int], byte_fallback: bool,
               where: str) -> None:
        """Everything but the checks of `byte_fallback` and of each piece (done by the callers)."""
        self.byte_fallback = byte_fallback
        self.vocab: dict[str, int] = {}
        for i, piece in enumerate(texts):
            if piece in self.vocab:
                raise ValueError(f"{where}.vocab[{i}]: piece {piece!r} duplicates {where}.vocab[{self.vocab[piece]}]")
            self.vocab[piece] = i
        self.id_to_token: list[str] = texts
        self.scores: list[float] = scores
        if unk_id is not None:
            if isinstance(unk_id, bool) or not isinstance(unk_id, int):
                raise ValueError(f"{where}.unk_id: expected an integer or null, found {unk_id!r}")
            if not 0 <= unk_id < len(texts):
                raise ValueError(f"{where}.unk_id: {unk_id} is out of range for {len(texts)} pieces")
        self.unk_id = unk_id
        self.unk_score = min(self.scores, default=0.0) - UNK_PENALTY
        self.max_piece_chars = max((len(p) for p in self.id_to_token), default=0)
        #: byte_ids[b]: the id of the piece `<0xNN>` for byte b, or None.
        self.byte_ids: list[Optional[int]] = [self.vocab.get(f"<0x{b:02X}>") for b in range(256)]

    @property
    def pieces(self) -> list[tuple[str, float]]:
        """The (piece, score) pairs, by id (made from `id_to_token` and `scores` on each call)."""
        return list(zip(self.id_to_token, self.scores))

    def to_json(self) -> dict:
        """The model object of tokenizer.json, as Hugging Face writes it."""
        return {"type": "Unigram", "unk_id": self.unk_id,
                "vocab": [[piece, score] for piece, score in zip(self.id_to_token, self.scores)],
                "byte_fallback": self.byte_fallback}

    # -- the lattice --------------------------------------------------------------------------

    def lattice(self, word: str) -> list[list[Edge]]:
        """`incoming[j]`: the nodes ending at character j, by increasing start.

        That order is the order in which HF's scan meets them, so "first" means "starts earliest".
        """
        incoming: list[list[Edge]] = [[] for _ in range(len(word) + 1)]
        for start in range(len(word)):
            has_single = False
            for end in range(start + 1, min(len(word), start + self.max_piece_chars) + 1):
                i = self.vocab.get(word[start:end])
                if i is not None:
                    incoming[end].append(Edge(start, end, i, self.scores[i]))
                    has_single = has_single or end == start + 1
            if not has_single and self.unk_id is not None:
                incoming[start + 1].append(Edge(start, start + 1, self.unk_id, self.unk_score))
        return incoming

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) for each token of the best segmentation; positions count characters.

        >>> m = UnigramModel([("▁", -1.0), ("a", -1.0), ("aa", -2.0)], unk_id=None)
        >>> [m.id_to_token[i] for i, _, _ in m.tokenize("▁aaa")]  # three paths score -4
        ['▁', 'a', 'aa']
        """
        incoming = self.lattice(word)
        best: list[Optional[tuple[float, Optional[Edge]]]] = [None] * (len(word) + 1)
        best[0] = (0.0, None)
        for end in range(1, len(word) + 1):
            for edge in incoming[end]:
                came = best[edge.start]
                if came is None:
                    continue
                score = came[0] + edge.score
                if best[end] is None or score > best[end][0]:  # strict: the earliest start keeps a tie
                    best[end] = (score, edge)
        if best[-1] is None:
            raise self._uncovered(word, best)
        path: list[Edge] = []
        end = len(word)
        while end > 0:
            edge = best[end][1]
            path.append(edge)
            end = edge.start
        path.reverse()
        return self._tokens(word, path)

    def nbest(self, word: str, n: int) -> list[tuple[list[int], float]]:
        """The `n` best segmentations as (ids, score), best first.

        Order: higher score first; on equal scores the path whose last piece starts earlier, and
        if that is the same piece, the earlier of the two prefixes by this same order. The first
        entry is therefore always `tokenize(word)`. The k-best lattice keeps n partial paths per
        position, which is exact for this order (adding a score never reverses >=). Ids are after
        unknown fusion, so in rare vocabularies two paths can give the same ids. A word with no
        segmentation at all (possible only with unk_id None) gets an empty list.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"nbest: n must be an integer >= 0, found {n!r}")
        if n == 0:
            return []
        incoming = self.lattice(word)
        # kept[j]: up to n (score, edge, rank of the prefix in kept[edge.start]), best first
        kept: list[list[tuple[float, Optional[Edge], int]]] = [[] for _ in range(len(word) + 1)]
        kept[0] = [(0.0, None, 0)]
        for end in range(1, len(word) + 1):
            candidates = [(prefix[0] + edge.score, edge, rank)
                          for edge in incoming[end] for rank, prefix in enumerate(kept[edge.start])]
            candidates.sort(key=lambda c: (-c[0], c[1].start, c[2]))
            kept[end] = candidates[:n]
        result = []
        for score, edge, rank in kept[-1]:
            path = []
            while edge is not None:
                path.append(edge)
                _, edge, rank = kept[edge.start][rank]
            path.reverse()
            result.append(([i for i, _, _ in self._tokens(word, path)], score))
        return result

    def sample(self, word: str, alpha: float, rng: Union[int, SplitMix64]) -> list[tuple[int, int, int]]:
        """One segmentation drawn from q(z) ∝ P(z)^alpha, as (id, start, end) tokens.

        `rng` is a seed (a fresh `SplitMix64`) or a `SplitMix64` to continue, so a caller can
        thread one stream through many words. alpha = 0 is uniform over segmentations; larger
        alpha approaches `tokenize`. Forward filtering, backward sampling, in log space:

            logZ[0] = 0;  logZ[j] = logsumexp over nodes i->j of (logZ[i] + alpha * score)
            from j = len(word) back to 0: draw u = rng.next_float() and take the first node
            (by increasing start) whose running weight exceeds u * total, where the weights
            are exp(t - max t) for t = logZ[i] + alpha * score, summed left to right.

        Rust performs the same float operations in the same order, so the paths agree bit for bit.
        """
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (0.0 <= alpha < math.inf):
            raise ValueError(f"sample: alpha must be a finite number >= 0, found {alpha!r}")
        if not isinstance(rng, SplitMix64):
            rng = SplitMix64(rng)
        alpha = float(alpha)
        incoming = self.lattice(word)
        log_z: list[Optional[float]] = [None] * (len(word) + 1)
        log_z[0] = 0.0
        for end in range(1, len(word) + 1):
            terms = _terms(incoming[end], log_z, alpha)
            if terms:
                top = max(t for t, _ in terms)
                log_z[end] = top + math.log(sum_left(math.exp(t - top) for t, _ in terms))
        if log_z[-1] is None:
            raise self._uncovered(word, log_z)
        path: list[Edge] = []
        end = len(word)
        while end > 0:
            terms = _terms(incoming[end], log_z, alpha)
            top = max(t for t, _ in terms)
            weights = [math.exp(t - top) for t, _ in terms]
            target = rng.next_float() * sum_left(weights)
            chosen = terms[-1][1]
            running = 0.0
            for weight, (_, edge) in zip(weights, terms, strict=True):
                running += weight
                if target < running:
                    chosen = edge
                    break
            path.append(chosen)
            end = chosen.start
        path.reverse()
        return self._tokens(word, path)

    # -- helpers ------------------------------------------------------------------------------

    def _tokens(self, word: str, path: list[Edge]) -> list[tuple[int, int, int]]:
        """Path -> tokens, fusing each run of `unk_id` nodes into one token (HF's fuse_unk)."""
        tokens: list[tuple[int, int, int]] = []
        k = 0
        while k < len(path):
            edge = path[k]
            if edge.id != self.unk_id:
                tokens.append((edge.id, edge.start, edge.end))
                k += 1
                continue
            last = k
            while last + 1 < len(path) and path[last + 1].id == self.unk_id:
                last += 1
            start, end = edge.start, path[last].end
            tokens.extend(self._unknown(word[start:end], start, end))
            k = last + 1
        return tokens

    def _unknown(self, text: str, start: int, end: int) -> list[tuple[int, int, int]]:
        """The tokens of a fused run of unknown nodes: HF maps its text back through the
        vocabulary (usually unknown); with `byte_fallback`, an unknown text becomes one `<0xNN>`
        piece per UTF-8 byte, each spanning the whole run, if all of them exist; else `unk_id`.

        >>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("<0xC3>", -9.0), ("<0xA9>", -9.0)], 0, True)
        >>> m.tokenize("aéa"), m.tokenize("aéxa")   # x has no byte piece: the run éx is one unk
        ([(1, 0, 1), (2, 1, 2), (3, 1, 2), (1, 2, 3)], [(1, 0, 1), (0, 1, 3), (1, 3, 4)])
        """
        i = self.vocab.get(text)
        if i is not None:
            return [(i, start, end)]
        if self.byte_fallback:
            ids = [self.byte_ids[b] for b in text.encode("utf-8")]
            if None not in ids:
                return [(b, start, end) for b in ids]
        return [(self.unk_id, start, end)]

    def _uncovered(self, word: str, reached: list) -> ValueError:
        """The error for a word no path covers: the furthest reachable position starts no piece."""
        at = max(j for j in range(len(word)) if reached[j] is not None)
        return ValueError(f"Unigram: no piece covers character {word[at]!r} at position {at} of {word!r}, "
                          f"and unk_id is null")


def sum_left(values) -> float:
    """Left-to-right float sum (not math.fsum, not sum's compensated variants): Rust does the same."""
    total = 0.0
    for v in values:
        total += v
    return total


def _terms(edges: list[Edge], log_z: list[Optional[float]], alpha: float) -> list[tuple[float, Edge]]:
    return [(log_z[e.start] + alpha * e.score, e) for e in edges if log_z[e.start] is not None]


def _check_byte_fallback(byte_fallback, where: str) -> None:
    if not isinstance(byte_fallback, bool):
        raise ValueError(f"{where}.byte_fallback: expected true or false, found {byte_fallback!r}")


def _check_piece(entry, where: str) -> tuple[str, float]:
    if not isinstance(entry, (list, tuple)) or len(entry) != 2:
        raise ValueError(f"{where}: expected [piece, score], found {entry!r}")
    piece, score = entry
    if not isinstance(piece, str) or not piece:
        raise ValueError(f"{where}: the piece must be a non-empty string, found {piece!r}")
    try:
        value = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else math.nan
    except OverflowError:  # an int beyond the float range
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"{where}: the score of {piece!r} must be a finite number, found {score!r}")
    return piece, value
