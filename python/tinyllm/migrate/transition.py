"""Classify a tokenizer change before deciding what to reuse (seed 003, 0x0C2, "Deciding what
can be reused").

`classify_transition(old, new)` looks at two model directories, bundles or tokenizers and
returns a `Transition` whose `kind` is the first class that holds:

==================  ==========================================================================
kind                evidence
==================  ==========================================================================
byte_identical      every release file is equal (paths, sizes, SHA-256) and so is the template
repackage           the files differ, the semantic hash is equal and the golden cases agree
template_only       the tokenizer semantics are equal (or only the special-token roles moved)
                    and the template hash differs
append              `check_append_only` holds and new ids follow the old ones
incompatible        none of the above: no equivalence and no complete row mapping
==================  ==========================================================================

The golden cases are the old side's (a bundle carries them), else the shipped default set made
with the old tokenizer; the new tokenizer must reproduce every field. Equal width, a file that
loads, or decoded text that looks right prove none of these classes.

`reasons` lists the evidence; `required_actions` lists what must be rebuilt, from `ACTIONS`.

>>> from tinyllm.eval.seed_candidates import seed_candidates
>>> compact, balanced = (c.tokenizer for c in seed_candidates()[:2])
>>> t = classify_transition(compact, balanced)
>>> t.kind, t.new_ids
('append', (268, 272))
>>> t.required_actions[:3]
('model_rows', 'optimizer_state', 'datasets')
>>> classify_transition(balanced, compact).kind
'incompatible'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tinyllm.migrate.append_only import AppendOnlyError, check_append_only
from tinyllm.migrate.sides import Side, side

KINDS = ("byte_identical", "repackage", "template_only", "append", "incompatible")

#: What a transition can require, with what it means.
ACTIONS = {
    "integrity_checks": "verify the deployed files against their hashes",
    "manifest": "record the new release hash (the raw files changed)",
    "model_rows": "resize the input table, output head and bias, and initialize the new rows (resize_plan)",
    "optimizer_state": "grow or rebuild the optimizer moments, master weights and shards",
    "datasets": "encode the tokenizer- or template-derived datasets again",
    "caches": "invalidate prefix, prompt and tokenization caches keyed to the old identity",
    "golden_cases": "record the golden and sequence cases again",
    "adaptation": "train on data encoded with the new tokenizer, then evaluate old and new slices",
    "evaluation": "evaluate the model with the new sequence format",
    "retraining": "no row mapping exists: retrain, or write an explicit migration",
}

_REQUIRED = {
    "byte_identical": ("integrity_checks",),
    "repackage": ("manifest", "integrity_checks"),
    "template_only": ("datasets", "caches", "golden_cases", "evaluation"),
    "append": ("model_rows", "optimizer_state", "datasets", "caches", "golden_cases", "adaptation", "manifest"),
    "incompatible": ("retraining", "model_rows", "optimizer_state", "datasets", "caches", "golden_cases"),
}


@dataclass(frozen=True)
class Transition:
    """The class of a change from `old` to `new`, its evidence and what it requires."""

    kind: str
    reasons: tuple[str, ...]
    required_actions: tuple[str, ...]
    old_vocab_size: int
    new_vocab_size: int
    old_semantic_hash: str
    new_semantic_hash: str
    old_template_hash: Optional[str] = None
    new_template_hash: Optional[str] = None

    @property
    def new_ids(self) -> tuple[int, int]:
        """[start, stop) of the appended ids (empty unless the vocabulary grew)."""
        return (self.old_vocab_size, max(self.old_vocab_size, self.new_vocab_size))

    def to_json(self) -> dict:
        return {"kind": self.kind, "reasons": list(self.reasons), "required_actions": list(self.required_actions),
                "old_vocab_size": self.old_vocab_size, "new_vocab_size": self.new_vocab_size,
                "old_semantic_hash": self.old_semantic_hash, "new_semantic_hash": self.new_semantic_hash,
                "old_template_hash": self.old_template_hash, "new_template_hash": self.new_template_hash}


def _file_map(s: Side) -> Optional[dict]:
    if s.release_files is None:
        return None
    return {f["path"]: (f["size"], f["sha256"]) for f in s.release_files}


def _file_differences(old: dict, new: dict) -> list[str]:
    return [path for path in sorted(set(old) | set(new)) if old.get(path) != new.get(path)]


def _golden_mismatches(old: Side, new: Side) -> tuple[int, list]:
    from tinyllm.artifacts import golden

    cases = list(old.golden) if old.golden is not None else golden.make(old.tokenizer)
    return len(cases), golden.verify(new.tokenizer, cases)


def _policy_changes(old_tok, new_tok) -> list[str]:
    before = old_tok.special_token_policy.to_json()
    after = new_tok.special_token_policy.to_json()
    return [f"special-token policy: {k} {before.get(k)!r} -> {after.get(k)!r}"
            for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]


def _transition(kind: str, reasons: list[str], old: Side, new: Side) -> Transition:
    return Transition(kind, tuple(reasons), _REQUIRED[kind], old.tokenizer.vocab_size, new.tokenizer.vocab_size,
                      old.tokenizer.semantic_hash, new.tokenizer.semantic_hash, old.template_hash, new.template_hash)


def classify_transition(old: Any, new: Any) -> Transition:
    """The `Transition` from `old` to `new` (see the module docstring)."""
    old, new = side(old, "old"), side(new, "new")
    old_files, new_files = _file_map(old), _file_map(new)
    same_semantics = old.tokenizer.semantic_hash == new.tokenizer.semantic_hash
    same_template = old.template_hash == new.template_hash
    reasons = []
    if old_files is not None and new_files is not None and old_files == new_files and same_template:
        return _transition("byte_identical", [f"all {len(old_files)} release files are equal (path, size, sha256)",
                                              "the template is equal"], old, new)
    if old_files is not None and new_files is not None:
        reasons.append("release files differ: " + ", ".join(_file_differences(old_files, new_files)))

    if same_semantics:
        reasons.append(f"semantic hash equal: {old.tokenizer.semantic_hash}")
        count, mismatches = _golden_mismatches(old, new)
        if mismatches:
            reasons.append(f"{len(mismatches)} of the golden fields differ although the semantic hash is equal "
                           f"(first: {mismatches[0]}): this runtime does not reproduce the old behaviour")
            return _transition("incompatible", reasons, old, new)
        reasons.append(f"all {count} golden cases agree")
        if same_template:
            return _transition("repackage", reasons, old, new)
        reasons.append(f"template hash differs: {old.template_hash} -> {new.template_hash}")
        return _transition("template_only", reasons, old, new)

    reasons.append(f"semantic hash differs: {old.tokenizer.semantic_hash} -> {new.tokenizer.semantic_hash}")
    try:
        check_append_only(old.tokenizer, new.tokenizer)
    except AppendOnlyError as e:
        reasons.append(str(e))
        return _transition("incompatible", reasons, old, new)
    v_old, v_new = old.tokenizer.vocab_size, new.tokenizer.vocab_size
    policy = _policy_changes(old.tokenizer, new.tokenizer)
    if not same_template:
        reasons.append(f"template hash differs: {old.template_hash} -> {new.template_hash}")
    if v_new == v_old:
        # Rows and stages equal: only the special-token roles moved, which changes the sequence
        # format (where EOS goes, what stops), not what any id is.
        reasons += policy
        return _transition("template_only", reasons, old, new)
    reasons.append(f"ids 0..{v_old - 1} keep their pieces, merge ranks and flags "
                   f"(semantic_prefix(0, {v_old}) equal)")
    reasons.append(f"ids {v_old}..{v_new - 1} are appended ({v_new - v_old} new)")
    count, mismatches = _golden_mismatches(old, new)
    changed = len({m.index for m in mismatches})
    reasons.append(f"{changed} of {count} golden cases encode differently under the new tokenizer"
                   + (" (old text re-segments into new ids)" if changed else ""))
    reasons += policy
    return _transition("append", reasons, old, new)
