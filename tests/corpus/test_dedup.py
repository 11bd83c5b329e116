"""Exact and near deduplication (seed 003, 0x00A): tinyllm.corpus.dedup."""

import doctest
import functools
import hashlib
import importlib
import json
import random
import re
from types import SimpleNamespace

import pytest

from tinyllm.corpus.dedup import (
    CANONICALIZATIONS, DedupResult, NearDup, Removal, canonicalize, dedup, exact_dedup_key, write_removal_log,
)
from tinyllm.corpus.minhash import jaccard, shingles
from tests.peers import SHARED, require_shared

# The module itself (the package face may one day export the function under the same name).
dedup_module = importlib.import_module("tinyllm.corpus.dedup")

CANONICAL_TABLE = [
    # text, none, nfc, whitespace, casefold
    ("The cat sleeps.", "The cat sleeps.", "The cat sleeps.", "The cat sleeps.", "the cat sleeps."),
    ("Cafe\u0301", "Cafe\u0301", "Caf\u00e9", "Caf\u00e9", "caf\u00e9"),
    ("  a \t\n b\u00a0\u3000c\x1c d\x85 ", "  a \t\n b\u00a0\u3000c\x1c d\x85 ", "  a \t\n b\u00a0\u3000c\x1c d\x85 ",
     "a b c d", "a b c d"),
    ("Stra\u00dfe  CAT", "Stra\u00dfe  CAT", "Stra\u00dfe  CAT", "Stra\u00dfe CAT", "strasse cat"),
    ("x\ud800y", "x\ufffdy", "x\ufffdy", "x\ufffdy", "x\ufffdy"),
    ("\u212b", "\u212b", "\u00c5", "\u00c5", "\u00e5"),  # ANGSTROM SIGN: NFC maps it to Å
    ("", "", "", "", ""),
]


@pytest.mark.parametrize("row", CANONICAL_TABLE, ids=lambda row: ascii(row[0]))
def test_canonicalization_table(row):
    text, *expected = row
    assert [canonicalize(text, mode) for mode in CANONICALIZATIONS] == expected
    for mode, canonical in zip(CANONICALIZATIONS, expected):
        assert exact_dedup_key(text, mode) == hashlib.sha256(canonical.encode("utf-8")).digest()


def test_exact_key_is_the_seeds_sha256_and_never_raises_on_a_str():
    assert exact_dedup_key("The cat sleeps.") == hashlib.sha256(b"The cat sleeps.").digest()
    assert exact_dedup_key("a\udc00") == exact_dedup_key("a\ufffd")
    assert len(exact_dedup_key("\ud83d\ude00")) == 32


def test_canonicalize_rejects_unknown_modes_and_non_text():
    with pytest.raises(ValueError, match=r"canonicalize: canonicalize = 'lower'; expected one of 'none', 'nfc'"):
        canonicalize("x", "lower")
    with pytest.raises(ValueError, match=r"exact_dedup_key: text: expected a str, got bytes"):
        exact_dedup_key(b"x")


def test_seed_example_ten_copies_become_one():
    docs = [(f"page-{i}", "The cat sleeps.") for i in range(10)] + [("other", "A train arrives.")]
    result = dedup(docs)
    assert result.kept == ["page-0", "other"]
    assert result.removed == [Removal(f"page-{i}", "page-0", "exact", 1.0) for i in range(1, 10)]


def test_canonicalization_decides_what_is_an_exact_copy():
    docs = [("a", "The  cat"), ("b", "the cat"), ("c", "The cat")]
    assert dedup(docs).kept == ["a", "b", "c"]
    assert dedup(docs, canonicalize="whitespace").kept == ["a", "b"]
    assert dedup(docs, canonicalize="casefold").kept == ["a"]


def test_near_chain_keeps_the_earliest_and_names_it():
    base = [f"w{i}" for i in range(40)]
    a = " ".join(base)
    b = " ".join(base[:10] + ["x"] + base[11:])          # J(a, b) = 37/41
    c = " ".join(base[:10] + ["x"] + base[11:30] + ["y"] + base[31:])  # J(b, c) = 37/41, J(a, c) = 35/43
    assert jaccard(shingles(a), shingles(c)) < 0.85 <= jaccard(shingles(b), shingles(c))
    near = NearDup(threshold=0.85, num_perm=64)
    result = dedup([("a", a), ("b", b), ("c", c)], near=near)
    assert result.kept == ["a"]
    # c reaches a only through b; it still names a, and its similarity says how far it is.
    assert [(r.document_id, r.duplicate_of, r.kind) for r in result.removed] == [("b", "a", "near"), ("c", "a", "near")]
    assert result.removed[1].similarity == 35 / 43
    by_id = dedup([("c", c), ("b", b), ("a", a)], near=near, order="id")
    assert by_id.kept == ["a"] and {r.duplicate_of for r in by_id.removed} == {"a"}
    starts_in_middle = dedup([("b", b), ("a", a), ("c", c)], near=near)
    assert starts_in_middle.kept == ["b"]


