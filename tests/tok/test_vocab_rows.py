"""Vocabulary rows and `semantic_prefix`: the hash of what ids [start, stop) are."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, EXPANDED_MERGES, byte_bpe
from tinyllm.tok import load
from tinyllm.tok.vocab_rows import model_frame, vocab_rows


def test_seed_prefix_equal_on_old_ids():
    compact, balanced = byte_bpe(COMPACT_MERGES), byte_bpe(BALANCED_MERGES)
    assert balanced.semantic_prefix(0, 268) == compact.semantic_prefix(0, 268)
    assert balanced.semantic_prefix(0, 269) != balanced.semantic_prefix(0, 268)
    assert balanced.semantic_prefix(0, 272) != compact.semantic_prefix(0, 268)


def test_merge_rank_change_changes_prefix():
    swapped = list(BALANCED_MERGES)
    swapped[4], swapped[5] = swapped[5], swapped[4]  # "er" and "re" trade ranks (and so ids)
    assert byte_bpe(swapped).semantic_prefix(0, 268) == byte_bpe(BALANCED_MERGES).semantic_prefix(0, 268)
    assert byte_bpe(swapped).semantic_prefix(268, 272) != byte_bpe(BALANCED_MERGES).semantic_prefix(268, 272)


def test_added_flag_change_changes_prefix():
    controls = [f"<|reserved_{k}|>" for k in range(8)]
    renamed = byte_bpe(COMPACT_MERGES, controls[:7] + ["<|eot|>"])
    assert renamed.semantic_prefix(0, 263) == byte_bpe(COMPACT_MERGES).semantic_prefix(0, 263)
    assert renamed.semantic_prefix(263, 264) != byte_bpe(COMPACT_MERGES).semantic_prefix(263, 264)


def test_rows_carry_merges_and_added_tokens():
    rows = vocab_rows(byte_bpe(EXPANDED_MERGES).semantic_components())
    assert len(rows) == 279
    assert rows[264] == {"piece": "th", "merges": [[0, "t", "h"]]}
    assert rows[256]["piece"] is None and rows[256]["added"]["special"] is True
    assert "merges" not in rows[ord("a")]


def test_frame_leaves_the_vocabulary_out():
    frame = model_frame(load("gpt2").semantic_components())
    assert "vocab" not in frame["model"] and "merges" not in frame["model"]
    assert frame["model"]["type"] == "BPE" and frame["pre_tokenizer"]["type"] == "ByteLevel"


def test_bytes_and_char_tokenizers_have_rows():
    assert len(vocab_rows(load("bytes").semantic_components())) == 256
    assert load("bytes").semantic_prefix(0, 256) == load("bytes").semantic_prefix(0, 256)


@pytest.mark.parametrize("start, stop, what", [(-1, 3, "0 <= start"), (3, 2, "0 <= start"), (0, 273, "<= 272"),
                                               ("0", 3, "start: found '0'"), (0, True, "stop: found True")])
def test_bad_ranges_name_the_parameter(start, stop, what):
    with pytest.raises(ValueError, match="semantic_prefix") as e:
        byte_bpe(BALANCED_MERGES).semantic_prefix(start, stop)
    assert what in str(e.value)


@given(st.integers(0, len(EXPANDED_MERGES)), st.integers(0, len(EXPANDED_MERGES)))
def test_nested_candidates_share_their_prefix(k, m):
    short, long = sorted((k, m))
    a, b = byte_bpe(EXPANDED_MERGES[:short]), byte_bpe(EXPANDED_MERGES[:long])
    assert a.semantic_prefix(0, a.vocab_size) == b.semantic_prefix(0, a.vocab_size)
