"""Golden cases (issue 13 part 6, seed 003 0x0F): make -> verify, one Mismatch per tampered field,
the JSON-lines file through the CLI handlers, the golden hash, and user-typed control text."""

import copy
import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinyllm.artifacts import golden
from tinyllm.artifacts.canonical import canonical_bytes, framed_hash
from tinyllm.tok import CharTokenizer, load

ROOT = Path(__file__).resolve().parents[2]
BERT = str(ROOT / "tests" / "fixtures" / "bert-base-uncased" / "tokenizer.json")
NAMES = ["gpt2", "smollm2", "bytes", "bert", "char"]


def _char():
    return CharTokenizer.train(["hello world, the quick brown fox <", "café 中文 😀"], specials=["<bos>", "<eos>", "<pad>"])


def _load(name):
    return _char() if name == "char" else load(BERT if name == "bert" else name)


@pytest.fixture(scope="module")
def toks():
    return {name: _load(name) for name in NAMES}


@pytest.fixture(scope="module")
def records(toks):
    return {name: golden.make(tok) for name, tok in toks.items()}


def case_index(records, name):
    return next(k for k, r in enumerate(records) if r["name"] == name)


# -- make and verify ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_make_then_verify_finds_no_mismatch(toks, records, name):
    assert golden.verify(toks[name], records[name]) == []


@pytest.mark.parametrize("name", NAMES)
def test_records_are_canonical_json_and_hold_every_field(records, name):
    for record in records[name]:
        canonical_bytes(record)  # no floats, valid Unicode, string keys
        fields = golden.ENCODE_FIELDS if record["kind"] == "encode" else golden.DECODE_FIELDS
        assert set(fields) <= set(record)
        if record["kind"] == "encode":
            n = len(record["ids"])
            assert len(record["pieces"]) == len(record["special_mask"]) == len(record["offsets"]) == n
            assert record["offset_coordinate"] in ("raw_codepoints", "raw_utf8_bytes")


def test_default_set_covers_the_seed_categories():
    names = [c["name"] for c in golden.default_cases()]
    texts = {c["name"]: c["text"] for c in golden.default_cases()}
    for prefix in ("empty", "whitespace/pure", "whitespace/leading-trailing", "whitespace/repeated-newlines",
                   "whitespace/runs", "contractions", "ascii/", "unicode/composed", "unicode/decomposed",
                   "unicode/combining-marks", "emoji/zwj", "scripts/multiple", "scripts/mixed", "cjk/",
                   "numbers/decimal", "numbers/long-digit-run", "code/python-indentation", "code/identifiers",
                   "code/long-no-whitespace", "control/", "long/", "decode/invalid-utf8"):
        assert any(n.startswith(prefix) for n in names), prefix
    assert texts["empty"] == ""
    assert "\u200d" in texts["emoji/zwj"]
    assert texts["unicode/composed"].startswith("caf\u00e9") and texts["unicode/decomposed"].startswith("cafe\u0301")
    assert len(texts["long/mixed"]) > 4096 and len(texts["long/no-whitespace"]) > 1024
    for control in ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "[CLS]", "</s>", "<bos>"):
        assert any(control in t for n, t in texts.items() if n.startswith("control/")), control


def test_default_set_adds_each_special_of_the_tokenizer_as_user_text(toks):
    names = [c["name"] for c in golden.default_cases(toks["smollm2"])]
    assert "control/own:<|im_end|>" in names and "control/own:<empty_output>" in names


def test_bert_records_normalized_text_and_template(toks, records):
    record = records["bert"][case_index(records["bert"], "unicode/composed")]
    assert record["normalized"] == toks["bert"].normalizer.normalize(record["text"])
    assert record["normalized"] == "cafe naive resume angstrom"  # uncased BERT strips accents
    assert record["add_special_ids"][0] == 101 and record["add_special_ids"][-1] == 102
    assert record["add_special_mask"][0] is True and record["add_special_mask"][-1] is True
    assert record["add_special_ids"][1:-1] == record["ids"]


def test_tokenizers_without_a_normalizer_record_null(records):
    assert all(r["normalized"] is None for r in records["bytes"] if r["kind"] == "encode")
    assert all(r["normalized"] == r["text"] for r in records["gpt2"] if r["kind"] == "encode")


