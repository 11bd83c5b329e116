"""File helpers: atomic writes, and JSON reads whose errors name the file and the position.

A write goes to a temporary file in the same directory, is flushed to disk, then renamed over the
target (a rename within one file system is atomic on POSIX and Windows), so a reader sees the old
file or the new one, never half of one.
"""

from __future__ import annotations

import json
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


def read_json_file(path: str | os.PathLike) -> object:
    """Parse a UTF-8 JSON file; every failure is a ValueError that names the file and where."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: byte {e.start} is not valid UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
