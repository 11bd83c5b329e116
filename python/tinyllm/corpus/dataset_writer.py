"""`encode_dataset`: documents in, a sharded encoded dataset bound to its tokenizer out.

    OUT/manifest.json
    OUT/shards/00000/ids.npy, offsets.npy, truncated.npy, text_sha256.npy, docs.json, done.json
    OUT/shards/00001/...

Each shard is a pure function of its documents (`tinyllm.corpus.shards`), so the bytes do not
depend on the worker count or the engine. A shard is written into a hidden temporary directory
beside its place, with `done.json` (the hashes of its files and the digest of its input) last,
and that directory is renamed into place: a shard appears only when complete. Run again after an
interruption and every shard whose `done.json` matches its input and whose files still hash as
recorded is kept; the rest are encoded again. `manifest.json` is written last, atomically:

* `tokenizer` (semantic hash, vocabulary size), `template_hash`, `corpus_hash` (the documents'
  ids, sources and text hashes, in order);
* `settings` (dtype, boundary policy and its ids, max_length, shard size);
* `records`, `tokens`, `max_token_id`, `truncated_records`;
* `shards`: per shard its records, tokens, largest id, input digest and each file's path, size and
  sha256 (the per-document lengths and truncation flags are in its offsets.npy and truncated.npy).

Documents come as an iterable of `Document`s, or as what `read_documents` returns: then the files
are read in blocks straight into batches of columns (`tinyllm.corpus.batches`), with no Python
object per document.

>>> import tempfile
>>> from tinyllm.tok import load
>>> from tinyllm.corpus.documents import Document
>>> out = tempfile.mkdtemp()
>>> m = encode_dataset([Document("a", "Hello world"), Document("b", "foot")], load("gpt2"), out, progress=False)
>>> m["records"], m["tokens"], m["max_token_id"], m["settings"]["dtype"], len(m["shards"])
(2, 5, 50256, 'uint16', 1)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Optional

from tinyllm._io import atomic_write_text
from tinyllm.artifacts.canonical import framed_hash
from tinyllm.corpus.batches import batches_of, cut_shards
from tinyllm.corpus.documents import Document
from tinyllm.corpus.shard_io import SHARD_DIR, run_shard
from tinyllm.corpus.shards import ShardSettings

FORMAT = "tinyllm-encoded-dataset-v1"
CORPUS_DOMAIN = "tinyllm-dataset-corpus-v2"
DEFAULT_SHARD_BYTES = 16 << 20
DEFAULT_SHARD_DOCS = 1 << 20
#: Shards encoded at once. Each shard's encoding already uses every core; a second one overlaps
#: one shard's hashing and writing with the next one's encoding (about 1.1-1.3x here, for about
#: 100 MB more memory).
DEFAULT_WORKERS = 2
#: What `run_shard` returns beside a shard's manifest entry.
TRANSIENT = ("resumed", "digests")


class _Progress:
    """A tqdm bar over input UTF-8 bytes (MB/s) with documents/s, or nothing."""

    def __init__(self, enabled: bool) -> None:
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                return
            self.bar = tqdm(unit="B", unit_scale=True, unit_divisor=1000, desc="encode-dataset", file=sys.stderr,
                            dynamic_ncols=True)
        self.docs = 0

    def update(self, batch) -> None:
        if self.bar is not None:
            self.docs += len(batch)
            rate = self.docs / max(self.bar.format_dict["elapsed"], 1e-9)
            self.bar.set_postfix_str(f"{self.docs:,} docs, {rate:,.0f} docs/s", refresh=False)
            self.bar.update(batch.text_bytes)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def local_shards(jobs: Iterable[tuple[int, object]], out: Path, tokenizer, settings: ShardSettings,
                 workers: int, on_done=None):
    """Run the shard jobs on `workers` threads (the Rust encoder releases the GIL), yielding each
    entry in shard order; at most workers + 1 shards are in memory."""
    pending: deque = deque()

    def finished(keep: int):
        while len(pending) > keep:
            batch, future = pending.popleft()
            entry = future.result()
            if on_done:
                on_done(batch)
            yield entry

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for index, batch in jobs:
            pending.append((batch, pool.submit(run_shard, out, index, batch, tokenizer, settings)))
            yield from finished(workers)
        yield from finished(0)


class _CorpusDigest:
    """H_corpus: the SHA-256 of every document's record digest in order
    (`tinyllm.corpus.batches.record_digest`, so it does not depend on where shards are cut),
    framed with the document count."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.count = 0

    def add(self, entry: dict) -> None:
        self.sha.update(entry["digests"])
        self.count += entry["records"]

    def value(self) -> str:
        return framed_hash(CORPUS_DOMAIN, {"documents": self.count, "sha256": self.sha.hexdigest()})


