"""`tinyllm release stage|admit|rollback|status`, run through a parser built with `add_parsers`:
the seed's r17 -> r18 release from real bundle files, exit codes 0 and 3, the store found by
--store or $TINYLLM_RELEASE_STORE, and a state that survives reopening."""

import argparse
import json

import pytest

from tinyllm.migrate.mechanical import MECHANICAL_CHECKS
from tinyllm.migrate.release_bundle import ReleaseBundle
from tinyllm.migrate.release_command import EXIT_ROLLED_BACK, add_parsers
from tinyllm.migrate.seed_release import seed_release_bundle
from tinyllm.migrate.store import ReleaseStore

SEED_CANARY = [
    {"name": "old behaviour", "cases": 40, "passed": 40, "rho": 1.04, "tau": 1.10},
    {"name": "new pieces", "cases": 24, "passed": 24, "rho": 0.88, "tau": 1.10},
    {"name": "controls and stops", "cases": 8, "passed": 8, "rho": 1.00, "tau": 1.00, "stop_mismatches": 0,
     "cache_mismatches": 0},
]


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tinyllm")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parsers(sub)
    args = parser.parse_args(["release", *argv])
    return args.run(args)


@pytest.fixture
def files(tmp_path):
    """Bundle files for r17 and r18, passing and failing canary files, and a store path."""
    paths = {"store": str(tmp_path / "releases.sqlite")}
    for name, revision in (("compact-268", "r17"), ("balanced-272", "r18")):
        paths[revision] = tmp_path / f"{revision}.json"
        paths[revision].write_text(json.dumps(seed_release_bundle(name)), "utf-8")
    paths["pass"] = tmp_path / "canary.json"
    paths["pass"].write_text(json.dumps(SEED_CANARY), "utf-8")
    failing = [dict(s) for s in SEED_CANARY]
    failing[0]["passed"] = 39
    paths["fail"] = tmp_path / "canary-fail.json"
    paths["fail"].write_text(json.dumps(failing), "utf-8")
    return paths


def stage_seed(files) -> None:
    assert run("stage", str(files["r17"]), "--namespace", "cache-compact-268-r17", "--revision", "r17", "--activate",
               "--store", files["store"]) == 0
    assert run("stage", str(files["r18"]), "--namespace", "cache-expanded-272-r18", "--revision", "r18",
               "--store", files["store"]) == 0


def test_the_seed_release_is_promoted(files, capsys):
    stage_seed(files)
    assert "staged r18" in capsys.readouterr().out
    assert run("admit", "r18", "--canary", str(files["pass"]), "--traffic-bp", "500", "--store", files["store"]) == 0
    out = capsys.readouterr().out
    assert "admission of r18 against r17" in out and "result: promoted" in out
    assert all(f"{name:<11} pass" in out for name in MECHANICAL_CHECKS)
    assert "controls and stops      8/8 passed  rho 1.00 / tau 1.00  stop 0  cache 0  pass" in out
    with ReleaseStore(files["store"], create=False) as store:
        assert store.active().revision == "r18"


def test_a_failing_slice_exits_3_and_names_the_slice(files, capsys):
    stage_seed(files)
    capsys.readouterr()
    assert run("admit", "r18", "--canary", str(files["fail"]), "--store", files["store"]) == EXIT_ROLLED_BACK
    out = capsys.readouterr().out
    assert "FAIL: passed 39 of 40 cases" in out
    assert "result: rolled_back (first failing slice: old behaviour)" in out
    assert "active: r17" in out and "invalidated cache namespaces: cache-expanded-272-r18" in out


def test_a_mechanical_failure_runs_no_canary(files, capsys, tmp_path):
    broken = seed_release_bundle("balanced-272")
    broken["checkpoint"]["input_embedding_rows"] = 268
    from tinyllm.artifacts.bundle import seal

    path = tmp_path / "r18-broken.json"
    path.write_text(json.dumps(seal(broken)), "utf-8")
    run("stage", str(files["r17"]), "--namespace", "n17", "--revision", "r17", "--activate", "--store", files["store"])
    run("stage", str(path), "--namespace", "n18", "--revision", "r18", "--store", files["store"])
    capsys.readouterr()
    assert run("admit", "r18", "--canary", str(files["pass"]), "--json", "--store", files["store"]) == EXIT_ROLLED_BACK
    result = json.loads(capsys.readouterr().out)
    assert result["failed_checks"] == ["A_rows"] and result["canary"] == []
    assert result["traffic_basis_points"] == 0
    assert result["active"]["revision"] == "r17" and result["invalidated_namespaces"] == ["n18"]


