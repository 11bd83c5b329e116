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
from functools import cached_property
import operator
from itertools import compress, repeat
from typing import NamedTuple, Sequence, Union

# ModelProto.SentencePiece.Type (sentencepiece_model.proto)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PIECE_TYPES = {NORMAL: "NORMAL", UNKNOWN: "UNKNOWN", CONTROL: "CONTROL", USER_DEFINED: "USER_DEFINED",
               UNUSED: "UNUSED", BYTE: "BYTE"}

_VOCAB_TYPES = (NORMAL, USER_DEFINED, UNUSED)
_RESERVED_TYPES = frozenset(PIECE_TYPES) - frozenset(_VOCAB_TYPES)


class PieceColumns(NamedTuple):
    """Pieces as three lists in id order: what the `.model` reader returns, and the cheap way to
    hand a quarter of a million pieces around (no tuple per piece)."""

    texts: list
    scores: list
    types: list

    def of_type(self, kind: int, column: Sequence = None) -> list:
        """The entries of `column` (default: the ids) of the pieces of type `kind`, in id order."""
        return list(compress(range(len(self.types)) if column is None else column,
                             map(operator.eq, self.types, repeat(kind))))


def byte_piece(b: int) -> str:
    """The BYTE piece of byte `b`: `<0x41>` (upper-case hex, as sentencepiece writes it)."""
    return f"<0x{b:02X}>"


_BYTE_OF = {byte_piece(b): b for b in range(256)}


def _good(entry) -> bool:
    piece, score, kind = entry
    return (type(piece) is str and piece != "" and kind in PIECE_TYPES and type(score) in (float, int)
            and -math.inf < score < math.inf)


class SpmPieces:
    """Pieces (text, score, type) in id order, given as triples or as `PieceColumns`; ValueError
    names the piece of a bad table.

    A model read by the Rust core (`from_core`) keeps its pieces there, checked and shared with
    the engine: the columns, `vocab`, `normal` and `reserved` are built on first use (by the
    reference, `to_json`, the semantic hash), and the lookups the tokenizer makes at load and
    on the fast path (`piece_to_id`, `token_id`, `token_of`, `piece_type`) answer from the core."""

    _core = None  # `_core.SpmPieces` of a model read by the core
    _table = None  # and the `_core.SpmPieceTable` they were checked from

    def __init__(self, pieces: Union[PieceColumns, Sequence[tuple[str, float, int]]], byte_fallback: bool, *,
                 where: str = "pieces") -> None:
        if not isinstance(pieces, PieceColumns):
            rows = [tuple(p) for p in pieces]
            pieces = PieceColumns([p for p, _, _ in rows], [s for _, s, _ in rows], [t for _, _, t in rows])
        self.columns = pieces
        self.byte_fallback = bool(byte_fallback)
        self.id_to_token, self.scores, self.types = pieces
        self.unk_id = None
        self.byte_ids = [None] * 256
        self.normal, self.reserved = self._tables()
        if len(self.normal) + len(self.reserved) != len(self.types) or not self._all_good():
            self._explain(where)  # raises, naming the piece
        for i in compress(range(len(self.types)), map(operator.ne, self.types, repeat(NORMAL))):
            kind = self.types[i]
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

    @classmethod
    def from_core(cls, table, core, byte_fallback: bool, **options) -> "SpmPieces":
        """The model over pieces the core read and checked (`table.pieces(byte_fallback)`, not
        None: the Python checks would pass). `options` are the subclass's own (see `_setup`)."""
        model = cls.__new__(cls)
        model._table, model._core = table, core
        model.byte_fallback = bool(byte_fallback)
        model.unk_id = core.unk_id
        ids = core.byte_ids()
        model.byte_ids = ids if ids is not None else [None] * 256
        # what the pipeline asks at load: answered by the core, without the dicts
        model.token_id = core.token_id
        model.token_of = table.text
        model.id_count = len(table)
        model._setup(**options)
        return model

    def _setup(self, **options) -> None:
        """What a subclass sets up beside the pieces (both constructors)."""

    @cached_property
    def columns(self) -> PieceColumns:
        return PieceColumns(*self._table.columns())

    @cached_property
    def id_to_token(self) -> list:
        return self.columns.texts

    @cached_property
    def scores(self) -> list:
        return self.columns.scores

    @cached_property
    def types(self) -> list:
        return self.columns.types

    @cached_property
    def _both(self) -> tuple[dict[str, int], dict[str, int]]:
        return self._tables()

    @cached_property
    def normal(self) -> dict[str, int]:
        return self._both[0]

    @cached_property
    def reserved(self) -> dict[str, int]:
        return self._both[1]

    @cached_property
    def vocab(self) -> dict[str, int]:
        vocab = dict(self.normal)
        vocab.update(self.reserved)
        return vocab

    def piece_text(self, i: int) -> str:
        """The text of piece `i` (an id of the table)."""
        return self._table.text(i) if self._core is not None else self.id_to_token[i]

    def piece_type(self, i: int) -> int:
        """The type of piece `i` (an id of the table)."""
        return self._core.type_of(i) if self._core is not None else self.types[i]

    @cached_property
    def pieces(self) -> list[tuple[str, float, int]]:
        """(text, score, type) per id (built on first use: encoding never needs it)."""
        return list(zip(*self.columns))

    def _tables(self) -> tuple[dict[str, int], dict[str, int]]:
        """(normal, reserved): text -> id of the NORMAL / USER_DEFINED / UNUSED pieces, and of the
        others. Equal to the two comprehensions of the fallback below; the first way builds them
        at C speed when the texts are distinct (reserved pieces are a few hundred at most)."""
        texts, types = self.id_to_token, self.types
        n = len(texts)
        reserved_ids = list(compress(range(n), map(_RESERVED_TYPES.__contains__, types)))
        reserved = {texts[i]: i for i in reserved_ids}
        normal = dict(zip(texts, range(n)))
        if len(normal) == n:  # distinct texts: drop the reserved ones and keep the order
            for i in reserved_ids:
                del normal[texts[i]]
            return normal, reserved
        # duplicates, a text both reserved and not, or types that are no piece types
        normal = {p: i for i, (p, t) in enumerate(zip(texts, types)) if t in _VOCAB_TYPES}
        reserved = {p: i for i, (p, t) in enumerate(zip(texts, types)) if t not in _VOCAB_TYPES}
        return normal, reserved

    def _all_good(self) -> bool:
        """Whether every piece is a non-empty str with a piece type and a finite score (as
        `_good`, column by column)."""
        texts, scores, types = self.columns
        return (set(map(type, texts)) <= {str} and all(texts) and all(t in PIECE_TYPES for t in set(types))
                and set(map(type, scores)) <= {float, int} and all(map(math.isfinite, scores)))

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
        if self._core is not None:
            return self._core.piece_to_id(text)
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
