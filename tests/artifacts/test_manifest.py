"""`manifest(model_dir)` and `tinyllm manifest`: the semantic and release hashes, the raw files and
the special-token policy of a model directory."""

import json
from pathlib import Path

from tinyllm.artifacts.identity import release_hash
from tinyllm.artifacts.manifest import FORMAT, manifest, manifest_text
from tinyllm.artifacts.validate import first_problem
from tinyllm.cli import main
from tinyllm.tok import load
from tinyllm.tok.load import preset_directory

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "examples" / "bundles" / "ids-0-11" / "release"


def test_manifest_of_the_example_release():
    m = manifest(RELEASE)
    assert m["format"] == FORMAT
    assert m["semantic_hash"] == load(RELEASE).semantic_hash
    assert m["release_hash"] == release_hash(RELEASE)
    assert [f["path"] for f in m["release_files"]] == ["generation_config.json", "tokenizer.json"]
    assert m["release_files"][1]["size"] == (RELEASE / "tokenizer.json").stat().st_size
    assert m["policy"] == {"bos_id": 1, "eos_id": 2, "pad_id": 3, "unk_id": 0, "eot_id": None, "stop_ids": [2]}
    assert first_problem(m, "manifest") is None


def test_manifest_matches_the_bundle_declarations():
    bundle = json.loads((RELEASE.parent / "bundle.json").read_text("utf-8"))
    m = manifest(RELEASE)
    assert m["release_files"] == bundle["tokenizer"]["release_files"]
    assert m["release_hash"] == bundle["declared_hashes"]["tokenizer_release_hash"]


def test_manifest_of_a_preset_directory():
    directory = preset_directory("smollm2")
    m = manifest(directory)
    assert m["release_hash"] == release_hash(directory)
    assert (m["policy"]["bos_id"], m["policy"]["eos_id"], m["policy"]["pad_id"]) == (1, 2, 2)


def test_manifest_is_deterministic_text():
    assert manifest_text(RELEASE) == manifest_text(RELEASE)
    assert json.loads(manifest_text(RELEASE)) == manifest(RELEASE)


def test_release_hash_follows_a_raw_byte_change(tmp_path):
    for name in ("tokenizer.json", "generation_config.json"):
        (tmp_path / name).write_bytes((RELEASE / name).read_bytes())
    before = manifest(tmp_path)
    text = (tmp_path / "tokenizer.json").read_text("utf-8")
    (tmp_path / "tokenizer.json").write_text(json.dumps(json.loads(text)), encoding="utf-8")
    after = manifest(tmp_path)
    assert after["semantic_hash"] == before["semantic_hash"]
    assert after["release_hash"] != before["release_hash"]


def test_cli_manifest_prints_and_writes(capsys, tmp_path):
    assert main(["manifest", str(RELEASE)]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out) == manifest(RELEASE)
    target = tmp_path / "manifest.json"
    assert main(["manifest", str(RELEASE), "-o", str(target)]) == 0
    assert target.read_text("utf-8") == manifest_text(RELEASE)
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # no temporary file left behind


def test_cli_manifest_error_exits_2(capsys, tmp_path):
    assert main(["manifest", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tinyllm: error: manifest: ") and err.count("\n") == 1
