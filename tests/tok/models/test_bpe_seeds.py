"""The word cache seeded with the vocabulary's words (src/engines/seeds.rs) never changes an id.

A seed is what the model gives a token's spelling; the tests hold the seeded engine to Hugging
Face on real files, on a vocabulary with a token its merges never reach, and check that seeding
ran: by hand (`seed_cache`) and by itself once enough pieces were merged.
"""

from __future__ import annotations

import json

import pytest

from tests.peers import hf_plain, shared_corpus_documents, tokenizer_path
from tests.support.rust import assert_fast, needs_rust
from tests.support.stress import stress_strings
from tinyllm.tok import load
from tinyllm.tok.text.byte_alphabet import token_string


def fresh(path):
    tok = load(path)
    assert_fast(tok)
    return tok, tok.fast_engine()[0]


@needs_rust
@pytest.mark.parametrize("name", ["gpt2", "smollm2", "gpt-4o-o200k"])
def test_seeded_cache_gives_hugging_face_ids(name):
    tok, engine = fresh(tokenizer_path(name))
    assert engine.seed_count() == 0
    seeds = engine.seed_cache()
    assert seeds > 0.9 * (tok.vocab_size - 256 - 2000), seeds  # nearly every merged token
    assert engine.seed_count() == seeds and engine.seed_cache() == seeds  # built once
    texts = shared_corpus_documents(every=40)[:60] + stress_strings(300, seed=3)
    expected = [hf_plain(name).encode(t, add_special_tokens=False).ids for t in texts]
    assert [tok.encode(t, allowed_special="all") for t in texts] == expected
    engine.clear_cache()  # a cleared shard is seeded again when it is next taken
    assert tok.encode_batch(texts, allowed_special="all") == expected


@needs_rust
def test_the_seeds_build_themselves_after_enough_merged_pieces():
    tok, engine = fresh(tokenizer_path("gpt2"))
    tok.encode("A sentence or two never pays for the seeds.")
    assert engine.seed_count() == 0
    # 6,000 distinct words of letters: well past the 4,096 merged pieces that start the seeds.
    words = " ".join("qz" + "".join(chr(97 + k // 26 ** j % 26) for j in range(3)) for k in range(6000))
    ids = tok.encode(words)
    tok.encode("x")  # the next call finds them built
    assert engine.seed_count() > 40_000
    assert tok.encode(words) == ids == hf_plain("gpt2").encode(words, add_special_tokens=False).ids


def not_self_merging_vocabulary(tmp_path):
    """A byte-level BPE file whose token `abc` is also made by `a bc`, which never wins: `a b` is
    the first merge, so the bytes of `abc` end as `ab` `c` and the seed of `abc` is those two ids
    (not a seed at all)."""
    base = json.loads(tokenizer_path("gpt2").read_text(encoding="utf-8"))
    vocab = {token_string(bytes([b])): b for b in range(256)}
    for extra in ["ab", "bc", "abc"]:
        vocab[extra] = len(vocab)
    base["model"].update(vocab=vocab, merges=[["a", "b"], ["b", "c"], ["a", "bc"]])
    base["added_tokens"] = []
    base["post_processor"] = None
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(base), encoding="utf-8")
    return path


@needs_rust
def test_a_token_the_merges_never_reach_is_not_seeded_as_itself(tmp_path):
    import tokenizers

    path = not_self_merging_vocabulary(tmp_path)
    tok, engine = fresh(path)
    assert engine.seed_cache() == 2  # `ab` and `bc`; `abc` gives two ids
    oracle = tokenizers.Tokenizer.from_file(str(path))
    for text in ["abc", "abc abc", "xabcbc", "bcabc"]:
        assert tok.encode(text) == oracle.encode(text, add_special_tokens=False).ids, text
    assert tok.encode("abc") == [256, ord("c")]
