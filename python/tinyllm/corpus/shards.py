"""One shard of an encoded dataset: its documents in, its files out, as bytes.

Everything here is a pure function of the shard's documents, the tokenizer and the settings, so
the local engine, any number of workers and the Ray engine all write the same bytes:

* `encode_shard(tokenizer, batch, settings)` encodes every document of a batch on its own (see
  `tinyllm.corpus.batches`), puts the boundary ids around it and cuts it to `max_length`. With
  the Rust core and a tokenizer with a Rust engine this is one call (`encode_doc_batch`, in
  parallel, no Python object per document); otherwise `encode_batch_flat` and `bound_batch`, the
  reference;
* its `EncodedShard.files()`, written into the shard's directory `NNNNN/`, are `ids.npy` (every
  id, uint16 when V <= 65,536, else uint32), `offsets.npy` (uint64, documents + 1 entries:
  document k is `ids[offsets[k]:offsets[k + 1]]`, so its length is their difference),
  `truncated.npy` (bool, one a document), `text_sha256.npy` (uint8, 32 a document) and
  `docs.json` ({"document_id": [...], "source_id": [...]}). Columns, not a line per document: a
  corpus of short lines spends its time per document, and a column is one C call.

What a shard was made from is its documents' record digests (`batch.columns()`, see
`tinyllm.corpus.batches.record_digest`): their SHA-256 (the manifest's `input_digest`) lets a
resumed run tell a finished shard of the same input from a stale one.

>>> from tinyllm.tok import load
>>> from tinyllm.corpus.batches import as_batch
>>> from tinyllm.corpus.documents import Document
>>> batch = as_batch([Document("a", "Hello world"), Document("b", "foot")])
>>> shard = encode_shard(load("gpt2"), batch, ShardSettings.for_tokenizer(load("gpt2"), "eos"))
>>> shard.ids.tolist(), shard.offsets.tolist(), shard.ids.dtype.name
([15496, 995, 50256, 5898, 50256], [0, 3, 5], 'uint16')
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Optional

from tinyllm import _native
from tinyllm.corpus.batches import DocumentBatch
from tinyllm.corpus.documents import boundary_policy

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
    docs_json: bytes

    def files(self) -> dict[str, tuple]:
        """File name -> the shard's file as byte buffers to write one after another."""
        out = {shard_file(kind): npy_parts(getattr(self, kind)) for kind in ("ids", "offsets", "truncated",
                                                                               "text_sha256")}
        out[shard_file("docs")] = (self.docs_json,)
        return out

    @property
    def tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def max_token_id(self) -> int:
        return int(self.ids.max()) if len(self.ids) else -1


def npy_parts(array) -> tuple[bytes, memoryview]:
    """(header, data) of `array` as a `.npy` file: the bytes `numpy.save` writes, without copying
    the data (a shard's ids are most of its size).

    >>> import io, numpy as np
    >>> a = np.arange(5, dtype=np.uint16)
    >>> saved = io.BytesIO(); np.save(saved, a)
    >>> b"".join(npy_parts(a)) == saved.getvalue()
    True
    """
    import numpy as np

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
    return header.getvalue(), memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def encode_shard(tokenizer, batch, settings: ShardSettings, index: int = 0,
                 made: Optional[tuple[bytes, bytes]] = None) -> EncodedShard:
    """Encode shard `index` (see the module docstring); `made` is its `batch.columns()` when the
    caller has them already."""
    import numpy as np

    digests = (batch.columns() if made is None else made)[0]
    table = np.frombuffer(digests, dtype=np.uint8).reshape(len(batch), 32)
    columns = _encode_native(tokenizer, batch, settings)
    if columns is None:
        flat, offsets = tokenizer.encode_batch_flat(batch.texts())
        ids = np.frombuffer(flat, dtype=np.uint32) if len(flat) else np.zeros(0, dtype=np.uint32)
        out, out_offsets, truncated = bound_batch(ids, np.frombuffer(offsets, dtype=np.uint64).astype(np.int64),
                                                  settings.bos_id, settings.eos_id, settings.max_length)
        columns = out.astype(settings.dtype), out_offsets.astype(np.uint64), truncated.astype(bool)
    return EncodedShard(index, *columns, table, batch.docs_json())


def _encode_native(tokenizer, batch, settings: ShardSettings):
    """(ids, offsets, truncated) from the tokenizer's Rust engine in one call, or None when there
    is none to call (no core, a reference batch, a tokenizer without an engine) or the engine
    refused a text: then the reference runs (and `encode_batch_flat` warns about, or raises, what
    the engine refused)."""
    import numpy as np

    core = _native.core
    if core is None:
        _warn_slow_once()
        return None
    fast = getattr(tokenizer, "fast_engine", None)
    found = fast() if fast is not None and not isinstance(batch, DocumentBatch) else None
    if found is None:
        return None
    engine, matchable = found
    try:
        ids, offsets, truncated = engine.encode_doc_batch(batch, matchable, settings.bos_id, settings.eos_id,
                                                          settings.max_length, settings.dtype == "uint32")
    except ValueError:
        return None
    return (np.frombuffer(ids, dtype=settings.dtype), np.frombuffer(offsets, dtype=np.uint64),
            np.frombuffer(truncated, dtype=bool))


_warned = False


def _warn_slow_once() -> None:
    global _warned
    if not _warned:
        _warned = True
        _native.slow_path("encode_dataset", "shards", "tinyllm._core is not selected (TINYLLM_PURE_PYTHON=1 or no "
                          "build)")
