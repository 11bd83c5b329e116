"""The Rust bindings: selects the compiled fast path or the pure-Python reference.

`core` is the compiled extension `tinyllm._core`, or None when `TINYLLM_PURE_PYTHON=1` is set.
Every module with a fast path reads `_native.core` when it runs and falls back to its readable
reference when it is None, so tests can compare the two. A missing extension without
`TINYLLM_PURE_PYTHON=1` is never silent: importing tinyllm warns once, naming the extension.

`SlowPathWarning` is what a tokenizer says when the core is there but cannot run one of its
components (`slow_path` warns it, naming the component and the reason).
"""

from __future__ import annotations

import os
import warnings

PURE_PYTHON = os.environ.get("TINYLLM_PURE_PYTHON", "").strip() not in ("", "0")

core = None
if not PURE_PYTHON:
    try:
        from tinyllm import _core as core  # noqa: F401
    except ImportError as e:  # pragma: no cover - only on source trees without a build
        warnings.warn(f"tinyllm._core (the Rust fast path) is not available ({e}); every tokenizer runs on "
                      "its pure-Python reference, much slower. Build it with `pip install .`", RuntimeWarning,
                      stacklevel=2)
        core = None


class SlowPathWarning(UserWarning):
    """A tokenizer runs on the pure-Python reference although the Rust core is available, because
    one of its components has no fast path (the message names it and says why)."""


def slow_path(owner: str, component: str, reason: str) -> None:
    """Warn that `owner` (a tokenizer) encodes on the reference because of `component`. Python's
    default filter shows each distinct message once per place, so a file loaded again is quiet."""
    warnings.warn(f"{owner}: {component}: {reason}; encoding runs on the pure-Python reference (slow)",
                  SlowPathWarning, stacklevel=4)
