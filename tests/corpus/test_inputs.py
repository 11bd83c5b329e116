"""read_documents: JSON lines, Parquet and text, in order, with errors naming file and line."""


import pytest

from tinyllm.corpus.documents import Document
from tinyllm.corpus.inputs import read_documents


def test_text_lines_skip_blanks_and_strip_line_ends(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes("first\r\n\nsecond line\nthird  \n".encode())
    docs = list(read_documents([path]))
    assert docs == [Document(f"{path}:1", "first", "notes"), Document(f"{path}:3", "second line", "notes"),
                    Document(f"{path}:4", "third  ", "notes")]


def test_doc_per_file(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    [doc] = read_documents([tmp_path / "a.txt"], doc_per_file=True)
    assert doc.text == "one\ntwo\n" and doc.source_id == "a"


def test_jsonl_fields_and_order(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"body": "x", "n": 7, "s": "web"}\n\n{"body": "y", "n": 8, "s": "news"}\n')
    b.write_text('{"body": "z"}\n')
    docs = list(read_documents([a, b], text_field="body"))
    assert [(d.document_id, d.text, d.source_id) for d in docs] == [(f"{a}:1", "x", "a"), (f"{a}:3", "y", "a"),
                                                                     (f"{b}:1", "z", "b")]
    docs = list(read_documents([a], text_field="body", id_field="n", source_field="s"))
    assert [(d.document_id, d.source_id) for d in docs] == [("7", "web"), ("8", "news")]


@pytest.mark.parametrize("line, message", [
    ("not json", r"a.jsonl:2: not a JSON object"),
    ("[1, 2]", r"a.jsonl:2: found a JSON list"),
    ('{"text": "a"}, {"text": "b"}', r"a.jsonl:2: not a JSON object \(Extra data"),
    ('{"content": "x"}', r"a.jsonl:2: no 'text' field"),
    ('{"text": 5}', r"a.jsonl:2: text: found int; expected a string"),
])
def test_bad_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "ok"}\n' + line + "\n")
    with pytest.raises(ValueError, match=message):
        list(read_documents([path]))


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="inputs: .*nope.jsonl: no such file"):
        list(read_documents([tmp_path / "nope.jsonl"]))


def test_not_utf8(tmp_path):
    (tmp_path / "x.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="not UTF-8 text"):
        list(read_documents([tmp_path / "x.txt"]))


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed: Parquet input is untested here")
    import pyarrow.parquet as pq

    table = pa.table({"text": ["alpha", "beta", "gamma"], "id": [10, 11, 12]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    docs = list(read_documents([tmp_path / "t.parquet"], id_field="id"))
    assert [(d.document_id, d.text, d.source_id) for d in docs] == [("10", "alpha", "t"), ("11", "beta", "t"),
                                                                     ("12", "gamma", "t")]
    assert [d.document_id for d in read_documents([tmp_path / "t.parquet"])][-1] == f"{tmp_path / 't.parquet'}:2"
    with pytest.raises(ValueError, match="no column 'body'"):
        list(read_documents([tmp_path / "t.parquet"], text_field="body"))