@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_policy_ids_are_recorded_when_the_tokenizer_has_them(toks, records, name):
    tok = toks[name]
    policy = records[name][0]["policy"]
    for attribute in ("bos_id", "eos_id", "pad_id", "stop_ids"):
        if hasattr(tok, attribute):
            value = getattr(tok, attribute)
            assert policy[attribute] == (sorted(value) if isinstance(value, (tuple, list)) else value)
        else:
            assert attribute not in policy


@pytest.mark.parametrize("name", ["gpt2", "smollm2", "bytes"])
def test_invalid_utf8_decode_cases_record_replacement_characters(records, name):
    decodes = [r for r in records[name] if r["kind"] == "decode"]
    assert {r["rule"] for r in decodes} == {"prefix", "suffix"}
    for r in decodes:
        assert r["valid_utf8"] is False and "\ufffd" in r["decoded"]
        with pytest.raises(UnicodeDecodeError):
            bytes.fromhex("".join(r["bytes"])).decode("utf-8")


def test_whole_text_tokenizers_decode_every_id_of_a_decode_case(records):
    for r in records["bert"]:
        if r["kind"] == "decode":
            assert r["valid_utf8"] is True


def test_reference_path_records_equal_fast_path_records(toks, records):
    reference = load("gpt2").use_reference()
    assert golden.make(reference) == records["gpt2"]


# -- tampering ----------------------------------------------------------------------------------

def _tamper_id(r):
    r["ids"][1] = (r["ids"][1] + 1) % 50000


def _tamper_piece(r):
    r["pieces"][0] = r["pieces"][0] + "x"


def _tamper_offset(r):
    r["offsets"][2][1] += 1


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("field, tamper", [("ids", _tamper_id), ("pieces", _tamper_piece),
                                            ("offsets", _tamper_offset)])
def test_one_tampered_field_gives_exactly_one_mismatch(toks, records, name, field, tamper):
    tampered = copy.deepcopy(records[name])
    k = case_index(tampered, "contractions")
    tamper(tampered[k])
    [mismatch] = golden.verify(toks[name], tampered)
    assert (mismatch.index, mismatch.name, mismatch.field) == (k, "contractions", field)
    assert mismatch.expected == tampered[k][field] and mismatch.found == records[name][k][field]
    assert mismatch.preview == repr(tampered[k]["text"][:24] + "…")
    message = str(mismatch)
    assert message.startswith(f"case {k} (contractions) \"I'm sure") and f"{field}[" in message


def test_mismatch_message_shows_the_first_differing_element(toks):
    [record] = golden.make(toks["bytes"], ["abc"])
    record["ids"][2] = 7
    [mismatch] = golden.verify(toks["bytes"], [record])
    assert str(mismatch) == "case 0 'abc': ids[2]: expected 7, found 99"


def test_a_field_missing_from_the_record_is_reported_absent(toks, records):
    tampered = copy.deepcopy(records["gpt2"][:1])
    del tampered[0]["policy"]
    [mismatch] = golden.verify(toks["gpt2"], tampered)
    assert mismatch.field == "policy" and mismatch.expected is golden.ABSENT
    assert mismatch.found == records["gpt2"][0]["policy"]


def test_gpt2_records_do_not_verify_against_smollm2(toks, records):
    mismatches = golden.verify(toks["smollm2"], records["gpt2"])
    fields = {m.field for m in mismatches}
    assert {"ids", "policy"} <= fields
    k = case_index(records["gpt2"], "ascii/sentence")
    assert any(m.index == k and m.field == "ids" for m in mismatches)
    policy = next(m for m in mismatches if m.field == "policy")
    assert ": policy.bos_id: expected 50256, found 1" in str(policy)


def test_a_bool_is_not_an_integer_when_comparing(toks):
    [record] = golden.make(toks["bytes"], ["a"])
    record["special_mask"] = [0]
    [mismatch] = golden.verify(toks["bytes"], [record])
    assert mismatch.field == "special_mask"


