"""Carry out a resize `Plan` on model and optimizer tensors (seed 003, 0x0C2).

`apply_plan(plan, embedding, output=..., bias=..., optimizer_state=...)` returns an `Applied`
holding new, larger tensors; the inputs are never modified. It first checks everything it will
rely on, so a refused call has done no work:

* `embedding` is (V_old, d); every `RowInit` appends an id in V_old..V_new-1 from at least one
  old source id in 0..V_old-1, and together the rows cover V_old..V_new-1 exactly once;
* `bias` is given exactly when `plan.bias`, with shape (V_old,);
* a tied plan takes no `output` or one that *is* the embedding's storage; an untied plan needs
  its own (V_old, d) `output` that does not share the embedding's storage;
* `optimizer_state` names only parameters the plan has, and each array slot has the shape of its
  parameter.

Then it grows the tables:

* rows below V_old are copied exactly; each appended row is the mean of the *old* table's source
  rows (the seed's E_new = (1/m) sum E_{i_j}), computed by ``.mean`` in the table's own dtype;
* an untied output head gets the same mean-of-sources rule over its own rows. The seed leaves
  the untied head's policy open ("an untied output head needs its own row policy"); this is the
  policy chosen here, and the one a caller who disagrees should replace;
* the bias gains zeros; a tied head is returned as the very embedding object, and its shared
  storage is checked (a RuntimeError if it ever were not);
* each optimizer slot array (moments such as ``exp_avg``) gains zero rows; anything else (a
  ``step`` count, a 0-d array) passes through with its value unchanged.

numpy arrays are handled with numpy; torch tensors with torch (imported only when an input is a
tensor), keeping dtype, device, ``requires_grad`` and ``nn.Parameter``-ness.

A small example: V 4 -> 5, d = 2, tied, with a bias and one Adam-like optimizer moment; the new
id 4 starts from old ids 1 and 2:

>>> import numpy as np
>>> from tinyllm.migrate.plan import Plan, RowInit
>>> plan = Plan(old_vocab_size=4, new_vocab_size=5, d_model=2, tied=True, bias=True,
...             optimizer_slots=1, new_row_initialization=(RowInit(4, "ab", (1, 2)),))
>>> embedding = np.arange(8.0).reshape(4, 2)
>>> state = {"embedding": {"exp_avg": np.ones((4, 2)), "step": 3}, "bias": {"exp_avg": np.ones(4)}}
>>> out = apply_plan(plan, embedding, bias=np.ones(4), optimizer_state=state)
>>> out.embedding.tolist()
[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [3.0, 4.0]]
>>> out.bias.tolist(), out.output is out.embedding
([1.0, 1.0, 1.0, 1.0, 0.0], True)
>>> out.optimizer_state["embedding"]["exp_avg"][3:].tolist(), out.optimizer_state["embedding"]["step"]
([[1.0, 1.0], [0.0, 0.0]], 3)

A refusal names the field, what was found and what was expected:

>>> try:
...     apply_plan(plan, embedding)
... except ValueError as refusal:
...     print(refusal)
apply_plan: bias = None; expected an array of shape (4,) (plan.bias is true)
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional


class ApplyError(ValueError):
    """A refused `apply_plan` call: `.field` is the parameter or plan field at fault, and the
    message says what was found there and what was expected."""

    def __init__(self, field: str, found: str, expected: str) -> None:
        self.field = field
        super().__init__(f"apply_plan: {field} = {found}; expected {expected}")


# eq=False: the fields are arrays, whose == is elementwise, so a generated __eq__ would raise.
@dataclass(frozen=True, eq=False)
class Applied:
    """What `apply_plan` returns: the grown `embedding`; `output`, which for a tied plan is the
    same object as `embedding` and otherwise the grown output head; the zero-extended `bias` (or
    None); and the grown `optimizer_state` (new dicts; or None when none was given)."""

    embedding: Any
    output: Any
    bias: Any = None
    optimizer_state: Optional[dict] = None


def _is_torch(x: object) -> bool:
    # By module name, so that checking never imports torch (an optional extra).
    return type(x).__module__.startswith("torch")


def _kind_name(x: object) -> str:
    return f"a {type(x).__module__}.{type(x).__name__}"


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def _index(field: str, value: object, lo: int, hi: Optional[int], expected: str) -> int:
    # Anything with __index__ (numpy integers too), but never a bool: True is not an id.
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ApplyError(field, f"{value!r} (a {type(value).__name__})", expected)
    number = operator.index(value)
    if number < lo or (hi is not None and number >= hi):
        raise ApplyError(field, repr(number), expected)
    return number


class _Numpy:
    """The numpy operations `apply_plan` needs."""

    def __init__(self) -> None:
        import numpy

        self.np = numpy
        self.name = "numpy.ndarray"

    def is_array(self, x: object) -> bool:
        return isinstance(x, self.np.ndarray)

    def is_float(self, x: Any) -> bool:
        return self.np.issubdtype(x.dtype, self.np.floating)

    def shares(self, a: Any, b: Any) -> bool:
        return bool(self.np.shares_memory(a, b))

    def grow_rows(self, table: Any, v_new: int, rows: tuple) -> Any:
        np = self.np
        out = np.empty((v_new,) + table.shape[1:], dtype=table.dtype)
        out[: table.shape[0]] = table
        for row in rows:
            # Gathered from the old table, so a source can never be a row appended earlier.
            out[row.new_id] = table[list(row.source_old_ids)].mean(axis=0)
        return out

    def grow_zeros(self, x: Any, v_new: int) -> Any:
        np = self.np
        out = np.zeros((v_new,) + x.shape[1:], dtype=x.dtype)
        out[: x.shape[0]] = x
        return out

    def copy(self, x: Any) -> Any:
        return x.copy()


class _Torch:
    """The torch operations `apply_plan` needs, keeping dtype, device, requires_grad and
    Parameter-ness."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.name = "torch.Tensor"

    def is_array(self, x: object) -> bool:
        return isinstance(x, self.torch.Tensor)

    def is_float(self, x: Any) -> bool:
        return x.is_floating_point()

    def shares(self, a: Any, b: Any) -> bool:
        return a.data_ptr() == b.data_ptr()

    def _like(self, new: Any, old: Any) -> Any:
        # Built under no_grad, so `new` is a fresh leaf; give it back the input's trainability.
        if isinstance(old, self.torch.nn.Parameter):
            return self.torch.nn.Parameter(new, requires_grad=old.requires_grad)
        return new.requires_grad_(old.requires_grad)

    def grow_rows(self, table: Any, v_new: int, rows: tuple) -> Any:
        torch = self.torch
        with torch.no_grad():
            old = table.detach()
            by_id = sorted(rows, key=lambda r: r.new_id)
            means = [old.index_select(0, torch.tensor(r.source_old_ids, dtype=torch.long, device=old.device))
                     .mean(dim=0) for r in by_id]
            # torch.cat always allocates, so even with no rows appended the result is a new tensor.
            new = torch.cat([old] + ([torch.stack(means)] if means else []), dim=0)
        return self._like(new, table)

    def grow_zeros(self, x: Any, v_new: int) -> Any:
        torch = self.torch
        with torch.no_grad():
            old = x.detach()
            zeros = old.new_zeros((v_new - old.shape[0],) + tuple(old.shape[1:]))
            new = torch.cat([old, zeros], dim=0)
        return self._like(new, x)

    def copy(self, x: Any) -> Any:
        with self.torch.no_grad():
            return self._like(x.detach().clone(), x)


