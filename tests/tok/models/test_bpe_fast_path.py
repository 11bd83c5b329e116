"""The Rust fast path equals the pure-Python reference: pre-tokenizers, merges, whole pipelines.

The pre-tokenizer tests call `tinyllm._core.pre_tokenize` directly; the pipeline tests check that
one tokenizer holds a `tinyllm._core.BpeEngine` and the other none (`use_reference()`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import fixture_lines, ours, ours_reference
from tests.strategies import known_to_both, texts
from tinyllm.tok.stages import pre_tokenizers as pt
from tests.support.rust import assert_fast, assert_reference, core, needs_rust
from tests.support.stress import CONTRACTIONS, DIGITS, EMOJI, LETTERS, MARKS, NOT_WHITESPACE, PUNCT, WHITESPACE, stress_strings

trap_text = st.lists(
    st.sampled_from(WHITESPACE + NOT_WHITESPACE + CONTRACTIONS + MARKS + EMOJI + DIGITS + LETTERS + PUNCT),
    max_size=12,
).map("".join)
# The reference's Unicode tables may be newer than the Rust ones (see known_to_both).
any_text = st.one_of(texts, trap_text).map(known_to_both)

PRE_TOKENIZERS = {
    "gpt2": pt.ByteLevel(add_prefix_space=False),
    "gpt2_prefix": pt.ByteLevel(add_prefix_space=True),
    "no_regex_prefix": pt.ByteLevel(add_prefix_space=True, use_regex=False),
    "smollm2": pt.Sequence([pt.Digits(individual_digits=True), pt.ByteLevel(add_prefix_space=False)]),
    "digit_runs": pt.Sequence([pt.Digits(individual_digits=False), pt.ByteLevel(add_prefix_space=True)]),
    "split_isolated": pt.Sequence([pt.Split(r"\s+", True, "Isolated"), pt.ByteLevel(use_regex=False)]),
    "split_prev": pt.Sequence([pt.Split("-", False, "MergedWithPrevious"), pt.ByteLevel()]),
    "split_next": pt.Sequence([pt.Split(r"\p{N}", True, "MergedWithNext"), pt.ByteLevel()]),
    "split_contiguous": pt.Sequence([pt.Split(r"[aeiou]", True, "Contiguous"), pt.ByteLevel()]),
    "split_removed_invert": pt.Sequence([pt.Split(r"\p{L}+|\p{N}{1,3}", True, "Removed", invert=True),
                                         pt.ByteLevel(use_regex=False)]),
}


def reference_pieces(pre, text):
    return [p[0].encode("utf-8") for p in pre.pre_tokenize(text)]


@needs_rust
@pytest.mark.parametrize("name", sorted(PRE_TOKENIZERS))
@given(text=any_text)
def test_rust_pre_tokenizer_equals_reference(name, text):
    pre = PRE_TOKENIZERS[name]
    assert core.pre_tokenize(json.dumps(pre.to_json()), text) == reference_pieces(pre, text)


@needs_rust
def test_rust_pre_tokenizer_equals_reference_on_stress_and_code():
    for name, pre in PRE_TOKENIZERS.items():
        spec = json.dumps(pre.to_json())
        for text in stress_strings(1500) + fixture_lines()[:300]:
            assert core.pre_tokenize(spec, text) == reference_pieces(pre, text), (name, text)


@needs_rust
def test_every_bmp_code_point_splits_like_hugging_face():
    """The scanner's character classes against the oracle, code point by code point.

    Templates put each code point next to letters, digits, apostrophes and whitespace. The NUL
    separators keep the cases apart. (benches/sweep_pretokenizer.py runs all 1.1M code points
    in eight templates; this is its fast slice.)
    """
    from tests.peers import hf
    from tinyllm.tok.text.byte_alphabet import token_string

    oracle = hf("gpt2").pre_tokenizer
    spec = json.dumps(PRE_TOKENIZERS["gpt2"].to_json())
    points = [c for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    for template in ["a{c}b", "{c}'t", "\t{c}H"]:
        joined = "\x00".join(template.format(c=chr(c)) for c in points)
        expected = [piece for piece, _ in oracle.pre_tokenize_str(joined)]
        assert [token_string(b) for b in core.pre_tokenize(spec, joined)] == expected, template


def fast_and_reference(name):
    fast, ref = ours(name), ours_reference(name)
    assert_fast(fast)
    assert_reference(ref)
    return fast, ref


@needs_rust
@pytest.mark.parametrize("name", ["gpt2", "smollm2", "gpt-4o-o200k"])
@settings(max_examples=150)
@given(text=any_text)
def test_fast_encode_equals_reference(name, text):
    fast, ref = fast_and_reference(name)
    assert fast.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    assert fast.encode(text) == ref.encode(text)


@needs_rust
@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_fast_encode_equals_reference_on_stress_strings(name):
    fast, ref = fast_and_reference(name)
    strings = stress_strings(1000, seed=1)
    assert fast.encode_batch(strings, allowed_special="all") == [ref.encode(s, allowed_special="all") for s in strings]


def test_batch_equals_sequential_whatever_the_order():
    tok = ours("gpt2")
    lines = fixture_lines()
    batch = tok.encode_batch(lines)
    assert batch == [tok.encode(line) for line in lines]
    assert tok.encode_batch(list(reversed(lines))) == list(reversed(batch))


@needs_rust
def test_batch_of_wide_texts_converted_by_the_workers_equals_one_by_one():
    # Texts stored in 2- and 4-byte units, some with surrogates, are converted to UTF-8 by the
    # thread that encodes them; enough of them that the batch goes to the pool.
    fast, ref = fast_and_reference("gpt2")
    pieces = ["日本語 ", "😀 ok ", "\ud800", "\udc00x", "\ud83d\ude00", "naïve ", "plain "]
    texts = ["".join(pieces[(k * 7 + j) % len(pieces)] for j in range(k % 40)) + "世" for k in range(400)]
    assert sum(len(t) for t in texts) > 8192
    batch = fast.encode_batch(texts)
    assert batch == [fast.encode(t) for t in texts] == [ref.encode(t) for t in texts]
    flat_ids, offsets = fast.encode_batch_flat(texts)
    assert [flat_ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == batch


@needs_rust
@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_batch_equals_one_by_one_whatever_the_thread_count(threads):
    # One thread: the calling thread encodes every text (no worker pool); more: the pool of
    # RAYON_NUM_THREADS - 1 workers beside it, even past the machine's cores. The flat batch
    # shares them, and its ids come back in the order of the texts whoever encoded them.
    script = (
        "import json, sys\n"
        "from tests.peers import fixture_lines, ours\n"
        "tok = ours('gpt2')\n"
        "texts = fixture_lines() * 3 + ['日本語 ' * 50, '😀 x' * 40]\n"
        "assert sum(map(len, texts)) > 8192\n"
        "batch = tok.encode_batch(texts)\n"
        "ids, offsets = tok.encode_batch_flat(texts[::-1])\n"
        "flat = [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))]\n"
        "print(json.dumps([batch == [tok.encode(t) for t in texts], tok.encode_batch(texts[:2]) == batch[:2],\n"
        "                  flat == batch[::-1]]))\n"
    )
    env = dict(os.environ, RAYON_NUM_THREADS=threads)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == [True, True, True]


@needs_rust
def test_threads_sharing_one_tokenizer_get_the_ids_of_one_thread():
    # The engine's word-cache table is shared by every thread that encodes with it, lock-free
    # (each line a seqlock), and there are at least 16 per-thread shards: 24 threads encoding at
    # once also exercise the stand-in a thread gets when its shard is taken. Every answer must be
    # the one thread's, whatever the interleaving of inserts and lookups.
    import random
    import threading

    texts = fixture_lines() + ["    " * k + "x = 1\n" for k in range(12)] + ["日本語のテキスト " * 9]
    expected = [ours_reference("gpt2").encode(t) for t in texts]
    tok = ours("gpt2")
    assert_fast(tok)
    wrong: list[int] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(150):
            k = rng.randrange(len(texts))
            if tok.encode(texts[k]) != expected[k]:
                wrong.append(k)
        picked = [rng.randrange(len(texts)) for _ in range(12)]
        if tok.encode_batch([texts[k] for k in picked]) != [expected[k] for k in picked]:
            wrong.append(-1)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


@needs_rust
def test_long_inputs_equal_reference():
    fast, ref = fast_and_reference("gpt2")
    for text in ["a" * 1500, "ab" * 800, " " * 3000 + "x", "日本語" * 300, "\u0301" * 2000]:
        assert fast.encode(text) == ref.encode(text)


@needs_rust  # the reference's `regex` backtracks on these runs: minutes, not milliseconds
def test_long_whitespace_runs_with_the_o200k_lookahead_pattern():
    """o200k's `\\s+(?!\\S)` runs without a backtracking engine, so long runs neither fail nor crawl."""
    from tests.peers import hf

    tok = ours("gpt-4o-o200k")
    assert_fast(tok)
    for text in [" " * 200_000 + "x", "\n" * 100_000 + "x", " \t" * 50_000 + "y", "x  \n  y\t\t z", "  \u00a0x"]:
        assert tok.encode(text) == hf("gpt-4o-o200k").encode(text).ids


