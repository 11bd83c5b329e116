"""check_append_only names the first difference: stage, size, merge rank, or id and field."""

import json

import pytest

from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, byte_bpe
from tinyllm.migrate.append_only import AppendOnlyError, check_append_only
from tinyllm.tok.load import tokenizer_from_document


def _edited(tok, edit):
    doc = json.loads(json.dumps(tok.to_document()))
    edit(doc)
    return tokenizer_from_document(doc, "edited")


def test_seed_pair_is_append_only():
    assert check_append_only(byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES)) is None
    old, new = byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES)
    assert new.semantic_prefix(0, old.vocab_size) == old.semantic_prefix(0, old.vocab_size)


def test_identical_is_append_only():
    check_append_only(byte_bpe(BALANCED_MERGES), byte_bpe(BALANCED_MERGES))


def _set_normalizer(doc):
    doc["normalizer"] = {"type": "NFC"}


def _shift_merge(doc):
    doc["model"]["merges"].insert(0, ["e", "r"])
    del doc["model"]["merges"][5]


def _rename_byte(doc):
    vocab = doc["model"]["vocab"]
    a = next(k for k, v in vocab.items() if v == ord("a"))
    b = next(k for k, v in vocab.items() if v == ord("b"))
    vocab[a], vocab[b] = ord("b"), ord("a")


def _unflag_control(doc):
    doc["added_tokens"][3]["special"] = False


@pytest.mark.parametrize("edit, field", [
    (_set_normalizer, "frame.normalizer"),
    (_shift_merge, "merges[0]"),
    (_rename_byte, f"id {ord('a')}.piece"),
    (_unflag_control, "id 259.added"),
])
def test_first_difference_is_named(edit, field):
    old = byte_bpe(BALANCED_MERGES)
    with pytest.raises(AppendOnlyError) as e:
        check_append_only(old, _edited(old, edit))
    assert e.value.field == field
    assert str(e.value).startswith(f"append-only: {field}: old ")
    assert isinstance(e.value, ValueError)


def test_shrinking_names_the_size():
    with pytest.raises(AppendOnlyError, match=r"vocab_size: old 272, new 268"):
        check_append_only(byte_bpe(BALANCED_MERGES), byte_bpe(COMPACT_MERGES))


def test_not_a_tokenizer():
    with pytest.raises(ValueError, match="check_append_only: new: found dict"):
        check_append_only(byte_bpe(COMPACT_MERGES), {})
