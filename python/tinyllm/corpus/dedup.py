r"""Exact and near deduplication of documents, keeping the first copy (seed 003, 0x00A).

Exact duplicates share `exact_dedup_key`: the SHA-256 of the document's canonical text in UTF-8.
Canonicalization decides what counts as "the same text" (`CANONICALIZATIONS`, each including the
one before it):

* ``"none"``: the text as it is;
* ``"nfc"``: Unicode NFC (composed and decomposed accents compare equal);
* ``"whitespace"``: NFC, then every run of whitespace (what ``str.split()`` splits on) becomes one
  space, and the ends are stripped;
* ``"casefold"``: "whitespace", then ``str.casefold()`` ("Cat" and "cat" compare equal).

Every mode first replaces lone surrogates by U+FFFD (`tinyllm.tok.text.clean`, the tokenizers'
rule): UTF-8 cannot carry them, and hashing must never raise on a ``str``.

>>> canonicalize("  The  Cat\u00a0sleeps. ", "casefold")
'the cat sleeps.'
>>> exact_dedup_key("The  Cat", "casefold") == exact_dedup_key("the cat"), len(exact_dedup_key("x"))
(True, 32)

Near duplicates (``near=NearDup(...)``) are found among the documents left after exact
deduplication, on their canonical texts: MinHash signatures (`tinyllm.corpus.minhash`) and LSH
banding propose candidate pairs, and each candidate is verified with the exact Jaccard score of
its word shingles, so no pair below the threshold is ever linked. Linked documents form groups
(union-find over the verified links), and each group keeps its first document; a chain
A ~ B ~ C removes B and C even when A and C alone fall below the threshold, and each removal's
`similarity` is its exact Jaccard score with the document kept. Every removal names a kept
document, and its `kind` says how it relates to that one: ``"exact"`` (same canonical text) or
``"near"``; so an exact copy of a document removed as a near duplicate is itself a near duplicate
of the document kept.

"First" is by `order`: ``"input"`` (the order of `documents`) or ``"id"`` (ascending
`document_id`). `kept` and `removed` list documents in input order either way.

>>> docs = [("a", "the cat sat on the mat"), ("b", "The cat sat on the mat"),
...         ("c", "the cat sat on the mat today"), ("d", "the  cat sat on the mat")]
>>> result = dedup(docs, canonicalize="whitespace", near=NearDup(threshold=0.8))
>>> result.kept
['a', 'b']
>>> [(r.document_id, r.duplicate_of, r.kind, round(r.similarity, 2)) for r in result.removed]
[('c', 'a', 'near', 0.83), ('d', 'a', 'exact', 1.0)]

`write_removal_log` writes the removals as JSON lines (after one line stating the method), so a
dataset can say which documents it dropped, why, and in favour of which.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Optional

from tinyllm._io import atomic_write_text
from tinyllm.corpus.minhash import LSH, MinHasher, jaccard, shingles
from tinyllm.tok.text.clean import clean_text, require_str

CANONICALIZATIONS = ("none", "nfc", "whitespace", "casefold")
ORDERS = ("input", "id")
LOG_FORMAT = "tinyllm.dedup-log/v1"


def _check_mode(mode: object, where: str) -> str:
    if mode not in CANONICALIZATIONS:
        raise ValueError(f"{where}: canonicalize = {mode!r}; expected one of {', '.join(map(repr, CANONICALIZATIONS))}")
    return mode


def canonicalize(text: str, canonicalize: str = "none") -> str:
    r"""`text` as deduplication compares it under the mode `canonicalize` (module docstring).

    >>> for mode in CANONICALIZATIONS:
    ...     print(mode, ascii(canonicalize("Cafe\u0301  Noir\n", mode)))
    none 'Cafe\u0301  Noir\n'
    nfc 'Caf\xe9  Noir\n'
    whitespace 'Caf\xe9 Noir'
    casefold 'caf\xe9 noir'
    """
    return _canonical(require_str(text, "canonicalize: text"), _check_mode(canonicalize, "canonicalize"))


def _canonical(text: str, mode: str) -> str:
    # Surrogates first: NFC and casefold then see only characters UTF-8 can carry.
    text = clean_text(text)
    if mode == "none":
        return text
    text = unicodedata.normalize("NFC", text)
    if mode == "nfc":
        return text
    text = " ".join(text.split())
    return text if mode == "whitespace" else text.casefold()


def exact_dedup_key(text: str, canonicalize: str = "none") -> bytes:
    """The 32-byte SHA-256 digest of the UTF-8 of ``canonicalize(text, canonicalize)``.

    >>> exact_dedup_key("The cat sleeps.").hex()[:16]
    'f6d023669bad4e4b'
    """
    text = require_str(text, "exact_dedup_key: text")
    return _sha256(_canonical(text, _check_mode(canonicalize, "exact_dedup_key")))


def _sha256(canonical: str) -> bytes:
    return hashlib.sha256(canonical.encode("utf-8")).digest()


@dataclass(frozen=True)
class NearDup:
    """Settings of near-duplicate detection: documents whose word-`k`-shingle Jaccard score is at
    least `threshold` are duplicates. `num_perm`, `seed`, `bands` and `rows` set the MinHash/LSH
    search for candidates (`bands` and `rows` default to `LSH.from_threshold`; give one and the
    other is `num_perm` divided by it)."""

    threshold: float = 0.8
    num_perm: int = 128
    bands: Optional[int] = None
    rows: Optional[int] = None
    seed: int = 0
    k: int = 2

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1:
            raise ValueError(f"NearDup: threshold = {t!r}; expected a number in (0, 1]")
        MinHasher(self.num_perm, self.seed, self.k)  # validates them, naming the parameter
        for name in ("bands", "rows"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1
                                      or self.num_perm % value):
                raise ValueError(f"NearDup: {name} = {value!r}; expected a divisor of num_perm = {self.num_perm}")
        if self.bands is not None and self.rows is not None and self.bands * self.rows != self.num_perm:
            raise ValueError(f"NearDup: bands * rows = {self.bands} * {self.rows} = {self.bands * self.rows}; "
                             f"expected num_perm = {self.num_perm}")

    def lsh(self) -> LSH:
        if self.bands is not None:
            return LSH(self.bands, self.num_perm // self.bands)
        if self.rows is not None:
            return LSH(self.num_perm // self.rows, self.rows)
        return LSH.from_threshold(self.threshold, self.num_perm)


@dataclass(frozen=True)
class Removal:
    """One removed document: which, the kept document it duplicates, how ("exact" or "near"),
    and the exact Jaccard score of their canonical shingles (1.0 for exact duplicates)."""

    document_id: Any
    duplicate_of: Any
    kind: str
    similarity: float


@dataclass(frozen=True)
class DedupResult:
    """The kept ids and the removals, both in input order, and the settings that produced them."""

    kept: list
    removed: list
    method: dict


def _as_pairs(documents: Iterable) -> list[tuple[Any, str]]:
    out, seen = [], {}
    for i, doc in enumerate(documents):
        if isinstance(doc, tuple) and len(doc) == 2:
            doc_id, text = doc
        elif hasattr(doc, "document_id") and hasattr(doc, "text"):
            doc_id, text = doc.document_id, doc.text
        else:
            raise ValueError(f"dedup: documents[{i}] is a {type(doc).__name__}; expected a (document_id, text) "
                             "pair or an object with .document_id and .text")
        require_str(text, f"dedup: documents[{i}].text")
        try:
            first = seen.setdefault(doc_id, i)
        except TypeError:
            raise ValueError(f"dedup: documents[{i}].document_id = {doc_id!r} is not hashable; expected a str "
                             "or int") from None
        if first != i:
            raise ValueError(f"dedup: documents[{i}].document_id = {doc_id!r} repeats documents[{first}]'s; "
                             "expected unique ids (removals name documents by id)")
        out.append((doc_id, text))
    return out


class _Groups:
    """Union-find whose representative is always the earliest member (the smallest position)."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:  # path compression
            self.parent[i], i = root, self.parent[i]
        return root

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def dedup(documents: Iterable, *, canonicalize: str = "none", near: Optional[NearDup] = None,
          order: str = "input") -> DedupResult:
    """Remove exact and (with `near`) near duplicates, keeping the first copy by `order`; see the
    module docstring for the rules."""
    mode = _check_mode(canonicalize, "dedup")
    if near is not None and not isinstance(near, NearDup):
        raise ValueError(f"dedup: near = {near!r}; expected None or a NearDup")
    if order not in ORDERS:
        raise ValueError(f"dedup: order = {order!r}; expected one of {', '.join(map(repr, ORDERS))}")
    docs = _as_pairs(documents)
    positions = list(range(len(docs)))
    if order == "id":
        try:
            positions.sort(key=lambda i: docs[i][0])
        except TypeError as e:
            raise ValueError(f"dedup: order = 'id' needs document ids of one comparable type ({e})") from None
    texts = [_canonical(text, mode) for _, text in docs]

    positions_by_id = {doc_id: i for i, (doc_id, _) in enumerate(docs)}
    removals: dict[int, Removal] = {}
    first_by_key: dict[bytes, int] = {}
    survivors = []  # positions in processing order
    for i in positions:
        key = _sha256(texts[i])
        first = first_by_key.setdefault(key, i)
        if first == i:
            survivors.append(i)
        else:
            removals[i] = Removal(docs[i][0], docs[first][0], "exact", 1.0)

    if near is not None and len(survivors) > 1:
        hasher = MinHasher(near.num_perm, near.seed, near.k)
        signatures = hasher.signatures([texts[i] for i in survivors])
        cache: dict[int, frozenset] = {}

        def shingle_set(s: int) -> frozenset:
            if s not in cache:
                cache[s] = shingles(texts[survivors[s]], near.k)
            return cache[s]

        groups = _Groups(len(survivors))
        # Pairs in sorted order and an earliest-member representative: the result does not depend
        # on which candidate links a group first.
        for s, t in near.lsh().candidate_pairs(signatures):
            if groups.find(s) != groups.find(t) and jaccard(shingle_set(s), shingle_set(t)) >= near.threshold:
                groups.union(s, t)
        slot = {i: s for s, i in enumerate(survivors)}
        for s, i in enumerate(survivors):
            root = groups.find(s)
            if root != s:
                kept = survivors[root]
                removals[i] = Removal(docs[i][0], docs[kept][0], "near", jaccard(shingle_set(s), shingle_set(root)))
        # An exact copy of a document removed as a near duplicate names the document kept instead,
        # as a near duplicate of it (its text is the removed copy's, so is its similarity).
        for i, removal in list(removals.items()):
            if removal.kind == "exact":
                first = slot[positions_by_id[removal.duplicate_of]]
                root = groups.find(first)
                if root != first:
                    removals[i] = Removal(removal.document_id, docs[survivors[root]][0], "near",
                                          removals[survivors[first]].similarity)

    method = {"canonicalize": mode, "order": order, "exact": "sha256(utf-8(canonical text))",
              "near": None if near is None else {**asdict(near), "lsh": repr(near.lsh()), "hash": "minhash/v1"}}
    return DedupResult(kept=[doc_id for i, (doc_id, _) in enumerate(docs) if i not in removals],
                       removed=[removals[i] for i in sorted(removals)], method=method)


def write_removal_log(path: str | os.PathLike, result: DedupResult):
    """Write `result` as JSON lines, atomically: first ``{"format": ..., "method": {...}}``, then
    one ``{"document_id", "duplicate_of", "kind", "similarity"}`` object per removal, in input order.
    Returns the path."""
    lines = [json.dumps({"format": LOG_FORMAT, "method": result.method}, ensure_ascii=False, sort_keys=True)]
    for n, removal in enumerate(result.removed):
        try:
            lines.append(json.dumps(asdict(removal), ensure_ascii=False))
        except (TypeError, ValueError) as e:
            raise ValueError(f"write_removal_log: removed[{n}] = {removal!r} cannot be written as JSON ({e}); "
                             "expected str or int document ids") from None
    return atomic_write_text(path, "\n".join(lines) + "\n")
