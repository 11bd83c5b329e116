"""Special-token policy: roles from generation_config.json and tokenizer_config.json."""

import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tinyllm.tok import ByteTokenizer, CharTokenizer, load
from tinyllm.tok.load import PRESET_DIR as _PRESETS
from tinyllm.tok.load import tokenizer_from_document
from tinyllm.tok.policy import SpecialTokenPolicy, resolve_policy

PRESET_DIR = Path(_PRESETS)  # a string in the package (no pathlib on the load path)

ROOT = Path(__file__).resolve().parents[2]
BERT_DIR = ROOT / "tests" / "fixtures" / "bert-base-uncased"
SMOL_DOC = json.loads((PRESET_DIR / "smollm2" / "tokenizer.json").read_text(encoding="utf-8"))


def smol(generation=None, config=None):
    return tokenizer_from_document(SMOL_DOC, "tokenizer.json", generation_config=generation, tokenizer_config=config)


def model_dir(tmp_path: Path, source: Path, generation=None, config=None) -> Path:
    target = tmp_path / "model"
    target.mkdir()
    (target / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    for name, doc in (("generation_config.json", generation), ("tokenizer_config.json", config)):
        if doc is not None:
            (target / name).write_text(json.dumps(doc), encoding="utf-8")
    return target


def test_smollm2_preset_roles():
    tok = load("smollm2")
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.eot_id, tok.stop_ids) == (1, 2, 2, None, (2,))


def test_gpt2_preset_roles():
    tok = load("gpt2")
    assert tok.bos_id == tok.eos_id == 50256
    assert tok.pad_id is None and tok.unk_id is None and tok.stop_ids == (50256,)


def test_unk_keeps_the_model_meaning_and_the_config_declaration_is_in_the_policy():
    tok = load("smollm2")  # byte-level BPE without model.unk_token; tokenizer_config names <|endoftext|>
    assert tok.unk_id is None
    assert tok.special_token_policy.unk_id == 0
    bert = load(BERT_DIR)
    assert bert.unk_id == bert.special_token_policy.unk_id == bert.token_to_id("[UNK]")


def test_config_unk_conflicting_with_the_model_unk_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"model\.unk.*conflicts with tokenizer_config\.json: unk_token = '\[PAD\]'"):
        load(model_dir(tmp_path, BERT_DIR, config={"unk_token": "[PAD]"}))


def test_without_configs_every_role_is_none(tmp_path):
    tok = load(model_dir(tmp_path, PRESET_DIR / "smollm2"))
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id, tok.eot_id, tok.stop_ids) == (None,) * 5 + ((),)
    assert smol().special_token_policy == SpecialTokenPolicy()


def test_a_tokenizer_file_loaded_by_path_names_no_roles():
    assert load(PRESET_DIR / "smollm2" / "tokenizer.json").bos_id is None


def test_conflicting_eos_names_both_files_and_the_field(tmp_path):
    directory = model_dir(tmp_path, PRESET_DIR / "smollm2", {"eos_token_id": 5}, {"eos_token": "<|im_end|>"})
    with pytest.raises(ValueError) as raised:
        load(directory)
    message = str(raised.value)
    assert "generation_config.json: eos_token_id = 5" in message
    assert "tokenizer_config.json: eos_token = '<|im_end|>' (id 2)" in message
    assert str(directory) in message


@pytest.mark.parametrize("field, gen_field", [("bos_token", "bos_token_id"), ("pad_token", "pad_token_id")])
def test_conflicting_bos_and_pad_are_refused(field, gen_field):
    with pytest.raises(ValueError, match=rf"generation_config\.json: {gen_field} = 7 conflicts with "
                                         rf"tokenizer_config\.json: {field}"):
        smol({gen_field: 7}, {field: "<|im_start|>"})


def test_a_config_token_outside_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match=r"tokenizer_config\.json: eos_token = '<\|nope\|>' is not in the vocabulary"):
        smol(None, {"eos_token": {"content": "<|nope|>", "special": True}})


@pytest.mark.parametrize("value, expected", [(49152, "out of range for a vocabulary of 49152"),
                                             (-1, "out of range"), ("2", "expected an integer token id"),
                                             (True, "expected an integer token id"), ([], "non-empty list")])
def test_bad_generation_config_ids_are_refused(value, expected):
    with pytest.raises(ValueError, match=rf"generation_config\.json: eos_token_id.*{expected}"):
        smol({"eos_token_id": value})


