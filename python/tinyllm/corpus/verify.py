"""`verify_dataset`: prove an encoded dataset is what its manifest says, and that it belongs to
the tokenizer in hand.

The checks, in order; the first failure raises `DatasetError` (a ValueError) whose `.check` names
the check and `.field` the manifest path or file:

1. `manifest`: manifest.json reads, has the format and every key;
2. `tokenizer`: the tokenizer's semantic hash is the manifest's (a dataset encoded by another
   tokenizer trains silently wrong);
3. `files`: every shard file exists with the recorded size and SHA-256 (a flipped byte fails);
4. `ids`: each shard's ids have the recorded dtype, count and largest id, and every id is below
   the tokenizer's vocabulary size;
5. `totals`: the records, tokens and largest id add up to the manifest's.

>>> import tempfile
>>> from tinyllm.tok import load
>>> from tinyllm.corpus.documents import Document
>>> from tinyllm.corpus.dataset_writer import encode_dataset
>>> out = tempfile.mkdtemp()
>>> _ = encode_dataset([Document("a", "Hello world")], load("gpt2"), out, progress=False)
>>> verify_dataset(out, load("gpt2"))["records"]
1
>>> verify_dataset(out, load("o200k"))
Traceback (most recent call last):
...
tinyllm.corpus.verify.DatasetError: verify-dataset: tokenizer: tokenizer.semantic_hash: found ..., expected ... (the dataset was encoded by another tokenizer)
"""

from __future__ import annotations

import json
from pathlib import Path

from tinyllm.corpus.dataset_writer import FORMAT
from tinyllm.artifacts.identity import file_declaration

MANIFEST_KEYS = ("format", "tokenizer", "corpus_hash", "settings", "records", "tokens", "max_token_id", "shards")


class DatasetError(ValueError):
    """A failed dataset check: `.check` and `.field` (see the module docstring)."""

    def __init__(self, check: str, field: str, detail: str) -> None:
        self.check = check
        self.field = field
        super().__init__(f"verify-dataset: {check}: {field}: {detail}")


def read_dataset_manifest(out) -> dict:
    """The manifest of dataset directory `out`, with its structure checked."""
    path = Path(out) / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatasetError("manifest", str(path), f"cannot read it as JSON ({e}); expected the manifest "
                           "encode-dataset writes") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise DatasetError("manifest", "format", f"found {found!r}, expected {FORMAT!r}")
    for key in MANIFEST_KEYS:
        if key not in manifest:
            raise DatasetError("manifest", key, "missing; expected every key encode-dataset writes")
    return manifest


def _shard_ids(root: Path, shard: dict, kind: str, k: int):
    import numpy as np

    name = f"{shard['index']:05d}/{kind}.npy"
    try:
        return np.load(root / "shards" / name, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise DatasetError("ids", f"shards[{k}].{kind}", f"cannot read shards/{name} ({e})") from None


def verify_dataset(out, tokenizer) -> dict:
    """Run every check (see the module docstring); return the manifest when all pass."""
    import numpy as np

    root = Path(out)
    manifest = read_dataset_manifest(root)
    expected = manifest["tokenizer"].get("semantic_hash") if isinstance(manifest["tokenizer"], dict) else None
    if tokenizer.semantic_hash != expected:
        raise DatasetError("tokenizer", "tokenizer.semantic_hash", f"found {tokenizer.semantic_hash}, expected "
                           f"{expected} (the dataset was encoded by another tokenizer)")
    for k, shard in enumerate(manifest["shards"]):
        for j, declared in enumerate(shard["files"]):
            try:
                found = file_declaration(root, declared["path"])
            except OSError:
                raise DatasetError("files", f"shards[{k}].files[{j}]", f"{declared['path']} is missing") from None
            for key in ("size", "sha256"):
                if found[key] != declared[key]:
                    raise DatasetError("files", f"shards[{k}].files[{j}].{key}",
                                       f"{declared['path']}: found {found[key]}, expected {declared[key]}")
    vocab = tokenizer.vocab_size
    dtype = manifest["settings"]["dtype"]
    records = tokens = 0
    largest = -1
    for k, shard in enumerate(manifest["shards"]):
        ids, offsets = _shard_ids(root, shard, "ids", k), _shard_ids(root, shard, "offsets", k)
        if ids.dtype.name != dtype:
            raise DatasetError("ids", f"shards[{k}].ids", f"dtype found {ids.dtype.name}, expected {dtype}")
        if len(offsets) != shard["records"] + 1 or int(offsets[-1]) != len(ids) or len(ids) != shard["tokens"]:
            raise DatasetError("ids", f"shards[{k}].tokens", f"found {len(ids)} ids and {len(offsets) - 1} "
                               f"documents, expected {shard['tokens']} and {shard['records']}")
        top = int(ids.max()) if len(ids) else -1
        if top >= vocab:
            position = int(np.argmax(np.asarray(ids) >= vocab))
            raise DatasetError("ids", f"shards[{k}].ids[{position}]", f"found id {int(ids[position])}, expected "
                               f"an id below the tokenizer's vocabulary size {vocab}")
        if top != shard["max_token_id"]:
            raise DatasetError("ids", f"shards[{k}].max_token_id", f"found {top}, expected {shard['max_token_id']}")
        records += shard["records"]
        tokens += shard["tokens"]
        largest = max(largest, top)
    for key, value in (("records", records), ("tokens", tokens), ("max_token_id", largest)):
        if manifest[key] != value:
            raise DatasetError("totals", key, f"found {value} in the shards, expected {manifest[key]}")
    return manifest
