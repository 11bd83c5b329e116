"""Document batches and shards: the Rust core equals the reference on every method (columns,
docs.json, cut, concat), on reading JSON lines and text blocks, and on encoding a shard; and
`cut_shards` does not depend on how documents were batched."""

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.rust import core, count_engine_calls, needs_rust
from tinyllm import _native
from tinyllm.corpus.batches import DocumentBatch, batches_of, cut_shards
from tinyllm.corpus.documents import Document
from tinyllm.corpus.inputs import json_block_documents, text_block_documents
from tinyllm.corpus.shards import ShardSettings, encode_shard
from tinyllm.tok import load

TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)
DOCS = st.lists(st.builds(Document, TEXT, TEXT, TEXT), max_size=8)
BERT = str(Path(__file__).resolve().parents[1] / "fixtures" / "bert-base-uncased" / "tokenizer.json")
SLOW = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)


def reference(docs):
    return DocumentBatch.from_lists([d.document_id for d in docs], [d.text for d in docs],
                                    [d.source_id for d in docs])


def native(docs):
    return core.DocBatch.from_lists([d.document_id for d in docs], [d.text for d in docs],
                                    [d.source_id for d in docs])


def rows(batch):
    return list(zip(batch.document_ids(), batch.texts(), batch.source_ids()))


def test_reference_columns_are_text_and_record_digests():
    digests, records = reference([Document('d"1', "abc", "wéb\n"), Document("d2", "", "")]).columns()
    assert digests[:32] == hashlib.sha256(b"abc").digest() and digests[32:] == hashlib.sha256(b"").digest()
    framed = (3).to_bytes(8, "little") + b'd"1' + (5).to_bytes(8, "little") + "wéb\n".encode() + digests[:32]
    assert records[:32] == hashlib.sha256(framed).digest() and len(records) == 64


def test_lone_surrogates_read_as_the_tokenizers_read_them():
    batch = reference([Document("i\ud800", "x\ud800y", "\ud83d\ude00")])
    assert batch.columns()[0] == hashlib.sha256("x\ufffdy".encode()).digest()
    assert rows(batch) == [("i\ufffd", "x\ufffdy", "\U0001f600")]


@needs_rust
@given(docs=DOCS)
def test_rust_batch_equals_the_reference(docs):
    ours, ref = native(docs), reference(docs)
    assert type(ours).__module__ == "tinyllm._core"
    assert rows(ours) == rows(ref) and len(ours) == len(ref) and ours.text_bytes == ref.text_bytes
    assert ours.columns() == ref.columns()
    assert ours.docs_json() == ref.docs_json()


@needs_rust
@given(docs=DOCS, start=st.integers(0, 8), docs_left=st.integers(1, 9), chars_left=st.integers(1, 80),
       parts=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), max_size=4))
def test_rust_cut_and_concat_equal_the_reference(docs, start, docs_left, chars_left, parts):
    ours, ref = native(docs), reference(docs)
    start = min(start, len(docs))
    assert ours.cut(start, docs_left, chars_left) == ref.cut(start, docs_left, chars_left)
    parts = [(min(a, b, len(docs)), min(max(a, b), len(docs))) for a, b in parts]
    assert rows(type(ours).concat([(ours, a, b) for a, b in parts])) == rows(
        DocumentBatch.concat([(ref, a, b) for a, b in parts]))


@needs_rust
def test_rust_batch_refuses_bad_arguments():
    batch = native([Document("a", "b")])
    with pytest.raises(ValueError, match="DocBatch.cut: found start=2"):
        batch.cut(2, 1, 1)
    with pytest.raises(ValueError, match="DocBatch.cut: .*docs_left=0"):
        batch.cut(0, 0, 1)
    with pytest.raises(ValueError, match=r"DocBatch.concat: parts\[0\]: found 0..2"):
        core.DocBatch.concat([(batch, 0, 2)])
    with pytest.raises(ValueError, match="found 1 ids, 0 texts"):
        core.DocBatch.from_lists(["a"], [], [])


