"""Read documents from JSON lines, Parquet or text files, lazily and in a declared order.

* `.jsonl` / `.json`: one JSON object a line; the text is `text_field`, the id `id_field` (default:
  "FILE:LINE", 1-based), the source `source_field` (default: the file's stem);
* `.parquet`: the same columns (needs pyarrow, `pip install pyarrow`), read one row group at a
  time; the default id is "FILE:ROW" (0-based);
* anything else is UTF-8 text: one document a line (its "\\n" or "\\r\\n" removed; blank lines
  skipped), or the whole file as one document with `doc_per_file`.

Files are read in the order given, documents in file order: that order is the dataset's order. A
bad line is a ValueError naming the file and line.

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "a.jsonl").write_text('{"text": "hello", "id": "x1"}\\n{"text": "world", "id": "x2"}\\n')
>>> [(doc.document_id, doc.text, doc.source_id) for doc in read_documents([d / "a.jsonl"], id_field="id")]
[('x1', 'hello', 'a'), ('x2', 'world', 'a')]
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Iterator, Optional

from tinyllm.corpus.documents import Document

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")


def _field(row: dict, name: str, where: str, kind: str) -> str:
    if name not in row:
        raise ValueError(f"{where}: no {name!r} field; expected the {kind} there (--{kind}-field)")
    value = row[name]
    if kind == "text":
        if not isinstance(value, str):
            raise ValueError(f"{where}: {name}: found {type(value).__name__}; expected a string")
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{where}: {name}: found {type(value).__name__}; expected a string or an integer")
    return str(value)


def _row_document(row, where: str, default_id: str, source: str, text_field: str, id_field: Optional[str],
                  source_field: Optional[str]) -> Document:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: found a JSON {type(row).__name__}; expected an object with {text_field!r}")
    text = _field(row, text_field, where, "text")
    doc_id = _field(row, id_field, where, "id") if id_field else default_id
    src = _field(row, source_field, where, "source") if source_field else source
    return Document(doc_id, text, src)


def _json_rows(lines: list[bytes], shown: str, first: int) -> list:
    """The objects of a block of JSON lines, parsed as one JSON array (one C call, not one a
    line); when that fails, line by line, to name the line that is wrong."""
    try:
        return json.loads(b"[" + b",".join(lines) + b"]")
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    for number, raw in enumerate(lines, first):
        try:
            json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{shown}:{number}: not a JSON object ({e}); expected one object a line") from None
    raise ValueError(f"{shown}:{first}: a JSON value spans lines; expected one object a line")  # pragma: no cover


def _json_lines(path: Path, shown: str, text_field: str, id_field: Optional[str],
                source_field: Optional[str]) -> Iterator[Document]:
    source = path.stem
    number = 0
    with open(path, "rb") as f:
        while block := f.readlines(1 << 22):
            numbered = [(number + k, raw) for k, raw in enumerate(block, 1) if raw.strip()]
            number += len(block)
            if not numbered:
                continue
            rows = _json_rows([raw for _, raw in numbered], shown, numbered[0][0])
            for (line, _), row in zip(numbered, rows):
                if type(row) is dict and not id_field and not source_field and type(row.get(text_field)) is str:
                    # The common row, checked in one line; anything else goes through the full check.
                    yield Document(f"{shown}:{line}", row[text_field], source)
                else:
                    where = f"{shown}:{line}"
                    yield _row_document(row, where, where, source, text_field, id_field, source_field)


def _parquet(path: Path, shown: str, text_field: str, id_field: Optional[str],
             source_field: Optional[str]) -> Iterator[Document]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{shown}: reading Parquet needs pyarrow; expected `pip install pyarrow` "
                         "(or convert the file to JSON lines)") from None
    table = pq.ParquetFile(path)
    columns = [c for c in (text_field, id_field, source_field) if c]
    missing = [c for c in columns if c not in table.schema_arrow.names]
    if missing:
        raise ValueError(f"{shown}: no column {missing[0]!r}; expected one of {', '.join(table.schema_arrow.names)}")
    row_number = 0
    for group in range(table.num_row_groups):
        batch = table.read_row_group(group, columns=columns).to_pydict()
        for k in range(len(batch[text_field])):
            row = {c: batch[c][k] for c in columns}
            where = f"{shown}:{row_number}"
            yield _row_document(row, f"{shown} row {row_number}", where, path.stem, text_field, id_field,
                                source_field)
            row_number += 1


def _text_lines(path: Path, shown: str, doc_per_file: bool) -> Iterator[Document]:
    try:
        if doc_per_file:
            yield Document(shown, path.read_text(encoding="utf-8"), path.stem)
            return
        source = path.stem
        number = 0
        with open(path, encoding="utf-8", newline="") as f:
            # Lines in blocks of about 4 MB: one document costs a few list operations, not a loop
            # of Python statements.
            while lines := f.readlines(1 << 22):
                texts = [line[:-2] if line.endswith("\r\n") else line.rstrip("\n") for line in lines]
                names = [f"{shown}:{k}" for k in range(number + 1, number + 1 + len(lines))]
                number += len(lines)
                yield from (Document(name, text, source) for name, text in zip(names, texts) if text)
    except UnicodeDecodeError as e:
        raise ValueError(f"{shown}: not UTF-8 text ({e})") from None


def read_documents(paths: Iterable, *, text_field: str = "text", id_field: Optional[str] = None,
                   source_field: Optional[str] = None, doc_per_file: bool = False) -> Iterator[Document]:
    """Every document of `paths`, in order (see the module docstring)."""
    for name in paths:
        path = Path(name)
        shown = os.fspath(name)
        if not path.is_file():
            raise ValueError(f"inputs: {shown}: no such file; expected a .jsonl, .parquet or text file")
        suffix = path.suffix.lower()
        if suffix in JSON_SUFFIXES:
            yield from _json_lines(path, shown, text_field, id_field, source_field)
        elif suffix == ".parquet":
            yield from _parquet(path, shown, text_field, id_field, source_field)
        else:
            yield from _text_lines(path, shown, doc_per_file)


def read_group_ids(paths: Iterable, group_field: str, id_field: Optional[str] = None) -> dict[str, str]:
    """document_id -> the `group_field` of each JSON-lines document (ids as `read_documents` gives
    them); ValueError naming the line when a document lacks it."""
    out = {}
    for name in paths:
        path = Path(name)
        if path.suffix.lower() not in JSON_SUFFIXES:
            raise ValueError(f"--group-field: {os.fspath(name)} is not JSON lines; expected .jsonl inputs")
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                if raw.strip():
                    where = f"{os.fspath(name)}:{number}"
                    row = json.loads(raw)
                    doc_id = _field(row, id_field, where, "id") if id_field else where
                    out[doc_id] = _field(row, group_field, where, "group")
    return out
