"""Group-isolated splits (seed 003, 0x00A): tinyllm.corpus.splits."""

import hashlib
import json
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyllm.artifacts.domains import corpus_hash
from tinyllm.corpus.splits import (
    SPLIT_METHOD, group_split, group_unit, split_by_group, split_corpus, split_settings, write_split_manifest,
)
from tinyllm.eval.records import SPLITS, Record, read_manifest

FRACTIONS = {"fit": 0.8, "validation": 0.1, "test": 0.1}
CORPUS = {"revision": "r1", "filter_pipeline": ["extract", "dedup"], "order_policy": "record_id"}

group_ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)


@st.composite
def grouped_records(draw):
    """Records with unique ids in a few groups, each group with 1-4 records."""
    groups = draw(st.lists(group_ids, min_size=1, max_size=20, unique=True))
    records = []
    for group in groups:
        for _ in range(draw(st.integers(1, 4))):
            records.append(Record(f"r{len(records)}", group, "fit", f"text {len(records)}"))
    return records


def owners(records):
    """group_id -> the set of splits its records landed in."""
    found = {}
    for record in records:
        found.setdefault(record.group_id, set()).add(record.split)
    return found


# -- the draw --------------------------------------------------------------------------------

def test_the_draw_is_the_documented_hash():
    for seed, group in [(0, "cat"), (7, "train"), ("s", "猫")]:
        digest = hashlib.sha256(f"{seed}\0{group}".encode("utf-8")).digest()
        assert group_unit(group, seed) == int.from_bytes(digest[:8], "big") / 2**64


def test_the_unit_is_mapped_onto_cumulative_fractions_in_split_order():
    # u("cat", 0) = 0.5286, u("train", 0) = 0.0921 (pinned: a change of the hash input changes them).
    assert round(group_unit("cat", 0), 4) == 0.5286 and round(group_unit("train", 0), 4) == 0.0921
    half = {"fit": 0.5, "validation": 0.25, "test": 0.25}
    assert group_split("cat", half, 0) == "validation"  # 0.5 <= u < 0.75
    assert group_split("train", half, 0) == "fit"  # u < 0.5
    assert group_split("cat", {"fit": 0.5, "test": 0.5}, 0) == "test"  # validation's empty interval skipped
    assert group_split("cat", {"fit": 0.6, "validation": 0.4}, 0) == "fit"


@given(group_ids, st.integers(0, 2**32))
def test_a_split_with_fraction_zero_never_receives_a_group(group, seed):
    # The fractions sum to 1 - 5e-10: a u above 0.9999999995 must still go to validation, not test.
    fractions = {"fit": 0.5, "validation": 0.4999999995, "test": 0.0}
    assert group_split(group, fractions, seed) in ("fit", "validation")
    assert group_split(group, {"validation": 1}, seed) == "validation"


@given(grouped_records(), st.integers(0, 2**53 - 1))
def test_no_group_spans_two_splits(records, seed):
    out = split_by_group(records, FRACTIONS, seed)
    assert all(len(splits) == 1 for splits in owners(out).values())
    assert [r.split for r in out] == [group_split(r.group_id, FRACTIONS, seed) for r in records]


@given(grouped_records(), st.randoms(use_true_random=False))
def test_the_assignment_does_not_depend_on_record_order(records, rng):
    shuffled = list(records)
    rng.shuffle(shuffled)
    first = {r.record_id: r.split for r in split_by_group(records, FRACTIONS, 3)}
    second = {r.record_id: r.split for r in split_by_group(shuffled, FRACTIONS, 3)}
    assert first == second


@given(grouped_records(), grouped_records())
def test_a_group_keeps_its_split_whatever_other_groups_exist(records, others):
    alone = {r.group_id: r.split for r in split_by_group(records, FRACTIONS, 11)}
    together = {r.group_id: r.split for r in split_by_group(records + others, FRACTIONS, 11)}
    assert all(together[group] == split for group, split in alone.items())


def test_the_same_seed_repeats_and_another_seed_differs():
    groups = [f"g{k}" for k in range(1000)]
    records = [(f"r{k}", g, "x") for k, g in enumerate(groups)]
    first = [r.split for r in split_by_group(records, FRACTIONS, 0)]
    assert first == [r.split for r in split_by_group(records, FRACTIONS, 0)]
    assert first == [r.split for r in split_by_group(list(records), dict(reversed(FRACTIONS.items())), 0)]
    # Two independent draws agree on a group with probability 0.8² + 0.1² + 0.1² = 0.66.
    for other_seed in (1, "0 ", 2**40):
        other = [r.split for r in split_by_group(records, FRACTIONS, other_seed)]
        disagree = sum(a != b for a, b in zip(first, other)) / len(groups)
        assert 0.25 < disagree < 0.45, other_seed
    # The seed's text is hashed: the int and its decimal string draw alike.
    assert first == [r.split for r in split_by_group(records, FRACTIONS, "0")]


