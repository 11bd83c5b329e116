"""`EncodedSequence`: ids that keep their metadata.

Plain `decode` cannot tell which ids a template inserted or where a token came from in the source.
An `EncodedSequence` carries, per id: its token string (`pieces`), whether it is a special token
(`special_tokens_mask`), and its `(start, end)` span in the source text. The unit of the spans is
declared in `offset_coordinate`:

* `raw_codepoints` (default): indices into the Python `str` that was encoded;
* `raw_utf8_bytes`: indices into its UTF-8 bytes.

Inserted specials (from `add_special`) have the empty span `(0, 0)`. A byte-level token that
holds only part of a character spans that whole character in `raw_codepoints`, and exactly its own
bytes in `raw_utf8_bytes`. For a pair of texts (`encode_pair`), each span indexes its own text and
`sequence_ids` says which text that is.

>>> e = EncodedSequence([7, 8], ["he", "llo"], [False, False], [(0, 2), (2, 5)])
>>> len(e), e.offset_coordinate
(2, 'raw_codepoints')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

OffsetCoordinate = Literal["raw_codepoints", "raw_utf8_bytes"]
COORDINATES = ("raw_codepoints", "raw_utf8_bytes")


@dataclass(frozen=True)
class EncodedSequence:
    ids: list[int]
    pieces: list[str]
    special_tokens_mask: list[bool]
    offsets: list[tuple[int, int]]
    offset_coordinate: OffsetCoordinate = "raw_codepoints"
    #: Per id: the segment type the model sees (BERT's token_type_ids); all 0 for one text.
    type_ids: Optional[list[int]] = None
    #: Per id: 0 for the first text, 1 for the second of a pair, None for inserted specials.
    sequence_ids: Optional[list[Optional[int]]] = None

    def __len__(self) -> int:
        return len(self.ids)

    def __post_init__(self) -> None:
        n = len(self.ids)
        if not (len(self.pieces) == len(self.special_tokens_mask) == len(self.offsets) == n):
            raise ValueError("EncodedSequence: ids, pieces, special_tokens_mask and offsets differ in length")
        for name in ("type_ids", "sequence_ids"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"EncodedSequence: {name} has {len(value)} entries, expected {n}")
        if self.offset_coordinate not in COORDINATES:
            raise ValueError(
                f"EncodedSequence: offset_coordinate = {self.offset_coordinate!r}; expected one of {', '.join(COORDINATES)}"
            )
