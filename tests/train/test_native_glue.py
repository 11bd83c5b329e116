"""The Rust trainers' glue cannot hang: a progress line never outlives its trainer, and a counter
that is training still answers `add()` and `len()` from other threads."""

import os
import threading
import time

import pytest

from tests.support.rust import needs_rust

pytestmark = needs_rust  # skipped by name under TINYLLM_PURE_PYTHON=1 (tests/conftest.py)

GPT2_BYTE_LEVEL = '{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}'


def core():
    import tinyllm._core

    return tinyllm._core


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def settled_thread_count(at_most=None, wait: float = 5.0) -> int:
    """The thread count once it holds still (and is at most `at_most`): a thread that was joined
    can stay listed in /proc/self/task for a moment after its join returned, while the kernel
    finishes its exit, and a thread another test left exiting may still be there. A thread that
    really outlives its call stays, and the count then stays above `at_most` until `wait` is up."""
    deadline = time.monotonic() + wait
    count = thread_count()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = thread_count()
        if now == count and (at_most is None or now <= at_most):
            return now
        count = now
    return count


def corpus(n: int, seed: int) -> list[str]:
    """Deterministic text with many distinct words, so that training takes a while."""
    words, x = [], seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        words.append("".join(chr(97 + (x >> s) % 26) for s in range(0, 40, 5)))
    return [" ".join(words[k:k + 50]) for k in range(0, n, 50)]


def fresh_counter(*batches):
    counter = core().PretokenCounter(GPT2_BYTE_LEVEL)
    for batch in batches:
        counter.add(batch)
    return counter


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc to count threads")
def test_progress_thread_stops_when_the_trainer_fails(capfd):
    words = [("hello", 3), ("world", 2)]
    core().train_wordpiece(words, 40, ["[UNK]"], 1, "##", None, True)  # starts rayon and the helper once
    baseline = settled_thread_count()
    with pytest.raises(ValueError):
        core().train_wordpiece([("", 1)], 40, ["[UNK]"], 1, "##", None, True)  # fails inside the guarded work
    assert settled_thread_count(at_most=baseline) == baseline
    core().train_wordpiece(words, 40, ["[UNK]"], 1, "##", None, True)
    assert settled_thread_count(at_most=baseline) == baseline
    assert "merges" in capfd.readouterr().err  # the progress line was really drawn


def test_counter_answers_add_and_len_while_it_trains():
    first, second = corpus(20_000, 1), ["zzzqx zzzqx qqqqj"]
    counter = fresh_counter(first)
    size = len(counter)
    results = []
    trainer = threading.Thread(target=lambda: results.append(counter.train(256, 3000, 2)))
    trainer.start()
    counter.add(second)  # with the old lock held across training, this and the train thread deadlocked
    grown = len(counter)
    trainer.join(timeout=120)
    assert not trainer.is_alive(), "train() did not finish: add()/len() and train() are waiting on each other"
    assert grown == size + 3  # "zzzqx", " zzzqx" and " qqqqj" are new pre-tokens
    only_first = fresh_counter(first).train(256, 3000, 2)
    both = fresh_counter(first, second).train(256, 3000, 2)
    # The running train() saw the counts of when it started: the first batch, or both if add() won.
    assert results[0] in (only_first, both)
    assert counter.train(256, 3000, 2) == both
