"""`encode_batch_flat`: the ids of `encode_batch` in one `array('I')` plus offsets, from the Rust
engine in one parallel call, or flattened from the reference."""

from array import array

import pytest

from tests.peers import fixture_lines, ours
from tests.support.rust import count_engine_calls, needs_rust
from tests.support.stress import stress_strings
from tinyllm.tok.base import flatten


def texts():
    return fixture_lines()[:200] + stress_strings(300, seed=3) + ["", "<|endoftext|> x", "a" * 5000]


def unflatten(ids, offsets):
    return [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(offsets) - 1)]


@needs_rust
@pytest.mark.parametrize("name", ["gpt2", "smollm2", "gpt-4o-o200k", "bert-base-uncased"])
def test_flat_equals_encode_batch_and_runs_in_the_engine(name, monkeypatch):
    tok = ours(name)
    batch = texts()
    expected = tok.encode_batch(batch)
    expected_special = tok.encode_batch(batch, allowed_special="all")
    calls = count_engine_calls(monkeypatch, tok)
    ids, offsets = tok.encode_batch_flat(batch)
    assert calls["encode_batch_flat"] == 1
    assert isinstance(ids, array) and ids.typecode == "I" and offsets.typecode == "Q"
    assert len(offsets) == len(batch) + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
    assert unflatten(ids, offsets) == expected
    assert unflatten(*tok.encode_batch_flat(batch, allowed_special="all")) == expected_special


@pytest.mark.parametrize("name", ["gpt2", "bert-base-uncased"])
def test_flat_with_special_tokens_and_on_the_reference(name):
    tok = ours(name)
    batch = texts()[:50]
    assert unflatten(*tok.encode_batch_flat(batch, add_special=True)) == tok.encode_batch(batch, add_special=True)
    reference = tok.use_reference()
    assert unflatten(*reference.encode_batch_flat(batch)) == tok.encode_batch(batch)


def test_flat_of_nothing_and_errors():
    tok = ours("gpt2")
    ids, offsets = tok.encode_batch_flat([])
    assert len(ids) == 0 and offsets.tolist() == [0]
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        tok.encode_batch_flat(["ok", b"bytes"])
    with pytest.raises(ValueError):
        tok.encode_batch_flat(["<|endoftext|>"], disallowed_special="all")
    assert flatten([[1, 2], [], [3]]) == (array("I", [1, 2, 3]), array("Q", [0, 2, 2, 3]))


class Text(str):
    """A `str` subclass: accepted like a `str`."""


@pytest.mark.parametrize("call", ["encode_batch", "encode_batch_flat"])
def test_batch_input_is_checked_per_item_and_str_subclasses_pass(call):
    tok = ours("gpt2")
    encode = getattr(tok, call)
    with pytest.raises(ValueError, match=rf"{call}: texts\[2\]: expected a str, got bytes"):
        encode(["a", "b", b"c"])
    with pytest.raises(ValueError, match=rf"{call}: texts\[0\]: expected a str, got NoneType"):
        encode(iter([None]))
    plain = encode(["hello world", "x"])
    assert encode((Text("hello world"), "x")) == plain
