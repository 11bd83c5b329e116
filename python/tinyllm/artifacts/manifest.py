"""The tokenizer manifest of a model directory: what identifies the tokenizer it holds.

    {"format": "tinyllm-tokenizer-manifest-v1",
     "semantic_hash": H_sem, "release_hash": H_rel,
     "release_files": [{"path", "size", "sha256"}, ...]   (sorted by path),
     "policy": {"bos_id", "eos_id", "pad_id", "unk_id", "eot_id", "stop_ids"}}

The release files are every regular file of the directory (`identity.file_declarations`, the files
`identity.release_hash` covers; a manifest written into the directory becomes one of them); the
release hash frames the semantic hash with their declarations (`domains.release_payload`), the
payload a bundle's `tokenizer.release_files` feeds too.

>>> m = manifest("examples/bundles/ids-0-11/release")
>>> [f["path"] for f in m["release_files"]], m["policy"]["bos_id"], m["policy"]["stop_ids"]
(['generation_config.json', 'tokenizer.json'], 1, [2])
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tinyllm._io import atomic_write_text
from tinyllm.artifacts import domains
from tinyllm.artifacts.identity import file_declarations, semantic_hash
from tinyllm.artifacts.validate import first_problem
from tinyllm.tok.load import load

FORMAT = "tinyllm-tokenizer-manifest-v1"

POLICY_FIELDS = ("bos_id", "eos_id", "pad_id", "unk_id", "eot_id", "stop_ids")


def policy(tok) -> dict:
    """The special-token policy of a loaded tokenizer, as JSON."""
    out = {name: getattr(tok, name, None) for name in POLICY_FIELDS}
    out["stop_ids"] = sorted(out["stop_ids"] or ())
    return out


def manifest(model_dir: str | os.PathLike) -> dict:
    """The tokenizer manifest of `model_dir` (see the module docstring)."""
    directory = Path(model_dir)
    if not directory.is_dir():
        raise ValueError(f"manifest: {model_dir}: not a directory; expected a model directory")
    tok = load(directory)
    semantic = semantic_hash(tok)
    files = file_declarations(directory)
    doc = {"format": FORMAT, "semantic_hash": semantic, "release_hash": domains.release_hash_of(semantic, files),
           "release_files": files, "policy": policy(tok)}
    problem = first_problem(doc, "manifest")
    if problem is not None:  # pragma: no cover - a tokenizer whose policy breaks the schema
        raise ValueError(f"manifest: {model_dir}: {problem[0]}: {problem[1]}")
    return doc


def manifest_text(model_dir: str | os.PathLike) -> str:
    """The manifest as the JSON text `tinyllm manifest` prints (sorted keys, two-space indent)."""
    return json.dumps(manifest(model_dir), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_manifest(model_dir: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Write the manifest of `model_dir` to `path` atomically."""
    return atomic_write_text(path, manifest_text(model_dir))
