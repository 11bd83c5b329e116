"""Tokenizer selection on validation with the test split sealed (seed 003, 0x0C1, lines 2541-2705):
the seed's three nested candidates, the gates, the tie-break, the candidate-set hash, and proof
that nothing before `test_report()` reads a test record."""

from __future__ import annotations

import dataclasses
import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyllm.eval.seed_candidates as seed_module
import tinyllm.eval.selection as selection_module
from tinyllm.artifacts.canonical import framed_hash
from tinyllm.eval.calculators import vocab_cost
from tinyllm.eval.row_exposure import exposure
from tinyllm.eval.records import Record, validate_split_manifest
from tinyllm.eval.seed_candidates import (BALANCED_MERGES, COMPACT_MERGES, EXPANDED_MERGES, SEED_GATES, SEED_RECORDS,
                                          byte_bpe, byte_bpe_document, seed_candidates)
from tinyllm.eval.selection import CANDIDATE_SET_DOMAIN, Candidate, Gates, select
from tinyllm.tok.load import tokenizer_from_document


def words(text: str) -> int:
    """A reference word counter of our own (w(x) feeds fertility only, never the selection)."""
    return len(text.split())


def run(candidates=None, records=SEED_RECORDS, gates=SEED_GATES):
    return select(seed_candidates() if candidates is None else candidates, records, gates, words=words)


@pytest.fixture(scope="module")
def seed_selection():
    return run()


