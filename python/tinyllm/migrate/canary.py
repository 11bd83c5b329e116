"""Canary slices: what a candidate must show on live traffic before promotion (seed 003, 0x0C2).

A slice holds when every case passed, rho <= tau (rho: the largest candidate-to-stable length
ratio in the slice, tau its declared limit), and there are no stop and no cache-namespace
mismatches; an empty slice proves nothing and fails.

>>> CanarySlice("old behaviour", 40, 40, 1.04, 1.10).ok
True
>>> CanarySlice("old behaviour", 40, 39, 1.12, 1.10).failures
['passed 39 of 40 cases', 'rho 1.12 > tau 1.10']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tinyllm._io import show
from tinyllm.artifacts.doctor_subject import is_id

def ratio_text(value: float) -> str:
    """A ratio as the seed writes it (1.10), with more digits only when they matter."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es'}"


CANARY_FIELDS = ("name", "cases", "passed", "rho", "tau", "stop_mismatches", "cache_mismatches")


@dataclass(frozen=True)
class CanarySlice:
    """One canary slice: `cases` evaluated, `passed` of them, `rho` the largest candidate-to-stable
    length ratio against the limit `tau`, and the stop and cache-namespace mismatch counts."""

    name: str
    cases: int
    passed: int
    rho: float
    tau: float
    stop_mismatches: int = 0
    cache_mismatches: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"CanarySlice: name: found {show(self.name)}; expected a non-empty slice name")
        for key in ("cases", "passed", "stop_mismatches", "cache_mismatches"):
            if not is_id(getattr(self, key)):
                raise ValueError(f"CanarySlice {self.name!r}: {key}: found {show(getattr(self, key))}; expected an "
                                 "integer >= 0")
        if self.passed > self.cases:
            raise ValueError(f"CanarySlice {self.name!r}: passed: found {self.passed}; expected at most cases = "
                             f"{self.cases}")
        for key in ("rho", "tau"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"CanarySlice {self.name!r}: {key}: found {show(value)}; expected a finite "
                                 "number >= 0")
            object.__setattr__(self, key, float(value))

    @property
    def failures(self) -> list[str]:
        """Why the slice fails, one string per violated term (empty when it holds)."""
        out = []
        if self.cases == 0:
            out.append("no cases: an empty slice proves nothing")
        if self.passed != self.cases:
            out.append(f"passed {self.passed} of {self.cases} cases")
        if self.rho > self.tau:
            out.append(f"rho {ratio_text(self.rho)} > tau {ratio_text(self.tau)}")
        if self.stop_mismatches:
            out.append(_plural(self.stop_mismatches, "stop mismatch"))
        if self.cache_mismatches:
            out.append(_plural(self.cache_mismatches, "cache-namespace mismatch"))
        return out

    @property
    def ok(self) -> bool:
        """n_pass = n, rho <= tau, no stop and no cache-namespace mismatch (and at least one case)."""
        return not self.failures

    def to_json(self) -> dict:
        return {key: getattr(self, key) for key in CANARY_FIELDS}

    @classmethod
    def from_json(cls, obj: Any, where: str = "canary slice") -> CanarySlice:
        """A slice from its JSON object; errors name `where` and the key."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"{where}: found {type(obj).__name__}; expected an object with {', '.join(CANARY_FIELDS)}")
        unknown = sorted(set(obj) - set(CANARY_FIELDS))
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown key; expected {', '.join(CANARY_FIELDS)}")
        missing = [key for key in CANARY_FIELDS[:5] if key not in obj]
        if missing:
            raise ValueError(f"{where}.{missing[0]}: missing; expected {', '.join(CANARY_FIELDS[:5])} "
                             "(stop_mismatches and cache_mismatches default to 0)")
        try:
            return cls(**obj)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
