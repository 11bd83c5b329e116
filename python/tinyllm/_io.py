"""Atomic file writes: a reader sees the old file or the new one, never half of one.

The text goes to a temporary file in the same directory, is flushed to disk, then renamed over
the target (a rename within one file system is atomic on POSIX and Windows).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` as UTF-8 to `path` atomically and return the path."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target