@pytest.mark.parametrize("seed", [0, 1, 12345])
@pytest.mark.parametrize("fractions", [FRACTIONS, {"fit": 0.5, "validation": 0.3, "test": 0.2},
                                       {"fit": 0.98, "validation": 0.01, "test": 0.01}])
def test_realized_fractions_over_10000_groups_are_close(seed, fractions):
    records = [{"record_id": f"r{k}", "group_id": f"group-{k}", "text": ""} for k in range(10_000)]
    realized = Counter(r.split for r in split_by_group(records, fractions, seed))
    for split in SPLITS:
        assert abs(realized[split] / 10_000 - fractions[split]) <= 0.02, (split, realized)


def test_groups_of_many_records_count_once():
    # 2000 groups of 5 records: the draw is per group, so each group adds 5 records to one split.
    records = [(f"r{g}-{k}", f"g{g}", "x") for g in range(2000) for k in range(5)]
    out = split_by_group(records, FRACTIONS, 5)
    per_group = Counter({r.group_id: r.split for r in out}.values())
    assert abs(per_group["fit"] / 2000 - 0.8) <= 0.03
    assert Counter(r.split for r in out)["fit"] == 5 * per_group["fit"]


# -- inputs ----------------------------------------------------------------------------------

def test_tuples_dicts_and_records_become_records_in_input_order():
    given_records = [
        ("r1", "g1", "The cat sleeps."),
        {"record_id": "r2", "group_id": "g1", "text": "The cat wakes.", "slice": "prose"},
        {"record_id": "r3", "group_id": "g2", "text": "def f(): pass", "source": "code"},
        Record("r4", "g3", "test", "A train arrives.", slice="prose", declared_utf8_bytes=16),
    ]
    out = split_by_group(given_records, FRACTIONS, 0)
    assert [r.record_id for r in out] == ["r1", "r2", "r3", "r4"]
    assert all(isinstance(r, Record) for r in out)
    assert [r.slice for r in out] == [None, "prose", "code", "prose"]  # a source travels as the slice
    assert out[3].declared_utf8_bytes == 16 and out[3].text == "A train arrives."
    assert out[3].split == group_split("g3", FRACTIONS, 0)  # the old split is replaced
    assert given_records[3].split == "test"  # and the input is not changed


@pytest.mark.parametrize("item, message", [
    (("r1", "g1"), r"records\[0\] is a tuple of 2 items; expected a Record"),
    ({"record_id": "r1", "text": "x"}, r"records\[0\] has keys missing \['group_id'\], unexpected \[\]"),
    ({"record_id": "r1", "group_id": "g", "text": "x", "lang": "en"},
     r"records\[0\] has keys missing \[\], unexpected \['lang'\]"),
    ({"record_id": "r1", "group_id": "g", "text": "x", "slice": "a", "source": "b"},
     r'records\[0\] has slice = "a" and source = "b"; expected one of them'),
    (("r1", "", "x"), r"records\[0\]: Record: group_id = \"\"; expected a non-empty string"),
    ("r1 g1 x", r"records\[0\] is a str; expected a Record"),
])
def test_bad_records_are_refused_naming_the_index(item, message):
    with pytest.raises(ValueError, match=r"^split_by_group: " + message):
        split_by_group([item], FRACTIONS, 0)


@pytest.mark.parametrize("fractions, message", [
    ({"fit": 0.8, "validation": 0.1}, r"fractions sum to 0\.9; expected fractions that sum to 1"),
    ({"fit": 0.8, "validation": 0.1, "test": 0.1, "dev": 0.0}, r"fractions has the keys \['dev'\]"),
    ({"fit": 1.1, "validation": -0.1}, r"fractions\['validation'\] = -0\.1; expected a finite number >= 0"),
    ({"fit": float("nan")}, r"fractions\['fit'\] = nan; expected a finite number >= 0"),
    ({"fit": True}, r"fractions\['fit'\] = true; expected a number in \[0, 1\]"),
    ({"fit": "0.8"}, r"fractions\['fit'\] = \"0\.8\"; expected a number"),
    ([0.8, 0.1, 0.1], r"fractions is a list; expected a mapping"),
    ({"fit": 0.5, "validation": 0.5 + 2e-9}, r"fractions sum to 1\.000000002"),
])
def test_bad_fractions_are_refused_naming_fractions(fractions, message):
    with pytest.raises(ValueError, match=r"^split_by_group: " + message):
        split_by_group([("r1", "g1", "x")], fractions, 0)


def test_fractions_within_the_tolerance_are_accepted():
    assert split_by_group([("r", "g", "x")], {"fit": 0.7, "validation": 0.2, "test": 0.1 - 5e-10}, 0)


@pytest.mark.parametrize("seed, message", [
    (True, r"seed = true \(bool\); expected an int or a str"),
    (1.5, r"seed = 1\.5 \(float\); expected an int or a str"),
    (2**53, r"seed = 9007199254740992; expected an int within"),
    ("a\0b", r"seed has a NUL character at index 1; expected a seed without NUL"),
    ("a\ud800", r"seed has a lone surrogate at index 1"),
])
def test_bad_seeds_are_refused_naming_seed(seed, message):
    with pytest.raises(ValueError, match=r"^split_by_group: " + message):
        split_by_group([("r1", "g1", "x")], FRACTIONS, seed)


