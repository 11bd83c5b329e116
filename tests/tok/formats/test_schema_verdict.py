"""`schema_verdict.is_valid` never says yes where jsonschema finds an error, and says yes to the
real files (else loading would import jsonschema after all)."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from jsonschema import Draft202012Validator

from tests.peers import ROOT
from tests.tok.formats.test_loader_fuzz import SEED, VALUES, base_documents, mutations
from tinyllm.tok.formats.schema_check import schema
from tinyllm.tok.formats.schema_verdict import is_valid
from tinyllm.tok.formats.tokenizer_json import _schema_view


def agree(doc, name: str) -> bool:
    """is_valid's verdict is True only where jsonschema finds no error; returns that verdict."""
    verdict = is_valid(doc, schema(name))
    truth = Draft202012Validator(schema(name)).is_valid(doc)
    assert not (verdict and not truth), f"is_valid said yes, jsonschema finds: {doc!r:.300}"
    return verdict


@pytest.mark.parametrize("name", ["gpt2", "smollm2", "bert", "unigram", "wordpiece", "bpe", "char"])
def test_verdicts_agree_with_jsonschema_on_mutated_documents(name):
    file_name, doc = base_documents()[name]
    schema_name = "tokenizer-char" if file_name == "tinyllm_char.json" else "tokenizer-json"
    view = _schema_view if schema_name == "tokenizer-json" else (lambda d: d)
    assert agree(view(doc), schema_name)  # the base document is valid and recognised as such
    rng = random.Random(SEED)
    yes = no = 0
    for _, variant in mutations(doc, rng):
        if agree(view(variant), schema_name):
            yes += 1
        else:
            no += 1
    assert yes > 10 and no > 10


def test_json_equality_follows_jsonschema():
    # const / enum: true is not 1, 1.0 is 1, containers compare by content.
    for value in VALUES + [1.0, 0.0, [1.0], {"a": True}, {"a": 1}]:
        for const in VALUES + [1.0, [1], {"a": 1}]:
            s = {"const": const}
            assert is_valid(value, s) == Draft202012Validator(s).is_valid(value), (value, const)


def test_unknown_keywords_are_left_to_jsonschema():
    assert not is_valid({"a": 1}, {"patternProperties": {"a": {}}})
    assert not is_valid([1, 1], {"uniqueItems": True, "items": {"type": "integer"}})
    assert is_valid(2.0, {"type": "integer", "minimum": 0})


def test_loading_a_valid_file_does_not_import_jsonschema():
    code = ("import sys; from tinyllm.tok import load; load('gpt2'); load('smollm2'); "
            "print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": ""}).stdout
    assert out.strip() == "False"
