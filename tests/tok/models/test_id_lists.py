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


@needs_rust
def test_a_shared_out_batch_returns_ordinary_lists():
    """A batch big enough to share out (over 4 KB) fills lists it made empty up front
    (`Shells` in src/py/id_lists.rs): each must be an ordinary list, sized as a list of its
    length, holding its own references, tracked by the cycle collector, and free to grow."""
    import gc
    import weakref

    tok = ours("gpt2")
    texts = [f"def f{k}(x):\n    return x * {k}  # unseen {k * 7919}\n" * 3 for k in range(400)]
    assert sum(len(t) for t in texts) > 4096
    batch = tok.encode_batch(texts)
    singles = [tok.encode(t) for t in texts]
    equal = batch == singles
    sized = all(sys.getsizeof(b) == sys.getsizeof(s) for b, s in zip(batch, singles))
    tracked = all(gc.is_tracked(b) for b in batch)
    value = next(i for i in batch[3] if i > 256)
    held = sys.getrefcount(value)
    dropped = sum(ids.count(value) for ids in batch)
    del batch
    left = sys.getrefcount(value)
    assert equal and sized and tracked
    assert dropped >= 1 and left == held - dropped

    batch = tok.encode_batch(texts)
    grown = batch[7]
    grown.extend(range(1000))
    grown.insert(0, -1)
    assert grown[0] == -1 and grown[1:-1000] == singles[7] and grown.pop() == 999

    class Box:
        pass

    # A cycle through a batch's list is collected, as for any list.
    box = Box()
    box.ids = batch[9]
    batch[9].append(box)
    gone = weakref.ref(box)
    del box, batch, grown
    gc.collect()
    assert gone() is None