def test_module_examples_hold():
    for module in (selection_module, seed_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0, module.__name__
        assert result.failed == 0, module.__name__


# -- the seed's example ------------------------------------------------------------------------


def test_seed_records_are_a_group_isolated_manifest():
    assert len(SEED_RECORDS) == 12
    assert validate_split_manifest(SEED_RECORDS) == {"fit": 5, "validation": 4, "test": 3}
    assert {r.slice for r in SEED_RECORDS} == {"prose", "code", "numbers", "cjk"}
    for split in ("fit", "validation"):
        assert {r.slice for r in SEED_RECORDS if r.split == split} == {"prose", "code", "numbers", "cjk"}
    assert len({r.group_id for r in SEED_RECORDS}) == 12


def test_seed_candidates_are_nested_and_append_only():
    compact, balanced, expanded = (c.tokenizer for c in seed_candidates())
    assert (compact.vocab_size, balanced.vocab_size, expanded.vocab_size) == (268, 272, 279)
    assert len(COMPACT_MERGES) == 4 and len(BALANCED_MERGES) == 8 and len(EXPANDED_MERGES) == 15
    assert BALANCED_MERGES[:4] == COMPACT_MERGES and EXPANDED_MERGES[:8] == BALANCED_MERGES
    for small, large in ((compact, balanced), (balanced, expanded)):
        for i in range(small.vocab_size):  # every earlier id keeps its row
            assert small.id_to_token(i) == large.id_to_token(i)
    assert [compact.token_bytes(i) for i in range(264, 268)] == [b"th", b"the", b"in", b"ing"]
    assert [balanced.token_bytes(i) for i in range(268, 272)] == [b"er", b"re", b"==", b"10"]
    assert [expanded.token_bytes(i) for i in range(272, 279)] == [b"fo", b"foo", b"ba", b"bar", b"\xe4\xb8",
                                                                  "中".encode(), b"xy"]
    assert compact.special_ids == {f"<|reserved_{k}|>": 256 + k for k in range(8)}


def test_seed_outcome(seed_selection):
    s = seed_selection
    assert s.winner == "balanced-272"
    assert s.eligible == ("balanced-272", "compact-268")
    tokens = {r.candidate_id: r.validation_tokens for r in s.results}
    assert tokens == {"compact-268": 72, "balanced-272": 64, "expanded-279": 55}
    # The expanded candidate is the shortest on validation, and rejected all the same.
    assert min(tokens, key=tokens.get) == "expanded-279"
    failures = s.rejected["expanded-279"]
    assert [(f.gate, f.found, f.expected) for f in failures] == [("vocab_params", 18135, "<= 18000"),
                                                                 ("exposure", 5, "<= 2")]
    assert set(s.rejected) == {"expanded-279"}


def test_seed_parameter_and_logit_numbers(seed_selection):
    # d = 64, tied, output bias: P_vocab = 65 V and F_logits = 2 N 64 V (seed lines 2673-2679).
    for r in seed_selection.results:
        assert r.vocabulary_parameters == 65 * r.vocab_size
        assert r.logit_flops == 2 * r.validation_tokens * 64 * r.vocab_size
        cost = vocab_cost(r.vocab_size, 64, tied=True, bias=True, positions=r.validation_tokens)
        assert (r.vocabulary_parameters, r.logit_flops) == (cost.vocab_params, cost.logit_flops)
    params = {r.candidate_id: r.vocabulary_parameters for r in seed_selection.results}
    assert params == {"compact-268": 17420, "balanced-272": 17680, "expanded-279": 18135}


def test_seed_exposure_diagnostic(seed_selection):
    under = {r.candidate_id: r.underexposed_rows for r in seed_selection.results}
    assert under["compact-268"] == (264, 267)  # th, ing (seed lines 2685-2691)
    assert under["balanced-272"] == (264, 267)
    assert under["expanded-279"] == (264, 267, 272, 274, 276)  # + fo, ba, partial 中: consumed
    learned = {r.candidate_id: r.learned_rows for r in seed_selection.results}
    assert learned == {"compact-268": 4, "balanced-272": 8, "expanded-279": 15}


def test_every_seed_candidate_reconstructs(seed_selection):
    for r in seed_selection.results:
        assert r.validation.reconstruction_failures == ()
        assert r.validation.records == 4


def test_seed_test_report_is_27_positions_over_three_records(seed_selection):
    report = seed_selection.test_report()
    assert report.records == 3 and report.total_tokens == 27
    assert seed_selection.test_report() is report  # once; the same report again


def test_candidate_set_hash_is_over_sorted_semantic_hashes(seed_selection):
    hashes = sorted(c.tokenizer.semantic_hash for c in seed_candidates())
    assert seed_selection.candidate_set_hash == framed_hash(CANDIDATE_SET_DOMAIN, hashes)
    assert [r.semantic_hash for r in seed_selection.results] == [
        c.tokenizer.semantic_hash for c in sorted(seed_candidates(), key=lambda c: c.candidate_id)]
    two = run(seed_candidates()[:2])
    assert two.candidate_set_hash != seed_selection.candidate_set_hash


@settings(max_examples=12, deadline=None)
@given(order=st.permutations(range(3)))
def test_candidate_order_cannot_choose(order, seed_selection):
    candidates = seed_candidates()
    s = run([candidates[k] for k in order])
    assert s.winner == seed_selection.winner
    assert s.candidate_set_hash == seed_selection.candidate_set_hash
    assert s.results == seed_selection.results
    assert s == seed_selection


def test_selection_is_frozen(seed_selection):
    with pytest.raises(dataclasses.FrozenInstanceError):
        seed_selection.winner = "expanded-279"


# -- the test split is sealed ------------------------------------------------------------------


class SealedText(Exception):
    pass


class Sealed(Record):
    """A test record whose text raises once armed: any read of it during selection fails."""

    def __getattribute__(self, name):
        if name == "text" and object.__getattribute__(self, "__dict__").get("_armed"):
            raise SealedText(f"test text of {object.__getattribute__(self, 'record_id')} was read")
        return object.__getattribute__(self, name)


def sealed(record: Record) -> Sealed:
    out = Sealed(record.record_id, record.group_id, record.split, record.text, slice=record.slice,
                 declared_utf8_bytes=record.declared_utf8_bytes, declared_codepoints=record.declared_codepoints)
    object.__setattr__(out, "_armed", True)
    return out


def test_selection_never_reads_a_test_text(seed_selection):
    poisoned = [sealed(r) if r.split == "test" else r for r in SEED_RECORDS]
    with pytest.raises(SealedText):
        poisoned[-1].text  # the poison works
    s = run(records=poisoned)  # nothing raises here
    assert s.winner == seed_selection.winner
    assert s.results == seed_selection.results
    assert s.candidate_set_hash == seed_selection.candidate_set_hash
    assert s.rejected == seed_selection.rejected
    with pytest.raises(SealedText):
        s.test_report()  # the first and only reader of the test split


def test_test_texts_that_would_change_the_winner_change_nothing(seed_selection):
    # Test texts full of foo / bar / 中: expanded-279 would gain the most there. And a test text
    # the parameter gate would not matter for, but the ordering would if it were read.
    swapped = [dataclasses.replace(r, text="foo bar 中中中 foo bar xy " * 5, declared_utf8_bytes=None,
                                   declared_codepoints=None) if r.split == "test" else r for r in SEED_RECORDS]
    s = run(records=swapped)
    assert s.results == seed_selection.results and s.winner == "balanced-272"
    assert s.test_report().total_tokens != seed_selection.test_report().total_tokens


def test_test_report_evaluates_the_winner_alone_once(monkeypatch):
    s = run()
    calls = []
    real = selection_module.evaluate

    def counting(tokenizer, records, **kwargs):
        calls.append((tokenizer.semantic_hash, [r.split for r in records]))
        return real(tokenizer, records, **kwargs)

    monkeypatch.setattr(selection_module, "evaluate", counting)
    first = s.test_report()
    second = s.test_report()
    assert first is second
    winner_hash = s.result("balanced-272").semantic_hash
    assert calls == [(winner_hash, ["test", "test", "test"])]


def test_selection_evaluates_validation_only(monkeypatch):
    seen = []
    real = selection_module.evaluate

    def spying(tokenizer, records, **kwargs):
        seen.append({r.split for r in records})
        return real(tokenizer, records, **kwargs)

    monkeypatch.setattr(selection_module, "evaluate", spying)
    run()
    assert seen == [{"validation"}] * 3


def test_a_fitted_candidate_sees_the_fit_texts_only(seed_selection):
    given_texts = []

    def fit(texts):
        given_texts.append(list(texts))
        return byte_bpe(BALANCED_MERGES)

    c = seed_candidates()
    s = run([c[0], Candidate("balanced-272", fit=fit), c[2]])
    assert given_texts == [[r.text for r in SEED_RECORDS if r.split == "fit"]]
    assert s.results == seed_selection.results and s.winner == "balanced-272"


def test_ready_tokenizers_with_a_candidate_id(seed_selection):
    toks = []
    for merges, name in ((COMPACT_MERGES, "compact-268"), (BALANCED_MERGES, "balanced-272"),
                         (EXPANDED_MERGES, "expanded-279")):
        tok = byte_bpe(merges)
        tok.candidate_id = name
        toks.append(tok)
    s = run(toks)
    assert s.winner == "balanced-272" and s.results == seed_selection.results


# -- the gates and the tie-break ---------------------------------------------------------------


def test_reconstruction_gate_rejects_a_shorter_lossy_candidate():
    # Lowercasing before the merges: fewer tokens on upper-case text, but decode cannot give it back.
    doc = byte_bpe_document(BALANCED_MERGES)
    doc["normalizer"] = {"type": "Lowercase"}
    lossy = tokenizer_from_document(doc)
    records = [Record("f", "gf", "fit", "the reader"), Record("v", "gv", "validation", "THE READER REFERS"),
               Record("t", "gt", "test", "x")]
    gates = Gates(d_model=64, tied=True, bias=True)
    s = select([Candidate("lossy", lossy), Candidate("exact", byte_bpe(BALANCED_MERGES))], records, gates,
               words=words)
    lossy_result, exact_result = s.result("lossy"), s.result("exact")
    assert lossy_result.validation_tokens < exact_result.validation_tokens
    assert [(f.gate, f.found, f.expected) for f in lossy_result.failures] == [
        ("reconstruction", 1, "0 failing records")]
    assert "v" in lossy_result.failures[0].detail
    assert s.winner == "exact"


def extra(merge: tuple[bytes, bytes], base=COMPACT_MERGES):
    return byte_bpe(base + (merge,))


def test_ties_break_on_parameters_then_candidate_id():
    gates = Gates(d_model=64, tied=True, bias=True)  # no limits: every candidate is eligible
    # zz / qq never occur: same tokens, same V; "a-..." < "b-..." decides.
    zz, qq = extra((b"z", b"z")), extra((b"q", b"q"))
    for order in ([("b-zz", zz), ("a-qq", qq)], [("a-qq", qq), ("b-zz", zz)]):
        s = run([Candidate(i, t) for i, t in order], gates=gates)
        assert s.winner == "a-qq"
    # Same tokens, smaller V wins even against an earlier id.
    s = run([Candidate("a-wide", zz), Candidate("z-narrow", byte_bpe(COMPACT_MERGES))], gates=gates)
    assert s.result("a-wide").validation_tokens == s.result("z-narrow").validation_tokens
    assert s.winner == "z-narrow"


def test_limits_at_the_boundary_pass():
    at = dataclasses.replace(SEED_GATES, max_vocab_params=18135, max_underexposed_rows=5)
    s = run(gates=at)
    assert s.rejected == {} and s.winner == "expanded-279"
    below = dataclasses.replace(SEED_GATES, max_vocab_params=18134, max_underexposed_rows=None)
    assert [f.gate for f in run(gates=below).rejected["expanded-279"]] == ["vocab_params"]
    exposure_only = dataclasses.replace(SEED_GATES, max_vocab_params=None, max_underexposed_rows=4)
    assert [f.gate for f in run(gates=exposure_only).rejected["expanded-279"]] == ["exposure"]
    # min_row_emissions = 2: rows emitted once in fit now count as underexposed too.
    stricter = dataclasses.replace(SEED_GATES, min_row_emissions=2, max_underexposed_rows=None)
    assert run(gates=stricter).result("balanced-272").underexposed_rows == (264, 267, 268)


@settings(max_examples=40, deadline=None)
@given(max_params=st.none() | st.integers(17_000, 18_500), max_under=st.none() | st.integers(0, 6),
       min_emissions=st.integers(1, 3))
def test_gates_and_winner_agree_with_their_definitions(max_params, max_under, min_emissions):
    gates = dataclasses.replace(SEED_GATES, max_vocab_params=max_params, max_underexposed_rows=max_under,
                                min_row_emissions=min_emissions)
    fit = [r.text for r in SEED_RECORDS if r.split == "fit"]
    expected_failures = {}
    for c in seed_candidates():
        tok = c.tokenizer
        counts = exposure(tok, fit)
        under = [i for i in range(264, tok.vocab_size) if counts[i] < min_emissions]
        gates_failed = []
        if max_params is not None and 65 * tok.vocab_size > max_params:
            gates_failed.append("vocab_params")
        if max_under is not None and len(under) > max_under:
            gates_failed.append("exposure")
        expected_failures[c.candidate_id] = gates_failed
    eligible = [i for i, failed in expected_failures.items() if not failed]
    if not eligible:
        with pytest.raises(ValueError, match="no candidate passes the gates"):
            run(gates=gates)
        return
    s = run(gates=gates)
    assert {r.candidate_id: [f.gate for f in r.failures] for r in s.results} == expected_failures
    key = {r.candidate_id: (r.validation_tokens, r.vocabulary_parameters, r.candidate_id) for r in s.results}
    assert s.winner == min(eligible, key=key.get)


def test_no_eligible_candidate_is_an_error_naming_every_failure():
    gates = dataclasses.replace(SEED_GATES, max_vocab_params=100)
    with pytest.raises(ValueError, match=r"select: no candidate passes the gates \(balanced-272: vocab_params: "
                                         r"found 17680, expected <= 100"):
        run(gates=gates)


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"d_model": 0}, r"Gates: d_model = 0; expected an int >= 1"),
    ({"tied": 1}, r"Gates: tied = 1; expected True or False"),
    ({"bias": None}, r"Gates: bias = None; expected True or False"),
    ({"dtype_bytes": 0}, r"Gates: dtype_bytes = 0; expected an int >= 1"),
    ({"max_vocab_params": -1}, r"Gates: max_vocab_params = -1; expected None or an int >= 0"),
    ({"min_row_emissions": 0}, r"Gates: min_row_emissions = 0; expected an int >= 1"),
    ({"max_underexposed_rows": 2.0}, r"Gates: max_underexposed_rows = 2.0; expected None or an int >= 0"),
])
def test_gate_errors(kwargs, message):
    base = {"d_model": 64, "tied": True, "bias": True}
    with pytest.raises(ValueError, match=message):
        Gates(**{**base, **kwargs})


