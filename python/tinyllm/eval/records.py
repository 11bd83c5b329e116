"""Evaluation records and the split manifest that binds them (seed 003, 0x00A and 0x0C1).

A `Record` is one document of an evaluation corpus: its id, the group it belongs to (near
duplicates, translations, shards of one document share a group), its split, its text and
optionally its slice (language, domain, length band) and the byte and code-point counts declared
for it upstream.

`validate_split_manifest` enforces the seed's rules (003 lines 2556-2566):

1. every `record_id` is unique;
2. every record's split is "fit", "validation" or "test", and all three are present (the seed
   asserts the set of splits *equals* {fit, validation, test});
3. every `group_id` has one split owner: a group never spans two splits, or a near duplicate of
   a fit document would leak into validation;
4. a declared UTF-8 byte count or code-point count equals the text's (undeclared counts, None,
   are not checked).

>>> records = [Record("r1", "g1", "fit", "The cat sleeps."),
...            Record("r2", "g1", "fit", "The cat wakes."),
...            Record("r3", "g2", "validation", "A train arrives.", slice="prose"),
...            Record("r4", "g3", "test", "def f(): pass", slice="code", declared_utf8_bytes=13)]
>>> validate_split_manifest(records)
{'fit': 2, 'validation': 1, 'test': 1}
>>> validate_split_manifest(records[:2] + [Record("r3", "g1", "validation", "x")] + records[3:])
Traceback (most recent call last):
...
ValueError: split manifest: records[2] (record_id 'r3'): group 'g1' is in split 'validation', but records[0] (record_id 'r1') put it in 'fit'; a group_id must have one split owner

On disk the manifest is JSON Lines bound to the corpus it was cut from: a header line carrying
H_corpus (`tinyllm.artifacts.domains.corpus_hash` of the corpus object) and the record count,
then one record per line, in the given order (the corpus order is part of what the manifest
binds). `write_manifest` fills in the byte and code-point counts, so a manifest read back
declares them all; `read_manifest` checks the header, every line and the rules above.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from tinyllm._io import atomic_write_text, read_text_file, show
from tinyllm.artifacts.domains import corpus_hash as _corpus_hash

#: The three roles of a tokenizer experiment (seed 003 line 2543): the only splits there are.
SPLITS = ("fit", "validation", "test")

#: The value of the header's "format" key.
MANIFEST_FORMAT = "tinyllm-split-manifest-v1"

_RECORD_KEYS = ("record_id", "group_id", "split", "slice", "text", "declared_utf8_bytes", "declared_codepoints")


def _check_count(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"Record: {name} = {show(value)}; expected None or a non-negative int")



def line_documents(lines: Iterable[str], size: int = 2000) -> list[str]:
    """`lines` (with their line ends) joined into documents of at least `size` characters, each
    ending at a line end; the last may be shorter. The unit `tinyllm eval --data`, the sweep and
    the benchmarks cut corpora into.

    >>> line_documents(["ab\\n", "cd\\n", "e"], size=4)
    ['ab\\ncd\\n', 'e']
    """
    docs, current, length = [], [], 0
    for line in lines:
        current.append(line)
        length += len(line)
        if length >= size:
            docs.append("".join(current))
            current, length = [], 0
    if current:
        docs.append("".join(current))
    return docs

@dataclass(frozen=True)
class Record:
    """One document: `record_id`, `group_id`, `split` and `text` are required; `slice` names the
    report slice it belongs to (None: no slice); `declared_utf8_bytes` / `declared_codepoints`
    are the counts an upstream stage declared (None: not declared).

    The fields are checked for type here; the manifest rules, which relate records to each other
    and counts to text, are `validate_split_manifest`'s.

    >>> Record("r1", "g1", "fit", "héllo").text
    'héllo'
    >>> Record("r1", "g1", "fit", "a\\udc80")
    Traceback (most recent call last):
    ...
    ValueError: Record: text of record_id 'r1' has a lone surrogate at index 1; expected text that UTF-8 can encode
    """

    record_id: str
    group_id: str
    split: str
    text: str
    slice: Optional[str] = None
    declared_utf8_bytes: Optional[int] = None
    declared_codepoints: Optional[int] = None

    def __post_init__(self) -> None:
        for name in ("record_id", "group_id", "split"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Record: {name} = {show(value)}; expected a non-empty string")
        if self.slice is not None and (not isinstance(self.slice, str) or not self.slice):
            raise ValueError(f"Record: slice = {show(self.slice)}; expected None or a non-empty string")
        if not isinstance(self.text, str):
            raise ValueError(f"Record: text of record_id {self.record_id!r} is a {type(self.text).__name__}; "
                             "expected a str")
        if not self.text.isascii():
            # b(x) is the UTF-8 length: a text UTF-8 cannot encode has none.
            try:
                self.text.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(f"Record: text of record_id {self.record_id!r} has a lone surrogate at index "
                                 f"{e.start}; expected text that UTF-8 can encode") from None
        _check_count("declared_utf8_bytes", self.declared_utf8_bytes)
        _check_count("declared_codepoints", self.declared_codepoints)

    @property
    def utf8_bytes(self) -> int:
        """b(x): the length of the text in UTF-8."""
        return len(self.text.encode("utf-8"))

    @property
    def codepoints(self) -> int:
        """u(x): the number of code points of the text as stored (nothing is normalized here:
        normalization belongs to the corpus preparation or to the tokenizer)."""
        return len(self.text)

    def to_json(self) -> dict:
        """The record as one manifest line's object (every key present, None for unset)."""
        return {key: getattr(self, key) for key in _RECORD_KEYS}