@needs_rust
def test_lookahead_emulation_equals_the_reference_regex():
    split = pt.Split(pt_o200k_pattern(), True, "Removed", invert=True)
    pre = pt.Sequence([split, pt.ByteLevel(add_prefix_space=False, use_regex=False)])
    spec = json.dumps(pre.to_json())
    for text in stress_strings(1500, seed=3) + ["a  b", "x\r\n\r\ny", " \n \n x", "\t\tx", "  "]:
        assert core.pre_tokenize(spec, text) == reference_pieces(pre, text), repr(text)


def pt_o200k_pattern() -> str:
    from tests.peers import tokenizer_path

    doc = json.loads(tokenizer_path("gpt-4o-o200k").read_text(encoding="utf-8"))
    return doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]


class _GivingUpEngine:
    """Stands in for the Rust engine: fails every call with the given message."""

    def __init__(self, message):
        self.message = message

    def encode(self, text, matchable):
        raise ValueError(self.message)


def test_a_regex_that_gives_up_falls_back_with_a_warning_and_other_errors_propagate(monkeypatch):
    from tinyllm import SlowPathWarning

    tok = ours("gpt2")  # shared by the tests: its engine is put back when this one ends
    expected = ours_reference("gpt2").encode("Hello world")
    monkeypatch.setattr(tok, "_fast", _GivingUpEngine("regex: backtrack limit exceeded"))
    with pytest.warns(SlowPathWarning, match="pre_tokenizer: the Rust regex engine gave up"):
        assert tok.encode("Hello world") == expected
    monkeypatch.setattr(tok, "_fast", _GivingUpEngine("something else broke"))
    with pytest.raises(ValueError, match="something else broke"):
        tok.encode("Hello world")