def _check_count(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}: found {value!r}; expected an int >= {low}")
    return value


def encode_dataset(documents: Iterable[Document], tokenizer, out, *, policy="eos", max_length: Optional[int] = None,
                   shard_bytes: int = DEFAULT_SHARD_BYTES, shard_docs: int = DEFAULT_SHARD_DOCS,
                   workers: int = DEFAULT_WORKERS, engine: str = "local", template_hash: Optional[str] = None, progress: bool = True,
                   ray_address: Optional[str] = None, tokenizer_source=None) -> dict:
    """Encode `documents` into the dataset directory `out` (see the module docstring) and return
    the manifest. `engine="ray"` runs the shards on Ray Data (`tinyllm.corpus.ray_engine`; then
    `tokenizer_source`, a path or preset name, is what each Ray worker loads)."""
    _check_count("shard_bytes", shard_bytes, 1)
    _check_count("shard_docs", shard_docs, 1)
    _check_count("workers", workers, 1)
    if engine not in ("local", "ray"):
        raise ValueError(f"engine: found {engine!r}; expected 'local' or 'ray'")
    settings = ShardSettings.for_tokenizer(tokenizer, policy, max_length)
    out = Path(out)
    (out / SHARD_DIR).mkdir(parents=True, exist_ok=True)
    digest = _CorpusDigest()

    batches = documents.batches() if hasattr(documents, "batches") else batches_of(documents)
    jobs = enumerate(cut_shards(batches, shard_bytes, shard_docs))
    bar = _Progress(progress)
    entries = []
    try:
        if engine == "ray":
            from tinyllm.corpus.ray_engine import ray_shards

            done = ray_shards(jobs, out, tokenizer, tokenizer_source, settings, workers, ray_address,
                              on_done=bar.update)
        else:
            done = local_shards(jobs, out, tokenizer, settings, workers, on_done=bar.update)
        for entry in done:
            digest.add(entry)
            # The record digests are 32 bytes a document: hashed, then dropped, so memory does
            # not grow with the corpus.
            entries.append({k: v for k, v in entry.items() if k not in TRANSIENT})
    finally:
        bar.close()
    _remove_stale(out / SHARD_DIR, len(entries))
    manifest = build_manifest(entries, tokenizer, settings, digest.value(), template_hash, shard_bytes, shard_docs)
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def build_manifest(entries: list[dict], tokenizer, settings: ShardSettings, corpus_hash: str,
                   template_hash: Optional[str], shard_bytes: int, shard_docs: int) -> dict:
    """The manifest of the shards whose `entries` (in shard order, without `TRANSIENT` keys) are
    given."""
    return {
        "format": FORMAT,
        "tokenizer": {"semantic_hash": tokenizer.semantic_hash, "vocab_size": tokenizer.vocab_size},
        "template_hash": template_hash,
        "corpus_hash": corpus_hash,
        "settings": {**settings.to_json(), "shard_bytes": shard_bytes, "shard_docs": shard_docs},
        "records": sum(e["records"] for e in entries),
        "tokens": sum(e["tokens"] for e in entries),
        "max_token_id": max((e["max_token_id"] for e in entries), default=-1),
        "truncated_records": sum(e["truncated_records"] for e in entries),
        "shards": entries,
    }


def _remove_stale(shard_dir: Path, count: int) -> None:
    """Remove shards numbered `count` and above (left by an earlier run over a longer input, they
    belong to no shard of this manifest) and staging directories a killed run left behind."""
    for path in shard_dir.iterdir():
        if (path.name.isdigit() and int(path.name) >= count) or (path.name.startswith(".") and path.is_dir()):
            shutil.rmtree(path)
