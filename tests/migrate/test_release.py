"""Release bundles and admission (seed 003, 0x0C2): the seed's r17 -> r18 canary promotes; any one
failing input rolls back to all six stable identities and invalidates only the candidate's cache
namespace; on real artifacts each mechanical check catches its own kind of break."""

import copy
import dataclasses
import hashlib

import pytest
from hypothesis import given, strategies as st

from tinyllm.migrate.canary import CanarySlice
from tinyllm.migrate.mechanical import IDENTITY_CHECKS, MECHANICAL_CHECKS, mechanical_checks
from tinyllm.migrate.release import Admission, admit_candidate
from tinyllm.migrate.release_bundle import IDENTITY_FIELDS, ReleaseBundle
from tinyllm.artifacts.bundle import bind
from tinyllm.migrate.seed_release import release_bundle, seed_release_bundle


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


TEMPLATE = h("template")
R17 = ReleaseBundle(h("r17-sem"), h("r17-rel"), TEMPLATE, h("r17-data"), h("r17-ckpt"), "cache-compact-268-r17",
                    revision="r17")
R18 = ReleaseBundle(h("r18-sem"), h("r18-rel"), TEMPLATE, h("r18-data"), h("r18-ckpt"), "cache-expanded-272-r18",
                    revision="r18")
SEED_SLICES = (("old behaviour", 40, 1.04, 1.10), ("new pieces", 24, 0.88, 1.10), ("controls and stops", 8, 1.00, 1.00))


def seed_canary(**change) -> list[CanarySlice]:
    """The seed's three passing slices; `change` = {slice index: {field: value}} alters one."""
    slices = [CanarySlice(name, n, n, rho, tau) for name, n, rho, tau in SEED_SLICES]
    for k, fields in change.items():
        slices[int(k)] = dataclasses.replace(slices[int(k)], **fields)
    return slices


def assert_rolled_back(admission: Admission) -> None:
    assert admission.result == "rolled_back"
    assert admission.active == R17
    assert admission.active.identities() == R17.identities()
    assert admission.invalidated_namespaces == ("cache-expanded-272-r18",)
    assert R17.cache_namespace not in admission.invalidated_namespaces


# -- the seed's example -----------------------------------------------------------------------

def test_the_seed_canary_promotes_r18():
    admission = admit_candidate(R17, R18, seed_canary(), traffic_basis_points=500)
    assert admission.result == "promoted"
    assert admission.active == R18 and admission.active.revision == "r18"
    assert admission.invalidated_namespaces == ()
    assert admission.failing_slice is None and admission.failed_checks == ()
    assert admission.traffic_basis_points == 500
    assert set(admission.mechanical) == set(IDENTITY_CHECKS) and all(admission.mechanical.values())
    assert [s.name for s in admission.canary] == [name for name, *_ in SEED_SLICES]


SLICE_BREAKS = {
    "one case fails": lambda s: {"passed": s.cases - 1},
    "rho above tau": lambda s: {"rho": s.tau + 0.01},
    "a stop mismatch": lambda s: {"stop_mismatches": 1},
    "a cache mismatch": lambda s: {"cache_mismatches": 1},
}


@pytest.mark.parametrize("index", range(3), ids=[name for name, *_ in SEED_SLICES])
@pytest.mark.parametrize("kind", sorted(SLICE_BREAKS))
def test_one_failing_slice_condition_rolls_back(kind, index):
    canary = seed_canary()
    canary[index] = dataclasses.replace(canary[index], **SLICE_BREAKS[kind](canary[index]))
    admission = admit_candidate(R17, R18, canary, traffic_basis_points=500)
    assert_rolled_back(admission)
    assert admission.failing_slice == SEED_SLICES[index][0]
    assert admission.failed_checks == ()
    assert admission.reasons == tuple(f"{canary[index].name}: {why}" for why in canary[index].failures)
    assert len(admission.reasons) == 1