@given(docs=st.lists(st.builds(Document, st.text(max_size=3), st.text(max_size=6)), max_size=30),
       size=st.integers(1, 7), shard_docs=st.integers(1, 6), shard_bytes=st.integers(1, 20))
def test_cut_shards_does_not_depend_on_batching(docs, size, shard_docs, shard_bytes):
    shards = [rows(s) for s in cut_shards(batches_of(docs, size), shard_bytes, shard_docs)]
    expected, shard, chars = [], [], 0
    for d in docs:  # the rule, one document at a time
        shard.append((d.document_id, d.text, d.source_id))
        chars += len(d.text)
        if len(shard) >= shard_docs or chars >= shard_bytes:
            expected.append(shard)
            shard, chars = [], 0
    assert shards == expected + ([shard] if shard else [])


# -- reading blocks --------------------------------------------------------------------------------

PLAIN = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
VALUE = st.one_of(PLAIN, st.integers(-10**20, 10**20), st.floats(allow_nan=True), st.booleans(), st.none(),
                  st.lists(st.integers(), max_size=2))
ROW = st.dictionaries(st.sampled_from(["text", "id", "src", "other"]), VALUE, max_size=4)
LINE = st.one_of(ROW.map(lambda r: json.dumps(r, ensure_ascii=False)), ROW.map(json.dumps),
                 st.sampled_from(["", "  ", "\r", "not json", "[1]", '{"text": "\\ud800"}', '{"text": "a"} {}',
                                  '{"text": "x", "text": 1}', '{"text": 1, "text": "x"}', '{"text": "é\\n\\u0000"}']))
FIELDS = st.sampled_from([(None, None), ("id", None), ("id", "src"), (None, "src")])


def _read_reference(read, *args):
    try:
        return [tuple(d) for d in read(*args)]
    except ValueError as e:
        return str(e)


@needs_rust
@SLOW
@given(lines=st.lists(LINE, max_size=12), ending=st.sampled_from(["\n", "\r\n"]), fields=FIELDS,
       first=st.integers(1, 10**6))
def test_rust_json_lines_equal_the_reference(monkeypatch, lines, ending, fields, first):
    block = ending.join(lines).encode("utf-8") + (ending.encode() if lines else b"")
    id_field, source_field = fields
    expected = _read_reference(json_block_documents, block, first, "f.jsonl", "f", "text", id_field, source_field)
    found = core.read_json_lines(block, "f.jsonl", first, "text", id_field, source_field, "f")
    if found is None:  # the reference reads this block
        return
    assert rows(found) == expected


@needs_rust
def test_rust_json_lines_read_the_plain_case_and_leave_the_rest():
    block = b'{"text": "a", "id": 5}\n\n{"id": "k", "text": "b\\u00e9", "x": [1, {"y": null}]}\n'
    found = core.read_json_lines(block, "f", 3, "text", "id", None, "f")
    assert rows(found) == [("5", "a", "f"), ("k", "bé", "f")]
    for bad in [b'{"text": 1}\n', b'{"text": "\\ud800"}\n', b'{"text": "a", "n": NaN}\n', b"\xff\n"]:
        assert core.read_json_lines(bad, "f", 1, "text", None, None, "f") is None


@needs_rust
@SLOW
@given(parts=st.lists(st.sampled_from(["a", "é", " ", "\r", "\n", "\r\n", "\x00", "\U0001f600"]), max_size=40),
       first=st.integers(1, 10**6))
def test_rust_text_lines_equal_the_reference(parts, first):
    block = "".join(parts).encode("utf-8")
    found = core.read_text_lines(block, "t.txt", first, "t")
    assert rows(found) == [tuple(d) for d in text_block_documents(block, first, "t.txt", "t")]


@needs_rust
def test_rust_text_lines_leave_invalid_utf8_to_the_reference():
    assert core.read_text_lines(b"ok\n\xff\n", "t", 1, "t") is None
    with pytest.raises(ValueError, match=r"t:2: not UTF-8 text"):
        text_block_documents(b"ok\n\xff\n", 1, "t", "t")


