"""Write one shard into a dataset directory, or find it already there: the step every engine runs.

`run_shard(out, index, batch, tokenizer, settings)` encodes the shard (`tinyllm.corpus.shards`),
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

from tinyllm._io import _umask
from tinyllm.artifacts.identity import bytes_declaration, file_declaration
from tinyllm.corpus.batches import as_batch
from tinyllm.corpus.shards import ShardSettings, encode_shard, shard_dir_name

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


def _publish(shard_dir: Path, files: dict[str, tuple], marker: str) -> None:
    """Write the files and the marker into a hidden directory beside `shard_dir`, then rename it
    into place (a stale copy is moved aside first and removed after)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{shard_dir.name}.", suffix=".tmp", dir=shard_dir.parent))
    try:
        # No fsync: a resumed run and verify-dataset hash every file against done.json, so data
        # a crash lost shows up as a shard to encode again, never as a silent one; syncing six
        # files a shard cost a quarter of the time of encoding it.
        for name, parts in [*files.items(), (MARKER, (marker.encode("utf-8"),))]:
            with open(staging / name, "wb") as f:
                for part in parts:
                    f.write(part)
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


def run_shard(out: Path, index: int, batch, tokenizer, settings: ShardSettings) -> dict:
    """Encode and write shard `index` (a batch of documents, or a list of `Document`s) unless a
    finished copy of it is there. Returns its manifest entry plus two transient keys: `resumed`
    and `digests` (its documents' record digests, for the corpus hash)."""
    batch = as_batch(batch)
    made = batch.columns()
    digests = made[1]
    input_digest = hashlib.sha256(digests).hexdigest()
    found = _finished(out, index, input_digest)
    if found is not None:
        return {**found, "resumed": True, "digests": digests}
    shard = encode_shard(tokenizer, batch, settings, index, made)
    contents = shard.files()
    where = f"{SHARD_DIR}/{shard_dir_name(index)}"
    # hashlib lets go of the GIL on large buffers: the files hash side by side.
    with ThreadPoolExecutor(len(contents)) as pool:
        files = list(pool.map(lambda item: bytes_declaration(f"{where}/{item[0]}", item[1]), contents.items()))
    entry = {"index": index, "records": len(batch), "tokens": shard.tokens, "max_token_id": shard.max_token_id,
             "truncated_records": int(shard.truncated.sum()),
             "input_digest": input_digest, "files": files}
    (out / SHARD_DIR).mkdir(parents=True, exist_ok=True)
    _publish(out / SHARD_DIR / shard_dir_name(index), contents, json.dumps(entry, sort_keys=True) + "\n")
    return {**entry, "resumed": False, "digests": digests}
