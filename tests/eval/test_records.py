"""Evaluation records and the split manifest (seed 003, 0x00A and 0x0C1 lines 2543-2566)."""

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import texts
from tinyllm.artifacts.domains import corpus_hash
from tinyllm.eval.records import (
    MANIFEST_FORMAT, Record, SplitManifest, read_manifest, validate_split_manifest, write_manifest,
)

CORPUS = {"revision": "r1", "fit_split": "fit", "ordered_document_digest": "0" * 64,
          "filter_pipeline": ["extract", "dedup"], "seed": 0, "order_policy": "record_id"}


def manifest() -> list[Record]:
    """Six records in four groups; g1 (a document and its near duplicate) stays in fit."""
    return [
        Record("r1", "g1", "fit", "The cat sleeps.", slice="prose"),
        Record("r2", "g1", "fit", "The cat wakes.", slice="prose"),
        Record("r3", "g2", "fit", "def f(x):\n    return x\n", slice="code"),
        Record("r4", "g3", "validation", "A train arrives.", slice="prose", declared_utf8_bytes=16,
               declared_codepoints=16),
        Record("r5", "g3", "validation", "Un train arrive à l'heure.", slice="prose"),
        Record("r6", "g4", "test", "猫が寝ている。", slice="cjk", declared_utf8_bytes=21, declared_codepoints=7),
    ]


# -- Record ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"record_id": ""}, r"record_id = \"\"; expected a non-empty string"),
    ({"group_id": 7}, r"group_id = 7; expected a non-empty string"),
    ({"split": None}, r"split = null; expected a non-empty string"),
    ({"slice": ""}, r"slice = \"\"; expected None or a non-empty string"),
    ({"text": b"bytes"}, r"text of record_id 'r' is a bytes; expected a str"),
    ({"text": "ok\ud800"}, r"lone surrogate at index 2; expected text that UTF-8 can encode"),
    ({"declared_utf8_bytes": -1}, r"declared_utf8_bytes = -1; expected None or a non-negative int"),
    ({"declared_codepoints": True}, r"declared_codepoints = true; expected None or a non-negative int"),
])
def test_record_fields_are_checked(kwargs, message):
    fields = {"record_id": "r", "group_id": "g", "split": "fit", "text": "x", **kwargs}
    with pytest.raises(ValueError, match=message):
        Record(**fields)


def test_record_counts_are_utf8_bytes_and_codepoints():
    record = Record("r", "g", "fit", "hé🦙")
    assert (record.utf8_bytes, record.codepoints) == (1 + 2 + 4, 3)


# -- validate_split_manifest: each rule, passing and failing -----------------------------------

def test_a_valid_manifest_counts_its_splits():
    assert validate_split_manifest(manifest()) == {"fit": 3, "validation": 2, "test": 1}


def test_undeclared_counts_are_not_checked():
    records = [Record(r.record_id, r.group_id, r.split, r.text) for r in manifest()]
    assert validate_split_manifest(records)["fit"] == 3


def test_duplicate_record_id_is_refused():
    records = manifest() + [Record("r2", "g9", "test", "again")]
    with pytest.raises(ValueError, match=r"records\[6\] \(record_id 'r2'\): the record_id is already used by "
                                         r"records\[1\]; expected unique record ids"):
        validate_split_manifest(records)


def test_a_group_spanning_two_splits_is_refused():
    records = manifest()
    records[4] = Record("r5", "g1", "validation", "The cat sleeps!")  # a near duplicate of r1
    with pytest.raises(ValueError, match=r"records\[4\] \(record_id 'r5'\): group 'g1' is in split 'validation', "
                                         r"but records\[0\] \(record_id 'r1'\) put it in 'fit'; "
                                         r"a group_id must have one split owner"):
        validate_split_manifest(records)


def test_the_blamed_record_does_not_depend_on_input_order():
    records = manifest()
    records[4] = Record("r5", "g1", "validation", "The cat sleeps!")
    for seed in range(5):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        with pytest.raises(ValueError, match=r"\(record_id 'r5'\): group 'g1' is in split 'validation'"):
            validate_split_manifest(shuffled)


def test_declared_utf8_bytes_must_match_the_text():
    records = manifest()
    records[5] = Record("r6", "g4", "test", "猫が寝ている。", declared_utf8_bytes=7)  # code points, not bytes
    with pytest.raises(ValueError, match=r"records\[5\] \(record_id 'r6'\): declared_utf8_bytes = 7, but the text "
                                         r"has 21 UTF-8 bytes"):
        validate_split_manifest(records)


def test_declared_codepoints_must_match_the_text():
    records = manifest()
    records[5] = Record("r6", "g4", "test", "猫が寝ている。", declared_codepoints=21)
    with pytest.raises(ValueError, match=r"declared_codepoints = 21, but the text has 7 code points"):
        validate_split_manifest(records)


