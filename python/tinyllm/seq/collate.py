"""Padded and packed batches whose ids, labels and boundaries stay aligned.

A `Record` is one finished training sequence: its ids, which target tokens are supervised
(`target_supervision[t]` = 1 means "learn to predict token t"), and optionally who owns each
token and which ids are special. Collation never truncates: the sequence compiler has already
cut whole turns, so an overlength record is an error, not something to slice.

Labels are shifted inside each record, once: position t predicts token t + 1, so

    labels[t] = input_ids[t + 1]  if t + 1 < length and target_supervision[t + 1] == 1
              = -100              otherwise (and always at a record's last position)

and `label_ownership[t]` is the owner of token t + 1 ("__ignore__" where the label is ignored).
Padding slots have sample owner "__pad__". Packing concatenates the records, restarts
`position_ids` at 0 for each, and gives `cu_seqlens` = [0, l0, l0 + l1, ...], so no label and
no attention crosses a record boundary.

Seed 003's batch: lengths 6, 4, 3, PAD 265, width aligned to a multiple of 4.

>>> records = [Record("a", [256, 258, 117, 259, 65, 260], [0, 0, 0, 0, 1, 1]),
...            Record("b", [256, 258, 66, 260], [0, 0, 1, 1]),
...            Record("c", [256, 67, 260], [0, 1, 1])]
>>> padded = collate_padded(records, pad_id=265, multiple=4)
>>> padded.labels[0].tolist()
[-100, -100, -100, 65, 260, -100, -100, -100]
>>> padded.stats.padding_efficiency, padded.stats.dense_attention_area, padded.stats.useful_attention_area
(0.5416666666666666, 192, 61)
>>> packed = collate_packed(records)
>>> packed.cu_seqlens.tolist(), packed.position_ids.tolist()[4:8]
([0, 6, 10, 13], [4, 5, 0, 1])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Optional, Sequence

import numpy as np

IGNORE_INDEX = -100
PAD_OWNER = "__pad__"
IGNORE_OWNER = "__ignore__"


@dataclass(frozen=True)
class Record:
    """One sequence to collate. `token_owners` defaults to the sample id for every token;
    `special_tokens_mask` to all zeros."""

    sample_id: Hashable
    input_ids: Sequence[int]
    target_supervision: Sequence[int]
    token_owners: Optional[Sequence[Any]] = None
    special_tokens_mask: Optional[Sequence[int]] = None


@dataclass(frozen=True)
class BatchStats:
    """Token and attention accounting of a batch layout."""

    records: int
    real_tokens: int
    slots: int
    supervised_targets: int
    padding_from_length_variation: int
    padding_from_alignment: int
    dense_attention_area: int  # B * S^2 for a padded batch, T^2 for a packed row without masks
    useful_attention_area: int  # sum of l^2: the work a variable-length kernel needs

    @property
    def padding(self) -> int:
        return self.slots - self.real_tokens

    @property
    def padding_efficiency(self) -> float:
        """Real tokens over slots (η)."""
        return self.real_tokens / self.slots if self.slots else 1.0


@dataclass
class PaddedBatch:
    input_ids: Any
    attention_mask: Any
    position_ids: Any
    labels: Any
    loss_mask: Any
    special_tokens_mask: Any
    sample_ownership: list
    token_ownership: list
    label_ownership: list
    stats: BatchStats


@dataclass
class PackedBatch:
    input_ids: Any
    position_ids: Any
    labels: Any
    loss_mask: Any
    special_tokens_mask: Any
    cu_seqlens: Any
    max_seqlen: int
    sample_ownership: list
    token_ownership: list
    label_ownership: list
    stats: BatchStats
    attention_mask: Any = field(default=None)  # all ones: every packed slot is a real token


@dataclass(frozen=True)
class _Checked:
    sample_id: Hashable
    ids: list[int]
    supervision: list[int]
    owners: list
    special: list[int]


def shifted_targets(ids: Sequence[int], supervision: Sequence[int], owners: Sequence) -> tuple[list, list, list]:
    """(labels, loss_mask, label_owners) of one record; see the module docstring.

    >>> shifted_targets([5, 6, 7], [0, 1, 1], ["p", "r", "r"])
    ([6, 7, -100], [1, 1, 0], ['r', 'r', '__ignore__'])
    """
    labels, mask, label_owners = [], [], []
    for t in range(len(ids)):
        if t + 1 < len(ids) and supervision[t + 1] == 1:
            labels.append(ids[t + 1])
            mask.append(1)
            label_owners.append(owners[t + 1])
        else:
            labels.append(IGNORE_INDEX)
            mask.append(0)
            label_owners.append(IGNORE_OWNER)
    return labels, mask, label_owners


def _int_list(values, where: str, allowed: Optional[tuple] = None) -> list[int]:
    if values is None or isinstance(values, (str, bytes)):
        raise ValueError(f"{where}: expected a sequence of integers, found {values!r}")
    out = []
    for k, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{where}[{k}]: expected an integer, found {v!r}")
        v = int(v)
        if allowed is not None and v not in allowed:
            raise ValueError(f"{where}[{k}]: expected one of {allowed}, found {v}")
        out.append(v)
    return out


def _check(records, pad_id: Optional[int], max_length: Optional[int]) -> list[_Checked]:
    if isinstance(records, Record):
        raise ValueError("records: expected a sequence of Record, found a single Record (wrap it in a list)")
    records = list(records)
    if not records:
        raise ValueError("records: expected at least one Record, found none")
    seen: dict = {}
    checked = []
    for k, r in enumerate(records):
        where = f"records[{k}]"
        if not isinstance(r, Record):
            raise ValueError(f"{where}: expected a Record, found {type(r).__name__}")
        if r.sample_id in seen:
            raise ValueError(f"{where}.sample_id: {r.sample_id!r} duplicates records[{seen[r.sample_id]}]")
        seen[r.sample_id] = k
        ids = _int_list(r.input_ids, f"{where}.input_ids")
        n = len(ids)
        if n == 0:
            raise ValueError(f"{where}.input_ids: expected at least one id, found none")
        if any(i < 0 for i in ids):
            raise ValueError(f"{where}.input_ids[{next(t for t, i in enumerate(ids) if i < 0)}]: negative id")
        if pad_id is not None and pad_id in ids:
            raise ValueError(f"{where}.input_ids[{ids.index(pad_id)}]: the record contains the PAD id {pad_id}; "
                             "padding found by value would hide this real token")
        if max_length is not None and n > max_length:
            raise ValueError(f"{where}.input_ids: {n} ids exceed max_length = {max_length}; truncate whole turns "
                             "upstream (the collator never slices a record)")
        supervision = _int_list(r.target_supervision, f"{where}.target_supervision", (0, 1))
        owners = list(r.token_owners) if r.token_owners is not None else [r.sample_id] * n
        special = (_int_list(r.special_tokens_mask, f"{where}.special_tokens_mask", (0, 1))
                   if r.special_tokens_mask is not None else [0] * n)
        for name, values in (("target_supervision", supervision), ("token_owners", owners),
                             ("special_tokens_mask", special)):
            if len(values) != n:
                raise ValueError(f"{where}.{name}: {len(values)} entries, expected {n} (one per input id)")
        checked.append(_Checked(r.sample_id, ids, supervision, owners, special))
    return checked


def _tensors(arrays: dict, return_tensors: str) -> dict:
    if return_tensors == "np":
        return arrays
    if return_tensors != "pt":
        raise ValueError(f"return_tensors: expected \"np\" or \"pt\", found {return_tensors!r}")
    try:
        import torch
    except ImportError:
        raise ValueError("return_tensors: \"pt\" needs torch, which is not installed") from None
    return {k: torch.from_numpy(v) for k, v in arrays.items()}


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, found {value!r}")
    return value


def collate_padded(records: Sequence[Record], pad_id: int, multiple: int = 1, padding_side: str = "right", *,
                   max_length: Optional[int] = None, return_tensors: str = "np") -> PaddedBatch:
    """A [B, S] batch, S = the longest record rounded up to `multiple`; see the module docstring.

    Padding slots: input PAD, attention 0, position 0, label -100, loss 0, owner "__pad__".
    `padding_side="left"` puts the slots first (generation batches); labels are still shifted
    within each record, so both sides supervise the same targets.
    """
    _check_int(pad_id, "pad_id", 0)
    _check_int(multiple, "multiple", 1)
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side: expected \"right\" or \"left\", found {padding_side!r}")
    rows = _check(records, pad_id, max_length)
    lengths = [len(r.ids) for r in rows]
    longest = max(lengths)
    width = multiple * math.ceil(longest / multiple)
    shape = (len(rows), width)
    arrays = {name: np.full(shape, fill, dtype=np.int64) for name, fill in
              (("input_ids", pad_id), ("attention_mask", 0), ("position_ids", 0), ("labels", IGNORE_INDEX),
               ("loss_mask", 0), ("special_tokens_mask", 0))}
    sample_owners, token_owners, label_owners = [], [], []
    for b, r in enumerate(rows):
        n = len(r.ids)
        labels, mask, owners = shifted_targets(r.ids, r.supervision, r.owners)
        span = slice(0, n) if padding_side == "right" else slice(width - n, width)
        for name, values in (("input_ids", r.ids), ("attention_mask", [1] * n), ("position_ids", range(n)),
                             ("labels", labels), ("loss_mask", mask), ("special_tokens_mask", r.special)):
            arrays[name][b, span] = list(values)
        pad = [PAD_OWNER] * (width - n)
        ignore = [IGNORE_OWNER] * (width - n)
        place = (lambda real, fill: real + fill) if padding_side == "right" else (lambda real, fill: fill + real)
        sample_owners.append(place([r.sample_id] * n, pad))
        token_owners.append(place(list(r.owners), pad))
        label_owners.append(place(owners, ignore))
    stats = BatchStats(
        records=len(rows), real_tokens=sum(lengths), slots=len(rows) * width,
        supervised_targets=int(arrays["loss_mask"].sum()),
        padding_from_length_variation=len(rows) * longest - sum(lengths),
        padding_from_alignment=len(rows) * (width - longest),
        dense_attention_area=len(rows) * width * width, useful_attention_area=sum(n * n for n in lengths))
    return PaddedBatch(**_tensors(arrays, return_tensors), sample_ownership=sample_owners,
                       token_ownership=token_owners, label_ownership=label_owners, stats=stats)


def collate_packed(records: Sequence[Record], *, max_tokens: Optional[int] = None,
                   return_tensors: str = "np") -> PackedBatch:
    """One row of T = sum of lengths tokens with `cu_seqlens` boundaries (int32, as
    variable-length attention kernels take them); positions restart per record and every
    record's last label is -100. `max_tokens` rejects a pack that would exceed it."""
    rows = _check(records, None, None)
    lengths = [len(r.ids) for r in rows]
    if max_tokens is not None and sum(lengths) > _check_int(max_tokens, "max_tokens", 1):
        raise ValueError(f"records: {sum(lengths)} tokens exceed max_tokens = {max_tokens}")
    ids, positions, labels, loss, special = [], [], [], [], []
    sample_owners, token_owners, label_owners = [], [], []
    cu = [0]
    for r in rows:
        row_labels, row_mask, row_label_owners = shifted_targets(r.ids, r.supervision, r.owners)
        ids += r.ids
        positions += range(len(r.ids))
        labels += row_labels
        loss += row_mask
        special += r.special
        sample_owners += [r.sample_id] * len(r.ids)
        token_owners += list(r.owners)
        label_owners += row_label_owners
        cu.append(len(ids))
    total = len(ids)
    arrays = {
        "input_ids": np.array(ids, dtype=np.int64), "position_ids": np.array(positions, dtype=np.int64),
        "labels": np.array(labels, dtype=np.int64), "loss_mask": np.array(loss, dtype=np.int64),
        "special_tokens_mask": np.array(special, dtype=np.int64), "cu_seqlens": np.array(cu, dtype=np.int32),
        "attention_mask": np.ones(total, dtype=np.int64),
    }
    stats = BatchStats(records=len(rows), real_tokens=total, slots=total, supervised_targets=sum(loss),
                       padding_from_length_variation=0, padding_from_alignment=0,
                       dense_attention_area=total * total, useful_attention_area=sum(n * n for n in lengths))
    return PackedBatch(**_tensors(arrays, return_tensors), max_seqlen=max(lengths), sample_ownership=sample_owners,
                       token_ownership=token_owners, label_ownership=label_owners, stats=stats)
