"""`EncodedSequence`: ids that keep their metadata.

Plain `decode` cannot tell which ids a template inserted or where a token came from in the source.
An `EncodedSequence` carries, per id: its token string (`pieces`), whether it is a special token
(`special_tokens_mask`), and its `(start, end)` span in the source text. The unit of the spans is
declared in `offset_coordinate`:

* `raw_codepoints` (default): indices into the Python `str` that was encoded;
* `raw_utf8_bytes`: indices into its UTF-8 bytes.

Inserted specials (from `add_special`) have the offset None: no source text made them.
`tokenizer_hash` is the producing tokenizer's H_sem and `input_ids` aliases `ids`. A byte-level
token that holds only part of a character spans that whole character in `raw_codepoints`, and
exactly its own bytes in `raw_utf8_bytes`. For a pair of texts (`encode_pair`), each span indexes
its own text and `sequence_ids` says which text that is.

The token budget (`encode(..., max_length=N, truncation_side="right"|"left")` and the same
options of `encode_structured`, which give the same ids) follows one rule, `content_window`:

* the specials that `add_special` inserts (BOS/CLS/SEP/EOS) are always kept, as Hugging Face
  keeps them: the content is cut to N minus their number, then they are put around it; an N
  smaller than their number is a ValueError naming max_length;
* a run of adjacent special tokens in the content (allowed specials matched in the text) is
  kept whole or dropped whole, so the result can be shorter than N;
* `original_length` is the length without a budget, `truncated` says whether ids were dropped,
  and `dropped` is the half-open range of positions of the untruncated ids that were dropped.

>>> e = EncodedSequence([7, 8], ["he", "llo"], [False, False], [(0, 2), (2, 5)])
>>> len(e), e.offset_coordinate
(2, 'raw_codepoints')
"""

from __future__ import annotations

from collections.abc import Sequence
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
    #: The positions of the untruncated ids that the budget dropped, as a half-open range
    #: (start, end); None when nothing was dropped.
    dropped: Optional[tuple[int, int]] = None

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
        self._validate_dropped(n)
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

    def _validate_dropped(self, n: int) -> None:
        """`dropped` is None exactly when nothing was dropped; else a range of the untruncated ids
        whose removal leaves these n ids."""
        dropped = self.dropped
        if dropped is None:
            if self.truncated:
                raise ValueError("EncodedSequence.dropped: None with truncated=True; expected the (start, end) range "
                                 "of the positions that were dropped")
            return
        ok = isinstance(dropped, (tuple, list)) and len(dropped) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in dropped)
        total = self.original_length
        if not ok or total is None or not 0 <= dropped[0] < dropped[1] <= total or total - (dropped[1] - dropped[0]) != n:
            raise ValueError(f"EncodedSequence.dropped: found {dropped!r} with original_length={total} and {n} ids; "
                             f"expected (start, end) with 0 <= start < end <= original_length and "
                             f"original_length - (end - start) == {n}")
        if not self.truncated:
            raise ValueError(f"EncodedSequence.dropped: found {dropped!r} with truncated=False; expected None when "
                             "nothing was dropped")


def check_structured_options(offset_coordinate: str, max_length, truncation_side: str) -> None:
    """The options every `encode_structured` takes; ValueError names the bad one."""
    if offset_coordinate not in COORDINATES:
        raise ValueError(f"encode_structured: offset_coordinate = {offset_coordinate!r}; expected one of "
                         f"{', '.join(COORDINATES)}")
    check_budget(max_length, truncation_side, "encode_structured")


def check_budget(max_length, truncation_side: str, where: str = "encode") -> None:
    """The token-budget options of `encode` and `encode_structured`; ValueError names the bad one."""
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 0):
        raise ValueError(f"{where}: max_length = {max_length!r}; expected a non-negative integer or None")
    if truncation_side not in ("right", "left"):
        raise ValueError(f"{where}: truncation_side = {truncation_side!r}; expected 'right' or 'left'")


def content_budget(max_length: int, inserted: int, where: str = "encode") -> int:
    """The ids left for the content once the `inserted` specials of `add_special` are counted,
    which are always kept; ValueError when they alone exceed `max_length`.

    >>> content_budget(5, 2)
    3
    >>> content_budget(1, 2)
    Traceback (most recent call last):
    ...
    ValueError: encode: max_length = 1 is smaller than the 2 special tokens add_special inserts, which are always kept; expected max_length >= 2
    """
    if max_length < inserted:
        raise ValueError(f"{where}: max_length = {max_length} is smaller than the {inserted} special tokens "
                         f"add_special inserts, which are always kept; expected max_length >= {inserted}")
    return max_length - inserted


