"""Seed 003's `abab` example in exact arithmetic, and the lattice identities on random tables."""

from __future__ import annotations

import math
from fractions import Fraction as F

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import unigram_exact as ex

TABLE = {"a": F(1, 4), "b": F(1, 4), "ab": F(7, 20), "aba": F(1, 10), "bab": F(1, 20)}
REQUIRED = {"a", "b"}


def all_paths(text, table):
    if not text:
        return [[]]
    return [[text[:k], *rest] for k in range(1, len(text) + 1) if text[:k] in table
            for rest in all_paths(text[k:], table)]


def test_abab_forward_backward_and_marginal():
    assert ex.forward("abab", TABLE) == [1, F(1, 4), F(33, 80), F(13, 64), F(1329, 6400)]
    assert ex.backward("abab", TABLE) == [F(1329, 6400), F(49, 320), F(33, 80), F(1, 4), 1]
    assert ex.marginal("abab", TABLE) == F(1329, 6400)
    assert len(all_paths("abab", TABLE)) == 6


def test_abab_posteriors_and_expected_count():
    assert ex.edge_posterior("abab", TABLE, 0, "ab", 2) == F(308, 443)
    assert ex.edge_posterior("abab", TABLE, 2, "ab", 4) == F(308, 443)
    assert ex.expected_counts("abab", TABLE)["ab"] == F(616, 443)


def test_abab_removal_losses_remove_bab_first():
    losses = {z: ex.removal_loss("abab", TABLE, z) for z in TABLE if z not in REQUIRED}
    assert math.isclose(losses["bab"], 0.06208, abs_tol=5e-6)
    assert math.isclose(losses["aba"], 0.12828, abs_tol=5e-6)
    assert math.isclose(losses["ab"], 1.61245, abs_tol=5e-6)
    assert min(losses, key=losses.get) == "bab"
    assert ex.marginal("abab", {z: p for z, p in TABLE.items() if z != "bab"}) == F(1249, 6400)
    assert ex.marginal("abab", {z: p for z, p in TABLE.items() if z != "aba"}) == F(1169, 6400)
    assert ex.marginal("abab", {z: p for z, p in TABLE.items() if z != "ab"}) == F(53, 1280)


def test_bad_edge_and_missing_piece_are_named():
    import pytest

    with pytest.raises(ValueError, match=r"\(1, 'ab', 3\)"):
        ex.edge_posterior("abab", TABLE, 1, "ab", 3)
    with pytest.raises(ValueError, match="'zz'"):
        ex.removal_loss("abab", TABLE, "zz")


tables = st.dictionaries(st.text("ab", min_size=2, max_size=3), st.fractions(F(1, 50), F(1, 2)), max_size=4).map(
    lambda extra: {"a": F(1, 5), "b": F(1, 3), **extra})


@settings(max_examples=60, deadline=None)
@given(st.text("ab", min_size=1, max_size=7), tables)
def test_marginal_is_the_sum_over_enumerated_paths(text, table):
    total = sum((math.prod(table[z] for z in path) for path in all_paths(text, table)), F(0))
    assert ex.marginal(text, table) == total == ex.backward(text, table)[0]
    # Each segmentation has as many pieces as it has; the expected piece count is their average.
    mean_length = sum((math.prod(table[z] for z in p) * len(p) for p in all_paths(text, table)), F(0)) / total
    assert sum(ex.expected_counts(text, table).values()) == mean_length


def test_float_trainer_e_step_and_removal_agree_with_exact_arithmetic():
    """The trainer's log-space E-step reproduces 616/443 and the exact posteriors; its Viterbi
    without a piece is the alternative the exact removal loss assumes."""
    from tinyllm.train.unigram import SCALE, Model, e_step

    pieces = list(TABLE)
    model = Model(pieces, [math.log(TABLE[p]) for p in pieces])
    acc, objective = e_step([("abab", 1)], model)
    expected = {p: q / SCALE for p, q in zip(pieces, acc, strict=True)}
    exact = ex.expected_counts("abab", TABLE)
    for p in pieces:
        assert math.isclose(expected[p], float(exact[p]), abs_tol=1e-8)
    assert math.isclose(objective, math.log(1329 / 6400), rel_tol=1e-12)
    assert [pieces[k] for k in model.viterbi("abab")] == ["ab", "ab"]
    assert [pieces[k] for k in model.viterbi("bab", exclude=pieces.index("bab"))] == ["b", "ab"]
