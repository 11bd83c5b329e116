"""collate_padded / collate_packed: seed 003's three-record batch array by array, and invariants."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyllm.seq.collate import IGNORE_INDEX, Record, collate_packed, collate_padded

I = IGNORE_INDEX
OWNERS_A = ["prompt"] * 4 + ["response"] * 2
RECORDS = [
    Record("sample-a", [256, 258, 117, 259, 65, 260], [0, 0, 0, 0, 1, 1], OWNERS_A, [1, 1, 0, 1, 0, 1]),
    Record("sample-b", [256, 258, 66, 260], [0, 0, 1, 1]),
    Record("sample-c", [256, 67, 260], [0, 1, 1]),
]


def test_seed_padded_arrays():
    b = collate_padded(RECORDS, pad_id=265, multiple=4)
    assert b.input_ids.tolist() == [[256, 258, 117, 259, 65, 260, 265, 265],
                                    [256, 258, 66, 260, 265, 265, 265, 265],
                                    [256, 67, 260, 265, 265, 265, 265, 265]]
    assert b.attention_mask.tolist() == [[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]]
    assert b.position_ids.tolist() == [[0, 1, 2, 3, 4, 5, 0, 0], [0, 1, 2, 3, 0, 0, 0, 0], [0, 1, 2, 0, 0, 0, 0, 0]]
    assert b.labels.tolist() == [[I, I, I, 65, 260, I, I, I], [I, 66, 260, I, I, I, I, I], [67, 260, I, I, I, I, I, I]]
    assert b.loss_mask.tolist() == [[0, 0, 0, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]]
    assert b.special_tokens_mask.tolist()[0] == [1, 1, 0, 1, 0, 1, 0, 0]
    assert b.sample_ownership[0] == ["sample-a"] * 6 + ["__pad__"] * 2
    assert b.sample_ownership[2] == ["sample-c"] * 3 + ["__pad__"] * 5
    # The first response target (65, position 4) is predicted at source position 3, a prompt token.
    assert b.token_ownership[0][3] == "prompt" and b.label_ownership[0][3] == "response"
    assert b.label_ownership[0] == ["__ignore__"] * 3 + ["response"] * 2 + ["__ignore__"] * 3


def test_seed_padding_and_attention_accounting():
    s = collate_padded(RECORDS, pad_id=265, multiple=4).stats
    assert (s.real_tokens, s.slots, s.padding) == (13, 24, 11)
    assert (s.padding_from_length_variation, s.padding_from_alignment) == (5, 6)
    assert s.padding_efficiency == pytest.approx(13 / 24) and round(100 * s.padding_efficiency, 2) == 54.17
    assert (s.dense_attention_area, s.useful_attention_area, s.supervised_targets) == (192, 61, 6)
    assert collate_padded(RECORDS, pad_id=265).stats.slots == 18


def test_seed_packed_arrays():
    p = collate_packed(RECORDS)
    assert p.input_ids.tolist() == [256, 258, 117, 259, 65, 260, 256, 258, 66, 260, 256, 67, 260]
    assert p.position_ids.tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 1, 2]
    assert p.sample_ownership == ["sample-a"] * 6 + ["sample-b"] * 4 + ["sample-c"] * 3
    assert p.labels.tolist() == [I, I, I, 65, 260, I, I, 66, 260, I, 67, 260, I]
    assert p.loss_mask.tolist() == [0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0]
    assert p.cu_seqlens.tolist() == [0, 6, 10, 13] and p.cu_seqlens.dtype == np.int32 and p.max_seqlen == 6
    # No label crosses a boundary: EOT(a) does not predict BOS(b).
    assert p.labels[5] == I and p.labels[9] == I


def test_left_padding_supervises_the_same_targets():
    right = collate_padded(RECORDS, pad_id=265, multiple=4)
    left = collate_padded(RECORDS, pad_id=265, multiple=4, padding_side="left")
    assert left.input_ids.tolist()[2] == [265] * 5 + [256, 67, 260]
    assert left.position_ids.tolist()[2] == [0] * 5 + [0, 1, 2]
    assert left.labels.tolist()[2] == [I] * 5 + [67, 260, I]
    assert left.sample_ownership[2] == ["__pad__"] * 5 + ["sample-c"] * 3
    for b in range(3):
        assert sorted(right.labels[b][right.loss_mask[b] == 1].tolist()) == \
            sorted(left.labels[b][left.loss_mask[b] == 1].tolist())


def test_validation_rejects_bad_batches():
    dup = [RECORDS[0], Record("sample-a", [1, 2], [0, 1])]
    with pytest.raises(ValueError, match=r"records\[1\]\.sample_id: 'sample-a' duplicates records\[0\]"):
        collate_padded(dup, pad_id=265)
    with pytest.raises(ValueError, match=r"records\[0\]\.input_ids\[2\]: the record contains the PAD id 117"):
        collate_padded(RECORDS, pad_id=117)
    with pytest.raises(ValueError, match=r"records\[0\]\.input_ids: 6 ids exceed max_length = 5"):
        collate_padded(RECORDS, pad_id=265, max_length=5)
    with pytest.raises(ValueError, match=r"records\[0\]\.target_supervision: 2 entries, expected 3"):
        collate_packed([Record("x", [1, 2, 3], [0, 1])])
    with pytest.raises(ValueError, match=r"target_supervision\[1\]: expected one of"):
        collate_packed([Record("x", [1, 2], [0, 2])])
    with pytest.raises(ValueError, match="at least one id"):
        collate_packed([Record("x", [], [])])
    with pytest.raises(ValueError, match="padding_side"):
        collate_padded(RECORDS, pad_id=265, padding_side="middle")
    with pytest.raises(ValueError, match="multiple"):
        collate_padded(RECORDS, pad_id=265, multiple=0)
    with pytest.raises(ValueError, match="max_tokens = 12"):
        collate_packed(RECORDS, max_tokens=12)
    with pytest.raises(ValueError, match="return_tensors"):
        collate_packed(RECORDS, return_tensors="tf")


def test_torch_tensors_when_asked():
    try:
        import torch
    except ImportError:
        with pytest.raises(ValueError, match="needs torch"):
            collate_padded(RECORDS, pad_id=265, return_tensors="pt")
        return
    b = collate_padded(RECORDS, pad_id=265, multiple=4, return_tensors="pt")
    assert isinstance(b.input_ids, torch.Tensor) and b.input_ids.shape == (3, 8)


records_strategy = st.lists(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 1)), min_size=1, max_size=12),
    min_size=1, max_size=6,
).map(lambda rows: [Record(f"s{k}", [i for i, _ in row], [q for _, q in row]) for k, row in enumerate(rows)])


@settings(max_examples=200, deadline=None)
@given(records_strategy, st.integers(1, 8), st.sampled_from(["right", "left"]))
def test_collation_invariants(records, multiple, side):
    padded = collate_padded(records, pad_id=99, multiple=multiple, padding_side=side)
    packed = collate_packed(records)
    lengths = [len(r.input_ids) for r in records]
    width = padded.input_ids.shape[1]
    assert width % multiple == 0 and max(lengths) <= width < max(lengths) + multiple
    for name in ("attention_mask", "position_ids", "labels", "loss_mask", "special_tokens_mask"):
        assert getattr(padded, name).shape == (len(records), width)
        assert getattr(packed, name).shape == (sum(lengths),)
    assert len(padded.sample_ownership) == len(records) and all(len(row) == width for row in padded.sample_ownership)
    cu = packed.cu_seqlens.tolist()
    assert cu[0] == 0 and cu[-1] == sum(lengths) and np.diff(cu).tolist() == lengths
    assert all(a < b for a, b in itertools.pairwise(cu))
    for end in cu[1:]:  # the last position of every sample has no label
        assert packed.labels[end - 1] == IGNORE_INDEX and packed.loss_mask[end - 1] == 0
    assert ((packed.labels != IGNORE_INDEX) == (packed.loss_mask == 1)).all()
    assert ((padded.labels != IGNORE_INDEX) == (padded.loss_mask == 1)).all()
    assert padded.attention_mask.sum(axis=1).tolist() == lengths
    # Both layouts supervise the same targets, sample by sample.
    for b, r in enumerate(records):
        row = padded.labels[b][padded.loss_mask[b] == 1].tolist()
        part = packed.labels[cu[b]:cu[b + 1]]
        assert row == part[part != IGNORE_INDEX].tolist()
        assert row == [r.input_ids[t] for t in range(1, len(r.input_ids)) if r.target_supervision[t] == 1]