def test_candidate_errors():
    tok = byte_bpe(COMPACT_MERGES)
    with pytest.raises(ValueError, match=r"Candidate: candidate_id = ''; expected a non-empty str"):
        Candidate("", tok)
    with pytest.raises(ValueError, match=r"Candidate 'x': tokenizer = None, fit = None; expected exactly one"):
        Candidate("x")
    with pytest.raises(ValueError, match=r"tokenizer = a BPETokenizer, fit = a function; expected exactly one"):
        Candidate("x", tok, fit=lambda texts: tok)
    with pytest.raises(ValueError, match=r"Candidate 'x': fit = 3; expected a function"):
        Candidate("x", fit=3)


def test_select_errors():
    c = seed_candidates()
    with pytest.raises(ValueError, match=r"candidates\[1\] has candidate_id 'compact-268', already used by "
                                         r"candidates\[0\]"):
        run([c[0], Candidate("compact-268", c[1].tokenizer)])
    with pytest.raises(ValueError, match=r"candidate 'again' has semantic hash [0-9a-f]{64}, the same as candidate "
                                         r"'compact-268'"):
        run([c[0], Candidate("again", byte_bpe(COMPACT_MERGES))])
    with pytest.raises(ValueError, match=r"select: candidates is empty"):
        run([])
    with pytest.raises(ValueError, match=r"select: candidates\[0\] is a str; expected a Candidate"):
        run(["compact-268"])
    with pytest.raises(ValueError, match=r"select: gates = a dict; expected a Gates"):
        select(c, SEED_RECORDS, {"d_model": 64})
    with pytest.raises(ValueError, match=r"select: records\[0\] is a str; expected a Record"):
        run(records=["the"])
    with pytest.raises(ValueError, match=r"select: candidate 'bad' gave a int; expected a tokenizer"):
        run([Candidate("bad", fit=lambda texts: 3)])


def test_manifest_rules_apply_to_test_records_without_their_text():
    # A test record sharing a group with a validation record is refused, from ids alone.
    leak = [sealed(dataclasses.replace(r, group_id="g-val-prose-1")) if r.record_id == "test-prose-1"
            else (sealed(r) if r.split == "test" else r) for r in SEED_RECORDS]
    with pytest.raises(ValueError, match=r"group 'g-val-prose-1' is in split"):
        run(records=leak)
    no_test = [r for r in SEED_RECORDS if r.split != "test"]
    with pytest.raises(ValueError, match=r"no record in split test"):
        run(records=no_test)


def test_test_records_declared_counts_are_checked_at_test_report():
    wrong = [dataclasses.replace(r, declared_utf8_bytes=999) if r.record_id == "test-cjk-1" else r
             for r in SEED_RECORDS]
    s = run(records=wrong)  # selection does not read the test text, so cannot see this yet
    assert s.winner == "balanced-272"
    with pytest.raises(ValueError, match=r"declared_utf8_bytes = 999, but the text has 6 UTF-8 bytes"):
        s.test_report()
