"""The Rust core in tests: imported for real, skipped only by name, and proven to have run.

* `core` is `tinyllm._core`, imported plainly: when the extension is missing, every test module
  that needs it fails to import (an error, never a skip). Under `TINYLLM_PURE_PYTHON=1` it is None.
* `needs_rust` marks the tests that need the Rust core. Under `TINYLLM_PURE_PYTHON=1`,
  `tests/conftest.py` skips exactly those, with the reason `PURE_REASON`; otherwise they run.
  There is no other way for a test to skip because of the core.
* `assert_fast(tok)` / `assert_reference(tok)` prove which path a tokenizer takes: the fast one
  holds a `tinyllm._core` engine, the reference none.
* `count_core_calls` counts the calls that go through `tinyllm._native.core` (the trainers and the
  word counter look it up at call time) and `count_engine_calls` the calls into a tokenizer's Rust
  engine, so a "Rust equals reference" test can show that the Rust side ran.
"""

from __future__ import annotations

import collections

import pytest

from tinyllm import _native

PURE_PYTHON = _native.PURE_PYTHON
PURE_REASON = "TINYLLM_PURE_PYTHON=1 selects the pure-Python reference"

needs_rust = pytest.mark.needs_rust

if PURE_PYTHON:
    core = None  # every test that touches it is marked needs_rust, hence skipped by name
else:
    try:
        from tinyllm import _core as core
    except ImportError as e:  # a failure of the whole run, never a skip
        raise ImportError(f"tinyllm._core cannot be imported ({e}): build it (pip install -e '.[test]'), "
                          "or set TINYLLM_PURE_PYTHON=1 to test the pure-Python reference alone") from e


def assert_fast(tok) -> None:
    """`tok` encodes in a Rust engine of `tinyllm._core`."""
    assert tok.uses_fast_path, f"{type(tok).__name__} does not use the Rust fast path"
    assert type(tok._fast).__module__ == "tinyllm._core", type(tok._fast)


def assert_reference(tok) -> None:
    """`tok` encodes with the pure-Python reference."""
    assert not tok.uses_fast_path, f"{type(tok).__name__} still holds a Rust engine"


class _Counting:
    """Stands in for `real`; every call of one of its methods is counted by name."""

    def __init__(self, real, counts: collections.Counter) -> None:
        self._real, self._counts = real, counts

    def __getattr__(self, name):
        target = getattr(self._real, name)
        if not callable(target):
            return target
        counts = self._counts

        def call(*args, **kwargs):
            counts[name] += 1
            return target(*args, **kwargs)

        return call


def count_core_calls(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Counts, by function name, the calls made through `tinyllm._native.core` from now until the
    test ends (the trainers and the word counter look the core up at call time)."""
    assert _native.core is not None and core is not None, "the Rust core is not selected"
    counts: collections.Counter = collections.Counter()
    monkeypatch.setattr(_native, "core", _Counting(_native.core, counts))
    return counts


def count_engine_calls(monkeypatch: pytest.MonkeyPatch, tok) -> collections.Counter:
    """Counts, by method name, the calls into the Rust engine of `tok` until the test ends."""
    assert_fast(tok)
    counts: collections.Counter = collections.Counter()
    monkeypatch.setattr(tok, "_fast", _Counting(tok._fast, counts))
    return counts
