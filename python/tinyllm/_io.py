"""File helpers: atomic writes, JSON reads whose errors name the file and the position, and
how an error quotes a JSON value (`show`).

A write goes to a temporary file in the same directory, is flushed to disk, then renamed over the
target (a rename within one file system is atomic on POSIX and Windows), so a reader sees the old
file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from pathlib import Path


def show(value: Any, limit: int = 80) -> str:
    """`value` as JSON text, cut to `limit` characters: how error messages quote what they found."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _umask() -> int:
    mask = os.umask(0)  # the only portable way to read it is to set it
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` as UTF-8 to `path` atomically and return the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically (a temporary file beside it, then a rename); return the path."""
    # Here, not at the top: a process that only reads files (a tokenizer load) never needs them.
    import tempfile
    from pathlib import Path

    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            # mkstemp makes the file private (0600); give it the mode a plain open() would.
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def atomic_write_json(path: str | os.PathLike, value: Any, indent: Optional[int] = None) -> Path:
    """Write `value` as UTF-8 JSON (non-ASCII kept as is) and a final newline, atomically."""
    return atomic_write_text(path, json.dumps(value, ensure_ascii=False, indent=indent) + "\n")


class _NotJSON(Exception):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON does not have them."""


def _reject_constant(name: str):
    raise _NotJSON(name)


# A string literal (skipped) or one of the non-JSON number words.
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def read_text_file(path: str | os.PathLike) -> str:
    """The UTF-8 text of a file; a missing, unreadable or non-UTF-8 file is a ValueError that names
    the file (and the first bad byte)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: byte {e.start} is not valid UTF-8") from None


def read_json_file(path: str | os.PathLike) -> object:
    """Parse a UTF-8 JSON file; every failure is a ValueError that names the file and where.

    Strict JSON: NaN and Infinity (which Python's json module would accept) are refused, and so is
    nesting too deep for the parser.
    """
    text = read_text_file(path)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except _NotJSON as e:
        found = next((m for m in _CONSTANT.finditer(text) if m.group(1)), None)
        where = ""
        if found is not None:
            line = text.count("\n", 0, found.start()) + 1
            column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
            where = f" at line {line} column {column}"
        raise ValueError(f"{path}: invalid JSON{where}: {e} is not a JSON number") from None
    except RecursionError:
        raise ValueError(f"{path}: invalid JSON: nested too deeply to read") from None
