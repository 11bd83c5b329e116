"""`load_dataset`: memory-mapped access to an encoded dataset, by document or by packed sequence.

`len(ds)` counts documents; `ds[i]` is document i's ids (boundary ids included) as a read-only
numpy view of the shard file, never a copy of the dataset; `ds.document_ids` lists the ids in
input order. `ds.packed(max_tokens)` yields `PackedBatch`es (`tinyllm.seq.collate.collate_packed`):
whole documents in order, as many as fit in `max_tokens`; a longer document is cut into
consecutive pieces of at most `max_tokens` (successive passages of one text).

>>> import tempfile
>>> from tinyllm.tok import load
>>> from tinyllm.corpus.documents import Document
>>> from tinyllm.corpus.dataset_writer import encode_dataset
>>> out = tempfile.mkdtemp()
>>> _ = encode_dataset([Document("a", "Hello world"), Document("b", "foot")], load("gpt2"), out, progress=False)
>>> ds = load_dataset(out)
>>> len(ds), ds[1].tolist(), ds.document_ids
(2, [5898, 50256], ['a', 'b'])
>>> [batch.cu_seqlens.tolist() for batch in ds.packed(max_tokens=4)]
[[0, 3], [0, 2]]
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path
from typing import Iterator, Optional

from tinyllm.corpus.verify import read_dataset_manifest


class EncodedDataset:
    """An encoded dataset directory, memory-mapped (see the module docstring)."""

    def __init__(self, out, manifest: dict) -> None:
        import numpy as np

        self.root = Path(out)
        self.manifest = manifest
        self._ids, self._offsets, self._starts = [], [], [0]
        for shard in manifest["shards"]:
            where = self.root / "shards" / f"{shard['index']:05d}"
            self._ids.append(np.load(where / "ids.npy", mmap_mode="r", allow_pickle=False))
            self._offsets.append(np.load(where / "offsets.npy", mmap_mode="r", allow_pickle=False))
            self._starts.append(self._starts[-1] + shard["records"])
        self._document_ids: Optional[list[str]] = None

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, i: int):
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"dataset index: found {type(i).__name__}; expected an int")
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"dataset index {i} out of range for {n} documents")
        i %= n
        shard = bisect.bisect_right(self._starts, i) - 1
        k = i - self._starts[shard]
        offsets = self._offsets[shard]
        return self._ids[shard][int(offsets[k]):int(offsets[k + 1])]

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(len(self)))

    @property
    def document_ids(self) -> list[str]:
        if self._document_ids is None:
            ids: list[str] = []
            for shard in self.manifest["shards"]:
                path = self.root / "shards" / f"{shard['index']:05d}" / "docs.json"
                ids += json.loads(path.read_text(encoding="utf-8"))["document_id"]
            self._document_ids = ids
        return list(self._document_ids)

    def packs(self, max_tokens: int) -> Iterator[list]:
        """Lists of `tinyllm.seq.collate.Record`, each list at most `max_tokens` ids long."""
        from tinyllm.seq.collate import Record

        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens: found {max_tokens!r}; expected an int >= 1")
        pack, used = [], 0
        for doc_id, ids in zip(self.document_ids, self):
            for start in range(0, max(len(ids), 1), max_tokens):
                piece = ids[start:start + max_tokens].tolist()
                if not piece:
                    continue
                if used + len(piece) > max_tokens and pack:
                    yield pack
                    pack, used = [], 0
                name = doc_id if start == 0 else f"{doc_id}@{start}"
                pack.append(Record(name, piece, [1] * len(piece)))
                used += len(piece)
        if pack:
            yield pack

    def packed(self, max_tokens: int, return_tensors: str = "np") -> Iterator:
        """`collate_packed` over `packs(max_tokens)`: one `PackedBatch` per packed sequence."""
        from tinyllm.seq.collate import collate_packed

        for pack in self.packs(max_tokens):
            yield collate_packed(pack, max_tokens=max_tokens, return_tensors=return_tensors)


def load_dataset(out, tokenizer=None) -> EncodedDataset:
    """The dataset in directory `out`; with `tokenizer`, `verify_dataset` runs first."""
    if tokenizer is not None:
        from tinyllm.corpus.verify import verify_dataset

        return EncodedDataset(out, verify_dataset(out, tokenizer))
    return EncodedDataset(out, read_dataset_manifest(out))
