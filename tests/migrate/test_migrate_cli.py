"""`tinyllm migrate classify|plan` on model directories."""

import json

import pytest

from tinyllm.cli import main
from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, byte_bpe


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    byte_bpe(COMPACT_MERGES).save(root / "compact-268")
    byte_bpe(BALANCED_MERGES).save(root / "balanced-272")
    return str(root / "compact-268"), str(root / "balanced-272")


def test_classify_text(pair, capsys):
    assert main(["migrate", "classify", *pair]) == 0
    out = capsys.readouterr().out
    assert out.startswith("transition: append\nvocabulary: 268 -> 272\n")
    assert "model_rows: resize the input table" in out


def test_classify_json(pair, capsys):
    assert main(["migrate", "classify", pair[1], pair[0], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "incompatible" and "retraining" in doc["required_actions"]


def test_plan_table(pair, capsys):
    assert main(["migrate", "plan", *pair, "--d-model", "64", "--tied", "--bias"]) == 0
    out = capsys.readouterr().out
    assert "input_embedding   [268, 64]  [272, 64]" in out
    assert "output_bias       [268]      [272]" in out
    assert "dP_input 256  dP_output 0  dP_bias 4  dP_trainable 260  optimizer values 520" in out
    assert "268 'er' <- [101, 114]  ('e', 'r')" in out
    assert "271 '10' <- [49, 48]  ('1', '0')" in out


def test_plan_json_and_output(pair, tmp_path, capsys):
    target = tmp_path / "plan.json"
    assert main(["migrate", "plan", *pair, "--d-model", "64", "--tied", "--bias", "--json", "-o", str(target)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(target.read_text(encoding="utf-8"))
    assert printed["optimizer_values"] == 520
    assert [r["source_old_ids"] for r in printed["new_row_initialization"]] == [[101, 114], [114, 101], [61, 61],
                                                                                 [49, 48]]


def test_plan_refuses_a_non_append_change(pair, capsys):
    assert main(["migrate", "plan", pair[1], pair[0], "--d-model", "64"]) == 2
    assert "append-only: vocab_size: old 272, new 268" in capsys.readouterr().err


def test_missing_side_is_one_line(capsys):
    assert main(["migrate", "classify", "no/such/dir", "gpt2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tinyllm: error: old: no/such/dir") and err.count("\n") == 1
