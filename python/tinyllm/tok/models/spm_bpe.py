"""SentencePiece BPE encoding (sentencepiece's bpe_model.cc): merge by piece score, not merge rank.

The normalized text is cut into symbols: a user-defined symbol where one starts (longest first;
such a symbol is frozen: it never merges), else one character. Then, repeatedly, of all adjacent
pairs whose concatenation is a piece (NORMAL, USER_DEFINED or UNUSED), merge the one whose piece
has the highest score; on equal scores the leftmost. There are no merge rules in the file: the
pieces' scores order the merges.

UNUSED pieces may be formed as intermediate steps but are never emitted: when a final symbol is
an UNUSED piece, it is split back into the two symbols that last formed that piece text (the pair
recorded when it was queued, the latest recording winning, exactly as sentencepiece's `rev_merge`
map), recursively. A symbol that is no piece is the unknown id (see `SpmPieces.finish` for byte
fallback and fusing).

>>> from tinyllm.tok.models.spm_pieces import NORMAL, UNKNOWN
>>> m = SpmBpeModel([("<unk>", 0, UNKNOWN), ("a", -1, NORMAL), ("b", -2, NORMAL), ("ab", -3, NORMAL),
...                  ("ba", -0.5, NORMAL)])
>>> [m.id_to_token[i] for i, _, _ in m.tokenize("aba")]  # "ba" scores higher than "ab"
['a', 'ba']
"""

from __future__ import annotations

import heapq
from typing import Sequence

from tinyllm.tok.models.spm_pieces import UNUSED, SpmPieces
from tinyllm.tok.stages.spm_normalizer import PrefixMatcher


class SpmBpeModel(SpmPieces):
    type = "SentencePieceBPE"

    def __init__(self, pieces: Sequence[tuple[str, float, int]], byte_fallback: bool = False, *,
                 user_defined: Sequence[str] = (), where: str = "pieces") -> None:
        super().__init__(pieces, byte_fallback, where=where)
        self._setup(user_defined=user_defined)

    def _setup(self, *, user_defined: Sequence[str] = ()) -> None:
        self.user_defined = tuple(user_defined)
        self._matcher = PrefixMatcher(self.user_defined)

    def to_json(self) -> dict:
        return {"type": self.type, "byte_fallback": self.byte_fallback, "pieces": self.to_json_pieces()}

    def _initial_symbols(self, word: str) -> list[tuple[int, int, bool]]:
        """(start, end, frozen) in characters: user-defined symbols (longest, frozen), else chars."""
        if not self.user_defined:
            return [(k, k + 1, False) for k in range(len(word))]
        data = word.encode("utf-8")
        byte_at = [0]  # byte offset of each character, and the end
        for ch in word:
            byte_at.append(byte_at[-1] + len(ch.encode("utf-8")))
        char_at = {b: k for k, b in enumerate(byte_at)}
        symbols = []
        k = 0
        while k < len(word):
            matched = self._matcher.match(data, byte_at[k])
            end = char_at[byte_at[k] + matched] if matched else k + 1
            symbols.append((k, end, bool(matched)))
            k = end
        return symbols

    def tokenize(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) for each token of `word` (a whole normalized text), positions in characters."""
        if not word:
            return []
        initial = self._initial_symbols(word)
        n = len(initial)
        start = [s for s, _, _ in initial]
        end = [e for _, e, _ in initial]
        frozen = [f for _, _, f in initial]
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        alive = [True] * n
        normal, scores, types = self.normal, self.scores, self.types
        rev_merge: dict[str, tuple[str, str]] = {}
        agenda: list = []

        def add_pair(left: int, right: int) -> None:
            if left == -1 or right == -1 or frozen[left] or frozen[right]:
                return
            piece = word[start[left]:end[right]]
            i = normal.get(piece)
            if i is None:
                return
            # highest score first, then leftmost; size (chars) tells a stale entry later
            heapq.heappush(agenda, (-scores[i], left, right, end[right] - start[left]))
            if types[i] == UNUSED:
                rev_merge[piece] = (word[start[left]:end[left]], word[start[right]:end[right]])

        for k in range(1, n):
            add_pair(k - 1, k)
        while agenda:
            _, left, right, size = heapq.heappop(agenda)
            if not alive[left] or not alive[right] or (end[left] - start[left]) + (end[right] - start[right]) != size:
                continue  # one side has merged since this pair was queued
            end[left] = end[right]
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            alive[right] = False
            add_pair(prev[left], left)
            add_pair(left, nxt[left])

        raw: list[tuple[str, int, int, int]] = []

        def resegment(text: str, at: int) -> int:
            i = self.piece_to_id(text)
            if types[i] != UNUSED or text not in rev_merge:
                raw.append((text, i, at, at + len(text)))
                return at + len(text)
            left, right = rev_merge[text]
            return resegment(right, resegment(left, at))

        k = 0
        while k != -1:
            resegment(word[start[k]:end[k]], start[k])
            k = nxt[k]
        return self.finish(raw)