def test_an_exact_copy_of_a_near_duplicate_names_the_document_kept():
    a = " ".join(f"w{i}" for i in range(40))
    b = a.replace("w10", "x")
    result = dedup([("b", b), ("a", a), ("b2", b)], near=NearDup(threshold=0.85), order="id")
    assert result.kept == ["a"]
    assert [(r.document_id, r.duplicate_of, r.kind) for r in result.removed] == [("b", "a", "near"),
                                                                                 ("b2", "a", "near")]
    assert result.removed[0].similarity == result.removed[1].similarity == 37 / 41
    assert dedup([("b", b), ("a", a), ("b2", b)]).removed == [Removal("b2", "b", "exact", 1.0)]


def test_documents_may_be_objects_and_results_list_input_order():
    docs = [SimpleNamespace(document_id=3, text="x y"), SimpleNamespace(document_id=1, text="x y"), (2, "z")]
    result = dedup(docs, order="id")
    assert result.kept == [1, 2]
    assert result.removed == [Removal(3, 1, "exact", 1.0)]


def test_dedup_rejects_bad_input_naming_it():
    with pytest.raises(ValueError, match=r"documents\[1\].document_id = 'a' repeats documents\[0\]'s"):
        dedup([("a", "x"), ("a", "y")])
    with pytest.raises(ValueError, match=r"documents\[0\].text: expected a str, got int"):
        dedup([("a", 5)])
    with pytest.raises(ValueError, match=r"documents\[0\] is a str; expected a \(document_id, text\) pair"):
        dedup(["text"])
    with pytest.raises(ValueError, match=r"dedup: order = 'random'; expected one of 'input', 'id'"):
        dedup([], order="random")
    with pytest.raises(ValueError, match=r"dedup: near = 0.8; expected None or a NearDup"):
        dedup([], near=0.8)
    with pytest.raises(ValueError, match=r"NearDup: threshold = 1.5; expected a number in \(0, 1\]"):
        NearDup(threshold=1.5)
    with pytest.raises(ValueError, match=r"NearDup: bands = 5; expected a divisor of num_perm = 128"):
        NearDup(bands=5)
    with pytest.raises(ValueError, match=r"NearDup: bands \* rows = 16 \* 4 = 64; expected num_perm = 128"):
        NearDup(bands=16, rows=4)
    with pytest.raises(ValueError, match=r"dedup: order = 'id' needs document ids of one comparable type"):
        dedup([(1, "a"), ("b", "c")], order="id")


def test_explicit_banding_is_used():
    assert repr(NearDup(bands=16).lsh()) == "LSH(bands=16, rows=8)"
    assert repr(NearDup(rows=2).lsh()) == "LSH(bands=64, rows=2)"
    assert repr(NearDup().lsh()) == "LSH(bands=32, rows=4)"


# -- a planted-duplicate corpus from the shared data ------------------------------------------------

WORDS_PER_DOC = 300


@functools.lru_cache(maxsize=1)
def planted_corpus():
    """200 documents of 300 consecutive words of Pride and Prejudice (cut between words, line
    breaks kept), 180 near copies of distinct originals with 3-9% of their words replaced, deleted
    or inserted, and 10 exact copies with their whitespace changed; shuffled. Returns the documents
    and, per planted pair (original id, copy id), its exact Jaccard score."""
    path = require_shared(SHARED / "corpora" / "en" / "pride_and_prejudice.txt")
    text = path.read_text(encoding="utf-8")
    spans = [m.span() for m in re.finditer(r"\S+", text)][1000:]  # past the Project Gutenberg header
    originals = []
    for d in range(200):
        first, last = spans[d * WORDS_PER_DOC], spans[(d + 1) * WORDS_PER_DOC - 1]
        originals.append((f"orig-{d}", text[first[0]:last[1]]))
    rng = random.Random(3)
    vocabulary = [text[a:b] for a, b in spans[200 * WORDS_PER_DOC:]]
    docs, pairs = list(originals), {}
    for d in rng.sample(range(200), 180):
        words = originals[d][1].split()
        for _ in range(round(rng.uniform(0.03, 0.09) * len(words))):
            at, edit = rng.randrange(len(words)), rng.choice("rdi")
            if edit == "r":
                words[at] = rng.choice(vocabulary)
            elif edit == "d":
                del words[at]
            else:
                words.insert(at, rng.choice(vocabulary))
        copy = " ".join(words)
        docs.append((f"copy-{d}", copy))
        pairs[(f"orig-{d}", f"copy-{d}")] = jaccard(shingles(originals[d][1]), shingles(copy))
    for d in rng.sample(range(200), 10):
        docs.append((f"exact-{d}", "  " + "\n\n".join(originals[d][1].split("\n")) + "\n"))
    rng.shuffle(docs)
    return docs, pairs


