"""The Rust merge loop (src/models/bpe.rs) equals the readable reference (`BPEModel`) on random
merge tables: every word-length class of the Rust side (<= 8, 16, 32, 64 bytes: flat scans; longer:
the heap), repeated pairs, merges listed twice (the last wins), words the word cache keeps in its
lines, words of 33 to 1,024 bytes that it keeps in its spill store, and words it does not keep
(longer ones, and ones of more than 7 ids): the second encode of a text answers from the cache.
Also tables that list several splits of each new token one after another, as the Llama-3- and
Qwen2-style files do: there the Rust side ranks the merges by order keys (src/models/bpe_pairs.rs).
A word where two splits of one token compete is rare among random words; the crate's
`merges_of_one_token_go_in_rank_order_in_both_forms` builds that state directly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.rust import assert_fast, needs_rust
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.text.byte_alphabet import token_string

# A small alphabet, so random merges chain: two ASCII letters, a 2-byte and a 3-byte character.
ALPHABET = ["a", "b", "é", "語"]
PIECES = [c.encode() for c in ALPHABET]


@st.composite
def merge_tables(draw):
    """(tokens, merges): byte strings over the alphabet's bytes, each merge `left right` with both
    sides already tokens; some merges repeat an earlier pair (Hugging Face keeps the last rank)."""
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    symbols = sorted({bytes([b]) for p in PIECES for b in p})  # what the words' bytes can merge into
    merges = []
    for _ in range(draw(st.integers(0, 60))):
        if merges and draw(st.integers(0, 3)) == 0:
            left, right = draw(st.sampled_from(merges))  # listed twice
        else:
            left, right = draw(st.sampled_from(symbols)), draw(st.sampled_from(symbols))
        merges.append((left, right))
        if left + right not in known:
            known.add(left + right)
            tokens.append(left + right)
            symbols.append(left + right)
    return tokens, merges


@st.composite
def split_tables(draw):
    """(tokens, merges): each new token `left + right` listed with some of its other splits into
    two tokens, in a drawn order, right after one another (so the merged ids never fall along the
    list, and a token is made by several merges of neighbouring ranks)."""
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    symbols = sorted({bytes([b]) for p in PIECES for b in p})
    merges = []
    for _ in range(draw(st.integers(0, 40))):
        left, right = draw(st.sampled_from(symbols)), draw(st.sampled_from(symbols))
        made = left + right
        if made in known:
            continue
        others = [(made[:k], made[k:]) for k in range(1, len(made))
                  if made[:k] in known and made[k:] in known and made[:k] != left]
        splits = [(left, right)] + draw(st.lists(st.sampled_from(others), unique=True, max_size=3)) if others \
            else [(left, right)]
        merges.extend(draw(st.permutations(splits)))
        known.add(made)
        tokens.append(made)
        symbols.append(made)
    return tokens, merges


def document(tokens, merges) -> dict:
    vocab = {token_string(t): i for i, t in enumerate(tokens)}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        # No regex: every text is one piece, so the words reach every length class.
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                            "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[token_string(a), token_string(b)] for a, b in merges]},
    }


def assert_reference_ids(table, words):
    """Rust's ids for `words` (encoded, again from the word cache, and as a batch) equal the
    reference's, under the merge table `table`."""
    tok = tokenizer_from_document(document(*table))
    assert_fast(tok)
    reference = tok.use_reference()
    for word in words:
        expected = reference.encode(word)
        assert tok.encode(word) == expected, word
        assert tok.encode(word) == expected, f"{word!r} from the word cache"
    assert tok.encode_batch(words) == [reference.encode(w) for w in words]


WORDS = st.lists(st.lists(st.sampled_from(ALPHABET), max_size=400).map("".join), min_size=1, max_size=6)


@needs_rust
@settings(max_examples=300, deadline=None)
@given(table=merge_tables(), words=WORDS)
def test_rust_merges_equal_the_reference(table, words):
    assert_reference_ids(table, words)


@needs_rust
@settings(max_examples=200, deadline=None)
@given(table=split_tables(), words=WORDS)
def test_every_split_listed_merges_in_rank_order(table, words):
    assert_reference_ids(table, words)
