"""Read documents from JSON lines, Parquet or text files, lazily and in a declared order.

* `.jsonl` / `.json` / `.ndjson`: one JSON object a line; the text is `text_field`, the id
  `id_field` (a string or an integer; default: "FILE:LINE", 1-based), the source `source_field`
  (default: the file's stem);
* `.parquet`: the same columns (needs pyarrow, `pip install pyarrow`), read one row group at a
  time; the default id is "FILE:ROW" (0-based);
* anything else is UTF-8 text: one document a line (a line ends at "\\n", and a "\\r" just
  before it goes too; empty lines are skipped), or the whole file as one document with
  `doc_per_file`.

Files are read in the order given, documents in file order: that order is the dataset's order. A
bad line is a ValueError naming the file and line.

`read_documents` gives an `InputFiles`: iterate it for `Document`s, or call `batches()` for the
same documents as batches of columns (`tinyllm.corpus.batches`), which is what `encode_dataset`
does. JSON lines and text are read in blocks of about 4 MB of whole lines, and with the Rust core
each block becomes one batch in one call (`_core.read_json_lines`, `_core.read_text_lines`), with
no Python object per document. A block the core does not read exactly as the reference below
does (a bad line, a field of another type, a lone surrogate escape) is read by the reference,
which gives the same documents or names the line.

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

from tinyllm import _native
from tinyllm.corpus.batches import as_batch, documents_of
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


#: Bytes of whole lines read at a time.
BLOCK_BYTES = 1 << 22


def _blocks(path: Path) -> Iterator[tuple[int, bytes]]:
    """(number of the block's first line, 1-based; a block of whole lines) of a file."""
    core = _native.core
    number = 1
    with open(path, "rb") as f:
        while block := f.read(BLOCK_BYTES):
            if not block.endswith(b"\n"):
                block += f.readline()
            yield number, block
            number += block.count(b"\n") if core is None else core.count_lines(block)


def _json_rows(lines: list[bytes], shown: str, first: int) -> list:
    """The objects of a block of JSON lines, parsed as one JSON array (one C call, not one a
    line); when that fails, line by line, to name the line that is wrong."""
    try:
        rows = json.loads(b"[" + b",".join(lines) + b"]")
        if len(rows) == len(lines):  # a line holding "{...}, {...}" parses as two rows
            return rows
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    for number, raw in enumerate(lines, first):
        try:
            json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{shown}:{number}: not a JSON object ({e}); expected one object a line") from None
    raise ValueError(f"{shown}:{first}: a JSON value spans lines; expected one object a line")  # pragma: no cover


def json_block_documents(block: bytes, first: int, shown: str, source: str, text_field: str,
                         id_field: Optional[str], source_field: Optional[str]) -> list[Document]:
    """The documents of a block of JSON lines whose first line is number `first` (the
    reference)."""
    numbered = [(first + k, raw) for k, raw in enumerate(block.split(b"\n")) if raw.strip()]
    out = []
    for k, row in enumerate(_json_rows([raw for _, raw in numbered], shown, numbered[0][0]) if numbered else []):
        where = f"{shown}:{numbered[k][0]}"
        out.append(_row_document(row, where, where, source, text_field, id_field, source_field))
    return out


def text_block_documents(block: bytes, first: int, shown: str, source: str) -> list[Document]:
    """The documents of a block of text lines whose first line is number `first` (the
    reference)."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first + block.count(b"\n", 0, e.start)
        raise ValueError(f"{shown}:{line}: not UTF-8 text ({e})") from None
    lines = text.split("\n")
    out = []
    for k, line in enumerate(lines):
        if k < len(lines) - 1 and line.endswith("\r"):
            line = line[:-1]
        if line:
            out.append(Document(f"{shown}:{first + k}", line, source))
    return out


def _json_lines(path: Path, shown: str, text_field: str, id_field: Optional[str],
                source_field: Optional[str]) -> Iterator:
    core = _native.core
    for first, block in _blocks(path):
        found = None if core is None else core.read_json_lines(block, shown, first, text_field, id_field,
                                                                source_field, path.stem)
        yield found if found is not None else as_batch(json_block_documents(block, first, shown, path.stem,
                                                                            text_field, id_field, source_field))


def _text_lines(path: Path, shown: str) -> Iterator:
    core = _native.core
    for first, block in _blocks(path):
        found = None if core is None else core.read_text_lines(block, shown, first, path.stem)
        yield found if found is not None else as_batch(text_block_documents(block, first, shown, path.stem))


def _parquet(path: Path, shown: str, text_field: str, id_field: Optional[str],
             source_field: Optional[str]) -> Iterator[list[Document]]:
    """The documents of each row group."""
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
        documents = []
        for k in range(len(batch[text_field])):
            row = {c: batch[c][k] for c in columns}
            where = f"{shown}:{row_number}"
            documents.append(_row_document(row, f"{shown} row {row_number}", where, path.stem, text_field, id_field,
                                           source_field))
            row_number += 1
        yield documents


class InputFiles:
    """The documents of input files (see the module docstring): iterable, lazily, more than once."""

    def __init__(self, paths: Iterable, text_field: str, id_field: Optional[str], source_field: Optional[str],
                 doc_per_file: bool) -> None:
        self.paths = list(paths)
        self.text_field, self.id_field, self.source_field = text_field, id_field, source_field
        self.doc_per_file = doc_per_file

    def batches(self) -> Iterator:
        """The documents as batches, in order."""
        for name in self.paths:
            path = Path(name)
            shown = os.fspath(name)
            if not path.is_file():
                raise ValueError(f"inputs: {shown}: no such file; expected a .jsonl, .parquet or text file")
            suffix = path.suffix.lower()
            if suffix in JSON_SUFFIXES:
                yield from _json_lines(path, shown, self.text_field, self.id_field, self.source_field)
            elif suffix == ".parquet":
                for group in _parquet(path, shown, self.text_field, self.id_field, self.source_field):
                    yield as_batch(group)
            elif self.doc_per_file:
                try:
                    yield as_batch([Document(shown, path.read_text(encoding="utf-8"), path.stem)])
                except UnicodeDecodeError as e:
                    raise ValueError(f"{shown}: not UTF-8 text ({e})") from None
            else:
                yield from _text_lines(path, shown)

    def __iter__(self) -> Iterator[Document]:
        for batch in self.batches():
            yield from documents_of(batch)


def read_documents(paths: Iterable, *, text_field: str = "text", id_field: Optional[str] = None,
                   source_field: Optional[str] = None, doc_per_file: bool = False) -> InputFiles:
    """Every document of `paths`, in order (see the module docstring)."""
    return InputFiles(paths, text_field, id_field, source_field, doc_per_file)


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
