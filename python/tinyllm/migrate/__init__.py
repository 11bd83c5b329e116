"""Vocabulary migration and release: change a model's vocabulary without a silent mismatch.

`classify_transition(old, new)` says what a change is (byte_identical, repackage, template_only,
append, incompatible) and what it requires; `check_append_only` names the first old id or merge
rank that moved; `resize_plan` gives the tensor shapes, parameter and optimizer deltas and the
source rows of each new id; `apply_plan` grows numpy arrays (or torch tensors) by that plan;
`ReleaseBundle`, `mechanical_checks` and `admit_candidate` promote a whole release or roll it
back whole, and `ReleaseStore` keeps that state in SQLite (`tinyllm release ...`).

The names below are imported on first use (PEP 562 `__getattr__`): the CLI registers
`tinyllm migrate` and `tinyllm release` on every call and must not pay for numpy or sqlite3.
"""

from tinyllm._lazy import lazy_exports

#: Each public name, by the submodule that defines it.
_HOMES = {
    "append_only": ("AppendOnlyError", "check_append_only"),
    "apply": ("Applied", "ApplyError", "apply_plan"),
    "plan": ("Plan", "RowInit", "resize_plan"),
    "canary": ("CanarySlice",),
    "mechanical": ("MECHANICAL_CHECKS", "mechanical_checks"),
    "release": ("Admission", "admit_candidate"),
    "release_bundle": ("ReleaseBundle",),
    "store": ("ReleaseStore",),
    "transition": ("Transition", "classify_transition"),
}

__getattr__, __all__ = lazy_exports("tinyllm.migrate", _HOMES)
