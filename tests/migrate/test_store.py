"""The release store: staging is immutable, admissions switch the active bundle whole or restore
the stable one whole, rollbacks invalidate only the rolled-back namespace, every change is one
transaction, and the state survives closing, reopening and other processes."""

import dataclasses
import hashlib
import json
import sqlite3
import subprocess
import sys
import tempfile
from itertools import count
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tinyllm.migrate.canary import CanarySlice
from tinyllm.migrate.mechanical import MECHANICAL_CHECKS
from tinyllm.migrate.release_bundle import ReleaseBundle
from tinyllm.migrate.seed_release import seed_release_bundle
from tinyllm.migrate.store import ReleaseStore


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def release(revision: str, namespace: str | None = None) -> ReleaseBundle:
    return ReleaseBundle(h(f"{revision}-sem"), h(f"{revision}-rel"), h("template"), h(f"{revision}-data"),
                         h(f"{revision}-ckpt"), namespace or f"cache-{revision}", revision=revision)


R17, R18, R19 = release("r17", "cache-compact-268-r17"), release("r18", "cache-expanded-272-r18"), release("r19")
PASS = [CanarySlice("old behaviour", 40, 40, 1.04, 1.10), CanarySlice("new pieces", 24, 24, 0.88, 1.10),
        CanarySlice("controls and stops", 8, 8, 1.00, 1.00)]
FAIL = [*PASS[:2], CanarySlice("controls and stops", 8, 8, 1.00, 1.00, stop_mismatches=1)]


@pytest.fixture
def store(tmp_path):
    ticks = count(1000)
    with ReleaseStore(tmp_path / "releases.sqlite", clock=lambda: float(next(ticks))) as s:
        s.stage(R17, activate_if_empty=True)
        s.stage(R18)
        yield s


# -- staging ------------------------------------------------------------------------------------

def test_staging_records_the_bundle_and_activates_only_the_first(store):
    assert store.active() == R17
    assert store.bundle("r18") == R18 and store.bundle(R18.bundle_id) == R18
    assert store.stage(R19, activate_if_empty=True) == R19
    assert store.active() == R17  # a bundle is active: activate_if_empty does nothing
    assert [b["revision"] for b in store.status()["staged"]] == ["r17", "r18", "r19"]


def test_staging_the_same_bundle_again_changes_nothing(store):
    before = store.status()
    assert store.stage(R18) == R18
    assert store.status() == before


def test_a_revision_label_is_never_reused_for_other_identities(store):
    with pytest.raises(ValueError, match=r"stage: revision: 'r18' already names other identities \(h_sem"):
        store.stage(dataclasses.replace(R19, revision="r18"))


def test_a_staged_bundle_keeps_its_label(store):
    with pytest.raises(ValueError, match="stage: revision: bundle .* is already staged as 'r18'; found 'r18b'"):
        store.stage(dataclasses.replace(R18, revision="r18b"))


def test_a_namespace_belongs_to_one_bundle(store):
    with pytest.raises(ValueError, match="stage: cache_namespace: 'cache-compact-268-r17' is already used by r17"):
        store.stage(dataclasses.replace(R19, cache_namespace=R17.cache_namespace))


def test_staging_needs_a_revision(store):
    with pytest.raises(ValueError, match="stage: revision: empty"):
        store.stage(dataclasses.replace(R19, revision=""))


def test_a_missing_revision_is_named(store):
    with pytest.raises(ValueError, match=r"bundle: revision: no bundle 'r99' in .*; expected one of r17, r18"):
        store.bundle("r99")
    with pytest.raises(ValueError, match="admit: revision: no bundle 'r99'"):
        store.admit("r99", PASS)


# -- admission ----------------------------------------------------------------------------------

def test_promotion_switches_the_active_bundle(store):
    admission = store.admit("r18", PASS)
    assert admission.result == "promoted"
    assert store.active() == R18
    [row] = store.history()
    assert (row["stable"], row["candidate"], row["result"], row["failing_slice"]) == ("r17", "r18", "promoted", None)
    assert row["detail"]["traffic_basis_points"] == 500 and row["detail"]["kind"] == "canary"
    assert store.status()["invalidated_namespaces"] == []