def test_an_unknown_split_is_refused():
    records = manifest()
    records[2] = Record("r3", "g2", "train", "x")
    with pytest.raises(ValueError, match=r"records\[2\] \(record_id 'r3'\): split = 'train'; "
                                         r"expected one of fit, validation, test"):
        validate_split_manifest(records)


def test_all_three_splits_must_be_present():
    records = [r for r in manifest() if r.split != "test"]
    with pytest.raises(ValueError, match=r"no record in split test; found splits \['fit', 'validation'\], "
                                         r"expected exactly \['fit', 'validation', 'test'\]"):
        validate_split_manifest(records)


def test_a_non_record_is_refused():
    with pytest.raises(ValueError, match=r"records\[1\] is a dict; expected a Record"):
        validate_split_manifest([manifest()[0], {"record_id": "x"}])


# -- the JSONL manifest on disk ----------------------------------------------------------------

def test_round_trip_keeps_records_order_and_binds_the_corpus(tmp_path):
    path = tmp_path / "splits.jsonl"
    bound = write_manifest(path, manifest(), CORPUS)
    assert bound == corpus_hash(CORPUS)
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header == {"format": MANIFEST_FORMAT, "corpus_hash": bound, "records": 6}
    read = read_manifest(path, corpus_hash=bound)
    assert isinstance(read, SplitManifest) and read.corpus_hash == bound
    assert [r.record_id for r in read.records] == ["r1", "r2", "r3", "r4", "r5", "r6"]
    for original, back in zip(manifest(), read.records):
        # The writer declares every count, so the file binds the reference counts.
        assert back.text == original.text and back.slice == original.slice
        assert (back.declared_utf8_bytes, back.declared_codepoints) == (original.utf8_bytes, original.codepoints)
    assert [r.record_id for r in read.split("validation")] == ["r4", "r5"]


def test_reading_with_another_corpus_hash_names_both(tmp_path):
    path = tmp_path / "splits.jsonl"
    bound = write_manifest(path, manifest(), CORPUS)
    other = corpus_hash({**CORPUS, "seed": 1})
    with pytest.raises(ValueError) as info:
        read_manifest(path, corpus_hash=other)
    assert f"corpus_hash = {bound}, expected {other}" in str(info.value)
    assert str(path) in str(info.value)


def test_a_bad_json_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "splits.jsonl"
    write_manifest(path, manifest(), CORPUS)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:-1]  # the second record loses its closing brace
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}: line 3: invalid JSON"):
        read_manifest(path)


def test_a_record_line_with_a_wrong_field_names_the_line(tmp_path):
    path = tmp_path / "splits.jsonl"
    write_manifest(path, manifest(), CORPUS)
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[4])
    row["colour"] = "red"
    lines[4] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 5: record keys missing \[\], unexpected \['colour'\]"):
        read_manifest(path)


def test_a_truncated_manifest_is_refused(tmp_path):
    path = tmp_path / "splits.jsonl"
    write_manifest(path, manifest(), CORPUS)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"5 record lines; the header declares 6"):
        read_manifest(path)


def test_a_file_without_the_header_is_refused(tmp_path):
    path = tmp_path / "splits.jsonl"
    path.write_text(json.dumps(manifest()[0].to_json()) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}: line 1: header .*; expected .*{MANIFEST_FORMAT}"):
        read_manifest(path)


def test_a_hand_edited_group_leak_is_refused_on_read(tmp_path):
    path = tmp_path / "splits.jsonl"
    write_manifest(path, manifest(), CORPUS)
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[5])  # r5, in validation
    row["group_id"] = "g1"
    lines[5] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}: split manifest: records\[4\] \(record_id 'r5'\): group 'g1'"):
        read_manifest(path)


def test_writing_an_invalid_manifest_leaves_the_old_file(tmp_path):
    path = tmp_path / "splits.jsonl"
    write_manifest(path, manifest(), CORPUS)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="no record in split test"):
        write_manifest(path, manifest()[:5], CORPUS)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["splits.jsonl"]  # no temporary file left behind


def test_the_corpus_must_be_a_mapping(tmp_path):
    with pytest.raises(ValueError, match="corpus is a str; expected the corpus object"):
        write_manifest(tmp_path / "m.jsonl", manifest(), "0" * 64)


@given(st.lists(st.tuples(texts, st.sampled_from([None, "a", "b"])), min_size=3, max_size=12))
def test_any_texts_round_trip(tmp_path_factory, rows):
    records = [Record(f"r{k}", f"g{k}", ("fit", "validation", "test")[k % 3], text, slice=s)
               for k, (text, s) in enumerate(rows)]
    path = tmp_path_factory.mktemp("manifest") / "m.jsonl"
    write_manifest(path, records, CORPUS)
    back = read_manifest(path, corpus_hash=corpus_hash(CORPUS)).records
    assert [(r.record_id, r.group_id, r.split, r.text, r.slice) for r in back] == \
        [(r.record_id, r.group_id, r.split, r.text, r.slice) for r in records]
