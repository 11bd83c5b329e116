"""Loader errors: the JSON Schema runs first, every malformed file gives a ValueError naming the
JSON path, the value found and what was expected, and the schema agrees with the reader."""

import copy
import json

import jsonschema
import pytest

from tests.tok.formats.test_loader_fuzz import base_documents
from tests.tok.formats.test_tokenizer_json import tiny_doc
from tinyllm.tok.formats import schema_check as schemas
from tinyllm.tok.formats.tokenizer_json import MAX_ID
from tinyllm.tok.load import load, tokenizer_from_document


@pytest.fixture(scope="module")
def docs():
    return {name: doc for name, (_, doc) in base_documents().items()}


def with_change(doc, path, value):
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


# The leaks a new user found: each raised TypeError, AttributeError or KeyError before.
LEAKS = [
    ("bert", ("post_processor", "single"), 3, "post_processor.single: expected a list, found 3"),
    ("bert", ("post_processor", "special_tokens"), 1.5, "post_processor.special_tokens: expected an object, found 1.5"),
    ("bert", ("post_processor", "special_tokens"), "x", 'post_processor.special_tokens: expected an object, found "x"'),
    ("gpt2", ("normalizer",), {"type": ["NFC"]}, 'normalizer.type: expected one of "NFC", "NFKC", "Lowercase"'),
    ("smollm2", ("pre_tokenizer", "pretokenizers", 1), None, "pre_tokenizer.pretokenizers[1]: expected an object, found null"),
]


@pytest.mark.parametrize("name,path,value,message", LEAKS, ids=[f"{n}:{p[-1]}={v!r}" for n, p, v, _ in LEAKS])
def test_reported_leaks_are_value_errors_naming_the_path(docs, name, path, value, message):
    with pytest.raises(ValueError) as e:
        tokenizer_from_document(with_change(docs[name], path, value), "tokenizer.json")
    assert str(e.value).startswith("tokenizer.json: " + message)


@pytest.mark.parametrize("path,value,message", [
    (("model",), None, "model: expected a model object, found null"),
    (("model", "vocab"), [], "model.vocab: expected an object mapping tokens to ids, found []"),
    (("model", "merges"), {}, "model.merges: expected a list, found {}"),
    (("model", "ignore_merges"), "no", 'model.ignore_merges: expected true or false, found "no"'),
    (("model", "fuse_unk"), 1, "model.fuse_unk: expected true or false, found 1"),
    (("model", "continuing_subword_prefix"), 2, "model.continuing_subword_prefix: expected a string or null, found 2"),
    (("added_tokens", 0, "id"), -3, f"added_tokens[0].id: expected an integer id in [0, {MAX_ID}], found -3"),
    (("added_tokens", 0, "id"), 2**64, f"added_tokens[0].id: expected an integer id in [0, {MAX_ID}], found 18446744073709551616"),
    (("added_tokens", 0, "content"), None, "added_tokens[0].content: expected a non-empty string, found null"),
    (("pre_tokenizer", "add_prefix_space"), None, "pre_tokenizer.add_prefix_space: expected true or false, found null"),
    (("decoder",), [], "decoder: expected an object or null, found []"),
    (("version",), 1.0, "version: found 1.0, expected \"1.0\""),
])
def test_schema_errors_name_path_found_and_expected(path, value, message):
    doc = with_change(tiny_doc(), path, value)
    with pytest.raises(ValueError) as e:
        tokenizer_from_document(doc, "tokenizer.json")
    assert str(e.value) == "tokenizer.json: " + message


def test_missing_and_unknown_fields(docs):
    doc = copy.deepcopy(docs["bert"])
    del doc["model"]["vocab"]
    with pytest.raises(ValueError, match=r"^tokenizer.json: model.vocab: missing; expected an object mapping tokens"):
        tokenizer_from_document(doc, "tokenizer.json")
    doc = with_change(docs["bert"], ("post_processor", "special_tokens", "[CLS]", "colour"), "red")
    with pytest.raises(ValueError, match=r'special_tokens\["\[CLS\]"\]\.colour: unknown field \(value "red"\)'):
        tokenizer_from_document(doc, "tokenizer.json")


def test_the_first_problem_in_document_order_is_reported():
    doc = tiny_doc()
    doc["normalizer"] = 3
    doc["decoder"] = 4
    doc["model"]["dropout"] = 0.5
    with pytest.raises(ValueError, match=r"^tokenizer.json: normalizer: expected an object or null, found 3$"):
        tokenizer_from_document(doc, "tokenizer.json")