def test_a_failed_canary_keeps_the_stable_and_invalidates_only_the_candidate(store):
    admission = store.admit("r18", FAIL)
    assert admission.result == "rolled_back" and admission.failing_slice == "controls and stops"
    assert store.active() == R17 and store.active().identities() == R17.identities()
    assert store.status()["invalidated_namespaces"] == ["cache-expanded-272-r18"]
    assert store.history()[-1]["failing_slice"] == "controls and stops"


def test_a_rolled_back_candidate_cannot_come_back_under_its_invalidated_namespace(store):
    store.admit("r18", FAIL)
    with pytest.raises(ValueError, match="admit: candidate.cache_namespace: 'cache-expanded-272-r18' was invalidated"):
        store.admit("r18", PASS)
    assert store.stage(release("r18b")).revision == "r18b"
    assert store.admit("r18b", PASS).result == "promoted"


def test_a_mechanical_failure_is_recorded_as_a_rollback(store):
    mechanical = dict.fromkeys(MECHANICAL_CHECKS, True) | {"A_dataset": False}
    admission = store.admit("r18", PASS, mechanical=mechanical)
    assert admission.failed_checks == ("A_dataset",)
    assert store.active() == R17
    assert store.history()[-1]["detail"]["failed_checks"] == ["A_dataset"]


def test_admitting_the_active_bundle_or_without_one_is_refused(store, tmp_path):
    with pytest.raises(ValueError, match="admit: revision: 'r17' is the active bundle"):
        store.admit("r17", PASS)
    with ReleaseStore(tmp_path / "empty.sqlite") as empty:
        empty.stage(R18)
        with pytest.raises(ValueError, match="admit: no active bundle"):
            empty.admit("r18", PASS)


def test_a_refused_admission_leaves_no_trace(store):
    before = store.status()
    with pytest.raises(ValueError, match="traffic_basis_points"):
        store.admit("r18", PASS, traffic_basis_points=0)
    assert store.status() == before


def test_a_failure_in_the_middle_of_a_switch_rolls_the_whole_transaction_back(store, monkeypatch):
    before = store.status()

    def broken(*args):
        raise RuntimeError("power cut")

    monkeypatch.setattr(ReleaseStore, "_set_active", broken)
    with pytest.raises(RuntimeError, match="power cut"):
        store.admit("r18", PASS)
    monkeypatch.undo()
    assert store.status() == before  # not even the admission row was kept
    assert store.history() == []


# -- manual rollback ----------------------------------------------------------------------------

def test_manual_rollback_restores_the_previous_bundle(store):
    store.admit("r18", PASS)
    admission = store.rollback("stop mismatches in production")
    assert admission.result == "rolled_back" and admission.active == R17
    assert admission.invalidated_namespaces == ("cache-expanded-272-r18",)
    assert store.active() == R17
    row = store.history()[-1]
    assert (row["stable"], row["candidate"], row["result"]) == ("r17", "r18", "rolled_back")
    assert row["detail"]["kind"] == "manual" and row["detail"]["reason"] == "stop mismatches in production"
    assert store.status()["invalidated_namespaces"] == ["cache-expanded-272-r18"]


def test_rollbacks_walk_back_through_the_promotions(store):
    store.stage(R19)
    store.admit("r18", PASS)
    store.admit("r19", PASS)
    assert store.rollback("r19 regressed").active == R18
    assert store.rollback("r18 regressed").active == R17
    assert store.status()["invalidated_namespaces"] == ["cache-r19", "cache-expanded-272-r18"]
    with pytest.raises(ValueError, match="rollback: the active bundle r17 was not made active by a promotion"):
        store.rollback("again")


def test_rollback_needs_a_reason_and_an_active_bundle(store, tmp_path):
    with pytest.raises(ValueError, match="rollback: reason"):
        store.rollback("")
    with ReleaseStore(tmp_path / "empty.sqlite") as empty, pytest.raises(ValueError, match="no active bundle"):
        empty.rollback("why")


# -- durability ---------------------------------------------------------------------------------

def test_the_store_survives_reopening(store):
    store.admit("r18", PASS)
    store.rollback("regressed")
    status = store.status()
    store.close()
    with ReleaseStore(store.path, create=False) as again:
        assert again.status() == status
        assert again.active() == R17


