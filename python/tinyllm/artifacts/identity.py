"""Tokenizer identities derived from the framed hash: H_sem (behaviour) and H_release (files).

* `semantic_hash(tok)` = framed_hash("tokenizer-semantic-v1", tok.semantic_components()): the
  parsed behaviour (stages, model, added tokens, special-token roles), so key order, whitespace,
  omitted defaults and fields without effect (`truncation`, `padding`) do not change it, and any
  id, merge rank, score, stage option, added-token flag or role does.
* `release_hash(path)` = framed_hash("tokenizer-release-v1", {"semantic_hash": H_sem, "files":
  [{"path", "size", "sha256"}, ...]}) over every regular file of the model directory, sorted by
  relative path with "/" separators: the exact bytes shipped, bound to the behaviour they give.

>>> from tinyllm.tok import load
>>> semantic_hash(load("smollm2")) == load("smollm2").semantic_hash
True
>>> len(release_hash(load_preset_dir("smollm2")))
64
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tinyllm.artifacts import domains
from tinyllm.tok.load import load, preset_directory

#: H_sem: the parsed behaviour of a tokenizer.
TOKENIZER_SEMANTIC_DOMAIN = domains.SEMANTIC
#: H_release: H_sem plus the raw release files.
TOKENIZER_RELEASE_DOMAIN = domains.RELEASE

DOMAINS = (TOKENIZER_SEMANTIC_DOMAIN, TOKENIZER_RELEASE_DOMAIN)

_CHUNK = 1 << 20


def semantic_hash(tokenizer) -> str:
    """H_sem of any tinyllm tokenizer (its cached `semantic_hash`)."""
    value = getattr(tokenizer, "semantic_hash", None)
    if not isinstance(value, str):
        raise ValueError(f"semantic_hash: {type(tokenizer).__name__} has no semantic_components(); "
                         "expected a tinyllm tokenizer")
    return value


def bytes_declaration(path: str, data) -> dict:
    """{"path", "size", "sha256"} of a file whose contents are `data`: bytes, or a sequence of
    byte buffers written one after another (so large arrays are hashed without a copy)."""
    parts = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return {"path": path, "size": sum(memoryview(p).nbytes for p in parts), "sha256": digest.hexdigest()}


def file_declaration(root: str | os.PathLike, path: str) -> dict:
    """{"path", "size", "sha256"} of the file `path` (relative to `root`, "/" separators), read in
    1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(Path(root) / path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return {"path": path, "size": size, "sha256": digest.hexdigest()}


def file_declarations(directory: str | os.PathLike) -> list[dict]:
    """{"path", "size", "sha256"} of every regular file under `directory` (recursively, symlinks
    not followed), sorted by the relative path written with "/" separators."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"release_hash: {str(root)!r} is not a directory; expected a model directory")
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            out.append(file_declaration(root, path.relative_to(root).as_posix()))
    out.sort(key=lambda d: d["path"])
    return out


def release_components(directory: str | os.PathLike) -> dict:
    """What H_release hashes: H_sem of the directory's tokenizer and its file declarations."""
    files = file_declarations(directory)  # first: it names a missing directory as such
    return domains.release_payload(semantic_hash(load(Path(directory))), files)


def release_hash(directory: str | os.PathLike) -> str:
    """H_release of a model directory (see the module docstring)."""
    components = release_components(directory)
    return domains.release_hash_of(components["semantic_hash"], components["files"])


def load_preset_dir(name: str) -> Path:
    """The shipped directory of a file-backed preset (for `release_hash` on presets)."""
    directory = preset_directory(name)
    if directory is None:
        raise ValueError(f"load_preset_dir: {name!r} is not a file-backed preset")
    return directory
