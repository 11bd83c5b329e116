"""SentencePiece Unigram encoding (unigram_model.cc, `EncodeOptimized`): Viterbi in sentencepiece's
own arithmetic.

This is not `tinyllm.tok.models.unigram.UnigramModel` (Hugging Face's port), because sentencepiece
differs in ways that change ids:

* scores are float32, and so are best-path scores: a candidate is `float32(score + prefix)`,
  compared with the stored float32 (sentencepiece 0.2.3 as measured: keeping the double sum for
  the comparison, as the source of 0.2.0 reads, disagrees on a few corpus lines; the float32 rule
  agrees on all);
* a USER_DEFINED piece scores `float32(n * 0.1f) - 0.1` (n = its length in UTF-8 bytes), whatever
  its score in the file and whatever the other pieces' scores. This is measured on sentencepiece
  0.2.3 with crafted models (tests/tok/formats/test_sentencepiece.py pins it): the 0.2.0 source
  reads `n * max_score - 0.1` with max_score the highest NORMAL score, which 0.2.3 does not do;
  UNUSED pieces are not in the lattice;
* an unknown node (score `min_score - 10` in float32, min over NORMAL pieces) covers one character
  where no single-character piece starts; consecutive unknown tokens fuse into one unknown id (or
  become bytes with byte_fallback: `SpmPieces.finish`); the fused text is not looked up again.

Ties keep the candidate met first: ends are reached from starts in increasing order, and only a
strictly better candidate replaces the stored one, so the last piece that starts earliest wins.

>>> from tinyllm.tok.models.spm_pieces import NORMAL, UNKNOWN
>>> m = SpmUnigramModel([("<unk>", 0, UNKNOWN), ("a", -1, NORMAL), ("b", -1, NORMAL), ("ab", -2, NORMAL)])
>>> [m.id_to_token[i] for i, _, _ in m.tokenize("abx")]  # a+b ties ab: ab starts earlier
['ab', '<unk>']
"""

from __future__ import annotations

import struct
from functools import cached_property
from typing import Sequence

from tinyllm.tok.models.spm_pieces import NORMAL, UNUSED, USER_DEFINED, SpmPieces

FLT_MIN = 1.1754943508222875e-38
FLT_MAX = 3.4028234663852886e38
UNK_PENALTY = 10.0
USER_DEFINED_UNIT = 0.10000000149011612  # 0.1f: a USER_DEFINED piece of n bytes scores n * 0.1f - 0.1

_F32 = struct.Struct("<f")


def f32(x: float) -> float:
    """`x` rounded to float32 (round to nearest even), as a Python float."""
    return _F32.unpack(_F32.pack(x))[0]


class SpmUnigramModel(SpmPieces):
    type = "SentencePieceUnigram"

    _lattice = None  # built on first use: the Rust engine does not need it

    def __init__(self, pieces: Sequence[tuple[str, float, int]], byte_fallback: bool = False, *,
                 where: str = "pieces") -> None:
        super().__init__(pieces, byte_fallback, where=where)

    # The scores the reference's lattice needs, on first use (the Rust engine has its own).
    @cached_property
    def _normal_scores(self) -> list:
        return self.columns.of_type(NORMAL, self.scores)

    @cached_property
    def min_score(self) -> float:
        return min(self._normal_scores, default=FLT_MAX)

    @cached_property
    def max_score(self) -> float:
        return max(self._normal_scores + [FLT_MIN])

    @cached_property
    def unk_score(self) -> float:
        return f32(self.min_score - UNK_PENALTY)

    @property
    def lattice_pieces(self) -> dict[str, tuple[int, float]]:
        """The lattice's pieces: text -> (id, the score a candidate adds: a float32 value, or a
        double for USER_DEFINED pieces; see the module docstring)."""
        if self._lattice is None:
            lattice = {}
            for piece, i in self.normal.items():
                kind = self.types[i]
                if kind == UNUSED:
                    continue
                if kind == USER_DEFINED:
                    lattice[piece] = (i, f32(len(piece.encode("utf-8")) * USER_DEFINED_UNIT) - 0.1)
                else:
                    lattice[piece] = (i, self.scores[i])
            self._lattice = lattice
            self.max_piece_chars = max((len(p) for p in lattice), default=0)
        return self._lattice

    def to_json(self) -> dict:
        return {"type": self.type, "byte_fallback": self.byte_fallback, "pieces": self.to_json_pieces()}

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) for each token of `word` (a whole normalized text), positions in characters."""
        n = len(word)
        if n == 0:
            return []
        best_score = [0.0] * (n + 1)  # float32 values
        best_start = [-1] * (n + 1)
        best_id = [-1] * (n + 1)
        pieces = self.lattice_pieces  # (sets max_piece_chars)
        unk_id, unk_score = self.unk_id, self.unk_score
        for start in range(n):
            here = best_score[start]
            has_single = False
            for end in range(start + 1, min(n, start + self.max_piece_chars) + 1):
                hit = pieces.get(word[start:end])
                if hit is None:
                    continue
                i, score = hit
                candidate = f32(score + here)
                if best_start[end] == -1 or candidate > best_score[end]:
                    best_score[end] = candidate
                    best_start[end] = start
                    best_id[end] = i
                if end == start + 1:
                    has_single = True
            if not has_single:
                candidate = f32(unk_score + here)
                if best_start[start + 1] == -1 or candidate > best_score[start + 1]:
                    best_score[start + 1] = candidate
                    best_start[start + 1] = start
                    best_id[start + 1] = unk_id
        raw = []
        end = n
        while end > 0:
            start = best_start[end]
            raw.append((word[start:end], best_id[end], start, end))
            end = start
        raw.reverse()
        return self.finish(raw)