def test_rollback_and_status_survive_reopening(files, capsys):
    stage_seed(files)
    run("admit", "r18", "--canary", str(files["pass"]), "--store", files["store"])
    capsys.readouterr()
    assert run("rollback", "--reason", "stop mismatches in production", "--store", files["store"]) == 0
    assert "rolled back r18 -> r17" in capsys.readouterr().out

    assert run("status", "--json", "--store", files["store"]) == 0
    first = json.loads(capsys.readouterr().out)
    with ReleaseStore(files["store"], create=False) as fresh:
        assert json.loads(json.dumps(fresh.status())) == first
    assert run("status", "--json", "--store", files["store"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert first["active"]["revision"] == "r17"
    assert first["invalidated_namespaces"] == ["cache-expanded-272-r18"]
    assert [a["result"] for a in first["admissions"]] == ["promoted", "rolled_back"]

    assert run("status", "--store", files["store"]) == 0
    table = capsys.readouterr().out
    assert "active: r17" in table
    assert "r18 -> r18" not in table and "r17 -> r18  promoted" in table
    assert "manual: stop mismatches in production" in table
    assert "namespace invalidated" in table


def test_the_store_comes_from_the_environment(files, monkeypatch, capsys):
    monkeypatch.setenv("TINYLLM_RELEASE_STORE", files["store"])
    run("stage", str(files["r17"]), "--namespace", "n17", "--revision", "r17", "--activate")
    capsys.readouterr()
    run("status", "--json")
    assert json.loads(capsys.readouterr().out)["store"] == files["store"]


def test_a_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        run("status", "--store", str(tmp_path / "nowhere.sqlite"))


def test_activate_is_only_for_the_first_bundle(files):
    stage_seed(files)
    with pytest.raises(ValueError, match="--activate: r17 is already active"):
        run("stage", str(files["r18"]), "--namespace", "n-other", "--revision", "r19", "--activate",
            "--store", files["store"])


def test_an_artifacts_bundle_needs_namespace_and_revision(files):
    with pytest.raises(ValueError, match="--namespace: missing"):
        run("stage", str(files["r17"]), "--revision", "r17", "--store", files["store"])


def test_an_identities_file_can_be_staged(files, tmp_path, capsys):
    stage_seed(files)
    identities = ReleaseBundle.from_bundle(seed_release_bundle("balanced-272"), "cache-r19", "r19")
    path = tmp_path / "r19.json"
    path.write_text(json.dumps(identities.to_json()), "utf-8")
    assert run("stage", str(path), "--store", files["store"]) == 0
    out = capsys.readouterr().out
    assert "staged r19" in out and "(identities only)" in out
    with ReleaseStore(files["store"], create=False) as store:
        assert store.bundle("r19") == identities and store.bundle("r19").source is None
    with pytest.raises(ValueError, match="--namespace: found 'other'; expected 'cache-r19'"):
        run("stage", str(path), "--namespace", "other", "--store", files["store"])


def test_a_bad_canary_file_names_the_slice_and_key(files, tmp_path):
    stage_seed(files)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([SEED_CANARY[0], {**SEED_CANARY[1], "rho": -1}]), "utf-8")
    with pytest.raises(ValueError, match=r"bad\.json\[1\]: CanarySlice 'new pieces': rho: found -1"):
        run("admit", "r18", "--canary", str(bad), "--store", files["store"])
    bad.write_text(json.dumps({"name": "x"}), "utf-8")
    with pytest.raises(ValueError, match="--canary: .*found dict; expected a non-empty JSON list"):
        run("admit", "r18", "--canary", str(bad), "--store", files["store"])
