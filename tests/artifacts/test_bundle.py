"""Bundles and reconcile: the seed's ids-0-11 example passes, every negative fixture fails at the
check it is there for, the fixtures are what the generator makes, and the CLI exits 0 or 2."""

import doctest
import importlib.util
import json
from pathlib import Path

import pytest

from tinyllm.artifacts import bundle as bundle_module, domains
from tinyllm.artifacts.bundle import CHECKS, HASH_KEYS, BundleError, derive_hashes, reconcile, seal
from tinyllm.artifacts.canonical import framed_hash
from tinyllm.artifacts.validate import schema
from tinyllm.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bundles" / "ids-0-11"
EXPECTED = json.loads((EXAMPLE / "negative" / "expected.json").read_text("utf-8"))


def load_tool():
    spec = importlib.util.spec_from_file_location("make_bundle_examples", ROOT / "tools" / "make_bundle_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example() -> dict:
    return json.loads((EXAMPLE / "bundle.json").read_text("utf-8"))


def failure(bundle) -> BundleError:
    with pytest.raises(BundleError) as info:
        reconcile(bundle)
    return info.value


def test_fixtures_are_what_the_generator_makes():
    assert load_tool().differences(ROOT) == []


def test_the_seed_example_reconciles():
    bundle = example()
    assert reconcile(bundle) is None
    vocab = bundle["tokenizer"]["tokenizer_json"]["model"]["vocab"]
    assert sorted(vocab.values()) == list(range(12))
    checkpoint = bundle["checkpoint"]
    assert (checkpoint["input_embedding_rows"], checkpoint["output_vocab_rows"]) == (12, 12)
    assert checkpoint["tied_output_head"] and checkpoint["tied_storage_verified"]
    assert derive_hashes(bundle) == bundle["declared_hashes"]


def test_every_seed_case_has_a_negative_fixture():
    seed_cases = {
        "same vocabulary size, different ID assignment", "same IDs, different merge rank",
        "same IDs, different normalizer policy", "null decoder replaced by an underspecified empty object",
        "stale encoded-dataset tokenizer hash", "stale encoded-dataset corpus hash",
        "stale encoded-dataset template hash", "checkpoint tokenizer mismatch", "checkpoint template mismatch",
        "checkpoint BOS mismatch", "checkpoint stop mismatch", "input rows that do not cover max_id",
        "output rows that do not cover max_id", "tied output head whose shared storage was not verified",
        "template source drift", "raw release-file drift",
    }
    assert seed_cases <= {e["seed_case"] for e in EXPECTED.values()}
    files = {p.name for p in (EXAMPLE / "negative").glob("*.json")} - {"expected.json"}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_negative_fixture_fails_at_its_check(name):
    error = failure(json.loads((EXAMPLE / "negative" / name).read_text("utf-8")))
    assert (error.check, error.field) == (EXPECTED[name]["check"], EXPECTED[name]["field"])
    assert f"{error.check}: {error.field}: " in str(error)
    assert error.check in CHECKS


def test_negatives_cover_every_check_but_tokenizer_load_and_pad_and_eos():
    reached = {e["check"] for e in EXPECTED.values()}
    assert set(CHECKS) - reached == {"tokenizer_load", "checkpoint_eos", "checkpoint_pad"}


def test_message_names_the_check_the_field_found_and_expected():
    bundle = example()
    bundle["checkpoint"]["special_ids"]["bos"] = 0
    error = failure(seal(bundle))
    assert str(error) == ("reconcile: checkpoint_bos: checkpoint.special_ids.bos: found 0, expected 1 "
                          "(the tokenizer's bos_id from tokenizer.generation_config)")
    assert isinstance(error, ValueError)


def test_stale_declared_hash_is_its_own_check():
    bundle = example()
    good = bundle["declared_hashes"]["golden_hash"]
    bundle["golden"]["cases"][0]["ids"] = [0]
    error = failure(bundle)
    assert (error.check, error.field) == ("golden_hash", "declared_hashes.golden_hash")
    assert good in str(error) and domains.golden_hash(bundle["golden"]["cases"]) in str(error)


def test_structure_comes_before_hashes():
    bundle = example()
    bundle["template"]["source"] += "!"  # would fail template_hash
    del bundle["corpus"]["seed"]
    error = failure(bundle)
    assert (error.check, error.field) == ("structure", "corpus.seed")


@pytest.mark.parametrize("mutate,field", [
    (lambda b: b.pop("golden"), "golden"),
    (lambda b: b["tokenizer"]["tokenizer_json"].pop("decoder"), "tokenizer.tokenizer_json.decoder"),
    (lambda b: b["checkpoint"].update(tied_output_head="yes"), "checkpoint.tied_output_head"),
    (lambda b: b["declared_hashes"].update(corpus_hash="ABC"), "declared_hashes.corpus_hash"),
    (lambda b: b.update(extra=1), "extra"),
])
def test_structure_errors_name_the_json_path(mutate, field):
    bundle = example()
    mutate(bundle)
    error = failure(bundle)
    assert (error.check, error.field) == ("structure", field)


def test_omitted_component_is_not_an_empty_one():
    bundle = example()
    bundle["tokenizer"]["tokenizer_json"].pop("post_processor")
    assert "missing" in str(failure(bundle))


def test_floats_are_refused_with_their_path():
    bundle = example()
    bundle["golden"]["cases"][0]["score"] = 0.5
    error = failure(bundle)
    assert (error.check, error.field) == ("structure", "golden.cases[0].score")


def test_not_an_object():
    assert failure([]).check == "structure"


@pytest.mark.parametrize("path,value,field", [
    (("tokenizer", "release_files"), "reverse", "tokenizer.release_files"),
    (("tokenizer", "tokenizer_json", "added_tokens"), "reverse", "tokenizer.tokenizer_json.added_tokens"),
    (("checkpoint", "special_ids", "stop"), [2, 2], "checkpoint.special_ids.stop"),
])
def test_set_like_lists_must_be_in_canonical_order(path, value, field):
    bundle = example()
    node = bundle
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = node[path[-1]][::-1] if value == "reverse" else value
    error = failure(bundle)
    assert (error.check, error.field) == ("canonical_order", field)


def test_tokenizer_that_does_not_build_is_tokenizer_load():
    bundle = example()
    bundle["tokenizer"]["tokenizer_json"]["model"]["merges"].append(["t", "zz"])
    error = failure(bundle)
    assert error.check == "tokenizer_load"
    assert error.field.startswith("tokenizer.tokenizer_json.model.merges")


def test_pad_and_eos_against_the_policy():
    for role, value in (("eos", 1), ("pad", None)):
        bundle = example()
        bundle["checkpoint"]["special_ids"][role] = value
        assert failure(seal(bundle)).check == f"checkpoint_{role}"


def test_padded_rows_and_untied_heads_are_fine():
    bundle = example()
    bundle["checkpoint"].update(input_embedding_rows=64, output_vocab_rows=64, tied_output_head=False,
                                tied_storage_verified=False)
    assert reconcile(seal(bundle)) is None


def test_bundle_hash_covers_the_downstream_declarations():
    base = example()["declared_hashes"]["bundle_hash"]
    for part, key, value in (("checkpoint", "output_vocab_rows", 13), ("dataset", "record_count", 5)):
        bundle = example()
        bundle[part][key] = value
        assert derive_hashes(bundle)["bundle_hash"] != base


def test_hashes_are_the_framed_hashes_of_their_payloads():
    bundle = example()
    hashes = derive_hashes(bundle)
    assert hashes["template_hash"] == framed_hash("chat-template-v1", {"source": bundle["template"]["source"]})
    assert hashes["corpus_hash"] == framed_hash("tokenizer-corpus-v1", bundle["corpus"])
    assert hashes["golden_hash"] == framed_hash("tokenizer-golden-v1", bundle["golden"]["cases"])
    assert hashes["tokenizer_release_hash"] == framed_hash("tokenizer-release-v1", {
        "semantic_hash": hashes["tokenizer_semantic_hash"], "files": bundle["tokenizer"]["release_files"]})
    assert list(hashes) == list(HASH_KEYS)


def test_seal_fills_in_the_declared_hashes():
    bundle = example()
    del bundle["declared_hashes"]
    assert seal(bundle) == example()


def test_bundle_agrees_with_the_release_directory():
    from tinyllm.artifacts.identity import release_hash
    from tinyllm.tok import load

    declared = example()["declared_hashes"]
    assert load(EXAMPLE / "release").semantic_hash == declared["tokenizer_semantic_hash"]
    assert release_hash(EXAMPLE / "release") == declared["tokenizer_release_hash"]


def test_domains_agree_with_the_modules_that_share_them():
    from tinyllm.artifacts import golden, identity

    assert identity.TOKENIZER_RELEASE_DOMAIN == domains.RELEASE
    assert identity.TOKENIZER_SEMANTIC_DOMAIN == domains.SEMANTIC
    assert golden.GOLDEN_DOMAIN == domains.GOLDEN
    records = example()["golden"]["cases"]
    assert golden.golden_hash(records) == domains.golden_hash(records)
    assert identity.release_components(EXAMPLE / "release") == domains.release_payload(
        example()["declared_hashes"]["tokenizer_semantic_hash"], identity.file_declarations(EXAMPLE / "release"))


def test_schema_is_shipped_draft_2020_12():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema("bundle"))
    assert schema("bundle")["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_docstring_examples(monkeypatch):
    monkeypatch.chdir(ROOT)
    from tinyllm.artifacts import manifest, validate

    for module in (bundle_module, domains, manifest, validate):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_cli_reconcile_ok(capsys):
    assert main(["reconcile", str(EXAMPLE / "bundle.json")]) == 0
    out, err = capsys.readouterr()
    assert out == f"ok {example()['declared_hashes']['bundle_hash']}\n" and err == ""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_reconcile_negative_exits_2_with_check_and_field(capsys, name):
    assert main(["reconcile", str(EXAMPLE / "negative" / name)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"tinyllm: error: reconcile: {EXPECTED[name]['check']}: {EXPECTED[name]['field']}: ")


def test_cli_reconcile_unreadable_file(capsys, tmp_path):
    (tmp_path / "b.json").write_text("{", encoding="utf-8")
    assert main(["reconcile", str(tmp_path / "b.json")]) == 2
    assert "invalid JSON" in capsys.readouterr().err


def test_generator_check_reports_a_stale_fixture(tmp_path):
    tool = load_tool()
    tool.write(tmp_path)
    assert tool.differences(tmp_path) == []
    target = tmp_path / tool.EXAMPLE / "negative" / "bos-mismatch.json"
    target.write_text(target.read_text("utf-8").replace('"bos": 0', '"bos": 5'), encoding="utf-8")
    (tmp_path / tool.EXAMPLE / "negative" / "hand-made.json").write_text("{}", encoding="utf-8")
    problems = tool.differences(tmp_path)
    assert len(problems) == 2 and "stale" in problems[0] and "not generated" in problems[1]


def test_golden_cases_that_are_not_golden_records_fail_their_own_check():
    from tinyllm.artifacts.bundle import BundleError, reconcile, seal

    bundle = json.loads((EXAMPLE / "bundle.json").read_text())
    bundle["golden"]["cases"] = [{"text": "a", "ids": [0]}]
    with pytest.raises(BundleError) as info:
        reconcile(seal(bundle))
    assert (info.value.check, info.value.field) == ("golden_cases", "golden.cases")
