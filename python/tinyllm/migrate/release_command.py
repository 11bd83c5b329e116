"""The `tinyllm release` command: stage, admit, roll back and show releases kept in a release
store (`tinyllm.migrate.store`). The CLI registers it with `add_parsers`; the work is here.

    tinyllm release stage r17-bundle.json --namespace cache-compact-268-r17 --revision r17 --activate
    tinyllm release stage r18-bundle.json --namespace cache-expanded-272-r18 --revision r18
    tinyllm release admit r18 --canary canary.json --traffic-bp 500
    tinyllm release rollback --reason "stop mismatches in production"
    tinyllm release status

BUNDLE is an artifacts bundle JSON file (`tinyllm reconcile`'s input: all nine mechanical checks
run on it at admission) or a JSON file of the six identities (`ReleaseBundle.to_json`: only the
identity checks run). CANARY.json is a list of slice objects with the `CanarySlice` fields. The
store is `--store`, else $TINYLLM_RELEASE_STORE, else tinyllm-releases.sqlite here. `admit` exits
0 when the candidate is promoted and 3 when it is rolled back.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="tinyllm")
>>> add_parsers(parser.add_subparsers(dest="command", required=True))
>>> args = parser.parse_args(["release", "admit", "r18", "--canary", "canary.json", "--store", "r.sqlite"])
>>> args.release_command, args.revision, args.traffic_bp, args.run.__name__
('admit', 'r18', 500, 'cmd_admit')
"""

from __future__ import annotations

import json
import os

#: `admit`'s exit status when the candidate is rolled back (0 when promoted).
EXIT_ROLLED_BACK = 3
DEFAULT_STORE = "tinyllm-releases.sqlite"
STORE_ENV = "TINYLLM_RELEASE_STORE"


def store_path(args) -> str:
    """--store, else $TINYLLM_RELEASE_STORE, else tinyllm-releases.sqlite in the current directory."""
    return args.store or os.environ.get(STORE_ENV) or DEFAULT_STORE


def _open(args, create: bool = False):
    from tinyllm.migrate.store import ReleaseStore

    return ReleaseStore(store_path(args), create=create)


def _when(t: float | None) -> str:
    import time

    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def _release_from_file(args):
    """The ReleaseBundle of `stage`'s BUNDLE file and flags."""
    import dataclasses

    from tinyllm._io import read_json_file
    from tinyllm.migrate.release_bundle import ReleaseBundle

    obj = read_json_file(args.bundle)
    if isinstance(obj, dict) and "h_sem" in obj:  # a file of the six identities
        try:
            release = ReleaseBundle.from_json(obj)
        except ValueError as e:
            raise ValueError(f"{args.bundle}: {e}") from None
        if args.namespace and args.namespace != release.cache_namespace:
            raise ValueError(f"--namespace: found {args.namespace!r}; expected {release.cache_namespace!r}, the "
                             f"cache_namespace of {args.bundle} (a namespace is one of the six identities)")
        if args.revision and release.revision and args.revision != release.revision:
            raise ValueError(f"--revision: found {args.revision!r}; expected {release.revision!r} as in {args.bundle}")
        return dataclasses.replace(release, revision=args.revision or release.revision)
    for flag, value in (("--namespace", args.namespace), ("--revision", args.revision)):
        if not value:
            raise ValueError(f"{flag}: missing; expected it with an artifacts bundle ({args.bundle})")
    return ReleaseBundle.from_bundle(obj, args.namespace, args.revision)


def cmd_stage(args) -> int:
    release = _release_from_file(args)
    with _open(args, create=True) as store:
        active = store.active()
        if args.activate and active is not None:
            raise ValueError(f"--activate: {active.revision} is already active; expected --activate only for the "
                             f"first bundle (admit {release.revision} instead)")
        stored = store.stage(release, activate_if_empty=args.activate)
        active = store.active()
    artifacts = "with its artifacts" if stored.source is not None else "identities only"
    print(f"staged {stored.revision}: bundle {stored.bundle_id[:16]}, namespace {stored.cache_namespace} ({artifacts})")
    print(f"active: {active.revision if active else '(none)'}")
    return 0


def _read_canary(path: str) -> list:
    from tinyllm._io import read_json_file
    from tinyllm.migrate.canary import CanarySlice

    obj = read_json_file(path)
    if not isinstance(obj, list) or not obj:
        found = "an empty list" if isinstance(obj, list) else type(obj).__name__
        raise ValueError(f"--canary: {path}: found {found}; expected a non-empty JSON list of slice objects")
    return [CanarySlice.from_json(item, f"{path}[{k}]") for k, item in enumerate(obj)]


def summary(admission, stable: str, candidate: str) -> str:
    """A readable account of one admission: each check, each slice, the result."""
    from tinyllm.migrate.canary import ratio_text  # the ratio format of the slice failures

    lines = [f"admission of {candidate} against {stable}:", "  mechanical checks:"]
    lines += [f"    {name:<11} {'pass' if ok else 'FAIL'}" for name, ok in admission.mechanical.items()]
    if not admission.canary:
        lines.append("  canary: not run (a mechanical check failed: the candidate received no traffic)")
    else:
        lines.append(f"  canary slices ({admission.traffic_basis_points} basis points):")
        width = max(len(s.name) for s in admission.canary)
        for s in admission.canary:
            verdict = "pass" if s.ok else "FAIL: " + "; ".join(s.failures)
            counts = f"{s.passed}/{s.cases}"
            lines.append(f"    {s.name:<{width}}  {counts:>7} passed  rho {ratio_text(s.rho)} / tau {ratio_text(s.tau)}  "
                         f"stop {s.stop_mismatches}  cache {s.cache_mismatches}  {verdict}")
    where = f" (first failing slice: {admission.failing_slice})" if admission.failing_slice else ""
    lines.append(f"  result: {admission.result}{where}")
    lines += [f"    {reason}" for reason in admission.reasons]
    active = admission.active
    lines.append(f"  active: {active.revision} (bundle {active.bundle_id[:16]}, namespace {active.cache_namespace})")
    if admission.invalidated_namespaces:
        lines.append(f"  invalidated cache namespaces: {', '.join(admission.invalidated_namespaces)}")
    return "\n".join(lines)