@pytest.mark.parametrize("check", MECHANICAL_CHECKS)
def test_one_false_mechanical_check_rolls_back_without_canary_traffic(check):
    mechanical = {name: name != check for name in MECHANICAL_CHECKS}
    admission = admit_candidate(R17, R18, seed_canary(), mechanical=mechanical)
    assert_rolled_back(admission)
    assert admission.failed_checks == (check,)
    assert admission.failing_slice is None
    assert admission.canary == () and admission.traffic_basis_points == 0


def test_the_same_namespace_is_refused():
    same = dataclasses.replace(R18, cache_namespace=R17.cache_namespace)
    with pytest.raises(ValueError, match=r"candidate\.cache_namespace: found 'cache-compact-268-r17'"):
        admit_candidate(R17, same, seed_canary())


def test_nothing_is_averaged_a_perfect_slice_does_not_pay_for_a_failing_one():
    canary = seed_canary(**{"0": {"rho": 0.01}, "1": {"rho": 0.01}, "2": {"rho": 1.001}})
    assert admit_candidate(R17, R18, canary).failing_slice == "controls and stops"


def test_the_first_failing_slice_is_named_and_every_failure_is_a_reason():
    canary = seed_canary(**{"1": {"passed": 20}, "2": {"stop_mismatches": 2, "cache_mismatches": 1}})
    admission = admit_candidate(R17, R18, canary)
    assert admission.failing_slice == "new pieces"
    assert admission.reasons == ("new pieces: passed 20 of 24 cases", "controls and stops: 2 stop mismatches",
                                 "controls and stops: 1 cache-namespace mismatch")


slice_breaks = st.sampled_from(sorted(SLICE_BREAKS))


@given(index=st.integers(0, 2), kind=slice_breaks, bp=st.integers(1, 10_000),
       extra=st.lists(st.tuples(st.integers(0, 2), slice_breaks), max_size=4))
def test_any_failing_slice_condition_rolls_back_and_never_invalidates_the_stable(index, kind, bp, extra):
    canary = seed_canary()
    for k, how in [(index, kind), *extra]:
        canary[k] = dataclasses.replace(canary[k], **SLICE_BREAKS[how](canary[k]))
    admission = admit_candidate(R17, R18, canary, traffic_basis_points=bp)
    assert_rolled_back(admission)
    assert admission.failing_slice == next(s.name for s in canary if not s.ok)
    assert admission.traffic_basis_points == bp


@given(rho=st.floats(0, 1.10), passed_all=st.booleans())
def test_a_slice_at_or_below_its_limit_passes_only_with_every_case(rho, passed_all):
    s = CanarySlice("old behaviour", 40, 40 if passed_all else 39, rho, 1.10)
    assert s.ok == passed_all
    assert admit_candidate(R17, R18, [s]).result == ("promoted" if passed_all else "rolled_back")


# -- inputs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bp", [0, 10_001, -5, 2.5, True, "500"])
def test_traffic_must_be_whole_basis_points(bp):
    with pytest.raises(ValueError, match="traffic_basis_points"):
        admit_candidate(R17, R18, seed_canary(), traffic_basis_points=bp)


@pytest.mark.parametrize("canary, match", [
    ([], r"canary: found an empty list"),
    ("old behaviour", r"canary: found str"),
    ([{"name": "x"}], r"canary\[0\]: found dict"),
    ([CanarySlice("a", 1, 1, 1.0, 1.0), CanarySlice("a", 2, 2, 1.0, 1.0)], r"canary\[1\]\.name: 'a' repeats"),
])
def test_the_canary_must_be_distinct_slices(canary, match):
    with pytest.raises(ValueError, match=match):
        admit_candidate(R17, R18, canary)


