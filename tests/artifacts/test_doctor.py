"""`tinyllm doctor`: each check on a crafted broken directory or bundle, the healthy presets, the CLI."""

import copy
import json
import shutil
from pathlib import Path

import pytest

from tinyllm.artifacts.doctor import CHECKS, STATUSES, diagnose, has_errors
from tinyllm.cli import main
from tinyllm.tok.load import preset_directory

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "examples" / "bundles" / "ids-0-11"
NEGATIVE = BUNDLES / "negative"
EXPECTED = json.loads((NEGATIVE / "expected.json").read_text())


def copy_preset(tmp_path: Path, name: str, rows=None) -> Path:
    out = tmp_path / name
    shutil.copytree(preset_directory(name), out)
    if rows is not None:  # a Hugging Face model config: it describes the model, not the tokenizer
        (out / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": rows}))
    return out


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    result = change(doc)
    path.write_text(json.dumps(doc if result is None else result, ensure_ascii=False))


def by_check(findings) -> dict:
    return {f.check: f for f in findings}


def errors(findings) -> dict:
    return {f.check: f for f in findings if f.status == "error"}


# -- every run lists every check ----------------------------------------------------------------

@pytest.mark.parametrize("target", ["smollm2", "gpt2", str(BUNDLES / "bundle.json"), str(BUNDLES / "release")])
def test_every_check_reports_once_in_order(target):
    findings = diagnose(target)
    assert [f.check for f in findings] == list(CHECKS)
    assert all(f.status in STATUSES and f.saw for f in findings)
    assert all(f.fix for f in findings if f.status in ("warn", "error"))


# -- healthy inputs -----------------------------------------------------------------------------

def test_smollm2_is_healthy_but_warns_that_pad_is_eos(tmp_path):
    findings = by_check(diagnose(copy_preset(tmp_path, "smollm2", rows=49152)))
    assert not errors(findings.values())
    assert findings["pad_eos_labels"].status == "warn"
    assert "pad 2 '<|im_end|>'" in findings["pad_eos_labels"].saw
    assert "distinct pad token" in findings["pad_eos_labels"].fix
    assert "attention" in findings["pad_eos_labels"].fix
    assert findings["vocab_rows"].status == "ok"
    assert findings["template_controls"].status == "ok"
    assert "<|im_start|> = 1" in findings["template_controls"].saw
    assert findings["double_bos"].status == "ok"
    assert findings["bundle_reconcile"].status == "skip"


def test_gpt2_is_healthy_and_skips_what_does_not_apply():
    findings = by_check(diagnose("gpt2"))
    assert not has_errors(findings.values())
    assert findings["template_controls"].status == "skip"  # gpt2 has no chat template
    assert findings["vocab_rows"].status == "skip"  # no config.json
    assert findings["pad_eos_labels"].status == "ok"


def test_seed_bundle_has_no_findings_beyond_ok():
    findings = diagnose(BUNDLES / "bundle.json")
    assert {f.status for f in findings} == {"ok"}


# -- vocab_rows ---------------------------------------------------------------------------------

def test_config_rows_below_the_vocabulary_is_an_error(tmp_path):
    finding = by_check(diagnose(copy_preset(tmp_path, "smollm2", rows=49000)))["vocab_rows"]
    assert finding.status == "error"
    assert "config.json: vocab_size = 49000 < 49152" in finding.saw
    assert "ids 49000..49151 have no row" in finding.saw


def test_padding_rows_are_fine_but_said(tmp_path):
    finding = by_check(diagnose(copy_preset(tmp_path, "smollm2", rows=49280)))["vocab_rows"]
    assert finding.status == "ok"
    assert "128 padding rows" in finding.saw


def test_nested_text_config_rows_are_read(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    (model / "config.json").write_text(json.dumps({"text_config": {"vocab_size": 50000}}))
    finding = by_check(diagnose(model))["vocab_rows"]
    assert finding.status == "error" and "text_config.vocab_size = 50000" in finding.saw


# -- special_id_collision ----------------------------------------------------------------------

def test_special_id_shared_with_a_different_model_piece_is_an_error(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    edit_json(model / "tokenizer.json", lambda d: d["added_tokens"].append(
        {"id": 100, "content": "<|tool|>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}))
    piece = {i: p for p, i in json.loads((model / "tokenizer.json").read_text())["model"]["vocab"].items()}[100]
    finding = by_check(diagnose(model))["special_id_collision"]
    assert finding.status == "error"
    assert f"id 100 is added token '<|tool|>' and model piece {piece!r}" in finding.saw


def test_special_spelled_like_another_model_piece_warns(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    edit_json(model / "tokenizer.json", lambda d: d["added_tokens"].append(
        {"id": 50257, "content": "Hello", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}))
    finding = by_check(diagnose(model))["special_id_collision"]
    assert finding.status == "warn"
    assert "'Hello' is added id 50257 and also model piece id 15496" in finding.saw


# -- template_controls --------------------------------------------------------------------------

def test_template_control_missing_from_the_vocabulary_is_an_error(tmp_path):
    model = copy_preset(tmp_path, "smollm2")
    edit_json(model / "tokenizer_config.json", lambda c: c.update(
        chat_template=c["chat_template"].replace("'<|im_end|>'", "'<|im_end|><|eot_id|>'")))
    finding = by_check(diagnose(model))["template_controls"]
    assert finding.status == "error"
    assert "<|eot_id|> is not in the vocabulary" in finding.saw
    assert "special: true" in finding.fix


def test_template_control_that_is_not_special_is_an_error(tmp_path):
    model = copy_preset(tmp_path, "smollm2")
    edit_json(model / "tokenizer.json", lambda d: d["added_tokens"][2].update(special=False))
    finding = by_check(diagnose(model))["template_controls"]
    assert finding.status == "error"
    assert "<|im_end|> is added id 2 but not special" in finding.saw


def test_bracket_controls_written_as_text_only_warn(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    (model / "chat_template.jinja").write_text(
        "{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}")
    finding = by_check(diagnose(model))["template_controls"]
    assert finding.status == "warn"
    assert "[INST] is not in the vocabulary" in finding.saw


# -- double_bos ---------------------------------------------------------------------------------

POST_PROCESSOR_ADDING_BOS = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1], "tokens": ["<|im_start|>"]}},
}


def test_template_bos_plus_post_processor_bos_is_double_bos(tmp_path):
    model = copy_preset(tmp_path, "smollm2")
    edit_json(model / "tokenizer.json", lambda d: d.update(post_processor=POST_PROCESSOR_ADDING_BOS))
    finding = by_check(diagnose(model))["double_bos"]
    assert finding.status == "error"
    assert "the template writes 1" in finding.saw and "starts with 2 ([1, 1," in finding.saw
    assert "add_special=False" in finding.fix


def test_post_processor_bos_alone_is_fine(tmp_path):
    model = copy_preset(tmp_path, "smollm2")
    edit_json(model / "tokenizer.json", lambda d: d.update(post_processor=POST_PROCESSOR_ADDING_BOS))
    edit_json(model / "tokenizer_config.json", lambda c: c.update(
        chat_template="{% for m in messages %}{{ m['content'] }}<|im_end|>{% endfor %}"))
    finding = by_check(diagnose(model))["double_bos"]
    assert finding.status == "ok" and "the template writes 0" in finding.saw


# -- pad_eos_labels -----------------------------------------------------------------------------

def test_pad_equal_to_eos_warns(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    edit_json(model / "generation_config.json", lambda g: g.update(pad_token_id=50256))
    findings = diagnose(model)
    assert by_check(findings)["pad_eos_labels"].status == "warn"
    assert not has_errors(findings)


def test_distinct_pad_is_ok():
    finding = by_check(diagnose(BUNDLES / "bundle.json"))["pad_eos_labels"]
    assert finding.status == "ok" and "pad 3 '<pad>'" in finding.saw


# -- stop_ids_range -----------------------------------------------------------------------------

def test_stop_id_outside_the_vocabulary_is_an_error_not_a_crash(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    edit_json(model / "generation_config.json", lambda g: g.update(eos_token_id=[50256, 60000]))
    findings = by_check(diagnose(model))
    assert findings["stop_ids_range"].status == "error"
    assert "generation_config.json: eos_token_id[1] = 60000" in findings["stop_ids_range"].saw
    assert "50257 ids (0..50256)" in findings["stop_ids_range"].saw
    assert findings["tokenizer_load"].status == "error"  # the policy refuses it at load
    assert "60000" in findings["tokenizer_load"].saw
    assert findings["pad_eos_labels"].status == "skip"


def test_checkpoint_stop_id_outside_the_vocabulary(tmp_path):
    bundle = json.loads((BUNDLES / "bundle.json").read_text())
    bundle["checkpoint"]["special_ids"]["stop"] = [2, 12]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    finding = by_check(diagnose(path))["stop_ids_range"]
    assert finding.status == "error" and "checkpoint.special_ids.stop[1] = 12" in finding.saw


# -- added_token_flags --------------------------------------------------------------------------

def test_normalized_special_token_warns(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    edit_json(model / "tokenizer.json", lambda d: d["added_tokens"][0].update(normalized=True))
    finding = by_check(diagnose(model))["added_token_flags"]
    assert finding.status == "warn"
    assert "special '<|endoftext|>' (id 50256) normalized: true" in finding.saw


@pytest.mark.parametrize("flag", ["lstrip", "rstrip", "single_word"])
def test_refused_flag_is_reported_with_the_load_error(tmp_path, flag):
    model = copy_preset(tmp_path, "gpt2")
    edit_json(model / "tokenizer.json", lambda d: d["added_tokens"][0].update({flag: True}))
    findings = by_check(diagnose(model))
    assert findings["added_token_flags"].status == "error"
    assert f"'<|endoftext|>' (id 50256) {flag}: true" in findings["added_token_flags"].saw
    assert findings["tokenizer_load"].status == "error"
    assert flag in findings["tokenizer_load"].saw


# -- bundle_reconcile ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_negative_bundles_are_errors_naming_the_reconcile_check(name):
    expected = EXPECTED[name]
    findings = diagnose(NEGATIVE / name)
    finding = by_check(findings)["bundle_reconcile"]
    assert finding.status == "error"
    assert finding.saw.startswith(f"reconcile: {expected['check']}: {expected['field']}: ")
    assert finding.fix
    assert has_errors(findings)


def test_stale_dataset_hash_says_to_re_encode():
    finding = by_check(diagnose(NEGATIVE / "stale-dataset-tokenizer-hash.json"))["bundle_reconcile"]
    assert "re-encode the dataset" in finding.fix


@pytest.mark.parametrize("name, where", [("input-rows-do-not-cover-max-id.json", "checkpoint.input_embedding_rows"),
                                         ("output-rows-do-not-cover-max-id.json", "checkpoint.output_vocab_rows")])
def test_rows_fixtures_fail_vocab_rows_too(name, where):
    finding = by_check(diagnose(NEGATIVE / name))["vocab_rows"]
    assert finding.status == "error" and f"{where} = 11 < 12" in finding.saw


# -- vocab_grown_without_resize -----------------------------------------------------------------

def test_added_tokens_beyond_config_rows_are_growth_without_resize(tmp_path):
    model = copy_preset(tmp_path, "gpt2", rows=50257)
    edit_json(model / "tokenizer.json", lambda d: d["added_tokens"].append(
        {"id": 50257, "content": "<|im_start|>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}))
    findings = by_check(diagnose(model))
    grown = findings["vocab_grown_without_resize"]
    assert grown.status == "error"
    assert "config.json: vocab_size = 50257, but 1 added ids beyond it (50257 '<|im_start|>')" in grown.saw
    assert ">= 50258 rows" in grown.fix
    assert findings["vocab_rows"].status == "error"


def test_input_resized_but_output_head_not(tmp_path):
    bundle = copy.deepcopy(json.loads((BUNDLES / "bundle.json").read_text()))
    bundle["tokenizer"]["tokenizer_json"]["added_tokens"].append(
        {"id": 12, "content": "<tool>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True})
    bundle["checkpoint"]["input_embedding_rows"] = 13
    path = tmp_path / "grown.json"
    path.write_text(json.dumps(bundle))
    grown = by_check(diagnose(path))["vocab_grown_without_resize"]
    assert grown.status == "error"
    assert "checkpoint.output_vocab_rows = 12, but 1 added ids beyond it (12 '<tool>')" in grown.saw
    assert "while checkpoint.input_embedding_rows = 13 was resized" in grown.saw


def test_a_different_tokenizer_is_not_called_growth(tmp_path):
    grown = by_check(diagnose(copy_preset(tmp_path, "smollm2", rows=32000)))["vocab_grown_without_resize"]
    assert grown.status == "skip" and "not a growth" in grown.saw


# -- unreadable tokenizer, bad arguments --------------------------------------------------------

def test_unparsable_tokenizer_json_is_a_finding(tmp_path):
    model = copy_preset(tmp_path, "gpt2")
    (model / "tokenizer.json").write_text("{not json")
    findings = by_check(diagnose(model))
    assert findings["tokenizer_load"].status == "error"
    assert findings["added_token_flags"].status == "skip"


@pytest.mark.parametrize("name, text", [("missing", None), (".", None), ("x.json", "[1]"), ("x.json", "{")])
def test_not_a_model_directory_or_bundle_is_a_value_error(tmp_path, name, text):
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match="x.json|missing|no tokenizer here"):
        diagnose(tmp_path / name)


# -- the command line ---------------------------------------------------------------------------

def test_cli_exit_0_with_warnings(capsys, tmp_path):
    assert main(["doctor", str(copy_preset(tmp_path, "smollm2", rows=49152))]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == len(CHECKS) + 1 and err == ""
    assert lines[0].startswith("ok    tokenizer_load: BPETokenizer, 49152 ids")
    assert any(line.startswith("warn  pad_eos_labels: ") and " -> fix: " in line for line in lines)
    assert lines[-1].endswith("10 checks, 0 errors, 1 warning, 1 skipped")


def test_cli_exit_1_on_an_error(capsys, tmp_path):
    assert main(["doctor", str(NEGATIVE / "output-rows-do-not-cover-max-id.json")]) == 1
    out, _ = capsys.readouterr()
    assert "error vocab_rows: checkpoint.output_vocab_rows = 11 < 12" in out


def test_cli_json_is_the_same_findings_as_data(capsys):
    assert main(["doctor", "--json", str(NEGATIVE / "bos-mismatch.json")]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [d["check"] for d in data] == list(CHECKS)
    assert all(set(d) == {"check", "status", "saw", "fix"} for d in data)
    assert {d["check"]: d["status"] for d in data}["bundle_reconcile"] == "error"


def test_cli_exit_2_on_bad_input(capsys, tmp_path):
    assert main(["doctor", str(tmp_path / "nope")]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("tinyllm: error: doctor: ") and err.count("\n") == 1
    assert main(["doctor"]) == 2