def family(doc_id: str) -> str:
    return doc_id.split("-")[1]


def test_planted_near_duplicates_are_found_without_false_positives():
    docs, pairs = planted_corpus()
    similar = {pair for pair, j in pairs.items() if j >= 0.8}
    assert len(similar) >= 100, f"only {len(similar)} planted pairs reach J >= 0.8"
    result = dedup(docs, canonicalize="whitespace", near=NearDup(threshold=0.8))
    texts = dict(docs)

    # No false positives: every removal is a planted relative of the document kept, at J >= 0.8
    # (the exact copies: equal after whitespace canonicalization).
    kept = set(result.kept)
    for removal in result.removed:
        assert removal.duplicate_of in kept
        assert family(removal.document_id) == family(removal.duplicate_of), removal
        exact = jaccard(shingles(texts[removal.document_id]), shingles(texts[removal.duplicate_of]))
        assert exact == removal.similarity and exact >= 0.8, removal
        if removal.kind == "exact":
            assert "exact" in (removal.document_id + removal.duplicate_of)

    # Recall over the planted pairs at J >= 0.8: both end with the same kept document (one may
    # name the other, or both an exact copy that came first).
    kept_for = {doc_id: doc_id for doc_id in result.kept} | {r.document_id: r.duplicate_of for r in result.removed}
    found = {(a, b) for a, b in similar if kept_for[a] == kept_for[b]}
    recall = len(found) / len(similar)
    assert recall >= 0.95, f"recall {recall:.3f} ({len(found)} of {len(similar)})"
    exact_families = [family(doc_id) for doc_id, _ in docs if doc_id.startswith("exact-")]
    assert all(not {f"orig-{d}", f"exact-{d}"} <= kept for d in exact_families)
    assert sum(r.kind == "exact" for r in result.removed) >= 5
    assert len(result.kept) + len(result.removed) == len(docs)


def test_dedup_is_deterministic_whatever_the_input_order_by_id(tmp_path):
    docs, _ = planted_corpus()
    near = NearDup(threshold=0.8, seed=11)
    first = dedup(docs, canonicalize="whitespace", near=near, order="id")
    shuffled = list(docs)
    random.Random(1).shuffle(shuffled)
    second = dedup(shuffled, canonicalize="whitespace", near=near, order="id")
    assert set(first.kept) == set(second.kept)
    assert sorted(first.removed, key=repr) == sorted(second.removed, key=repr)
    again = dedup(docs, canonicalize="whitespace", near=near, order="id")
    assert again == first


def test_removal_log_names_what_each_removal_duplicated(tmp_path):
    docs, _ = planted_corpus()
    result = dedup(docs[:120], canonicalize="whitespace", near=NearDup())
    assert isinstance(result, DedupResult) and result.removed
    path = write_removal_log(tmp_path / "removed.jsonl", result)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    header, rows = lines[0], lines[1:]
    assert header["format"] == "tinyllm.dedup-log/v1"
    assert header["method"]["canonicalize"] == "whitespace"
    assert header["method"]["near"]["threshold"] == 0.8 and header["method"]["near"]["lsh"] == "LSH(bands=32, rows=4)"
    assert rows == [{"document_id": r.document_id, "duplicate_of": r.duplicate_of, "kind": r.kind,
                     "similarity": r.similarity} for r in result.removed]
    assert all(row["duplicate_of"] in set(result.kept) for row in rows)
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary file


def test_removal_log_refuses_ids_json_cannot_write(tmp_path):
    result = dedup([(frozenset({1}), "x"), (frozenset({2}), "x")])
    with pytest.raises(ValueError, match=r"write_removal_log: removed\[0\] = .* cannot be written as JSON"):
        write_removal_log(tmp_path / "log.jsonl", result)


def test_the_worked_examples_in_the_docstrings_hold():
    # tests/test_docstrings.py lists its modules by hand; these run here until it names them.
    result = doctest.testmod(dedup_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 5 and result.failed == 0
