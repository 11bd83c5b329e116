"""The Rust bindings: selects the compiled fast path or the pure-Python reference.

`core` is the compiled extension `tinyllm._core`, or None when `TINYLLM_PURE_PYTHON=1` is set.
Every module with a fast path reads `_native.core` when it runs and falls back to its readable
reference when it is None, so tests can compare the two. A missing extension without
`TINYLLM_PURE_PYTHON=1` is never silent: importing tinyllm warns once, naming the extension.
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
