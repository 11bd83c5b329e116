"""The append-only check: every old id keeps its meaning in the new vocabulary.

`check_append_only(old, new)` compares, in this order, and raises `AppendOnlyError` (a
ValueError) at the first difference:

1. the frame: normalizer, pre-tokenizer, post-processor, decoder and model options
   (`tinyllm.tok.vocab_rows.model_frame`): a changed stage changes what every old id means;
2. the size: V_new >= V_old;
3. BPE merge ranks: the old merge list is a prefix of the new one (`merges[k]` names the first
   rank that differs), so no new merge outranks an old one;
4. the rows of ids 0..V_old-1 (`vocab_rows`): piece, score, piece type, the merges that make the
   row, added-token flags (`id N` names the first id that differs, and the field).

When it passes, `new.semantic_prefix(0, V_old) == old.semantic_prefix(0, V_old)`. It does not
promise old text keeps its segmentation: a new merge can join old pieces into a new id, so
datasets and prefix caches still have to be encoded again (seed 003, 0x0C2).

>>> from tinyllm.eval.seed_candidates import seed_candidates, byte_bpe, BALANCED_MERGES
>>> compact, balanced = (c.tokenizer for c in seed_candidates()[:2])
>>> check_append_only(compact, balanced)
>>> swapped = byte_bpe(BALANCED_MERGES[:1] + BALANCED_MERGES[2:3] + BALANCED_MERGES[1:2] + BALANCED_MERGES[3:])
>>> check_append_only(balanced, swapped)
Traceback (most recent call last):
tinyllm.migrate.append_only.AppendOnlyError: append-only: merges[1]: old ['th', 'e'], new ['i', 'n']; expected the old merges as a prefix of the new ones, rank for rank
"""

from __future__ import annotations

from typing import Any

from tinyllm.tok.vocab_rows import model_frame, vocab_rows


class AppendOnlyError(ValueError):
    """The new vocabulary is not the old one with ids appended: `.field` names the first
    difference (`frame.pre_tokenizer`, `vocab_size`, `merges[k]`, `id N.piece`, ...)."""

    def __init__(self, field: str, detail: str) -> None:
        self.field = field
        super().__init__(f"append-only: {field}: {detail}")


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _components(tok, name: str) -> dict:
    components = getattr(tok, "semantic_components", None)
    if components is None:
        raise ValueError(f"check_append_only: {name}: found {type(tok).__name__}, expected a tinyllm tokenizer")
    return components()


def _row_difference(old: dict, new: dict) -> str:
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return key
    return ""  # pragma: no cover - called only for rows that differ


def append_only_rows(old, new) -> list[dict]:
    """`check_append_only`, returning the new tokenizer's rows (`vocab_rows`) that it compared,
    so that a caller that needs them (`resize_plan`) does not build them again."""
    old_c, new_c = _components(old, "old"), _components(new, "new")
    old_frame, new_frame = model_frame(old_c), model_frame(new_c)
    for key in old_frame:
        if old_frame[key] != new_frame[key]:
            raise AppendOnlyError(f"frame.{key}", f"old {_short(old_frame[key])}, new {_short(new_frame[key])}; "
                                  "expected the same stages and model options")
    old_rows, new_rows = vocab_rows(old_c), vocab_rows(new_c)
    if len(new_rows) < len(old_rows):
        raise AppendOnlyError("vocab_size", f"old {len(old_rows)}, new {len(new_rows)}; expected the new "
                              "vocabulary to keep every old id")
    old_merges = old_c["model"].get("merges") or []
    new_merges = new_c["model"].get("merges") or []
    for rank, merge in enumerate(old_merges):
        found = new_merges[rank] if rank < len(new_merges) else None
        if found != merge:
            raise AppendOnlyError(f"merges[{rank}]", f"old {merge}, new {found}; expected the old merges as a "
                                  "prefix of the new ones, rank for rank")
    for i, (before, after) in enumerate(zip(old_rows, new_rows)):
        if before != after:
            key = _row_difference(before, after)
            raise AppendOnlyError(f"id {i}.{key}", f"old {_short(before.get(key))}, new {_short(after.get(key))}; "
                                  f"expected ids 0..{len(old_rows) - 1} unchanged")
    return new_rows


def check_append_only(old, new) -> None:
    """Raise `AppendOnlyError` unless `new` is `old` with ids appended (see the module docstring)."""
    append_only_rows(old, new)