def _where(index: int, record: Record) -> str:
    return f"records[{index}] (record_id {record.record_id!r})"


def validate_split_manifest(records: Iterable[Record]) -> dict[str, int]:
    """Check the manifest rules (see the module docstring); return the record count per split.

    The first broken rule raises ValueError naming the record (index and id), the rule, and what
    was found against what was expected. Group ownership is checked in record_id order, as the
    seed does, so which record of a split group is blamed does not depend on the input order.
    """
    records = list(records)
    first_index: dict[str, int] = {}
    for index, record in enumerate(records):
        if not isinstance(record, Record):
            raise ValueError(f"split manifest: records[{index}] is a {type(record).__name__}; expected a Record")
        if record.split not in SPLITS:
            raise ValueError(f"split manifest: {_where(index, record)}: split = {record.split!r}; "
                             f"expected one of {', '.join(SPLITS)}")
        prior = first_index.setdefault(record.record_id, index)
        if prior != index:
            raise ValueError(f"split manifest: {_where(index, record)}: the record_id is already used by "
                             f"records[{prior}]; expected unique record ids")
        if record.declared_utf8_bytes is not None and record.declared_utf8_bytes != record.utf8_bytes:
            raise ValueError(f"split manifest: {_where(index, record)}: declared_utf8_bytes = "
                             f"{record.declared_utf8_bytes}, but the text has {record.utf8_bytes} UTF-8 bytes")
        if record.declared_codepoints is not None and record.declared_codepoints != record.codepoints:
            raise ValueError(f"split manifest: {_where(index, record)}: declared_codepoints = "
                             f"{record.declared_codepoints}, but the text has {record.codepoints} code points")

    owner: dict[str, int] = {}  # group_id -> index of the first record (in record_id order) of it
    for index in sorted(range(len(records)), key=lambda k: records[k].record_id):
        record = records[index]
        first = owner.setdefault(record.group_id, index)
        if records[first].split != record.split:
            raise ValueError(
                f"split manifest: {_where(index, record)}: group {record.group_id!r} is in split "
                f"{record.split!r}, but {_where(first, records[first])} put it in {records[first].split!r}; "
                "a group_id must have one split owner")

    counts = {split: 0 for split in SPLITS}
    for record in records:
        counts[record.split] += 1
    missing = [split for split in SPLITS if counts[split] == 0]
    if missing:
        found = [split for split in SPLITS if counts[split]]
        raise ValueError(f"split manifest: no record in split {', '.join(missing)}; found splits "
                         f"{found}, expected exactly {list(SPLITS)}")
    return counts