@pytest.mark.parametrize("mechanical, match", [
    ({}, "mechanical: found {}"),
    ({"A_speed": True}, r'"A_speed": unknown check'),
    ({"A_rows": 1}, r"mechanical\['A_rows'\]: found 1"),
])
def test_a_mechanical_dict_is_checked(mechanical, match):
    with pytest.raises(ValueError, match=match):
        admit_candidate(R17, R18, seed_canary(), mechanical=mechanical)


@pytest.mark.parametrize("fields, match", [
    ({"cases": -1}, "cases: found -1"),
    ({"passed": 41}, "passed: found 41; expected at most cases = 40"),
    ({"rho": float("nan")}, "rho: found NaN"),
    ({"tau": -0.5}, "tau: found -0.5"),
    ({"stop_mismatches": True}, "stop_mismatches: found true"),
    ({"name": ""}, "name: found"),
])
def test_a_canary_slice_is_validated(fields, match):
    with pytest.raises(ValueError, match=match):
        CanarySlice(**{"name": "old behaviour", "cases": 40, "passed": 40, "rho": 1.04, "tau": 1.10, **fields})


def test_slice_failures_read_like_the_seed():
    s = CanarySlice("x", 40, 39, 1.12, 1.10, stop_mismatches=1, cache_mismatches=2)
    assert s.failures == ["passed 39 of 40 cases", "rho 1.12 > tau 1.10", "1 stop mismatch",
                          "2 cache-namespace mismatches"]
    assert not s.ok
    assert CanarySlice("empty", 0, 0, 0, 1).failures == ["no cases: an empty slice proves nothing"]
    assert CanarySlice.from_json(s.to_json()) == s


def test_canary_from_json_names_the_key():
    with pytest.raises(ValueError, match=r"canary\[2\]\.rho: missing"):
        CanarySlice.from_json({"name": "x", "cases": 1, "passed": 1, "tau": 1.0}, "canary[2]")
    with pytest.raises(ValueError, match=r"canary\[0\]\.speed: unknown key"):
        CanarySlice.from_json({"name": "x", "speed": 1}, "canary[0]")


# -- the release bundle -----------------------------------------------------------------------

@pytest.mark.parametrize("name", IDENTITY_FIELDS)
def test_each_identity_is_validated_by_name(name):
    bad = "NOT HEX" if name != "cache_namespace" else "has space"
    with pytest.raises(ValueError, match=rf"ReleaseBundle: {name}: found"):
        dataclasses.replace(R17, **{name: bad})


def test_the_bundle_id_covers_the_six_identities_only():
    assert R17.bundle_id == dataclasses.replace(R17, revision="other", source={}).bundle_id
    assert R17.bundle_id != dataclasses.replace(R17, cache_namespace="cache-other").bundle_id
    assert len({R17.bundle_id, R18.bundle_id}) == 2
    assert list(R17.identities()) == list(IDENTITY_FIELDS)


def test_json_round_trip_and_errors_name_the_key():
    assert ReleaseBundle.from_json(R17.to_json()) == R17
    assert ReleaseBundle.from_json(R17.to_json()).revision == "r17"
    broken = {**R17.to_json(), "h_dataset": "00"}
    with pytest.raises(ValueError, match="from_json: h_dataset: found"):
        ReleaseBundle.from_json(broken)
    missing = {k: v for k, v in R17.to_json().items() if k != "h_checkpoint"}
    with pytest.raises(ValueError, match="from_json: h_checkpoint: missing"):
        ReleaseBundle.from_json(missing)
    with pytest.raises(ValueError, match="from_json: bundle_id: found"):
        ReleaseBundle.from_json({**R17.to_json(), "bundle_id": R18.bundle_id})


# -- identity-only mechanical checks ------------------------------------------------------------

def test_identity_checks_run_when_a_source_is_missing():
    checks = mechanical_checks(R17, R18)
    assert list(checks) == list(IDENTITY_CHECKS) and all(checks.values())


