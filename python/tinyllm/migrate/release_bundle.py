"""A release bundle: the seed's ordered six identities B = (h_sem, h_release, h_template,
h_dataset, h_checkpoint, n_cache), staged, tested, promoted and restored together (seed 003, 0x0C2).

`ReleaseBundle.from_bundle(bundle, namespace)` derives the five hashes from an artifacts bundle
(`tinyllm.artifacts.bundle`) and keeps it as `source` for the mechanical checks; h_dataset and
h_checkpoint frame the bundle's dataset and checkpoint declarations. `bundle_id` frames the six.

>>> import hashlib
>>> h = lambda text: hashlib.sha256(text.encode()).hexdigest()
>>> r17 = ReleaseBundle(h("sem"), h("rel"), h("tmpl"), h("data"), h("ckpt"), "cache-compact-268-r17", revision="r17")
>>> list(r17.identities())[-1], len(r17.bundle_id)
('cache_namespace', 64)
>>> ReleaseBundle(h("sem"), "abc", h("tmpl"), h("data"), h("ckpt"), "ns")
Traceback (most recent call last):
ValueError: ReleaseBundle: h_release: found "abc"; expected a 64-character lowercase hex SHA-256
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from tinyllm._io import read_json_file, show
from tinyllm.artifacts.canonical import framed_hash

#: The six identities of a release bundle, in the seed's order.
IDENTITY_FIELDS = ("h_sem", "h_release", "h_template", "h_dataset", "h_checkpoint", "cache_namespace")
HASH_FIELDS = IDENTITY_FIELDS[:5]

BUNDLE_DOMAIN = "tinyllm-release-bundle-v1"
DATASET_DOMAIN = "tinyllm-release-dataset-v1"
CHECKPOINT_DOMAIN = "tinyllm-release-checkpoint-v1"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9._-]+")


def identity_problem(name: str, value: Any) -> Optional[str]:
    """What is wrong with identity field `name` = `value` (None when it is well formed)."""
    if name == "cache_namespace":
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            return f"found {show(value)}; expected a non-empty name of letters, digits, '.', '_' or '-'"
    elif not isinstance(value, str) or not _HEX64.fullmatch(value):
        return f"found {show(value)}; expected a 64-character lowercase hex SHA-256"
    return None


def dataset_identity(dataset: Mapping[str, Any]) -> str:
    """h_dataset: the framed hash of an artifacts bundle's dataset declaration."""
    return framed_hash(DATASET_DOMAIN, dict(dataset))


def checkpoint_identity(checkpoint: Mapping[str, Any]) -> str:
    """h_checkpoint: the framed hash of an artifacts bundle's checkpoint declaration."""
    return framed_hash(CHECKPOINT_DOMAIN, dict(checkpoint))


@dataclass(frozen=True)
class ReleaseBundle:
    """One immutable release: the six identities, a `revision` label ("r17") and, when known, the
    artifacts bundle it was derived from (`source`; not part of the identity)."""

    h_sem: str
    h_release: str
    h_template: str
    h_dataset: str
    h_checkpoint: str
    cache_namespace: str
    revision: str = field(default="", kw_only=True)
    source: Optional[dict] = field(default=None, kw_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in IDENTITY_FIELDS:
            problem = identity_problem(name, getattr(self, name))
            if problem:
                raise ValueError(f"ReleaseBundle: {name}: {problem}")
        if not isinstance(self.revision, str) or (self.revision and not _NAME.fullmatch(self.revision)):
            raise ValueError(f"ReleaseBundle: revision: found {show(self.revision)}; expected a label of letters, "
                             "digits, '.', '_' or '-' (or empty)")
        if self.source is not None and not isinstance(self.source, dict):
            raise ValueError(f"ReleaseBundle: source: found {type(self.source).__name__}; expected an artifacts "
                             "bundle (a dict) or None")

    def identities(self) -> dict[str, str]:
        """The six identities, in the seed's order."""
        return {name: getattr(self, name) for name in IDENTITY_FIELDS}

    @property
    def bundle_id(self) -> str:
        """The framed hash of the six identities: the revision label and the source play no part."""
        return framed_hash(BUNDLE_DOMAIN, self.identities())

    def to_json(self) -> dict:
        """The identities, the revision and the bundle id (the source travels separately)."""
        return {**self.identities(), "revision": self.revision, "bundle_id": self.bundle_id}

    @classmethod
    def from_json(cls, obj: Any, *, source: Optional[dict] = None) -> ReleaseBundle:
        """The inverse of `to_json`; a `bundle_id`, when present, must be the one the identities give."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"ReleaseBundle.from_json: found {type(obj).__name__}; expected an object with "
                             + ", ".join(IDENTITY_FIELDS))
        unknown = sorted(set(obj) - {*IDENTITY_FIELDS, "revision", "bundle_id"})
        if unknown:
            raise ValueError(f"ReleaseBundle.from_json: {unknown[0]}: unknown key; expected "
                             f"{', '.join(IDENTITY_FIELDS)}, revision, bundle_id")
        for name in IDENTITY_FIELDS:
            if name not in obj:
                raise ValueError(f"ReleaseBundle.from_json: {name}: missing; expected the six identities")
            problem = identity_problem(name, obj[name])
            if problem:
                raise ValueError(f"ReleaseBundle.from_json: {name}: {problem}")
        revision = obj.get("revision", "")
        try:
            release = cls(**{name: obj[name] for name in IDENTITY_FIELDS}, revision=revision, source=source)
        except ValueError as e:
            raise ValueError(f"ReleaseBundle.from_json: {str(e).removeprefix('ReleaseBundle: ')}") from None
        if "bundle_id" in obj and obj["bundle_id"] != release.bundle_id:
            raise ValueError(f"ReleaseBundle.from_json: bundle_id: found {show(obj['bundle_id'])}; expected "
                             f"{release.bundle_id} (derived from the six identities)")
        return release

    @classmethod
    def from_bundle(cls, bundle_or_path: Any, cache_namespace: str, revision: str = "") -> ReleaseBundle:
        """The release of an artifacts bundle (a dict, or the path of its JSON file): the hashes
        derived again from its contents (never the declared ones, which A_hash compares), the
        framed hashes of its dataset and checkpoint declarations; the bundle kept as `source`."""
        from tinyllm.artifacts.bundle import derive_hashes

        if isinstance(bundle_or_path, (str, os.PathLike)):
            bundle = read_json_file(bundle_or_path)
        else:
            bundle = copy.deepcopy(bundle_or_path)  # the source must not change under its identities
        if not isinstance(bundle, dict):
            raise ValueError(f"ReleaseBundle.from_bundle: bundle: found {type(bundle).__name__}; expected an "
                             "artifacts bundle (a JSON object)")
        hashes = derive_hashes(bundle)  # a BundleError names the structural problem
        return cls(hashes["tokenizer_semantic_hash"], hashes["tokenizer_release_hash"], hashes["template_hash"],
                   dataset_identity(bundle["dataset"]), checkpoint_identity(bundle["checkpoint"]), cache_namespace,
                   revision=revision, source=bundle)
