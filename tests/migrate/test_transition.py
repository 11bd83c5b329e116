"""classify_transition: one crafted pair of model directories (or bundles) per class."""

import json
import shutil

import pytest

from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, byte_bpe
from tinyllm.migrate.transition import ACTIONS, KINDS, classify_transition

TEMPLATE = "{% for m in messages %}<|reserved_0|>{{ m.content }}<|reserved_1|>{% endfor %}"


def _save(tok, path):
    tok.save(path)
    return path


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("transition")
    compact = _save(byte_bpe(COMPACT_MERGES), root / "compact")
    out = {"compact": compact, "balanced": _save(byte_bpe(BALANCED_MERGES), root / "balanced")}
    out["copy"] = shutil.copytree(compact, root / "copy")
    repack = shutil.copytree(compact, root / "repack")
    doc = json.loads((repack / "tokenizer.json").read_text(encoding="utf-8"))
    (repack / "tokenizer.json").write_text(json.dumps(doc, indent=4, sort_keys=True), encoding="utf-8")
    out["repack"] = repack
    templated = shutil.copytree(compact, root / "templated")
    (templated / "chat_template.jinja").write_text(TEMPLATE, encoding="utf-8")
    out["templated"] = templated
    swapped = list(BALANCED_MERGES)
    swapped[4], swapped[5] = swapped[5], swapped[4]  # "er" and "re" change ranks
    out["swapped"] = _save(byte_bpe(swapped), root / "swapped")
    return out


def test_byte_identical(dirs):
    t = classify_transition(dirs["compact"], dirs["copy"])
    assert t.kind == "byte_identical"
    assert t.required_actions == ("integrity_checks",)
    assert "release files are equal" in t.reasons[0]


def test_repackage_reformatted_file(dirs):
    t = classify_transition(dirs["compact"], dirs["repack"])
    assert t.kind == "repackage"
    assert any("release files differ: tokenizer.json" in r for r in t.reasons)
    assert any("golden cases agree" in r for r in t.reasons)
    assert "datasets" not in t.required_actions and "model_rows" not in t.required_actions


def test_template_only(dirs):
    t = classify_transition(dirs["compact"], dirs["templated"])
    assert t.kind == "template_only"
    assert t.old_template_hash is None and t.new_template_hash is not None
    assert {"datasets", "caches", "golden_cases"} <= set(t.required_actions)
    assert "model_rows" not in t.required_actions


def test_append(dirs):
    t = classify_transition(dirs["compact"], dirs["balanced"])
    assert t.kind == "append"
    assert t.new_ids == (268, 272)
    assert {"model_rows", "optimizer_state", "datasets", "caches", "golden_cases"} <= set(t.required_actions)
    assert any("ids 268..271 are appended" in r for r in t.reasons)
    # Append-only keeps old ids, not old segmentations: "er" now encodes as one new id.
    [resegmented] = [r for r in t.reasons if "encode differently" in r]
    assert not resegmented.startswith("0 of ")


def test_incompatible_reordered_merges(dirs):
    t = classify_transition(dirs["balanced"], dirs["swapped"])
    assert t.kind == "incompatible"
    assert any("merges[4]" in r for r in t.reasons)
    assert "retraining" in t.required_actions


def test_incompatible_shrinking(dirs):
    t = classify_transition(dirs["balanced"], dirs["compact"])
    assert t.kind == "incompatible"
    assert any("vocab_size" in r for r in t.reasons)


def test_incompatible_other_family(dirs):
    t = classify_transition(dirs["compact"], "gpt2")
    assert t.kind == "incompatible"
    assert any("frame.post_processor" in r for r in t.reasons)


def test_incompatible_renamed_control(dirs):
    controls = [f"<|reserved_{k}|>" for k in range(8)]
    controls[1] = "<|im_end|>"
    t = classify_transition(dirs["compact"], byte_bpe(BALANCED_MERGES, controls))
    assert t.kind == "incompatible"
    assert any("id 257.added" in r for r in t.reasons)


def test_policy_only_change_is_template_only(dirs, tmp_path):
    moved = shutil.copytree(dirs["compact"], tmp_path / "eos")
    (moved / "generation_config.json").write_text(json.dumps({"eos_token_id": 257}), encoding="utf-8")
    t = classify_transition(dirs["compact"], moved)
    assert t.kind == "template_only"
    assert any("eos_id None -> 257" in r for r in t.reasons)


def test_equal_semantics_with_failing_golden_is_incompatible():
    bundle = json.loads(open("examples/bundles/ids-0-11/bundle.json", encoding="utf-8").read())
    other = json.loads(json.dumps(bundle))
    other["tokenizer"]["release_files"][0]["sha256"] = "f" * 64  # a repackaged file
    assert classify_transition(bundle, other).kind == "repackage"
    bundle["golden"]["cases"][0]["ids"] = [0] + bundle["golden"]["cases"][0]["ids"]  # recorded by another runtime
    t = classify_transition(bundle, other)
    assert t.kind == "incompatible"
    assert any("golden" in r for r in t.reasons)


def test_every_kind_and_action_is_declared(dirs):
    for pair in (("compact", "copy"), ("compact", "repack"), ("compact", "templated"), ("compact", "balanced"),
                 ("balanced", "swapped")):
        t = classify_transition(dirs[pair[0]], dirs[pair[1]])
        assert t.kind in KINDS
        assert set(t.required_actions) <= set(ACTIONS)
        assert json.loads(json.dumps(t.to_json()))["kind"] == t.kind


@pytest.mark.parametrize("value", [42, "no/such/dir"])
def test_bad_side_names_it(value):
    with pytest.raises(ValueError, match="^old: "):
        classify_transition(value, "gpt2")