# -- user-typed control text ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_user_typed_control_text_stays_text(toks, records, name):
    tok = toks[name]
    special = set(tok.special_ids.values())
    controls = [r for r in records[name] if r["kind"] == "encode" and r["name"].startswith("control/")]
    assert len(controls) >= 10 + len(special)
    for r in controls:
        assert not special & set(r["ids"]), r["name"]
        assert not any(r["special_mask"]), r["name"]
    # The cases are meaningful: allowing the specials by name would turn them into controls.
    own = [r for r in controls if r["name"].startswith("control/own:")]
    for r in own:
        assert special & set(tok.encode(r["text"], allowed_special="all"))


# -- the golden hash ------------------------------------------------------------------------------

def test_golden_hash_is_the_framed_hash_of_the_records(records):
    assert golden.GOLDEN_DOMAIN == "tokenizer-golden-v1"
    assert golden.golden_hash(records["bytes"]) == framed_hash("tokenizer-golden-v1", records["bytes"])


def test_golden_domain_agrees_with_the_domains_module(records):
    domains = pytest.importorskip("tinyllm.artifacts.domains")
    assert domains.GOLDEN == golden.GOLDEN_DOMAIN
    assert domains.golden_hash(records["smollm2"]) == golden.golden_hash(records["smollm2"])


def test_golden_hash_is_stable_across_runs_and_processes(records):
    digest = golden.golden_hash(records["gpt2"])
    assert golden.golden_hash(golden.make(load("gpt2"))) == digest
    code = ("from tinyllm.tok import load; from tinyllm.artifacts import golden; "
            "print(golden.golden_hash(golden.make(load('gpt2'))))")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "TINYLLM_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == digest


def test_golden_hash_changes_when_a_record_changes(records):
    tampered = copy.deepcopy(records["gpt2"])
    before = golden.golden_hash(tampered)
    tampered[5]["ids"][0] += 1
    assert golden.golden_hash(tampered) != before
    assert golden.golden_hash(list(reversed(records["gpt2"]))) != before  # the order is part of it


# -- cases files ----------------------------------------------------------------------------------

def test_plain_lines_one_text_per_line():
    cases = golden.parse_cases("one\n\nthree\r\n")
    assert [c["text"] for c in cases] == ["one", "", "three\r"]


def test_json_lines_round_trip_any_text():
    texts = ["a\nb", "", "  ", "\u2028x\u2029", "{not json}", "tab\there"]
    lines = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    assert [c["text"] for c in golden.parse_cases(lines)] == texts


def test_repeat_builds_a_long_text():
    [case] = golden.parse_cases('{"name": "long", "repeat": "ab", "times": 3}\n')
    assert case == {"kind": "encode", "name": "long", "text": "ababab"}


@pytest.mark.parametrize("line, message", [
    ('{"text": 5}', "line 1.text: found int; expected a string"),
    ('{"text": "a", "kind": "split"}', "line 1.kind: found 'split'; expected one of encode, decode"),
    ('{"text": "a", "kind": "decode", "rule": "middle"}', "line 1.rule: found 'middle'; expected one of prefix"),
    ('{"txt": "a"}', "line 1: unknown key 'txt'"),
    ('{"repeat": "a", "times": -1}', "line 1.times: found -1; expected an integer >= 0"),
    ('{"text": "a"', "line 1: invalid JSON"),
])
def test_bad_case_lines_name_the_line_and_field(line, message):
    with pytest.raises(ValueError, match=None) as error:
        golden.parse_cases(line + "\n", "cases.jsonl")
    assert str(error.value).startswith("cases.jsonl: " + message)


def test_make_refuses_a_string_and_lone_surrogates(toks):
    with pytest.raises(ValueError, match="golden.make: texts: found a string; expected a list of texts"):
        golden.make(toks["bytes"], "abc")
    with pytest.raises(ValueError, match=r"golden.make: texts\[1\].text: a lone surrogate at index 1"):
        golden.make(toks["bytes"], ["ok", "a\ud800"])


