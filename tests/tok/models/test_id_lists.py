"""The engine's id lists: one shared int per id (made the first time a list holds it), each list
holding its own reference to it."""

import sys

from tests.peers import ours
from tests.support.rust import needs_rust


@needs_rust
def test_lists_share_one_int_per_id_and_count_their_references():
    tok = ours("gpt-4o-o200k")
    text = " tokenization of unseen words: Zwischenablage, 語彙"
    first = tok.encode(text)
    second = tok.encode(text)
    batch = tok.encode_batch([text, text * 2])
    # No assert until the counts are taken: pytest's rewritten asserts keep what they compared.
    equal = first == second == batch[0] == tok.use_reference().encode(text)
    large = [k for k, i in enumerate(first) if i > 256]  # CPython shares the small ints anyway
    shared = all(first[k] is second[k] is batch[0][k] is batch[1][k] for k in large)
    value = first[large[0]] if large else None
    held = sys.getrefcount(value)
    dropped = sum(ids.count(value) for ids in [second, *batch])
    del second, batch
    left = sys.getrefcount(value)
    assert equal and large and shared
    # The deleted lists take their references with them; `first` and the table keep theirs.
    assert dropped >= 3 and left == held - dropped
    assert value == tok.encode(text)[large[0]]