def cmd_admit(args) -> int:
    slices = _read_canary(args.canary)
    with _open(args) as store:
        before = store.active()
        admission = store.admit(args.revision, slices, traffic_basis_points=args.traffic_bp)
    stable = before.revision if before else "(none)"
    if args.json:
        print(json.dumps({"stable": stable, "candidate": args.revision, **admission.to_json()}, indent=2,
                         ensure_ascii=False))
    else:
        print(summary(admission, stable, args.revision))
    return 0 if admission.promoted else EXIT_ROLLED_BACK


def cmd_rollback(args) -> int:
    with _open(args) as store:
        current = store.active()
        admission = store.rollback(args.reason)
    print(f"rolled back {current.revision} -> {admission.active.revision} ({args.reason}); invalidated cache "
          f"namespace {', '.join(admission.invalidated_namespaces)}")
    return 0


def status_table(status: dict) -> str:
    """`status()` as text: the active bundle, the staged bundles, the admissions, the invalidated namespaces."""
    active = status["active"]
    invalid = set(status["invalidated_namespaces"])
    lines = [f"store: {status['store']}"]
    lines.append("active: (none)" if active is None else
                 f"active: {active['revision']}  bundle {active['bundle_id'][:16]}  namespace "
                 f"{active['cache_namespace']}  since {_when(active['since'])}")
    lines.append("staged:")
    width = max([len(b["revision"]) for b in status["staged"]] + [8])
    lines.append(f"  {'revision':<{width}}  {'bundle':<16}  {'namespace':<28}  {'staged at':<20}  state")
    for b in status["staged"]:
        state = ("active" if active and b["bundle_id"] == active["bundle_id"]
                 else "namespace invalidated" if b["cache_namespace"] in invalid else "staged")
        lines.append(f"  {b['revision']:<{width}}  {b['bundle_id'][:16]}  {b['cache_namespace']:<28}  "
                     f"{_when(b['staged_at']):<20}  {state}")
    lines.append("admissions:" if status["admissions"] else "admissions: (none)")
    for a in status["admissions"]:
        detail = a["detail"]
        why = (f"failing slice {a['failing_slice']}" if a["failing_slice"]
               else f"failed {', '.join(detail['failed_checks'])}" if detail.get("failed_checks")
               else f"manual: {detail['reason']}" if detail.get("kind") == "manual" else "")
        lines.append(f"  #{a['id']:<3} {_when(a['at'])}  {a['stable']} -> {a['candidate']}  {a['result']}"
                     + (f"  ({why})" if why else ""))
    lines.append(f"invalidated namespaces: {', '.join(status['invalidated_namespaces']) or '(none)'}")
    return "\n".join(lines)


def cmd_status(args) -> int:
    with _open(args) as store:
        status = store.status()
    print(json.dumps(status, indent=2, ensure_ascii=False) if args.json else status_table(status))
    return 0


def add_parsers(sub) -> None:
    """Register `release stage|admit|rollback|status` on the CLI's subparsers (imports nothing
    of the store or the checks)."""
    release = sub.add_parser("release", help="stage, admit, roll back and show complete release bundles")
    verbs = release.add_subparsers(dest="release_command", required=True)

    def verb(name: str, help: str, run):
        parser = verbs.add_parser(name, help=help)
        parser.add_argument("--store", metavar="PATH",
                            help=f"the release store (default: ${STORE_ENV}, else {DEFAULT_STORE})")
        parser.set_defaults(run=run)
        return parser

    stage = verb("stage", "record a bundle in the store (immutable; one namespace each)", cmd_stage)
    stage.add_argument("bundle", metavar="BUNDLE", help="an artifacts bundle JSON file, or a JSON file of the six "
                                                        "identities")
    stage.add_argument("--namespace", help="the bundle's isolated cache namespace")
    stage.add_argument("--revision", help="the revision label, e.g. r18")
    stage.add_argument("--activate", action="store_true", help="make it active (only while no bundle is active)")

    admit = verb("admit", "run the mechanical checks and the canary; promote or roll back (exit 0 or 3)", cmd_admit)
    admit.add_argument("revision", metavar="REVISION", help="the staged candidate")
    admit.add_argument("--canary", required=True, metavar="CANARY.json",
                       help="a JSON list of slices: name, cases, passed, rho, tau, stop_mismatches, cache_mismatches")
    admit.add_argument("--traffic-bp", type=int, default=500, metavar="BP",
                       help="canary traffic in basis points, 1..10000 (default 500 = 5%%)")
    admit.add_argument("--json", action="store_true", help="print the admission as JSON")

    rollback = verb("rollback", "restore the bundle active before the last promotion", cmd_rollback)
    rollback.add_argument("--reason", default="manual rollback", help="why (recorded with the rollback)")

    status = verb("status", "the active bundle, staged bundles, admissions, invalidated namespaces", cmd_status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