def test_verify_refuses_what_is_not_a_record(toks):
    with pytest.raises(ValueError, match=r"golden.verify: records\[0\]: found str; expected a golden record"):
        golden.verify(toks["bytes"], ["abc"])
    with pytest.raises(ValueError, match=r"golden.verify: records\[0\].kind: found 'x'; expected one of"):
        golden.verify(toks["bytes"], [{"kind": "x", "text": "a"}])
    with pytest.raises(ValueError, match=r"golden.verify: records: found dict; expected a list of records"):
        golden.verify(toks["bytes"], {"kind": "encode"})


# -- files and the command line -------------------------------------------------------------------

def parser():
    from tinyllm import cli

    return cli.build_parser()


def run(*argv):
    args = parser().parse_args(list(argv))
    args.run(args)


def test_records_round_trip_through_the_jsonl_file(records, tmp_path):
    path = golden.write_records(tmp_path / "golden.jsonl", records["smollm2"])
    assert golden.read_records(path) == records["smollm2"]
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == len(records["smollm2"]) + 1
    assert lines[0].encode("utf-8") == canonical_bytes(records["smollm2"][0])


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_cli_make_then_verify(tmp_path, capsys, name):
    tok = "gpt2" if name == "gpt2" else BERT
    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"text": "two\nlines"}) + "\n" + json.dumps({"text": "<|endoftext|> [CLS]"}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "golden.jsonl"
    run("golden", "make", tok, str(texts), "-o", str(out))
    records = golden.read_records(out)
    digest = golden.golden_hash(records)
    assert capsys.readouterr().out == f"wrote {out}: 2 cases, golden hash {digest}\n"
    assert [r["text"] for r in records] == ["two\nlines", "<|endoftext|> [CLS]"]
    run("golden", "verify", tok, str(out))
    assert capsys.readouterr().out == f"{out}: 2 cases match {tok} (golden hash {digest})\n"


def test_cli_make_uses_the_default_set_and_verify_reports_the_first_mismatch(tmp_path, capsys):
    out = tmp_path / "golden.jsonl"
    run("golden", "make", "gpt2", "-o", str(out))
    records = golden.read_records(out)
    assert records == golden.make(load("gpt2"))
    k = case_index(records, "cjk/chinese")
    records[k]["ids"][0] += 1
    golden.write_records(out, records)
    with pytest.raises(ValueError) as error:
        run("golden", "verify", "gpt2", str(out))
    message = str(error.value)
    assert message.startswith(f"golden verify: {out}: case {k} (cjk/chinese) ")
    assert ": ids[0]: expected " in message and "(1 mismatches in 1 of " in message
    assert "\n" not in message


def test_cli_verify_against_another_tokenizer_fails(tmp_path, capsys):
    out = tmp_path / "golden.jsonl"
    run("golden", "make", "gpt2", "-o", str(out))
    with pytest.raises(ValueError, match="golden verify: .* mismatches in"):
        run("golden", "verify", "smollm2", str(out))


def test_cli_make_plain_lines_and_stdout(tmp_path, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("hello\n\nworld\n", encoding="utf-8")
    run("golden", "make", "bytes", str(texts))
    lines = capsys.readouterr().out.split("\n")
    assert [json.loads(line)["text"] for line in lines if line] == ["hello", "", "world"]


def test_cli_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        run("golden", "verify", "bytes", str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "encode", "text": "a", "ids": [0.5]}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl: line 1: .*is a float"):
        run("golden", "verify", "bytes", str(bad))
    with pytest.raises(ValueError, match="does not exist"):
        run("golden", "make", "bytes", "-o", str(tmp_path / "no" / "golden.jsonl"))


def test_through_tinyllm_main_once_wired(tmp_path, capsys):
    from tinyllm import cli

    out = tmp_path / "golden.jsonl"
    assert cli.main(["golden", "make", "bytes", "-o", str(out)]) == 0
    assert cli.main(["golden", "verify", "bytes", str(out)]) == 0
    assert cli.main(["golden", "verify", "gpt2", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tinyllm: error: golden verify: ") and err.count("\n") == 1


def test_docstring_examples():
    result = doctest.testmod(golden, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_default_cases_file_ships_inside_the_package():
    assert golden.DEFAULT_CASES_FILE.parent == Path(golden.__file__).parent
    assert golden.DEFAULT_CASES_FILE.is_file()
