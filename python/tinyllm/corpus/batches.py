"""Documents as columns: what the readers give and what a shard is encoded from.

A corpus of short lines has millions of documents, and a Python object per document costs more
than encoding it. So documents travel in batches: `DocumentBatch` (this module, the reference)
holds the ids, texts and sources as three lists, and `tinyllm._core.DocBatch` (the Rust path)
holds them as three strings with the end of each item. Both have the same methods:

* `len(batch)`, `batch.text_bytes` (UTF-8 bytes of the texts);
* `batch.document_ids()`, `batch.texts()`, `batch.source_ids()`: lists of str;
* `batch.cut(start, docs_left, chars_left)`: where a shard filled from document `start` ends
  (see `cut_shards`);
* `batch.columns()`: (each text's SHA-256; each document's record digest, see `record_digest`),
  32 bytes a document each, and `batch.docs_json()`: the shard's `docs.json`;
* `Class.concat([(batch, start, end), ...])` and `Class.from_lists(ids, texts, sources)`.

Text is held as the tokenizers read it: a lone surrogate in an id, a text or a source becomes
U+FFFD (`tinyllm.tok.text.clean`), so every batch is valid UTF-8.

`cut_shards` groups batches into shards; where a shard ends depends only on the documents, never
on how they were batched:

>>> docs = [Document(f"d{k}", "ab") for k in range(5)]
>>> [s.document_ids() for s in cut_shards(batches_of(docs, 2), shard_bytes=100, shard_docs=3)]
[['d0', 'd1', 'd2'], ['d3', 'd4']]
"""

from __future__ import annotations

import hashlib
import json
from typing import Iterable, Iterator, Sequence

from tinyllm import _native
from tinyllm.corpus.documents import Document
from tinyllm.tok.text.clean import clean_text, to_utf8

#: Documents a batch holds when made from an iterable of `Document`s.
BATCH_DOCS = 8192


class DocumentBatch:
    """The reference batch (see the module docstring)."""

    def __init__(self, ids: list[str], texts: list[str], sources: list[str]) -> None:
        self._ids, self._texts, self._sources = ids, texts, sources

    @classmethod
    def from_lists(cls, ids: Sequence[str], texts: Sequence[str], sources: Sequence[str]) -> "DocumentBatch":
        if not len(ids) == len(texts) == len(sources):
            raise ValueError(f"DocBatch.from_lists: found {len(ids)} ids, {len(texts)} texts and {len(sources)} "
                             "sources; expected one of each a document")
        return cls([clean_text(x) for x in ids], [clean_text(x) for x in texts], [clean_text(x) for x in sources])

    @classmethod
    def concat(cls, parts: Iterable[tuple["DocumentBatch", int, int]]) -> "DocumentBatch":
        out = cls([], [], [])
        for batch, a, b in parts:
            out._ids += batch._ids[a:b]
            out._texts += batch._texts[a:b]
            out._sources += batch._sources[a:b]
        return out

    def __len__(self) -> int:
        return len(self._texts)

    @property
    def text_bytes(self) -> int:
        return sum(len(t.encode("utf-8")) for t in self._texts)

    def cut(self, start: int, docs_left: int, chars_left: int) -> tuple[int, int, bool]:
        chars = 0
        for k in range(start, len(self._texts)):
            chars += len(self._texts[k])
            if k + 1 - start >= docs_left or chars >= chars_left:
                return k + 1, chars, True
        return len(self._texts), chars, False

    def document_ids(self) -> list[str]:
        return list(self._ids)

    def texts(self) -> list[str]:
        return list(self._texts)

    def source_ids(self) -> list[str]:
        return list(self._sources)

    def columns(self) -> tuple[bytes, bytes]:
        digests = [hashlib.sha256(to_utf8(t)).digest() for t in self._texts]
        records = [record_digest(i, s, d) for i, s, d in zip(self._ids, self._sources, digests)]
        return b"".join(digests), b"".join(records)

    def docs_json(self) -> bytes:
        return json.dumps({"document_id": self._ids, "source_id": self._sources}, ensure_ascii=False).encode("utf-8")


def record_digest(document_id: str, source_id: str, text_digest: bytes) -> bytes:
    """What a document is, in 32 bytes: the SHA-256 of its id, its source (each UTF-8, after its
    length as a little-endian u64) and its text's SHA-256. The SHA-256 of a shard's record digests
    is its input digest, and of all of them in order the dataset's corpus hash, so neither depends
    on where shards are cut.

    >>> record_digest("d1", "web", bytes(32)).hex()[:16]
    'eb8338104f745451'
    """
    sha = hashlib.sha256()
    for part in (to_utf8(document_id), to_utf8(source_id)):
        sha.update(len(part).to_bytes(8, "little"))
        sha.update(part)
    sha.update(text_digest)
    return sha.digest()


def batch_class():
    """`_core.DocBatch` when the Rust core is selected, else `DocumentBatch`."""
    core = _native.core
    return DocumentBatch if core is None else core.DocBatch


def as_batch(documents: Sequence[Document]):
    """A batch of `Document`s, or the batch itself when it is one already."""
    if isinstance(documents, (list, tuple)):
        return batch_class().from_lists([d.document_id for d in documents], [d.text for d in documents],
                                        [d.source_id for d in documents])
    return documents


def batches_of(documents: Iterable[Document], size: int = BATCH_DOCS) -> Iterator:
    """Batches of at most `size` documents, in order."""
    chunk: list[Document] = []
    for doc in documents:
        chunk.append(doc)
        if len(chunk) >= size:
            yield as_batch(chunk)
            chunk = []
    if chunk:
        yield as_batch(chunk)


def documents_of(batch) -> list[Document]:
    """A batch's documents as `Document`s."""
    return list(map(Document, batch.document_ids(), batch.texts(), batch.source_ids()))


def cut_shards(batches: Iterable, shard_bytes: int, shard_docs: int) -> Iterator:
    """Consecutive groups of documents, each one batch: a shard ends when it holds `shard_docs`
    documents or at least `shard_bytes` characters of text (a bound on memory, counted in code
    points)."""
    parts: list = []
    docs = chars = 0
    for batch in batches:
        start = 0
        while start < len(batch):
            end, taken, complete = batch.cut(start, shard_docs - docs, shard_bytes - chars)
            parts.append((batch, start, end))
            docs += end - start
            chars += taken
            start = end
            if complete:
                yield _joined(parts)
                parts, docs, chars = [], 0, 0
    if parts:
        yield _joined(parts)


def _joined(parts: list):
    if len(parts) == 1 and parts[0][1] == 0 and parts[0][2] == len(parts[0][0]):
        return parts[0][0]
    return type(parts[0][0]).concat(parts)
