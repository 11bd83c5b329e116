"""resize_plan: the seed's shapes, deltas and row sources, and sources on every model kind."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.peers import tokenizer_path
from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, EXPANDED_MERGES, byte_bpe
from tinyllm.migrate.append_only import AppendOnlyError
from tinyllm.migrate.plan import FORMAT, resize_plan
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.text.byte_alphabet import token_bytes


@pytest.fixture(scope="module")
def seed_plan():
    return resize_plan(byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES), 64, tied=True, bias=True)


def test_seed_shapes(seed_plan):
    assert seed_plan.shapes == {"input_embedding": ((268, 64), (272, 64)), "output_bias": ((268,), (272,))}


def test_seed_deltas(seed_plan):
    assert (seed_plan.delta_input, seed_plan.delta_bias, seed_plan.delta_trainable) == (256, 4, 260)
    assert seed_plan.delta_output == 0  # the tied head reuses the input table
    assert seed_plan.optimizer_values == 520


def test_seed_sources(seed_plan):
    rows = [(r.new_id, r.piece, r.source_old_ids) for r in seed_plan.new_row_initialization]
    assert rows == [(268, "er", (101, 114)), (269, "re", (114, 101)), (270, "==", (61, 61)), (271, "10", (49, 48))]
    assert {r.kind for r in seed_plan.new_row_initialization} == {"model"}


def test_untied_without_bias():
    plan = resize_plan(byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES), 64, tied=False, bias=False,
                       optimizer_slots=3)
    assert plan.shapes == {"input_embedding": ((268, 64), (272, 64)), "output_embedding": ((268, 64), (272, 64))}
    assert (plan.delta_output, plan.delta_bias, plan.delta_trainable, plan.optimizer_values) == (256, 0, 512, 1536)


def test_plan_json(seed_plan):
    doc = json.loads(json.dumps(seed_plan.to_json()))
    assert doc["format"] == FORMAT
    assert doc["shapes"]["input_embedding"] == [[268, 64], [272, 64]]
    assert doc["new_row_initialization"][3] == {"new_id": 271, "piece": "10", "source_old_ids": [49, 48],
                                                "kind": "model"}
    assert doc["old_semantic_hash"] == byte_bpe(COMPACT_MERGES).semantic_hash


def test_multi_step_decomposition():
    """From compact to expanded, "foo" decomposes into old bytes: the old tokenizer's encoding."""
    plan = resize_plan(byte_bpe(COMPACT_MERGES), byte_bpe(EXPANDED_MERGES), 8, tied=True, bias=False)
    by_piece = {r.piece: r.source_old_ids for r in plan.new_row_initialization}
    assert by_piece["foo"] == (102, 111, 111)
    assert by_piece["ä¸Ń"] == (0xE4, 0xB8, 0xAD)  # 中 as three byte rows


def test_added_token_rows_start_from_their_text():
    old = byte_bpe(BALANCED_MERGES)
    doc = json.loads(json.dumps(old.to_document()))
    doc["added_tokens"].append({"id": 272, "content": "<|im_start|>", "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": False, "special": True})
    new = tokenizer_from_document(doc, "new")
    [row] = resize_plan(old, new, 4, tied=True, bias=False).new_row_initialization
    assert (row.new_id, row.kind, row.piece) == (272, "added", "<|im_start|>")
    assert row.source_old_ids == tuple(old.encode("<|im_start|>"))  # typed control text stays text
    assert len(row.source_old_ids) > 1


def test_wordpiece_sources_keep_the_continuation_prefix():
    doc = json.loads(tokenizer_path("bert-base-uncased").read_text(encoding="utf-8"))
    old = tokenizer_from_document(doc, "old")
    v = old.vocab_size
    doc["model"]["vocab"].update({"covid": v, "##vidz": v + 1})
    new = tokenizer_from_document(doc, "new")
    rows = {r.piece: r.source_old_ids for r in resize_plan(old, new, 4, tied=True, bias=False).new_row_initialization}
    pieces = {p: [old.id_to_token(i) for i in ids] for p, ids in rows.items()}
    assert pieces["covid"][0] == "co" and all(p.startswith("##") for p in pieces["covid"][1:])
    assert all(p.startswith("##") for p in pieces["##vidz"])
    assert "".join(p.removeprefix("##") for p in pieces["##vidz"]) == "vidz"


def test_unigram_sources_from_the_old_lattice():
    doc = json.loads(tokenizer_path("rut5-base").read_text(encoding="utf-8"))
    old = tokenizer_from_document(doc, "old")
    doc["model"]["vocab"].append(["▁миграция", -5.0])
    new = tokenizer_from_document(doc, "new")
    [row] = resize_plan(old, new, 4, tied=True, bias=False).new_row_initialization
    assert row.new_id == old.vocab_size
    assert "".join(old.id_to_token(i) for i in row.source_old_ids) == "▁миграция"


def test_not_append_only_is_refused():
    with pytest.raises(AppendOnlyError, match="vocab_size"):
        resize_plan(byte_bpe(BALANCED_MERGES), byte_bpe(COMPACT_MERGES), 64, tied=True, bias=True)


@pytest.mark.parametrize("kwargs, name", [({"d_model": 0}, "d_model"), ({"d_model": 2.5}, "d_model"),
                                          ({"optimizer_slots": -1}, "optimizer_slots")])
def test_bad_sizes_name_the_parameter(kwargs, name):
    args = {"d_model": 64, **kwargs}
    with pytest.raises(ValueError, match=f"resize_plan: {name}"):
        resize_plan(byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES), args.pop("d_model"), tied=True,
                    bias=True, **args)


@given(st.integers(0, len(EXPANDED_MERGES)), st.integers(0, len(EXPANDED_MERGES)), st.integers(1, 16))
def test_sources_cover_exactly_the_new_piece_bytes(k, m, d):
    short, long = sorted((k, m))
    old, new = byte_bpe(EXPANDED_MERGES[:short]), byte_bpe(EXPANDED_MERGES[:long])
    plan = resize_plan(old, new, d, tied=False, bias=True)
    assert [r.new_id for r in plan.new_row_initialization] == list(range(old.vocab_size, new.vocab_size))
    assert plan.delta_trainable == (long - short) * (2 * d + 1)
    for row in plan.new_row_initialization:
        assert all(0 <= i < old.vocab_size for i in row.source_old_ids)
        joined = b"".join(token_bytes(old.id_to_token(i)) for i in row.source_old_ids)
        assert joined == token_bytes(row.piece)
