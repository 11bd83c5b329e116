"""BPE training: the seed's traces, determinism, special tokens, errors, and Hugging Face loading."""

import random

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import fixture_lines
from tests.support.rust import core, count_core_calls, needs_rust
from tinyllm.tok import BPETokenizer, load
from tinyllm.train.bpe import rewrite, train_merges_reference

SEED_UNITS = [([0, 0, 0, 1], 2), ([3, 0, 0, 0, 1, 0, 2], 1)]


def weighted_length(units):
    return sum(len(symbols) * freq for symbols, freq in units)


def test_seed_trace_rank_by_rank():
    merges, stop = train_merges_reference(SEED_UNITS, base_size=4, max_merges=4, min_frequency=2)
    assert merges == [(0, 0), (0, 1), (4, 5)]
    assert stop == "min_frequency"
    units, lengths = SEED_UNITS, [weighted_length(SEED_UNITS)]
    for rank, pair in enumerate(merges):
        units = [(rewrite(s, pair, 4 + rank), f) for s, f in units]
        lengths.append(weighted_length(units))
    assert lengths == [15, 12, 9, 6]
    assert units == [([6], 2), ([3, 6, 0, 2], 1)]


def test_aaaa_stops_cleanly_when_no_pair_is_left():
    merges, stop = train_merges_reference([([0, 0, 0, 0], 1)], base_size=1, max_merges=10, min_frequency=1)
    assert merges == [(0, 0), (1, 1)]
    assert stop == "no_pairs"


def test_size_cap_and_zero_merges():
    assert train_merges_reference(SEED_UNITS, 4, 1, 2) == ([(0, 0)], "max_merges")
    assert train_merges_reference(SEED_UNITS, 4, 0, 2) == ([], "max_merges")


units_st = st.lists(st.tuples(st.lists(st.integers(0, 4), max_size=10), st.integers(1, 5)), min_size=1, max_size=20)


@needs_rust
@settings(max_examples=300, deadline=None)
@given(units_st, st.integers(0, 30), st.integers(1, 3))
def test_rust_trainer_equals_the_reference(units, max_merges, min_frequency):
    merges, stop = core.train_bpe_merges(units, 5, max_merges, min_frequency)  # the Rust trainer, directly
    assert (merges, stop) == train_merges_reference(units, 5, max_merges, min_frequency)


def test_training_is_deterministic_whatever_the_file_order(tmp_path):
    lines = fixture_lines()[:2000]
    parts = [lines[k::3] for k in range(3)]
    paths = []
    for k, part in enumerate(parts):
        path = tmp_path / f"part{k}.txt"
        path.write_text("".join(part), encoding="utf-8")
        paths.append(path)
    first = BPETokenizer.train(paths, 600)
    again = BPETokenizer.train(list(reversed(paths)), 600)
    assert first.model.merges == again.model.merges
    first.save(tmp_path / "a")
    again.save(tmp_path / "b")
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()


def test_special_tokens_come_last_and_are_never_learned():
    corpus = ["<|eot|>hello world<|eot|>"] * 50
    tok = BPETokenizer.train(corpus, 300, special_tokens=["<|eot|>"])
    merges = tok.training_report["merges"]
    assert tok.special_ids == {"<|eot|>": 256 + merges}
    assert all("<" not in a + b and "|" not in a + b for a, b in tok.model.merges)
    assert tok.encode("<|eot|>", allowed_special="all") == [256 + merges]


def test_hf_loads_the_trained_tokenizer_and_encodes_identically(tmp_path):
    lines = fixture_lines()
    random.Random(0).shuffle(lines)
    train, held_out = lines[:3000], lines[3000:4000]
    for pattern in ("gpt2", "llama3"):
        tok = BPETokenizer.train(train, 1000, special_tokens=["<|endoftext|>"], pattern=pattern)
        tok.save(tmp_path / pattern)
        hf = tokenizers.Tokenizer.from_file(str(tmp_path / pattern / "tokenizer.json"))
        assert [e.ids for e in hf.encode_batch(held_out, add_special_tokens=False)] == tok.encode_batch(held_out)
        assert load(tmp_path / pattern).encode_batch(held_out) == tok.encode_batch(held_out)


@pytest.mark.parametrize("kwargs, message", [
    (dict(vocab_size=200), "vocab_size: expected an integer >= 256"),
    (dict(vocab_size=257, special_tokens=["<a>", "<b>"]), "vocab_size: expected an integer >= 258"),
    (dict(vocab_size=300, pattern="(unclosed"), "pattern: '(unclosed' is not a valid regex"),
    (dict(vocab_size=300, min_frequency=0), "min_frequency: expected an integer >= 1"),
    (dict(vocab_size=300, special_tokens=["<a>", "<a>"]), "special_tokens[1]: '<a>' is listed twice"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        BPETokenizer.train(["some text"], **kwargs)


def test_empty_corpus_and_unreadable_file_are_named(tmp_path):
    with pytest.raises(ValueError, match="corpus: no text to train on"):
        BPETokenizer.train([], 300)
    with pytest.raises(ValueError, match=r"corpus\[0\]: cannot read"):
        BPETokenizer.train([tmp_path / "missing.txt"], 300)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"caf\xe9")
    with pytest.raises(ValueError, match=r"corpus\[0\]: cannot read .* as UTF-8"):
        BPETokenizer.train([bad], 300)


@needs_rust
@pytest.mark.parametrize("pattern", ["gpt2", "llama3"])
def test_rust_counting_and_training_equal_the_python_reference(pattern, monkeypatch):
    from tinyllm.train.bpe import count_pretokens, train_merges_reference, units_from_counts

    lines = fixture_lines()[:1500] + ["naïve café 北京 <|x|> the end\n"] * 3
    calls = count_core_calls(monkeypatch)
    tok = BPETokenizer.train(lines, 700, special_tokens=["<|x|>"], pattern=pattern)
    assert calls["PretokenCounter"] == 1  # counted and trained by the Rust PretokenCounter
    monkeypatch.undo()
    units = units_from_counts(count_pretokens(lines, pattern, ["<|x|>"]))
    merges, stop = train_merges_reference(units, 256, 700 - 257, 2)
    assert tok.training_report["stop_reason"] == stop
    assert tok.training_report["pre_tokens"] == len(units)
    from tinyllm.tok.text.byte_alphabet import token_string

    pieces = [bytes([b]) for b in range(256)]
    for a, b in merges:
        pieces.append(pieces[a] + pieces[b])
    assert tok.model.merges == [(token_string(pieces[a]), token_string(pieces[b])) for a, b in merges]


def test_same_tokenizer_bytes_whatever_the_thread_count(tmp_path):
    import os
    import subprocess
    import sys

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(fixture_lines()[:3000]), encoding="utf-8")
    outputs = []
    for threads in ("1", "2", "4"):
        out = tmp_path / f"t{threads}"
        subprocess.run([sys.executable, "-m", "tinyllm.cli", "train", "bpe", str(corpus), "-o", str(out),
                        "--vocab-size", "800", "--quiet"],
                       check=True, capture_output=True, env=dict(os.environ, RAYON_NUM_THREADS=threads))
        outputs.append((out / "tokenizer.json").read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