@pytest.mark.parametrize("stale, check", [
    ("h_release", "A_hash"),       # a new tokenizer under the old release hash
    ("h_dataset", "A_dataset"),    # a dataset still keyed to the old tokenizer
    ("h_checkpoint", "A_rows"),    # the old checkpoint rows under a new tokenizer
])
def test_an_identity_left_at_the_stable_value_fails_its_check(stale, check):
    candidate = dataclasses.replace(R18, **{stale: getattr(R17, stale)})
    checks = mechanical_checks(R17, candidate)
    assert [name for name, ok in checks.items() if not ok] == [check]
    assert_rolled_back(admit_candidate(R17, candidate, seed_canary()))


def test_a_template_only_change_needs_a_new_dataset_and_checkpoint():
    template_only = dataclasses.replace(R17, h_template=h("new template"), cache_namespace="cache-r17-tmpl")
    assert not mechanical_checks(R17, template_only)["A_template"]
    assert not mechanical_checks(R17, template_only)["A_dataset"]
    rebuilt = dataclasses.replace(template_only, h_dataset=h("d2"), h_checkpoint=h("c2"))
    assert all(mechanical_checks(R17, rebuilt).values())


def test_a_byte_identical_redeploy_passes_identity_checks_under_a_new_namespace():
    redeploy = dataclasses.replace(R17, cache_namespace="cache-compact-268-r17b")
    assert all(mechanical_checks(R17, redeploy).values())
    assert not mechanical_checks(R17, R17)["A_cache"]


# -- real artifacts -----------------------------------------------------------------------------

def releases(candidate_bundle=None):
    stable = ReleaseBundle.from_bundle(seed_release_bundle("compact-268"), "cache-compact-268-r17", "r17")
    bundle = seed_release_bundle("balanced-272") if candidate_bundle is None else candidate_bundle
    return stable, ReleaseBundle.from_bundle(bundle, "cache-expanded-272-r18", "r18")


def failing(candidate_bundle=None, stable=None, candidate=None) -> list[str]:
    s, c = releases(candidate_bundle)
    checks = mechanical_checks(stable or s, candidate or c)
    assert list(checks) == list(MECHANICAL_CHECKS)
    return [name for name, ok in checks.items() if not ok]


def test_the_seed_releases_pass_every_mechanical_check():
    stable, candidate = releases()
    assert stable.source["checkpoint"]["input_embedding_rows"] == 268
    assert candidate.source["checkpoint"]["output_vocab_rows"] == 272
    assert mechanical_checks(stable, candidate) == dict.fromkeys(MECHANICAL_CHECKS, True)
    assert admit_candidate(stable, candidate, seed_canary()).result == "promoted"


def test_from_bundle_derives_the_identities():
    from tinyllm.artifacts.bundle import derive_hashes

    bundle = seed_release_bundle("balanced-272")
    release = ReleaseBundle.from_bundle(bundle, "ns", "r18")
    hashes = derive_hashes(bundle)
    assert (release.h_sem, release.h_release, release.h_template) == (
        hashes["tokenizer_semantic_hash"], hashes["tokenizer_release_hash"], hashes["template_hash"])
    assert release.source == bundle and release.source is not bundle
    assert release.h_sem != releases()[0].h_sem


def mutated(change) -> dict:
    bundle = seed_release_bundle("balanced-272")
    change(bundle)
    from tinyllm.artifacts.bundle import seal

    return seal(bundle)  # re-sealed: the break is a relation, not a stale declared hash


def _stale_dataset(b):
    b["dataset"]["tokenizer_hash"] = seed_release_bundle("compact-268")["dataset"]["tokenizer_hash"]


def _rows_268(b):
    b["checkpoint"]["input_embedding_rows"] = b["checkpoint"]["output_vocab_rows"] = 268


def _edit_golden(b):
    case = b["golden"]["cases"][0]
    case["ids"][0] = (case["ids"][0] + 1) % 256