def content_window(special: Sequence[bool], budget: int, truncation_side: str) -> tuple[int, int]:
    """The half-open range of content ids that a budget of `budget` ids keeps, given which ids are
    special tokens matched in the text (`special`, one flag per id).

    "right" keeps a prefix, "left" a suffix. A run of adjacent specials is a group that is kept
    whole or dropped whole: when the cut would fall inside a run, the whole run is dropped, so the
    window can be shorter than the budget. With `<|im_end|>` and `<|im_start|>` allowed,
    "hi<|im_end|><|im_start|>yo" is [hi, E, S, yo]; a budget of 2 would keep [hi, E] and split the
    run E S, so it keeps [hi] only:

    >>> content_window([False, True, True, False], 2, "right")
    (0, 1)
    >>> content_window([False, True, True, False], 2, "left")  # [S, yo] would split it too: [yo]
    (3, 4)
    >>> content_window([False, True, True, False], 3, "right"), content_window([False] * 4, 9, "left")
    ((0, 3), (0, 4))
    """
    n = len(special)
    if n <= budget:
        return 0, n
    if truncation_side == "right":
        end = budget
        if 0 < end and special[end] and special[end - 1]:  # the cut splits a run: drop all of it
            while end > 0 and special[end - 1]:
                end -= 1
        return 0, end
    start = n - budget  # the mirror image: a suffix, a run straddling the cut dropped whole
    if start < n and special[start] and special[start - 1]:
        while start < n and special[start]:
            start += 1
    return start, n


def dropped_range(window: tuple[int, int], n: int, prefix: int) -> Optional[tuple[int, int]]:
    """The positions of the untruncated ids that `window` drops from `n` content ids placed after
    `prefix` inserted specials; None when it keeps them all (one side is always whole)."""
    start, end = window
    if end < n:
        return prefix + end, prefix + n
    if start > 0:
        return prefix, prefix + start
    return None


def truncate(encoded: EncodedSequence, max_length: Optional[int], truncation_side: str,
             tokenizer_hash: Optional[str], where: str = "encode_structured") -> EncodedSequence:
    """`encoded` within a budget of `max_length` ids under the rule of the module docstring,
    recording `original_length`, `truncated`, `dropped` and the producing tokenizer's hash.

    The content is the ids with a source span; the ids without one are the specials `add_special`
    inserted, which are kept. (A pipeline whose post-processor resets the special mask of the
    content, as Roberta's does, truncates before wrapping instead: see `PipelineTokenizer`.)

    >>> e = EncodedSequence([1, 2, 3], ["a", "b", "c"], [False] * 3, [(0, 1), (1, 2), (2, 3)])
    >>> t = truncate(e, 2, "left", None)
    >>> t.ids, t.offsets, t.original_length, t.truncated, t.dropped
    ([2, 3], [(1, 2), (2, 3)], 3, True, (0, 1))
    >>> bos = EncodedSequence([9, 1, 2, 3], ["<s>", "a", "b", "c"], [True] + [False] * 3, [None, (0, 1), (1, 2), (2, 3)])
    >>> truncate(bos, 2, "right", None).ids   # the inserted <s> stays
    [9, 1]
    """
    n = len(encoded.ids)
    content = [k for k, span in enumerate(encoded.offsets) if span is not None]
    prefix = content[0] if content else 0
    count = len(content)
    if count and content[-1] - prefix + 1 != count:
        raise ValueError(f"{where}: the content ids are not contiguous (inserted specials at positions "
                         f"{[k for k, span in enumerate(encoded.offsets) if span is None]}); expected them around it")
    dropped = None
    if max_length is not None:
        budget = content_budget(max_length, n - count, where)
        window = content_window(encoded.special_tokens_mask[prefix:prefix + count], budget, truncation_side)
        dropped = dropped_range(window, count, prefix)

    def part(values):
        if values is None:
            return None
        if dropped is None:
            return list(values)
        return list(values[:dropped[0]]) + list(values[dropped[1]:])

    return EncodedSequence(part(encoded.ids), part(encoded.pieces), part(encoded.special_tokens_mask),
                           part(encoded.offsets), encoded.offset_coordinate, part(encoded.type_ids),
                           part(encoded.sequence_ids), tokenizer_hash=tokenizer_hash, original_length=n,
                           truncated=dropped is not None, dropped=dropped if dropped is None else tuple(dropped))