# -- encoding a shard ------------------------------------------------------------------------------

SHARD_TEXT = st.lists(st.sampled_from(["a", "b", " ", "é", "\n", "<|endoftext|>", "[SEP]", "\ud800", "42"]),
                      max_size=12).map("".join)


def _files(shard):
    return shard.files()


@needs_rust
@SLOW
@pytest.mark.parametrize("preset", ["gpt2", BERT])
@given(texts=st.lists(SHARD_TEXT, max_size=6), policy=st.sampled_from(["none", "eos", "bos_eos", "bos"]),
       cut=st.one_of(st.none(), st.integers(0, 6)))
def test_rust_shard_equals_the_reference(monkeypatch, preset, texts, policy, cut):
    tok = load(preset)
    try:
        config = ShardSettings.for_tokenizer(tok, policy, None if cut is None else cut + 3)
    except ValueError:  # the tokenizer lacks the policy's BOS or EOS
        return
    docs = [Document(f"d{k}", t, "s") for k, t in enumerate(texts)]
    expected = _files(encode_shard(tok, reference(docs), config))
    counts = count_engine_calls(monkeypatch, tok)
    assert _files(encode_shard(tok, native(docs), config)) == expected
    assert counts["encode_doc_batch"] == 1
    monkeypatch.undo()


@needs_rust
def test_rust_shard_in_uint32(monkeypatch):
    tok = load("o200k")
    docs = [Document("a", "Hello world"), Document("b", "")]
    config = ShardSettings.for_tokenizer(tok, "eos")
    assert config.dtype == "uint32"
    counts = count_engine_calls(monkeypatch, tok)
    shard = encode_shard(tok, native(docs), config)
    assert counts["encode_doc_batch"] == 1
    assert shard.ids.dtype == np.uint32 and shard.ids.tolist() == tok.encode("Hello world") + [tok.eos_id, tok.eos_id]
    assert _files(shard) == _files(encode_shard(tok, reference(docs), config))


def test_without_the_core_the_reference_runs_and_says_so(monkeypatch):
    import tinyllm.corpus.shards as shards

    monkeypatch.setattr(_native, "core", None)
    monkeypatch.setattr(shards, "_warned", False)
    tok = load("gpt2")
    config = ShardSettings.for_tokenizer(tok)
    with pytest.warns(_native.SlowPathWarning, match="encode_dataset: shards"):
        shard = encode_shard(tok, reference([Document("a", "b")]), config)
    assert shard.ids.tolist() == tok.encode("b") + [tok.eos_id]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encode_shard(tok, reference([Document("a", "b")]), config)  # once per process


@needs_rust
@given(block=st.binary(max_size=200).map(lambda b: b.replace(b"\x00", b"\n")))
def test_rust_line_count_equals_bytes_count(block):
    assert core.count_lines(block) == block.count(b"\n")


@pytest.mark.parametrize("name, content", [
    ("a.jsonl", '{"text": "one"}\n\n{"text": "two \\ud800"}\n{"text": "three", "n": 1}\r\n{"text": "four"}'),
    ("b.txt", "one\r\n\ntwo é\nthree\rx\n\n\nfour"),
])
def test_files_read_in_small_blocks_give_the_same_documents(tmp_path, monkeypatch, name, content):
    """Line numbers carry across blocks, and a block the core leaves to the reference (the lone
    surrogate escape) reads the same, with or without the core."""
    import tinyllm.corpus.inputs as inputs

    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    whole = list(read(path))
    monkeypatch.setattr(inputs, "BLOCK_BYTES", 5)
    assert list(read(path)) == whole
    monkeypatch.setattr(_native, "core", None)
    assert list(read(path)) == whole
    assert [d.document_id for d in whole] == [f"{path}:{n}" for n in (1, 3, 4, 5)] if name == "a.jsonl" else \
        [f"{path}:{n}" for n in (1, 3, 4, 7)]
    assert whole[1].text == ("two \ufffd" if name == "a.jsonl" else "two é")


def read(path):
    from tinyllm.corpus.inputs import read_documents

    return read_documents([path])