def test_eos_may_be_an_int_or_a_list():
    assert smol({"eos_token_id": 2}).stop_ids == (2,)
    listed = smol({"eos_token_id": [5, 2, 0]})
    assert listed.eos_id == 5 and listed.stop_ids == (0, 2, 5)
    named = smol({"eos_token_id": [5, 2, 0]}, {"eos_token": "<|im_end|>"})
    assert named.eos_id == 2 and named.special_token_policy.eos_ids == (0, 2, 5)
    with pytest.raises(ValueError, match=r"eos_token_id = \[5, 0\] does not contain the id of tokenizer_config"):
        smol({"eos_token_id": [5, 0]}, {"eos_token": "<|im_end|>"})


def test_hf_content_objects_and_eot():
    tok = smol(None, {"bos_token": {"content": "<|im_start|>", "lstrip": False}, "eot_token": "<|im_end|>",
                      "eos_token": "<|endoftext|>"})
    assert (tok.bos_id, tok.eos_id, tok.eot_id, tok.stop_ids) == (1, 0, 2, (0, 2))


def test_null_fields_mean_absent():
    tok = smol({"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}, {"pad_token": None})
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (None, None, None)


def test_configs_must_be_objects():
    with pytest.raises(ValueError, match="generation_config.json: expected a JSON object, found list"):
        smol([1])


def test_char_tokenizer_roles_are_its_policy_and_must_agree_with_configs(tmp_path):
    tok = CharTokenizer.train(["hi"], specials=("<bos>", "<eos>", "<pad>"))
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id, tok.stop_ids) == (1, 2, 3, 0, (2,))
    tok.save(tmp_path)
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"generation_config\.json: eos_token_id = 1 conflicts with "
                                         r"tinyllm_char\.json: specials\.eos = 2"):
        load(tmp_path)


def test_byte_tokenizer_directory_reads_the_configs(tmp_path):
    (tmp_path / "config.json").write_text('{"tl_tokenizer": "bytes"}', encoding="utf-8")
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": [10, 0]}', encoding="utf-8")
    tok = load(tmp_path)
    assert isinstance(tok, ByteTokenizer) and tok.eos_id == 10 and tok.stop_ids == (0, 10)
    assert ByteTokenizer.load(tmp_path) == tok != ByteTokenizer()


def test_class_load_reads_the_configs():
    from tinyllm.tok import BPETokenizer

    assert BPETokenizer.load(PRESET_DIR / "smollm2").pad_id == 2


def test_policy_is_part_of_the_semantic_hash():
    assert smol({"pad_token_id": 2}).semantic_hash != smol().semantic_hash
    assert smol({"pad_token_id": 2}).semantic_hash == smol(None, {"pad_token": "<|im_end|>"}).semantic_hash


@given(st.lists(st.integers(0, 99), min_size=1, max_size=6), st.none() | st.integers(0, 99))
def test_stop_ids_are_sorted_unique_and_hold_eos_and_eot(eos, eot):
    lookup = {f"t{i}": i for i in range(100)}.get
    config = {"eot_token": f"t{eot}"} if eot is not None else None
    policy = resolve_policy(lookup, 100, generation_config={"eos_token_id": eos}, tokenizer_config=config)
    assert list(policy.stop_ids) == sorted(set(eos) | ({eot} if eot is not None else set()))
    assert policy.eos_id == eos[0]
    assert policy.to_json()["stop_ids"] == list(policy.stop_ids)


@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_save_keeps_the_policy_and_the_semantic_hash(tmp_path, name):
    from tinyllm.tok import load

    tok = load(name)
    tok.save(tmp_path)
    again = load(tmp_path)
    assert again.special_token_policy == tok.special_token_policy
    assert again.semantic_hash == tok.semantic_hash


def test_save_keeps_the_other_fields_of_the_config_files(tmp_path):
    import json

    from tinyllm.tok import load

    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}", "eos_token": "<|im_end|>"}))
    load("smollm2").save(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["chat_template"] == "{{ x }}"
    assert config["bos_token"] == "<|im_start|>" and config["eos_token"] == "<|im_end|>"
    assert json.loads((tmp_path / "generation_config.json").read_text()) == {
        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2}


def test_a_tokenizer_without_roles_writes_no_config_files(tmp_path):
    from tinyllm.tok import ByteTokenizer

    ByteTokenizer().save(tmp_path)
    assert list(tmp_path.iterdir()) == []
