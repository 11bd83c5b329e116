"""One shard of an encoded dataset: its documents in, its three files out, as bytes.

Everything here is a pure function of the shard's documents, the tokenizer and the settings, so
the local engine, any number of workers and the Ray engine all write the same bytes:

* `cut_shards(documents, shard_bytes, shard_docs)` groups documents in input order; a shard ends
  when it holds `shard_docs` documents or at least `shard_bytes` bytes of text;
* `encode_shard(tokenizer, documents, settings)` encodes every document on its own
  (`encode_batch_flat`), puts the boundary ids around it and cuts it to `max_length`;
* its `EncodedShard.files()`, written into the shard's directory `NNNNN/`, are `ids.npy` (every
  id, uint16 when V <= 65,536, else uint32), `offsets.npy` (uint64, documents + 1 entries:
  document k is `ids[offsets[k]:offsets[k + 1]]`, so its length is their difference),
  `truncated.npy` (bool, one a document), `text_sha256.npy` (uint8, 32 a document) and
  `docs.json` ({"document_id": [...], "source_id": [...]}). Columns, not a line per document: a
  corpus of short lines spends its time per document, and a column is one C call.

`input_json` is what a shard was made from, [[document_id, source_id, text sha256 hex], ...] as
compact JSON: its SHA-256 (the manifest's `input_digest`) lets a resumed run tell a finished shard
of the same input from a stale one, and the dataset's corpus hash is the SHA-256 of all shards'
lists joined into one, so it does not depend on where shards are cut.

>>> from tinyllm.tok import load
>>> from tinyllm.corpus.documents import Document
>>> docs = [Document("a", "Hello world"), Document("b", "foot")]
>>> shard = encode_shard(load("gpt2"), docs, ShardSettings.for_tokenizer(load("gpt2"), "eos"))
>>> shard.ids.tolist(), shard.offsets.tolist(), shard.ids.dtype.name
([15496, 995, 50256, 5898, 50256], [0, 3, 5], 'uint16')
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence

from tinyllm import _native
from tinyllm.corpus.documents import Document, boundary_policy
from tinyllm.tok.text.clean import clean_text, to_utf8

#: The largest vocabulary whose ids fit uint16.
UINT16_VOCAB = 1 << 16

FILE_KINDS = ("ids", "offsets", "truncated", "text_sha256", "docs")


def shard_dir_name(index: int) -> str:
    """The directory of shard `index` under the dataset's `shards/`."""
    return f"{index:05d}"


def shard_file(kind: str) -> str:
    """The file name of a shard's `kind` file, inside its directory."""
    return f"{kind}.{'json' if kind == 'docs' else 'npy'}"


@dataclass(frozen=True)
class ShardSettings:
    """What every shard is encoded with (recorded in the manifest)."""

    dtype: str
    policy: str
    bos_id: Optional[int]
    eos_id: Optional[int]
    max_length: Optional[int] = None

    @classmethod
    def for_tokenizer(cls, tokenizer, policy="eos", max_length: Optional[int] = None) -> "ShardSettings":
        rule = boundary_policy(policy)
        bos, eos = rule.ids(tokenizer)
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                       or max_length < rule.bos + rule.eos + 1):
            raise ValueError(f"max_length: found {max_length!r}; expected an int >= {rule.bos + rule.eos + 1} "
                             "(the boundary ids and at least one id of text)")
        dtype = "uint16" if tokenizer.vocab_size <= UINT16_VOCAB else "uint32"
        return cls(dtype, rule.name, bos, eos, max_length)

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "boundary_policy": self.policy, "bos_id": self.bos_id, "eos_id": self.eos_id,
                "max_length": self.max_length}


def text_sha256(text: str) -> bytes:
    """SHA-256 of a document's UTF-8 as the tokenizers read it (a lone surrogate as U+FFFD, see
    `tinyllm.tok.text.clean`), so a str never fails to hash."""
    return hashlib.sha256(to_utf8(text)).digest()


def cut_shards(documents: Iterable[Document], shard_bytes: int, shard_docs: int) -> Iterator[list[Document]]:
    """Consecutive groups of documents (see the module docstring)."""
    shard: list[Document] = []
    size = 0
    for doc in documents:
        shard.append(doc)
        size += len(doc.text)  # characters: a bound on memory, not an exact byte count
        if len(shard) >= shard_docs or size >= shard_bytes:
            yield shard
            shard, size = [], 0
    if shard:
        yield shard


def input_json(documents: Sequence[Document], digests: bytes) -> bytes:
    """[[document_id, source_id, text sha256 hex], ...] as compact UTF-8 JSON, from the texts'
    `digests` (the reference; `columns` computes it in the core)."""
    rows = [[clean_text(d.document_id), clean_text(d.source_id), digests[32 * k:32 * k + 32].hex()]
            for k, d in enumerate(documents)]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def reference_columns(documents: Sequence[Document]) -> tuple[bytes, bytes]:
    """(every text's SHA-256, 32 bytes a document; the shard's `input_json`), in Python."""
    digests = b"".join(text_sha256(d.text) for d in documents)
    return digests, input_json(documents, digests)