def _check_plan(plan: Any) -> tuple[int, int, int]:
    v_old = _index("plan.old_vocab_size", plan.old_vocab_size, 1, None, "an integer >= 1")
    v_new = _index("plan.new_vocab_size", plan.new_vocab_size, v_old, None,
                   f"an integer >= plan.old_vocab_size ({v_old}): a resize only appends")
    d = _index("plan.d_model", plan.d_model, 1, None, "an integer >= 1")
    for name in ("tied", "bias"):
        if not isinstance(getattr(plan, name), bool):
            raise ApplyError(f"plan.{name}", repr(getattr(plan, name)), "True or False")

    seen: dict[int, int] = {}
    for k, row in enumerate(plan.new_row_initialization):
        where = f"plan.new_row_initialization[{k}]"
        new_id = _index(f"{where}.new_id", row.new_id, v_old, v_new,
                        f"an appended id in {v_old}..{v_new - 1} (old ids keep their rows)")
        if new_id in seen:
            raise ApplyError(f"{where}.new_id", repr(new_id),
                             f"an id not already initialized by plan.new_row_initialization[{seen[new_id]}]")
        seen[new_id] = k
        sources = row.source_old_ids
        if len(sources) == 0:
            raise ApplyError(f"{where}.source_old_ids", "()",
                             "at least one old id to take the mean of")
        for j, source in enumerate(sources):
            _index(f"{where}.source_old_ids[{j}]", source, 0, v_old,
                   f"an old id in 0..{v_old - 1} (a new row starts from old rows only)")
    missing = [i for i in range(v_old, v_new) if i not in seen]
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
        raise ApplyError("plan.new_row_initialization", f"rows with no RowInit for ids {shown}",
                         f"exactly one RowInit for each id in {v_old}..{v_new - 1}")
    return v_old, v_new, d


def _check_array(ops: Any, field: str, x: object, shape: tuple[int, ...], expected: str,
                 floating: bool) -> None:
    if not ops.is_array(x):
        kinds = "a numpy.ndarray or a torch.Tensor" if field == "embedding" else f"a {ops.name} like embedding"
        raise ApplyError(field, _kind_name(x), kinds)
    if _shape(x) != shape:
        raise ApplyError(f"{field}.shape", repr(_shape(x)), f"{shape} = {expected}")
    if floating and not ops.is_float(x):
        raise ApplyError(f"{field}.dtype", str(x.dtype),
                         "a floating dtype (a new row is a mean of old rows)")