def test_another_process_sees_the_same_state(store):
    store.admit("r18", PASS)
    code = ("import json, sys; from tinyllm.migrate.store import ReleaseStore; "
            "print(json.dumps(ReleaseStore(sys.argv[1], create=False).status()))")
    out = subprocess.run([sys.executable, "-c", code, str(store.path)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == json.loads(json.dumps(store.status()))
    assert json.loads(out.stdout)["active"]["revision"] == "r18"


def test_a_second_handle_admits_against_the_current_active_bundle(store):
    with ReleaseStore(store.path, create=False) as other:
        other.stage(R19)
        store.admit("r18", PASS)  # promoted through the first handle
        other.admit("r19", FAIL)
        assert other.history()[-1]["stable"] == "r18"
        assert other.active() == R18


def test_a_held_write_lock_is_a_clear_error(store):
    with ReleaseStore(store.path, create=False, timeout=0.05) as other, store._write():
        with pytest.raises(ValueError, match="database is locked; expected the write lock"):
            other.rollback("now")


def test_a_missing_or_foreign_store_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        ReleaseStore(tmp_path / "none.sqlite", create=False)
    with pytest.raises(ValueError, match="the directory .* does not exist"):
        ReleaseStore(tmp_path / "no" / "dir.sqlite")
    (tmp_path / "text.sqlite").write_text("not a database at all, just some text " * 40)
    with pytest.raises(ValueError, match="not a release store"):
        ReleaseStore(tmp_path / "text.sqlite")
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE users (name TEXT)")
    other.commit()
    other.close()
    with pytest.raises(ValueError, match="not a release store .*users"):
        ReleaseStore(tmp_path / "other.sqlite")


def test_times_come_from_the_clock(tmp_path):
    with ReleaseStore(tmp_path / "r.sqlite", clock=lambda: 1234.5) as s:
        s.stage(R17, activate_if_empty=True)
        s.stage(R18)
        s.admit("r18", PASS)
        status = s.status()
    assert status["active"]["since"] == 1234.5
    assert [b["staged_at"] for b in status["staged"]] == [1234.5, 1234.5]
    assert status["admissions"][0]["at"] == 1234.5


def test_artifact_sources_are_kept_and_admission_runs_all_nine_checks(tmp_path):
    stable = ReleaseBundle.from_bundle(seed_release_bundle("compact-268"), "cache-compact-268-r17", "r17")
    candidate = ReleaseBundle.from_bundle(seed_release_bundle("balanced-272"), "cache-expanded-272-r18", "r18")
    with ReleaseStore(tmp_path / "r.sqlite") as s:
        s.stage(stable, activate_if_empty=True)
        s.stage(candidate)
        assert s.bundle("r18").source == candidate.source
        admission = s.admit("r18", PASS)
    assert admission.mechanical == dict.fromkeys(MECHANICAL_CHECKS, True)
    assert admission.result == "promoted"


# -- a property over any sequence of decisions --------------------------------------------------

operations = st.lists(st.tuples(st.sampled_from(["promote", "fail", "rollback"]), st.integers(0, 3)), max_size=8)


@settings(max_examples=30)
@given(operations)
def test_the_active_namespace_is_never_invalidated(ops):
    releases = [release(f"r{k}") for k in range(4)]
    with tempfile.TemporaryDirectory() as tmp, ReleaseStore(Path(tmp) / "r.sqlite") as s:
        s.stage(releases[0], activate_if_empty=True)
        for r in releases[1:]:
            s.stage(r)
        for op, k in ops:
            before = s.active()
            try:
                if op == "rollback":
                    admission = s.rollback("test")
                else:
                    admission = s.admit(f"r{k}", PASS if op == "promote" else FAIL)
            except ValueError:
                assert s.active() == before  # a refused change changes nothing
                continue
            invalid = s.status()["invalidated_namespaces"]
            assert s.active() == admission.active
            assert s.active().cache_namespace not in invalid
            if admission.result == "rolled_back" and op != "rollback":
                assert admission.active == before  # the stable bundle, all six identities
                assert before.cache_namespace not in admission.invalidated_namespaces
            assert len(invalid) == len(set(invalid))
