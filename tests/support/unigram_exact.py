"""The Unigram training quantities in exact rational arithmetic: a reference for the float trainer.

A piece table maps strings to probabilities (`fractions.Fraction`). For a text x, the
segmentations form a lattice over its character positions; an edge (i, z, j) is a piece z
spelling x[i:j].

* forward:  alpha[0] = 1, alpha[j] = sum over edges (i, z, j) of alpha[i] * p(z)
* backward: beta[n] = 1,  beta[i]  = sum over edges (i, z, j) of p(z) * beta[j]
* marginal: P(x) = alpha[n] = beta[0]
* posterior of an edge: alpha[i] * p(z) * beta[j] / P(x); summed per piece, the expected count
* removal loss of z: log(P_V(x) / P_{V without z}(x)), the rise in negative log-likelihood
  if z left the table and its occurrences were spelled by the rest

Nothing is rounded, so a mismatch with the float trainer is a bug there, not noise here.
The specification's example, `abab` with a, b = 1/4, ab = 7/20, aba = 1/10, bab = 1/20:

>>> from fractions import Fraction as F
>>> table = {"a": F(1, 4), "b": F(1, 4), "ab": F(7, 20), "aba": F(1, 10), "bab": F(1, 20)}
>>> [str(v) for v in forward("abab", table)]
['1', '1/4', '33/80', '13/64', '1329/6400']
>>> [str(v) for v in backward("abab", table)]
['1329/6400', '49/320', '33/80', '1/4', '1']
>>> str(edge_posterior("abab", table, 0, "ab", 2)), str(expected_counts("abab", table)["ab"])
('308/443', '616/443')
>>> {z: round(removal_loss("abab", table, z), 5) for z in ("bab", "aba", "ab")}
{'bab': 0.06208, 'aba': 0.12828, 'ab': 1.61245}
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping

Table = Mapping[str, Fraction]


def edges(text: str, table: Table) -> list[tuple[int, str, int]]:
    """Every (start, piece, end) with text[start:end] == piece, by start then end."""
    longest = max(map(len, table), default=0)
    return [(i, text[i:j], j) for i in range(len(text))
            for j in range(i + 1, min(len(text), i + longest) + 1) if text[i:j] in table]


def forward(text: str, table: Table) -> list[Fraction]:
    alpha = [Fraction(0)] * (len(text) + 1)
    alpha[0] = Fraction(1)
    for i, z, j in edges(text, table):  # by start, so alpha[i] is final when it is read
        alpha[j] += alpha[i] * table[z]
    return alpha


def backward(text: str, table: Table) -> list[Fraction]:
    beta = [Fraction(0)] * (len(text) + 1)
    beta[-1] = Fraction(1)
    for i, z, j in sorted(edges(text, table), key=lambda e: -e[0]):  # by end, from the right
        beta[i] += table[z] * beta[j]
    return beta


def marginal(text: str, table: Table) -> Fraction:
    """P(text): the total probability of every segmentation."""
    return forward(text, table)[-1]


def edge_posterior(text: str, table: Table, start: int, piece: str, end: int) -> Fraction:
    """The probability that the segmentation uses piece `piece` over text[start:end]."""
    if text[start:end] != piece or piece not in table:
        raise ValueError(f"edge_posterior: ({start}, {piece!r}, {end}) is not an edge of {text!r}")
    alpha, beta = forward(text, table), backward(text, table)
    return alpha[start] * table[piece] * beta[end] / alpha[-1]


def expected_counts(text: str, table: Table) -> dict[str, Fraction]:
    """How often each piece occurs in a segmentation, on average over the posterior."""
    alpha, beta = forward(text, table), backward(text, table)
    counts = {z: Fraction(0) for z in table}
    for i, z, j in edges(text, table):
        counts[z] += alpha[i] * table[z] * beta[j] / alpha[-1]
    return counts


def removal_loss(text: str, table: Table, piece: str) -> float:
    """log(P_V(text) / P_V-without-piece(text)); infinite when nothing else spells the text."""
    if piece not in table:
        raise ValueError(f"removal_loss: {piece!r} is not in the table")
    rest = {z: p for z, p in table.items() if z != piece}
    before, after = marginal(text, table), marginal(text, rest)
    return math.inf if after == 0 else math.log(before / after)