@dataclass(frozen=True)
class SplitManifest:
    """A manifest read from disk: the corpus hash it is bound to and its records, in file order."""

    corpus_hash: str
    records: tuple[Record, ...]

    def split(self, name: str) -> list[Record]:
        """The records of split `name`, in manifest order.

        >>> SplitManifest("0" * 64, (Record("a", "g", "fit", "x"),)).split("fit")[0].record_id
        'a'
        """
        if name not in SPLITS:
            raise ValueError(f"SplitManifest.split: name = {name!r}; expected one of {', '.join(SPLITS)}")
        return [r for r in self.records if r.split == name]


def write_manifest(path: str | os.PathLike, records: Iterable[Record], corpus: Mapping[str, Any]) -> str:
    """Validate `records` and write them to `path` as a manifest bound to `corpus` (the corpus
    object whose H_corpus goes into the header), atomically; return that hash.

    Each line states the record's byte and code-point counts (computed from its text), so the
    file carries the reference counts the seed's manifest binds.
    """
    if not isinstance(corpus, Mapping):
        raise ValueError(f"write_manifest: corpus is a {type(corpus).__name__}; expected the corpus object (a mapping)")
    records = list(records)
    validate_split_manifest(records)
    bound = _corpus_hash(corpus)
    header = {"format": MANIFEST_FORMAT, "corpus_hash": bound, "records": len(records)}
    lines = [json.dumps(header, ensure_ascii=False)]
    for record in records:
        row = record.to_json()
        row["declared_utf8_bytes"] = record.utf8_bytes
        row["declared_codepoints"] = record.codepoints
        lines.append(json.dumps(row, ensure_ascii=False))
    atomic_write_text(path, "\n".join(lines) + "\n")
    return bound


def _json_line(path: Path, number: int, line: str) -> dict:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: line {number}: invalid JSON at column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}: line {number}: invalid JSON: nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: line {number}: {show(value)}; expected a JSON object")
    return value


def _record_of(path: Path, number: int, row: dict) -> Record:
    keys = set(row)
    if keys != set(_RECORD_KEYS):
        missing = sorted(set(_RECORD_KEYS) - keys)
        extra = sorted(keys - set(_RECORD_KEYS))
        raise ValueError(f"{path}: line {number}: record keys missing {missing}, unexpected {extra}; "
                         f"expected exactly {list(_RECORD_KEYS)}")
    try:
        return Record(**row)
    except ValueError as e:
        raise ValueError(f"{path}: line {number}: {e}") from None


def read_manifest(path: str | os.PathLike, corpus_hash: Optional[str] = None) -> SplitManifest:
    """Read and validate the manifest at `path`; with `corpus_hash`, also require the header's
    hash to equal it (a manifest cut from another corpus is refused, naming both hashes).

    Every error is a ValueError naming the file and, for a bad line, its number (1 is the header).
    """
    path = Path(path)
    text = read_text_file(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    if not lines:
        raise ValueError(f"{path}: empty file; expected a header line and one line per record")
    header = _json_line(path, 1, lines[0])
    if header.get("format") != MANIFEST_FORMAT or set(header) != {"format", "corpus_hash", "records"}:
        raise ValueError(f"{path}: line 1: header {show(header)}; expected "
                         f'{{"format": "{MANIFEST_FORMAT}", "corpus_hash": ..., "records": ...}}')
    bound, count = header["corpus_hash"], header["records"]
    if not isinstance(bound, str) or len(bound) != 64:
        raise ValueError(f"{path}: line 1: corpus_hash = {show(bound)}; expected 64 hex digits")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"{path}: line 1: records = {show(count)}; expected a non-negative int")
    if corpus_hash is not None and bound != corpus_hash:
        raise ValueError(f"{path}: corpus_hash = {bound}, expected {corpus_hash}: the manifest was cut from "
                         "another corpus")
    if len(lines) - 1 != count:
        raise ValueError(f"{path}: {len(lines) - 1} record lines; the header declares {count}")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        records.append(_record_of(path, number, _json_line(path, number, line)))
    try:
        validate_split_manifest(records)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return SplitManifest(bound, tuple(records))
