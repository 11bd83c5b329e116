"""Selects the Rust fast path or the pure-Python reference.

`core` is the compiled extension `tinyllm._core`, or None when `TINYLLM_PURE_PYTHON=1` is set (or
the extension is not built, e.g. when running from a source tree). Every module that has a fast
path falls back to its reference when `core` is None, so the two can be compared in tests.
"""

from __future__ import annotations

import os

PURE_PYTHON = os.environ.get("TINYLLM_PURE_PYTHON", "").strip() not in ("", "0")

core = None
if not PURE_PYTHON:
    try:
        from tinyllm import _core as core  # noqa: F401
    except ImportError:  # pragma: no cover - exercised only on unbuilt source trees
        core = None
