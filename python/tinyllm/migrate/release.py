"""Release bundles and their admission: a candidate is promoted whole or the stable bundle is
restored whole (seed 003, 0x0C2, "Releasing and restoring a complete version" and "Testing a
release on a small workload").

A `ReleaseBundle` is the seed's ordered state B = (h_sem, h_release, h_template, h_dataset,
h_checkpoint, n_cache): the six identities are staged, tested, promoted and restored together, so
no request ever pairs one revision's tokenizer with another revision's rows.

`admit_candidate(stable, candidate, canary)` decides:

* A_mech, the conjunction of `MECHANICAL_CHECKS` (`mechanical_checks`): one false term rejects
  the candidate before it receives any canary traffic;
* then every canary slice must hold n_pass = n, rho <= tau, zero stop and zero cache-namespace
  mismatches. Nothing is averaged: a perfect slice cannot pay for a failing one.

Promotion makes the candidate active; a rollback keeps (restores) all six identities of the
stable bundle and invalidates only the candidate's cache namespace, never the stable's.

>>> import hashlib
>>> h = lambda text: hashlib.sha256(text.encode()).hexdigest()
>>> r17 = ReleaseBundle(h("r17-sem"), h("r17-rel"), h("tmpl"), h("r17-data"), h("r17-ckpt"),
...                     "cache-compact-268-r17", revision="r17")
>>> r18 = ReleaseBundle(h("r18-sem"), h("r18-rel"), h("tmpl"), h("r18-data"), h("r18-ckpt"),
...                     "cache-expanded-272-r18", revision="r18")
>>> canary = [CanarySlice("old behaviour", 40, 40, 1.04, 1.10), CanarySlice("new pieces", 24, 24, 0.88, 1.10),
...           CanarySlice("controls and stops", 8, 8, 1.00, 1.00)]
>>> admit_candidate(r17, r18, canary, traffic_basis_points=500).result
'promoted'
>>> canary[2] = CanarySlice("controls and stops", 8, 8, 1.00, 1.00, stop_mismatches=1)
>>> late = admit_candidate(r17, r18, canary)
>>> late.result, late.failing_slice, late.active.identities() == r17.identities()
('rolled_back', 'controls and stops', True)
>>> late.invalidated_namespaces, late.reasons
(('cache-expanded-272-r18',), ('controls and stops: 1 stop mismatch',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from tinyllm._io import show
from tinyllm.migrate.canary import CanarySlice
from tinyllm.migrate.mechanical import MECHANICAL_CHECKS, mechanical_checks
from tinyllm.migrate.release_bundle import ReleaseBundle

RESULTS = ("promoted", "rolled_back")


@dataclass(frozen=True)
class Admission:
    """The decision on one candidate.

    `active` is the bundle serving afterwards (the candidate on promotion, the stable on
    rollback); `traffic_basis_points` the canary share the candidate received (0 when a
    mechanical check failed: such a candidate gets no traffic, and `canary` is then empty);
    `invalidated_namespaces` is (candidate namespace,) on rollback and () on promotion."""

    result: str
    active: ReleaseBundle
    failing_slice: Optional[str]
    failed_checks: tuple[str, ...]
    mechanical: dict[str, bool]
    canary: tuple[CanarySlice, ...]
    invalidated_namespaces: tuple[str, ...]
    traffic_basis_points: int
    reasons: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.result not in RESULTS:
            raise ValueError(f"Admission: result: found {show(self.result)}; expected one of {', '.join(RESULTS)}")

    @property
    def promoted(self) -> bool:
        return self.result == "promoted"

    def to_json(self) -> dict:
        return {
            "result": self.result,
            "active": self.active.to_json(),
            "failing_slice": self.failing_slice,
            "failed_checks": list(self.failed_checks),
            "mechanical": dict(self.mechanical),
            "canary": [s.to_json() for s in self.canary],
            "invalidated_namespaces": list(self.invalidated_namespaces),
            "traffic_basis_points": self.traffic_basis_points,
            "reasons": list(self.reasons),
        }


def _check_canary(canary: Any) -> tuple[CanarySlice, ...]:
    if isinstance(canary, (str, bytes, Mapping)) or not isinstance(canary, Sequence) or not canary:
        found = "an empty list" if isinstance(canary, Sequence) and not canary else type(canary).__name__
        raise ValueError(f"admit_candidate: canary: found {found}; expected a non-empty list of CanarySlice")
    seen = set()
    for k, s in enumerate(canary):
        if not isinstance(s, CanarySlice):
            raise ValueError(f"admit_candidate: canary[{k}]: found {type(s).__name__}; expected a CanarySlice")
        if s.name in seen:
            raise ValueError(f"admit_candidate: canary[{k}].name: {s.name!r} repeats; expected distinct slice names")
        seen.add(s.name)
    return tuple(canary)


def _check_mechanical(mechanical: Any) -> dict[str, bool]:
    if not isinstance(mechanical, Mapping) or not mechanical:
        raise ValueError(f"admit_candidate: mechanical: found {show(mechanical)}; expected a non-empty dict of "
                         "check name to bool (from mechanical_checks)")
    for key, value in mechanical.items():
        if key not in MECHANICAL_CHECKS:
            raise ValueError(f"admit_candidate: mechanical: {show(key)}: unknown check; expected one of "
                             f"{', '.join(MECHANICAL_CHECKS)}")
        if not isinstance(value, bool):
            raise ValueError(f"admit_candidate: mechanical[{key!r}]: found {show(value)}; expected true or false")
    return {name: mechanical[name] for name in MECHANICAL_CHECKS if name in mechanical}


def admit_candidate(stable: ReleaseBundle, candidate: ReleaseBundle, canary: Sequence[CanarySlice], *,
                    mechanical: Optional[Mapping[str, bool]] = None, traffic_basis_points: int = 500) -> Admission:
    """Promote `candidate` or restore `stable` (see the module docstring). `mechanical` is a dict
    from `mechanical_checks`; when None, `mechanical_checks(stable, candidate)` runs here."""
    for name, release in (("stable", stable), ("candidate", candidate)):
        if not isinstance(release, ReleaseBundle):
            raise ValueError(f"admit_candidate: {name}: found {type(release).__name__}; expected a ReleaseBundle")
    if candidate.cache_namespace == stable.cache_namespace:
        # One namespace for both would serve one release's cached ids to the other's rows.
        raise ValueError(f"admit_candidate: candidate.cache_namespace: found {candidate.cache_namespace!r}, the "
                         "stable bundle's namespace; expected an isolated namespace of its own")
    if isinstance(traffic_basis_points, bool) or not isinstance(traffic_basis_points, int) \
            or not 1 <= traffic_basis_points <= 10_000:
        raise ValueError(f"admit_candidate: traffic_basis_points: found {show(traffic_basis_points)}; expected an "
                         "integer in 1..10000 (500 = 5%)")
    slices = _check_canary(canary)
    checks = mechanical_checks(stable, candidate) if mechanical is None else _check_mechanical(mechanical)
    rollback = (candidate.cache_namespace,)  # never the stable's: its caches stay valid

    failed = tuple(name for name, ok in checks.items() if not ok)
    if failed:
        reasons = tuple(f"mechanical check {name} failed: no canary traffic" for name in failed)
        return Admission("rolled_back", stable, None, failed, checks, (), rollback, 0, reasons)

    failing = [s for s in slices if not s.ok]
    if failing:
        reasons = tuple(f"{s.name}: {why}" for s in failing for why in s.failures)
        return Admission("rolled_back", stable, failing[0].name, (), checks, slices, rollback, traffic_basis_points,
                         reasons)

    reasons = (f"all {len(checks)} mechanical checks passed",
               f"all {len(slices)} canary slices passed at {traffic_basis_points} basis points")
    return Admission("promoted", candidate, None, (), checks, slices, (), traffic_basis_points, reasons)