# -- the manifest ----------------------------------------------------------------------------

def corpus_records(n=300):
    """n records in n // 3 groups, texts of several scripts."""
    texts = ["The cat sleeps.", "Un train arrive à l'heure.", "猫が寝ている。", "def f(x):\n    return x\n"]
    return [(f"doc-{k:04d}", f"group-{k // 3}", texts[k % len(texts)]) for k in range(n)]


def test_the_written_manifest_reads_back_and_binds_the_split_settings(tmp_path):
    path = tmp_path / "splits.jsonl"
    bound = write_split_manifest(path, corpus_records(), FRACTIONS, 42, CORPUS)
    assert bound == corpus_hash(split_corpus(CORPUS, FRACTIONS, 42))
    manifest = read_manifest(path, corpus_hash=bound)
    assert manifest.corpus_hash == bound
    expected = split_by_group(corpus_records(), FRACTIONS, 42)
    assert [(r.record_id, r.group_id, r.split, r.text) for r in manifest.records] == \
        [(r.record_id, r.group_id, r.split, r.text) for r in expected]
    assert all(r.declared_utf8_bytes == r.utf8_bytes for r in manifest.records)  # write_manifest's counts
    assert all(len(splits) == 1 for splits in owners(manifest.records).values())
    assert {r.split for r in manifest.records} == set(SPLITS)
    header = json.loads(path.read_text(encoding="utf-8").split("\n")[0])
    assert header["records"] == 300


def test_the_corpus_object_records_fractions_seed_and_method():
    corpus = split_corpus(CORPUS, FRACTIONS, 42)
    assert {k: v for k, v in corpus.items() if k != "split"} == CORPUS
    assert corpus["split"] == split_settings(FRACTIONS, 42) == {
        "method": SPLIT_METHOD, "order": ["fit", "validation", "test"],
        "fractions": {"fit": "0.8", "validation": "0.1", "test": "0.1"}, "seed": 42}
    assert SPLIT_METHOD == "sha256(seed, group_id)"
    # Other settings, another H_corpus: a manifest cut with seed 42 is not one cut with seed 43.
    hashes = {corpus_hash(split_corpus(CORPUS, FRACTIONS, seed)) for seed in (42, 43, "42")}
    hashes.add(corpus_hash(split_corpus(CORPUS, {"fit": 0.7, "validation": 0.2, "test": 0.1}, 42)))
    assert len(hashes) == 4


def test_a_manifest_read_with_other_settings_is_refused(tmp_path):
    path = tmp_path / "splits.jsonl"
    write_split_manifest(path, corpus_records(), FRACTIONS, 42, CORPUS)
    with pytest.raises(ValueError, match="the manifest was cut from another corpus"):
        read_manifest(path, corpus_hash=corpus_hash(split_corpus(CORPUS, FRACTIONS, 43)))


def test_a_corpus_with_other_split_settings_is_refused():
    corpus = {**CORPUS, "split": split_settings(FRACTIONS, 1)}
    assert split_corpus(corpus, FRACTIONS, 1) == corpus  # the same settings again are fine
    with pytest.raises(ValueError, match=r"^split_corpus: corpus\['split'\] = .*expected no 'split' key"):
        split_corpus(corpus, FRACTIONS, 2)


def test_the_manifest_rules_still_apply(tmp_path):
    # An empty test split (all groups to fit) and a repeated record id are refused by the manifest.
    with pytest.raises(ValueError, match="no record in split validation, test"):
        write_split_manifest(tmp_path / "a.jsonl", corpus_records(), {"fit": 1}, 0, CORPUS)
    with pytest.raises(ValueError, match="already used by records"):
        write_split_manifest(tmp_path / "b.jsonl", corpus_records() + [("doc-0000", "g", "x")], FRACTIONS, 0,
                             CORPUS)
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()


def test_bad_fractions_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"fractions sum to 0\.9"):
        write_split_manifest(tmp_path / "m.jsonl", corpus_records(), {"fit": 0.9}, 0, CORPUS)
    assert not (tmp_path / "m.jsonl").exists()


def test_split_records_round_trip_through_random_corpora(tmp_path):
    rng = random.Random(9)
    records = [(f"r{k}", f"g{rng.randrange(60)}", "x" * rng.randrange(5)) for k in range(400)]
    bound = write_split_manifest(tmp_path / "m.jsonl", records, {"fit": 0.6, "validation": 0.2, "test": 0.2},
                                 "seed-a", CORPUS)
    back = read_manifest(tmp_path / "m.jsonl", corpus_hash=bound).records
    assert [(r.record_id, r.group_id, r.text) for r in back] == records
    assert all(len(splits) == 1 for splits in owners(back).values())
