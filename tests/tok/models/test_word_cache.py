"""The Rust engine's word cache never changes an id: every kind of piece it keeps (two to a line,
a whole line, more ids than a line holds with the ids in the overflow buffer, longer than a line
in the spill store) or does not keep gives Hugging Face's ids the first time and every time after,
and after the cache is cleared."""

from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import hf_plain, tokenizer_path
from tests.support.rust import assert_fast, needs_rust
from tinyllm.tok import load

# GPT-2 spells indentation one space at a time: "\n" and 7 spaces is 8 ids, more than a line holds.
INDENTED = "".join(f"\n{' ' * k}x = {k}" for k in range(1, 40))
PIECES = [
    " the the the",  # short pieces, two to a line
    " unprecedentedly internationalization",  # long pieces, one to a line
    INDENTED,  # pieces of 8 to 33 ids
    " " + "привет" * 6,  # 37 bytes: the spill store
    "y" * 1500,  # too long to keep
]


@needs_rust
def test_every_kind_of_piece_gives_hugging_face_ids_each_time():
    tok = load(tokenizer_path("gpt2"))
    assert_fast(tok)
    engine = tok.fast_engine()[0]
    hf = hf_plain("gpt2")
    for text in PIECES:
        expected = hf.encode(text, add_special_tokens=False).ids
        for _ in range(3):
            assert tok.encode(text) == expected, text[:40]
        engine.clear_cache()
        assert tok.encode(text) == expected
        assert tok.encode_batch([text] * 3) == [expected] * 3


@needs_rust
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["\n", "\n\n", "\t", ""]), st.integers(0, 40),
                          st.sampled_from(["if", "return x", "é", "日本", "}"])), min_size=1, max_size=30))
def test_indentation_of_any_depth_gives_hugging_face_ids_cached_or_not(lines):
    text = "".join(f"{brk}{' ' * depth}{word}" for brk, depth, word in lines)
    tok = _gpt2()
    expected = hf_plain("gpt2").encode(text, add_special_tokens=False).ids
    assert tok.encode(text) == expected
    assert tok.encode(text) == expected  # now from the cache


@functools.lru_cache(maxsize=None)
def _gpt2():
    """One tokenizer for every example, so that its cache fills and evicts across them."""
    return load(tokenizer_path("gpt2"))
