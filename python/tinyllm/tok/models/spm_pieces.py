"""The piece table of a SentencePiece model, and what sentencepiece does after its model runs.

Pieces have a type (`ModelProto.SentencePiece.Type`). NORMAL, USER_DEFINED and UNUSED pieces are
the model's vocabulary (text can be segmented into them; UNUSED ones only as a step of BPE);
UNKNOWN (exactly one), CONTROL (`<s>`, `</s>`, `<pad>`, ...) and BYTE (`<0x00>`..`<0xFF>`) pieces are
*reserved*: no text is ever segmented into them. A piece text is looked up reserved first, as
sentencepiece's `PieceToId` does; a text that is not a piece is the unknown id.

After segmentation (`finish`), as sentencepiece's `PopulateSentencePieceText`:

* with `byte_fallback`, an unknown piece becomes one BYTE piece per UTF-8 byte of its text;
* without it, a run of consecutive unknown pieces becomes one unknown token.

>>> t = SpmPieces([("<unk>", 0.0, UNKNOWN), ("a", -1.0, NORMAL)], byte_fallback=False)
>>> t.finish([("x", t.unk_id, 0, 1), ("y", t.unk_id, 1, 2), ("a", 1, 2, 3)])
[(0, 0, 2), (1, 2, 3)]
"""

from __future__ import annotations

import math
from typing import Sequence

# ModelProto.SentencePiece.Type (sentencepiece_model.proto)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PIECE_TYPES = {NORMAL: "NORMAL", UNKNOWN: "UNKNOWN", CONTROL: "CONTROL", USER_DEFINED: "USER_DEFINED",
               UNUSED: "UNUSED", BYTE: "BYTE"}

_VOCAB_TYPES = (NORMAL, USER_DEFINED, UNUSED)


def byte_piece(b: int) -> str:
    """The BYTE piece of byte `b`: `<0x41>` (upper-case hex, as sentencepiece writes it)."""
    return f"<0x{b:02X}>"


_BYTE_OF = {byte_piece(b): b for b in range(256)}


def _good(entry) -> bool:
    piece, score, kind = entry
    return (type(piece) is str and piece != "" and kind in PIECE_TYPES and type(score) in (float, int)
            and -math.inf < score < math.inf)


class SpmPieces:
    """Pieces (text, score, type) in id order; ValueError names the piece of a bad table."""

    def __init__(self, pieces: Sequence[tuple[str, float, int]], byte_fallback: bool, *, where: str = "pieces") -> None:
        self.pieces = [tuple(p) for p in pieces]
        self.byte_fallback = bool(byte_fallback)
        self.id_to_token = [p for p, _, _ in self.pieces]
        self.scores = [s for _, s, _ in self.pieces]
        self.types = [t for _, _, t in self.pieces]
        self.unk_id = None
        self.byte_ids = [None] * 256
        self.normal: dict[str, int] = {p: i for i, (p, _, t) in enumerate(self.pieces) if t in _VOCAB_TYPES}
        self.reserved: dict[str, int] = {p: i for i, (p, _, t) in enumerate(self.pieces) if t not in _VOCAB_TYPES}
        if len(self.normal) + len(self.reserved) != len(self.pieces) or not all(map(_good, self.pieces)):
            self._explain(where)  # raises, naming the piece
        for i, kind in enumerate(self.types):
            if kind == NORMAL:
                continue
            piece = self.id_to_token[i]
            here = f"{where}[{i}]"
            if kind == UNKNOWN:
                if self.unk_id is not None:
                    raise ValueError(f"{here}: a second UNKNOWN piece {piece!r} (the first is {where}[{self.unk_id}]); "
                                     "expected exactly one")
                self.unk_id = i
            if kind == BYTE:
                if not self.byte_fallback:
                    raise ValueError(f"{here}: BYTE piece {piece!r} in a model whose trainer_spec.byte_fallback is false")
                b = _BYTE_OF.get(piece)
                if b is None:
                    raise ValueError(f"{here}.piece: {piece!r} is typed BYTE but is not <0x00>..<0xFF>")
                self.byte_ids[b] = i
        if self.unk_id is None:
            raise ValueError(f"{where}: no piece of type UNKNOWN; sentencepiece requires one")
        if self.byte_fallback and None in self.byte_ids:
            missing = self.byte_ids.index(None)
            raise ValueError(f"{where}: trainer_spec.byte_fallback is true but there is no BYTE piece {byte_piece(missing)} "
                             "(expected all 256)")
        # what the pipeline's token_to_id sees: reserved first, as PieceToId
        self.vocab = dict(self.normal)
        self.vocab.update(self.reserved)

    def _explain(self, where: str) -> None:
        """Raise the ValueError for the first bad piece (empty, bad type or score, duplicate)."""
        seen: tuple[dict, dict] = ({}, {})
        for i, (piece, score, kind) in enumerate(self.pieces):
            here = f"{where}[{i}]"
            if not isinstance(piece, str) or not piece:
                raise ValueError(f"{here}.piece: {piece!r}; expected a non-empty string")
            if kind not in PIECE_TYPES:
                raise ValueError(f"{here}.type: found {kind}, expected one of {sorted(PIECE_TYPES)}")
            if type(score) not in (float, int) or not math.isfinite(score):
                raise ValueError(f"{here}.score: {score!r} for {piece!r}; expected a finite number")
            table = seen[0] if kind in _VOCAB_TYPES else seen[1]
            if piece in table:
                raise ValueError(f"{here}.piece: {piece!r} is already defined as {where}[{table[piece]}]; "
                                 "sentencepiece refuses duplicate pieces")
            table[piece] = i

    def piece_to_id(self, text: str) -> int:
        i = self.reserved.get(text)
        if i is None:
            i = self.normal.get(text, self.unk_id)
        return i

    def finish(self, tokens: list[tuple[str, int, int, int]]) -> list[tuple[int, int, int]]:
        """(piece text, id, start, end) from a model -> (id, start, end) tokens: unknown pieces
        become bytes (byte_fallback) or fuse with the unknown piece before them."""
        out: list[tuple[int, int, int]] = []
        prev_unk = False
        unk = self.unk_id
        for text, i, start, end in tokens:
            is_unk = i == unk
            if is_unk and self.byte_fallback:
                out.extend((self.byte_ids[b], start, end) for b in text.encode("utf-8"))
            elif is_unk and prev_unk:
                out[-1] = (unk, out[-1][1], end)
            else:
                out.append((i, start, end))
            prev_unk = is_unk
        return out

    def to_json_pieces(self) -> list:
        return [[p, s, PIECE_TYPES[t]] for p, s, t in self.pieces]
