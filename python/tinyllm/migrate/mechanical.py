"""A_mech, the mechanical checks a release candidate must pass before any canary traffic
(seed 003, 0x0C2): one false term rejects, nothing is averaged.

>>> import hashlib
>>> from tinyllm.migrate.release_bundle import ReleaseBundle
>>> h = lambda text: hashlib.sha256(text.encode()).hexdigest()
>>> r17 = ReleaseBundle(h("r17-sem"), h("r17-rel"), h("tmpl"), h("r17-data"), h("r17-ckpt"), "cache-r17")
>>> stale = ReleaseBundle(h("r18-sem"), h("r18-rel"), h("tmpl"), h("r17-data"), h("r18-ckpt"), "cache-r18")
>>> mechanical_checks(r17, stale)["A_dataset"]   # a dataset still keyed to the old tokenizer
False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from tinyllm.artifacts.doctor_subject import is_id
from tinyllm.migrate.release_bundle import (IDENTITY_FIELDS, ReleaseBundle, checkpoint_identity, dataset_identity,
                                            identity_problem)

#: The terms of A_mech, in the seed's order.
MECHANICAL_CHECKS = ("A_schema", "A_hash", "A_prefix", "A_rows", "A_dataset", "A_template", "A_cache", "A_golden",
                     "A_bytes")

#: The terms derivable from the six identities alone (no artifacts at hand).
IDENTITY_CHECKS = ("A_schema", "A_hash", "A_rows", "A_dataset", "A_template", "A_cache")

def mechanical_checks(stable: ReleaseBundle, candidate: ReleaseBundle) -> dict[str, bool]:
    """A_mech's terms, each computed on its own (a failure never hides a later check).

    With both `source` bundles at hand, all nine run on the artifacts:

    * A_schema: both bundles pass reconcile's structure, canonical order and tokenizer load;
    * A_hash: the candidate's declared hashes equal the derived ones, and each release's h_*
      equal those derived from its source;
    * A_prefix: equal semantic hashes, or the candidate vocabulary is the stable one with ids
      appended (`tinyllm.migrate.append_only.check_append_only`);
    * A_rows: candidate input and output rows >= its V and >= the stable's rows; a tied head
      has verified shared storage;
    * A_dataset: the candidate dataset is bound to the candidate's tokenizer, corpus and template
      hashes, and its largest id is < V;
    * A_template: the candidate checkpoint is bound to its template and tokenizer hashes, and its
      special ids are the tokenizer's policy;
    * A_cache: the two cache namespaces differ;
    * A_golden: the candidate tokenizer reproduces every golden case (at least one);
    * A_bytes: decode(encode(text)) == text for every golden encode case's text (at least one).

    When either source is missing, only `IDENTITY_CHECKS` run, on the identities: A_schema (fields well
    formed), A_cache (namespaces differ), A_hash (a new h_sem has a new h_release), A_dataset (a
    new h_sem or h_template has a new h_dataset: a dataset still keyed to the old tokenizer
    fails), A_rows (a new h_sem has a new h_checkpoint), A_template (a new h_template has a new
    h_checkpoint). The dict then holds only those keys.
    """
    for name, release in (("stable", stable), ("candidate", candidate)):
        if not isinstance(release, ReleaseBundle):
            raise ValueError(f"mechanical_checks: {name}: found {type(release).__name__}; expected a ReleaseBundle")
    if stable.source is None or candidate.source is None:
        return _identity_checks(stable, candidate)
    return _artifact_checks(stable, candidate)


def _identity_checks(stable: ReleaseBundle, candidate: ReleaseBundle) -> dict[str, bool]:
    def changed(name: str) -> bool:
        return getattr(stable, name) != getattr(candidate, name)

    new_tokenizer, new_template = changed("h_sem"), changed("h_template")
    return {
        "A_schema": all(identity_problem(n, getattr(r, n)) is None for r in (stable, candidate) for n in IDENTITY_FIELDS),
        "A_hash": not new_tokenizer or changed("h_release"),
        "A_rows": not new_tokenizer or changed("h_checkpoint"),
        "A_dataset": not (new_tokenizer or new_template) or changed("h_dataset"),
        "A_template": not new_template or changed("h_checkpoint"),
        "A_cache": changed("cache_namespace"),
    }


@dataclass(frozen=True)
class _Side:
    """One release with its source, its built tokenizer and derived hashes (None when the
    structure, order or tokenizer load fails)."""

    release: ReleaseBundle
    source: dict
    tok: Any
    hashes: Optional[dict]


def _side(release: ReleaseBundle) -> _Side:
    from tinyllm.artifacts import bundle as artifacts

    try:
        tok = artifacts._checked(release.source)  # reconcile's structure, order and load, nothing more
        hashes = artifacts._derive(release.source, tok)
    except (ValueError, KeyError, TypeError):
        return _Side(release, release.source, None, None)
    return _Side(release, release.source, tok, hashes)


def _holds(check: Callable[[], bool]) -> bool:
    """A check's verdict; a bundle too broken to read the check's fields from fails it."""
    try:
        return check() is True
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return False


def _identities_match(side: _Side) -> bool:
    h, r = side.hashes, side.release
    return (r.h_sem == h["tokenizer_semantic_hash"] and r.h_release == h["tokenizer_release_hash"]
            and r.h_template == h["template_hash"] and r.h_dataset == dataset_identity(side.source["dataset"])
            and r.h_checkpoint == checkpoint_identity(side.source["checkpoint"]))


def _append_only(stable: _Side, candidate: _Side) -> bool:
    from tinyllm.migrate.append_only import check_append_only

    if stable.hashes["tokenizer_semantic_hash"] == candidate.hashes["tokenizer_semantic_hash"]:
        return True
    try:
        check_append_only(stable.tok, candidate.tok)
    except ValueError:  # AppendOnlyError, or a tokenizer the check cannot compare
        return False
    return True


def _rows(stable: _Side, candidate: _Side) -> bool:
    new, old, vocab = candidate.source["checkpoint"], stable.source["checkpoint"], candidate.tok.vocab_size
    keys = ("input_embedding_rows", "output_vocab_rows")
    if not all(is_id(new[k]) and new[k] >= vocab and new[k] >= old[k] for k in keys):
        return False
    return not new["tied_output_head"] or new["tied_storage_verified"] is True


def _dataset(candidate: _Side) -> bool:
    dataset, h = candidate.source["dataset"], candidate.hashes
    return (dataset["tokenizer_hash"] == h["tokenizer_semantic_hash"] and dataset["corpus_hash"] == h["corpus_hash"]
            and dataset["template_hash"] == h["template_hash"] and is_id(dataset["max_token_id"])
            and dataset["max_token_id"] < candidate.tok.vocab_size)


def _template(candidate: _Side) -> bool:
    from tinyllm.artifacts.bundle import SPECIAL_ROLES

    checkpoint, h = candidate.source["checkpoint"], candidate.hashes
    bound = (checkpoint["template_hash"], checkpoint["tokenizer_hash"])
    if bound != (h["template_hash"], h["tokenizer_semantic_hash"]):
        return False
    for role, attribute in SPECIAL_ROLES:
        policy = getattr(candidate.tok, attribute, None)
        policy = list(policy) if isinstance(policy, (tuple, list)) else policy
        if checkpoint["special_ids"][role] != policy:
            return False
    return True


def _golden(candidate: _Side) -> bool:
    from tinyllm.artifacts import golden

    cases = candidate.source["golden"]["cases"]
    return bool(cases) and golden.verify(candidate.tok, cases) == []


def _bytes(candidate: _Side) -> bool:
    texts = [case["text"] for case in candidate.source["golden"]["cases"] if case.get("kind") == "encode"]
    tok = candidate.tok
    return bool(texts) and all(tok.decode(tok.encode(text)) == text for text in texts)


def _artifact_checks(stable_release: ReleaseBundle, candidate_release: ReleaseBundle) -> dict[str, bool]:
    stable, candidate = _side(stable_release), _side(candidate_release)
    built = stable.tok is not None and candidate.tok is not None
    # Every check that reads a tokenizer or derived hashes fails when the bundle could not give one.
    terms: dict[str, Callable[[], bool]] = {
        "A_schema": lambda: built,
        "A_hash": lambda: (built and candidate.source["declared_hashes"] == candidate.hashes
                           and _identities_match(stable) and _identities_match(candidate)),
        "A_prefix": lambda: built and _append_only(stable, candidate),
        "A_rows": lambda: built and _rows(stable, candidate),
        "A_dataset": lambda: built and _dataset(candidate),
        "A_template": lambda: built and _template(candidate),
        "A_cache": lambda: stable_release.cache_namespace != candidate_release.cache_namespace,
        "A_golden": lambda: built and _golden(candidate),
        "A_bytes": lambda: built and _bytes(candidate),
    }
    return {name: _holds(terms[name]) for name in MECHANICAL_CHECKS}