def columns(documents: Sequence[Document]) -> tuple[bytes, bytes]:
    """`reference_columns`, computed by the Rust core (texts hashed in parallel) when it is
    selected; a corpus of short lines spends most of its per-document time here."""
    core = _native.core
    if core is None:
        _warn_slow_once()
        return reference_columns(documents)
    return core.shard_columns([d.text for d in documents], [d.document_id for d in documents],
                              [d.source_id for d in documents])


_warned = False


def _warn_slow_once() -> None:
    global _warned
    if not _warned:
        _warned = True
        _native.slow_path("encode_dataset", "shard columns", "tinyllm._core is not selected (TINYLLM_PURE_PYTHON=1 "
                          "or no build)")


def bound_batch(ids, offsets, bos: Optional[int], eos: Optional[int], max_length: Optional[int]):
    """Flat ids and offsets of many documents with boundary ids put around each and content cut
    from the right to `max_length`: (ids, offsets, truncated) as numpy arrays.

    >>> import numpy as np
    >>> out, off, cut = bound_batch(np.array([5, 6, 7, 8]), np.array([0, 3, 4]), 1, 2, 4)
    >>> out.tolist(), off.tolist(), cut.tolist()
    ([1, 5, 6, 2, 1, 8, 2], [0, 4, 7], [True, False])
    """
    import numpy as np

    ids = np.asarray(ids)
    offsets = np.asarray(offsets, dtype=np.int64)
    if max_length is None:
        return _insert_boundaries(np, ids, offsets, bos, eos)
    lengths = np.diff(offsets)
    specials = (bos is not None) + (eos is not None)
    keep = lengths if max_length is None else np.minimum(lengths, max_length - specials)
    truncated = keep < lengths
    out_lengths = keep + specials
    out_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(out_lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=ids.dtype if ids.size else np.uint32)
    # Every kept id moves from its place in `ids` to its place in `out`; `within` is its position
    # inside its document.
    within = np.arange(int(keep.sum())) - np.repeat(np.cumsum(keep) - keep, keep)
    out[np.repeat(out_offsets[:-1] + (bos is not None), keep) + within] = ids[np.repeat(offsets[:-1], keep) + within]
    if bos is not None:
        out[out_offsets[:-1]] = bos
    if eos is not None:
        out[out_offsets[1:] - 1] = eos
    return out, out_offsets, truncated


def _insert_boundaries(np, ids, offsets, bos: Optional[int], eos: Optional[int]):
    """`bound_batch` without a length limit: one `np.insert` of every boundary id. Where a
    document ends and the next begins, its EOS is listed before the next BOS, and `np.insert`
    keeps that order among equal positions."""
    n = len(offsets) - 1
    where, values = [], []
    if bos is not None:
        where.append(offsets[:-1])
        values.append(np.full(n, bos))
    if eos is not None:
        where.append(offsets[1:])
        values.append(np.full(n, eos))
    if not where:
        return ids, offsets, np.zeros(n, dtype=bool)
    positions = np.stack(where, axis=1).reshape(-1)  # per document: its bos, then its eos
    out = np.insert(ids, positions, np.stack(values, axis=1).reshape(-1).astype(ids.dtype if ids.size else np.uint32))
    return out, offsets + np.arange(n + 1) * len(where), np.zeros(n, dtype=bool)


@dataclass(frozen=True)
class EncodedShard:
    """A shard's columns, ready to be written."""

    index: int
    ids: object  # numpy array of the settings' dtype
    offsets: object  # numpy uint64, documents + 1
    truncated: object  # numpy bool, one a document
    text_sha256: object  # numpy uint8 (documents, 32)
    document_ids: list
    source_ids: list
    input_json: bytes

    def files(self) -> dict[str, bytes]:
        """File name -> bytes of the shard's files."""
        import numpy as np

        out = {}
        for kind in ("ids", "offsets", "truncated", "text_sha256"):
            buffer = io.BytesIO()
            np.save(buffer, getattr(self, kind), allow_pickle=False)
            out[shard_file(kind)] = buffer.getvalue()
        docs = {"document_id": self.document_ids, "source_id": self.source_ids}
        out[shard_file("docs")] = json.dumps(docs, ensure_ascii=False).encode("utf-8", "surrogatepass")
        return out

    @property
    def tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def max_token_id(self) -> int:
        return int(self.ids.max()) if len(self.ids) else -1


def encode_shard(tokenizer, documents: Sequence[Document], settings: ShardSettings, index: int = 0,
                 made: Optional[tuple[bytes, bytes]] = None) -> EncodedShard:
    """Encode shard `index` (see the module docstring); `made` is its `columns(documents)` when
    the caller has them already."""
    import numpy as np

    flat, offsets = tokenizer.encode_batch_flat([d.text for d in documents])
    ids = np.frombuffer(flat, dtype=np.uint32) if len(flat) else np.zeros(0, dtype=np.uint32)
    out, out_offsets, truncated = bound_batch(ids, np.frombuffer(offsets, dtype=np.uint64).astype(np.int64),
                                              settings.bos_id, settings.eos_id, settings.max_length)
    digests, made_from = columns(documents) if made is None else made
    table = np.frombuffer(digests, dtype=np.uint8).reshape(len(documents), 32)
    return EncodedShard(index, out.astype(settings.dtype), out_offsets.astype(np.uint64), truncated.astype(bool),
                        table, [d.document_id for d in documents], [d.source_id for d in documents], made_from)
