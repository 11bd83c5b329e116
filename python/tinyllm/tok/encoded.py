"""`EncodedSequence`: ids that keep their metadata.

Plain `decode` cannot tell which ids a template inserted or where a token came from in the source.
An `EncodedSequence` carries, per id: its token string (`pieces`), whether it is a special token
(`special_tokens_mask`), and its `(start, end)` span in the source text. The unit of the spans is
declared in `offset_coordinate`:

* `raw_codepoints` (default): indices into the Python `str` that was encoded;
* `raw_utf8_bytes`: indices into its UTF-8 bytes.

Inserted specials (from `add_special`) have the offset None: no source text made them. `encode_structured(...,
max_length=N, truncation_side="right"|"left")` keeps N ids and records `original_length` and
`truncated`; `tokenizer_hash` is the producing tokenizer's H_sem and `input_ids` aliases `ids`. A byte-level token that
holds only part of a character spans that whole character in `raw_codepoints`, and exactly its own
bytes in `raw_utf8_bytes`. For a pair of texts (`encode_pair`), each span indexes its own text and
`sequence_ids` says which text that is.

>>> e = EncodedSequence([7, 8], ["he", "llo"], [False, False], [(0, 2), (2, 5)])
>>> len(e), e.offset_coordinate
(2, 'raw_codepoints')
"""

from __future__ import annotations

from typing import Literal, Optional

from tinyllm._record import record

OffsetCoordinate = Literal["raw_codepoints", "raw_utf8_bytes"]
COORDINATES = ("raw_codepoints", "raw_utf8_bytes")


@record
class EncodedSequence:
    ids: list[int]
    pieces: list[str]
    special_tokens_mask: list[bool]
    offsets: list[Optional[tuple[int, int]]]
    offset_coordinate: OffsetCoordinate = "raw_codepoints"
    #: Per id: the segment type the model sees (BERT's token_type_ids); all 0 for one text.
    type_ids: Optional[list[int]] = None
    #: Per id: 0 for the first text, 1 for the second of a pair, None for inserted specials.
    sequence_ids: Optional[list[Optional[int]]] = None
    #: H_sem of the tokenizer that produced the ids (None when built by hand).
    tokenizer_hash: Optional[str] = None
    #: The number of ids before truncation (None: the same as now).
    original_length: Optional[int] = None
    #: Whether `encode_structured(max_length=...)` cut ids off.
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def input_ids(self) -> list[int]:
        """The ids, under the name the seed and Hugging Face use (`ids` is the same list)."""
        return self.ids

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

    def validate(self, vocab_size: int, source_length: Optional[int] = None) -> "EncodedSequence":
        """Check the sequence against a vocabulary (and, if given, the source's length in the
        offset unit); return it unchanged or raise ValueError naming the first bad entry.

        >>> EncodedSequence([7, 8], ["he", "llo"], [False, False], [(0, 2), (2, 5)]).validate(9, 5).ids
        [7, 8]
        >>> EncodedSequence([7, 9], ["he", "llo"], [False, False], [(0, 2), (2, 5)]).validate(9)
        Traceback (most recent call last):
        ...
        ValueError: EncodedSequence.ids[1]: 9 is outside the vocabulary (expected 0 <= id < 9)
        """
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"validate: vocab_size must be an integer >= 1, found {vocab_size!r}")
        n = len(self.ids)
        for name in ("pieces", "special_tokens_mask", "offsets", "type_ids", "sequence_ids"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"EncodedSequence.{name}: {len(value)} entries, expected {n} (one per id)")
        if self.original_length is not None and (self.original_length < n or self.truncated != (self.original_length > n)):
            raise ValueError(f"EncodedSequence.original_length: {self.original_length} with {n} ids and "
                             f"truncated={self.truncated}; expected original_length >= {n}, and > {n} exactly when truncated")
        for k, i in enumerate(self.ids):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < vocab_size:
                raise ValueError(f"EncodedSequence.ids[{k}]: {i!r} is outside the vocabulary "
                                 f"(expected 0 <= id < {vocab_size})")
        for k, flag in enumerate(self.special_tokens_mask):
            if not isinstance(flag, (bool, int)) or flag not in (0, 1):
                raise ValueError(f"EncodedSequence.special_tokens_mask[{k}]: expected a bool, found {flag!r}")
        for k, span in enumerate(self.offsets):
            if span is None:
                if not self.special_tokens_mask[k]:
                    raise ValueError(f"EncodedSequence.offsets[{k}]: None, but ids[{k}] is not a special token; "
                                     "only inserted specials have no source span")
                continue
            ok = isinstance(span, (tuple, list)) and len(span) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in span)
            if not ok or not 0 <= span[0] <= span[1]:
                raise ValueError(f"EncodedSequence.offsets[{k}]: expected (start, end) with 0 <= start <= end, "
                                 f"found {span!r}")
            if source_length is not None and span[1] > source_length:
                raise ValueError(f"EncodedSequence.offsets[{k}]: {span!r} ends past the source "
                                 f"({source_length} {self.offset_coordinate})")
        for name, allowed in (("type_ids", None), ("sequence_ids", (0, 1, None))):
            for k, v in enumerate(getattr(self, name) or ()):
                bad = (v not in allowed) if allowed else (isinstance(v, bool) or not isinstance(v, int) or v < 0)
                if bad:
                    raise ValueError(f"EncodedSequence.{name}[{k}]: unexpected value {v!r}")
        return self


def check_structured_options(offset_coordinate: str, max_length, truncation_side: str) -> None:
    """The options every `encode_structured` takes; ValueError names the bad one."""
    if offset_coordinate not in COORDINATES:
        raise ValueError(f"encode_structured: offset_coordinate = {offset_coordinate!r}; expected one of "
                         f"{', '.join(COORDINATES)}")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 0):
        raise ValueError(f"encode_structured: max_length = {max_length!r}; expected a non-negative integer or None")
    if truncation_side not in ("right", "left"):
        raise ValueError(f"encode_structured: truncation_side = {truncation_side!r}; expected 'right' or 'left'")


def truncate(encoded: EncodedSequence, max_length: Optional[int], truncation_side: str,
             tokenizer_hash: Optional[str]) -> EncodedSequence:
    """`encoded` cut to `max_length` ids (specials included) from the end ("right") or the start
    ("left"), recording `original_length`, `truncated` and the producing tokenizer's hash.

    >>> e = EncodedSequence([1, 2, 3], ["a", "b", "c"], [False] * 3, [(0, 1), (1, 2), (2, 3)])
    >>> t = truncate(e, 2, "left", None)
    >>> t.ids, t.offsets, t.original_length, t.truncated
    ([2, 3], [(1, 2), (2, 3)], 3, True)
    """
    n = len(encoded.ids)
    cut = max_length is not None and n > max_length
    keep = slice(None) if not cut else slice(0, max_length) if truncation_side == "right" else slice(n - max_length, n)

    def part(values):
        return None if values is None else list(values[keep])

    return EncodedSequence(part(encoded.ids), part(encoded.pieces), part(encoded.special_tokens_mask),
                           part(encoded.offsets), encoded.offset_coordinate, part(encoded.type_ids),
                           part(encoded.sequence_ids), tokenizer_hash=tokenizer_hash, original_length=n,
                           truncated=cut)

