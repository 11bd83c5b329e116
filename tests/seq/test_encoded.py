"""EncodedSequence.validate: lengths, id ranges, offsets."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import ours
from tinyllm.seq.encoded import EncodedSequence


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=40), st.sampled_from(["raw_codepoints", "raw_utf8_bytes"]))
def test_real_encodings_validate(text, coordinate):
    tok = ours("gpt2")
    e = tok.encode_structured(text, offset_coordinate=coordinate)
    length = len(text) if coordinate == "raw_codepoints" else len(text.encode("utf-8", "surrogatepass"))
    assert e.validate(tok.vocab_size, length) is e


def test_bert_pair_validates():
    tok = ours("bert-base-uncased")
    e = tok.encode_pair("Who?", "Me.")
    assert e.validate(tok.vocab_size) is e and e.type_ids == [0, 0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("change, message", [
    (dict(ids=[1, -1]), r"ids\[1\]: -1 is outside"),
    (dict(ids=[1, 50]), r"ids\[1\]: 50 is outside"),
    (dict(offsets=[(0, 2), (3, 2)]), r"offsets\[1\]"),
    (dict(offsets=[(0, 2), (2, 9)]), r"offsets\[1\]: \(2, 9\) ends past the source"),
    (dict(special_tokens_mask=[False, 2]), r"special_tokens_mask\[1\]"),
    (dict(type_ids=[0, -1]), r"type_ids\[1\]"),
    (dict(sequence_ids=[0, 2]), r"sequence_ids\[1\]"),
])
def test_bad_entries_are_named(change, message):
    fields = dict(ids=[1, 2], pieces=["a", "b"], special_tokens_mask=[False, False], offsets=[(0, 1), (1, 2)])
    fields.update(change)
    with pytest.raises(ValueError, match=message):
        EncodedSequence(**fields).validate(10, 5)


def test_lengths_must_align():
    with pytest.raises(ValueError, match="differ in length"):
        EncodedSequence([1, 2], ["a"], [False, False], [(0, 1), (1, 2)])