# Items of model.vocab / model.merges are checked by the reader's loop, not by jsonschema (speed):
# the schema still rejects the same items, and the reader names the item the schema's error is in.
BIG_ITEMS = [
    ("gpt2", ("model", "vocab", "Ġt"), -1),
    ("gpt2", ("model", "vocab", "Ġt"), "256"),
    ("gpt2", ("model", "vocab", "Ġt"), MAX_ID + 1),
    ("gpt2", ("model", "merges", 2), "Ġ t h"),
    ("gpt2", ("model", "merges", 2), ["Ġ", 7]),
    ("gpt2", ("model", "merges", 2), 12),
    ("unigram", ("model", "vocab", 3), ["a"]),
    ("unigram", ("model", "vocab", 3), ["", -1.0]),
    ("unigram", ("model", "vocab", 3), {"a": 1}),
    ("bert", ("model", "vocab", "the"), None),
]


@pytest.mark.parametrize("name,path,value", BIG_ITEMS, ids=[f"{n}:{p[1]}={v!r}" for n, p, v in BIG_ITEMS])
def test_reader_item_checks_agree_with_the_schema(docs, name, path, value):
    doc = with_change(docs[name], path, value)
    with pytest.raises(ValueError) as by_schema:
        schemas.validate(doc, "tokenizer-json", "tokenizer.json")  # the whole document, items included
    with pytest.raises(ValueError) as by_reader:
        tokenizer_from_document(doc, "tokenizer.json")
    schema_path, schema_says = str(by_schema.value)[len("tokenizer.json: "):].split(": ", 1)
    reader_path, reader_says = str(by_reader.value)[len("tokenizer.json: "):].split(": ", 1)
    assert reader_path.startswith(f"model.{path[1]}[")
    assert reader_says.startswith("expected ") and schema_says.startswith("expected ")
    if reader_path == schema_path:  # the same place: the same words
        assert reader_says == schema_says
    else:  # the schema points inside the item
        assert schema_path.startswith(reader_path + "[") or reader_path.startswith(schema_path), (schema_path, reader_path)


def test_schema_is_valid_and_accepts_every_shipped_document(docs):
    schema = schemas.schema("tokenizer-json")
    jsonschema.Draft202012Validator.check_schema(schema)
    for name, doc in docs.items():
        if name not in ("char", "config"):
            jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    jsonschema.validate(tiny_doc(), schema, cls=jsonschema.Draft202012Validator)


def test_semantic_checks_stay_in_the_reader(docs):
    doc = copy.deepcopy(docs["wordpiece"])
    doc["added_tokens"].append({"id": 1, "content": "[MASK]"})
    with pytest.raises(ValueError, match=r'added_tokens\[2\].id: 1 is already the id of added_tokens\[0\] \("\[CLS\]"\)'):
        tokenizer_from_document(doc, "tokenizer.json")
    doc = with_change(docs["bert"], ("post_processor", "special_tokens", "[CLS]", "ids"), [MAX_ID])
    with pytest.raises(ValueError, match=r'special_tokens\["\[CLS\]"\].ids\[0\]: 16777215 is not the id of a token'):
        tokenizer_from_document(doc, "tokenizer.json")
    doc = with_change(docs["gpt2"], ("model", "vocab", "Ġt"), 0)
    with pytest.raises(ValueError, match=r'model.vocab\["Ġt"\]: id 0 is already the id of "!"'):
        tokenizer_from_document(doc, "tokenizer.json")


def test_deep_nesting_is_refused_by_path(tmp_path):
    inner = {"type": "NFC"}
    for _ in range(200):
        inner = {"type": "Sequence", "normalizers": [inner]}
    doc = tiny_doc()
    doc["normalizer"] = inner
    with pytest.raises(ValueError, match=r"^tokenizer.json: normalizer(\.normalizers(\[0\])?)+: nested more than 64 levels"):
        tokenizer_from_document(doc, "tokenizer.json")


@pytest.mark.parametrize("content,message", [
    (b"", "invalid JSON at line 1 column 1"),
    (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [', "invalid JSON at line 1 column 57"),
    (b'{"model": NaN}', "invalid JSON at line 1 column 11: NaN is not a JSON number"),
    (b'\xef\xbb\xbf{"model": 1}', "invalid JSON at line 1 column 1"),
    (b'{"model": "\xff"}', "byte 11 is not valid UTF-8"),
])
def test_files_that_are_not_json_name_the_file_and_position(tmp_path, content, message):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}: {message}")


def test_char_file_schema_runs_first(tmp_path):
    path = tmp_path / "tinyllm_char.json"
    path.write_text(json.dumps({"type": "char", "vocab": ["<unk>", ["a"]], "specials": {"unk": 0, "bos": None}}))
    with pytest.raises(ValueError) as e:
        load(path)
    assert str(e.value) == f'{path}: vocab[1]: expected a non-empty string, found ["a"]'