def _check_optimizer_state(ops: Any, state: object, shapes: dict[str, tuple[int, ...]],
                           plan: Any) -> None:
    if not isinstance(state, Mapping):
        raise ApplyError("optimizer_state", _kind_name(state),
                         "a mapping from parameter name to a mapping of slot name -> array")
    for name, slots in state.items():
        field = f"optimizer_state.{name}"
        if name not in shapes:
            if name == "output" and plan.tied:
                why = ("no slots of its own: plan.tied is true, so the output head is the embedding "
                       "and its moments live under optimizer_state.embedding")
            elif name == "bias" and not plan.bias:
                why = "no slots: plan.bias is false"
            else:
                why = f"one of the plan's parameters ({', '.join(shapes)})"
            raise ApplyError(field, "a slot mapping", why)
        if not isinstance(slots, Mapping):
            raise ApplyError(field, _kind_name(slots), "a mapping of slot name -> array")
        for slot, value in slots.items():
            slot_field = f"{field}.{slot}"
            # An array of the other library would pass through as an opaque value and come back
            # ungrown, so it is refused rather than mistaken for a scalar like `step`.
            if not ops.is_array(value) and getattr(value, "ndim", 0) > 0:
                raise ApplyError(slot_field, _kind_name(value), f"a {ops.name} like embedding")
            if ops.is_array(value) and value.ndim > 0 and _shape(value) != shapes[name]:
                raise ApplyError(f"{slot_field}.shape", repr(_shape(value)),
                                 f"{shapes[name]}, the old shape of {name}")


def apply_plan(plan: Any, embedding: Any, *, output: Any = None, bias: Any = None,
               optimizer_state: Optional[Mapping] = None) -> Applied:
    """Grow `embedding` (and the untied `output` head, the `bias` and the `optimizer_state`) as
    `plan` says; see the module docstring for the checks and the row policy. Raises ApplyError
    (a ValueError) naming the field at fault; nothing passed in is modified."""
    ops = _Torch() if _is_torch(embedding) else _Numpy()
    v_old, v_new, d = _check_plan(plan)
    rows = tuple(plan.new_row_initialization)

    _check_array(ops, "embedding", embedding, (v_old, d),
                 "(plan.old_vocab_size, plan.d_model)", floating=True)
    shapes = {"embedding": (v_old, d)}
    if plan.tied:
        if output is not None:
            if not ops.is_array(output):
                raise ApplyError("output", _kind_name(output), "None or the embedding itself (plan.tied is true)")
            if not ops.shares(output, embedding):
                raise ApplyError("output", "an array with storage of its own",
                                 "None or the embedding itself: plan.tied is true but output is a "
                                 "separate array")
            if _shape(output) != (v_old, d):
                # Shares storage, yet is a slice or reshape: not the whole table a tied head reads.
                raise ApplyError("output.shape", repr(_shape(output)),
                                 f"{(v_old, d)}, the embedding's own shape (plan.tied is true)")
    else:
        if output is None:
            raise ApplyError("output", "None", f"an output head of shape {(v_old, d)} (plan.tied is false)")
        _check_array(ops, "output", output, (v_old, d), "(plan.old_vocab_size, plan.d_model)", floating=True)
        if ops.shares(output, embedding):
            raise ApplyError("output", "an array sharing the embedding's storage",
                             "a separate output head: plan.tied is false")
        shapes["output"] = (v_old, d)
    if plan.bias:
        if bias is None:
            raise ApplyError("bias", "None", f"an array of shape {(v_old,)} (plan.bias is true)")
        _check_array(ops, "bias", bias, (v_old,), "(plan.old_vocab_size,)", floating=False)
        shapes["bias"] = (v_old,)
    elif bias is not None:
        raise ApplyError("bias", _kind_name(bias), "None (plan.bias is false)")
    if optimizer_state is not None:
        _check_optimizer_state(ops, optimizer_state, shapes, plan)

    new_embedding = ops.grow_rows(embedding, v_new, rows)
    if plan.tied:
        new_output = new_embedding
        # The seed's tie check: the head must read the very storage that was just resized.
        if not ops.shares(new_output, new_embedding):
            raise RuntimeError("apply_plan: the tied output head does not share the embedding's storage")
    else:
        new_output = ops.grow_rows(output, v_new, rows)
    new_bias = ops.grow_zeros(bias, v_new) if plan.bias else None

    new_state = None
    if optimizer_state is not None:
        new_state = {}
        for name, slots in optimizer_state.items():
            grown = {}
            for slot, value in slots.items():
                if ops.is_array(value) and value.ndim > 0:
                    grown[slot] = ops.grow_zeros(value, v_new)
                elif ops.is_array(value):
                    # A 0-d array (torch's Adam keeps `step` as one) is copied, so a later in-place
                    # increment of the new state cannot reach back into the old one.
                    grown[slot] = ops.copy(value)
                else:
                    grown[slot] = value
            new_state[name] = grown
    return Applied(embedding=new_embedding, output=new_output, bias=new_bias, optimizer_state=new_state)
