"""Write one shard into a dataset directory, or find it already there: the step every engine runs.

`run_shard(out, index, documents, tokenizer, settings)` encodes the shard (`tinyllm.corpus.shards`),
writes its files and `done.json` (the hashes of its files and the digest of its input) into a
hidden directory beside `shards/NNNNN`, and renames that directory into place, so a shard appears
only when complete. If `shards/NNNNN` already holds a shard made from the same input whose files
still hash as recorded, it is kept instead (a resumed run).

>>> import tempfile
>>> from pathlib import Path
>>> from tinyllm.tok import load
>>> from tinyllm.corpus.documents import Document
>>> from tinyllm.corpus.shards import ShardSettings
>>> out = Path(tempfile.mkdtemp())
>>> settings = ShardSettings.for_tokenizer(load("gpt2"))
>>> first = run_shard(out, 0, [Document("a", "Hello")], load("gpt2"), settings)
>>> again = run_shard(out, 0, [Document("a", "Hello")], load("gpt2"), settings)
>>> first["resumed"], again["resumed"], sorted(p.name for p in (out / "shards" / "00000").iterdir())
(False, True, ['docs.json', 'done.json', 'ids.npy', 'offsets.npy', 'text_sha256.npy', 'truncated.npy'])
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from tinyllm._io import _umask
from tinyllm.artifacts.identity import bytes_declaration, file_declaration
from tinyllm.corpus.documents import Document
from tinyllm.corpus.shards import ShardSettings, columns, encode_shard, shard_dir_name

SHARD_DIR = "shards"
MARKER = "done.json"


def _finished(out: Path, index: int, digest: str) -> Optional[dict]:
    """The recorded entry of shard `index` when it was made from the same input and every file
    still hashes as recorded; None otherwise (the shard is encoded again)."""
    try:
        entry = json.loads((out / SHARD_DIR / shard_dir_name(index) / MARKER).read_text(encoding="utf-8"))
        if not isinstance(entry, dict) or entry.get("input_digest") != digest or entry.get("index") != index:
            return None
        if any(file_declaration(out, f["path"]) != f for f in entry["files"]):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry


def _publish(shard_dir: Path, files: dict[str, bytes], marker: str) -> None:
    """Write the files and the marker into a hidden directory beside `shard_dir`, then rename it
    into place (a stale copy is moved aside first and removed after)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{shard_dir.name}.", suffix=".tmp", dir=shard_dir.parent))
    try:
        for name, data in [*files.items(), (MARKER, marker.encode("utf-8"))]:
            with open(staging / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        os.chmod(staging, 0o777 & ~_umask())
        stale = None
        if shard_dir.exists():
            stale = shard_dir.with_name(f".{shard_dir.name}.stale-{os.getpid()}")
            os.rename(shard_dir, stale)
        os.rename(staging, shard_dir)
        if stale is not None:
            shutil.rmtree(stale)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def run_shard(out: Path, index: int, documents: list[Document], tokenizer, settings: ShardSettings) -> dict:
    """Encode and write shard `index` unless a finished copy of it is there. Returns its manifest
    entry plus two transient keys: `resumed` and `input_json` (for the corpus hash)."""
    made = columns(documents)
    made_from = made[1]
    found = _finished(out, index, hashlib.sha256(made_from).hexdigest())
    if found is not None:
        return {**found, "resumed": True, "input_json": made_from}
    shard = encode_shard(tokenizer, documents, settings, index, made)
    contents = shard.files()
    where = f"{SHARD_DIR}/{shard_dir_name(index)}"
    files = [bytes_declaration(f"{where}/{name}", data) for name, data in contents.items()]
    entry = {"index": index, "records": len(documents), "tokens": shard.tokens, "max_token_id": shard.max_token_id,
             "truncated_records": int(shard.truncated.sum()),
             "input_digest": hashlib.sha256(shard.input_json).hexdigest(), "files": files}
    (out / SHARD_DIR).mkdir(parents=True, exist_ok=True)
    _publish(out / SHARD_DIR / shard_dir_name(index), contents, json.dumps(entry, sort_keys=True) + "\n")
    return {**entry, "resumed": False, "input_json": shard.input_json}