def _stale_template(b):
    b["checkpoint"]["template_hash"] = h("older template")


def _wrong_stop(b):
    b["checkpoint"]["special_ids"]["stop"] = [256]


def _unverified_tie(b):
    b["checkpoint"]["tied_storage_verified"] = False


@pytest.mark.parametrize("change, check", [
    (_stale_dataset, "A_dataset"),
    (_rows_268, "A_rows"),
    (_unverified_tie, "A_rows"),
    (_edit_golden, "A_golden"),
    (_stale_template, "A_template"),
    (_wrong_stop, "A_template"),
], ids=lambda x: getattr(x, "__name__", x))
def test_one_break_in_the_candidate_fails_exactly_its_check(change, check):
    assert failing(mutated(change)) == [check]


def test_a_non_append_vocabulary_fails_only_the_prefix_check():
    from tinyllm.eval.seed_candidates import BALANCED_MERGES, byte_bpe_document

    # "in" before "th": the old ids 264..267 change meaning, yet the bundle is internally sound.
    reordered = (BALANCED_MERGES[2], BALANCED_MERGES[3], BALANCED_MERGES[0], BALANCED_MERGES[1], *BALANCED_MERGES[4:])
    assert failing(release_bundle(byte_bpe_document(reordered))) == ["A_prefix"]


def test_stale_declared_hashes_fail_the_hash_check():
    bundle = seed_release_bundle("balanced-272")
    bundle["declared_hashes"]["golden_hash"] = h("stale")
    assert failing(bundle) == ["A_hash"]


def test_identities_that_do_not_match_the_source_fail_the_hash_check():
    stable, candidate = releases()
    forged = dataclasses.replace(candidate, h_checkpoint=h("another checkpoint"), source=candidate.source)
    assert failing(candidate=forged) == ["A_hash"]


def test_the_same_namespace_fails_the_cache_check():
    stable, candidate = releases()
    shared = dataclasses.replace(candidate, cache_namespace=stable.cache_namespace, source=candidate.source)
    assert failing(candidate=shared) == ["A_cache"]


def test_a_candidate_without_byte_reconstruction_fails_the_bytes_check():
    # No decoder: the byte-level pieces come back as their alphabet characters, not the text.
    # Both releases lack it, so the candidate is still the stable vocabulary with ids appended.
    from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, byte_bpe_document

    def without_decoder(merges, namespace):
        document = byte_bpe_document(merges)
        document["decoder"] = None
        return ReleaseBundle.from_bundle(release_bundle(document), namespace)

    stable, candidate = without_decoder(COMPACT_MERGES, "cache-a"), without_decoder(BALANCED_MERGES, "cache-b")
    assert failing(stable=stable, candidate=candidate) == ["A_bytes"]


def test_an_unbuildable_candidate_fails_every_artifact_check_but_the_cache():
    bundle = seed_release_bundle("balanced-272")
    bundle["tokenizer"]["tokenizer_json"]["model"]["merges"].append(["zz", "q"])
    stable, _ = releases()
    candidate = ReleaseBundle(*releases()[1].identities().values(), revision="r18", source=bundle)
    assert failing(stable=stable, candidate=candidate) == [c for c in MECHANICAL_CHECKS if c != "A_cache"]


def test_mechanical_failure_on_real_artifacts_restores_the_stable_source():
    stable, candidate = releases(mutated(_rows_268))
    admission = admit_candidate(stable, candidate, seed_canary())
    assert admission.result == "rolled_back" and admission.failed_checks == ("A_rows",)
    assert admission.active is stable and admission.active.source["checkpoint"]["input_embedding_rows"] == 268
    assert admission.invalidated_namespaces == ("cache-expanded-272-r18",)


def test_bind_makes_a_mutated_bundle_consistent_again():
    bundle = seed_release_bundle("balanced-272")
    bundle["template"]["source"] = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert failing(bind(copy.deepcopy(bundle))) == []
