"""The resize plan of an append-only vocabulary change: tensor shapes, parameter and optimizer
deltas, and where each new row starts (seed 003, 0x0C2).

`resize_plan(old, new, d_model, tied=..., bias=...)` first proves the change append-only
(`check_append_only`), then counts with ΔV = V_new - V_old:

* ΔP_input = ΔV·d (the input table grows by ΔV rows);
* ΔP_output = ΔV·d for an untied head, 0 for a tied one (it reuses the input table's storage);
* ΔP_bias = ΔV with an output bias, else 0;
* ΔP_trainable = their sum, and the optimizer gains `optimizer_slots` x ΔP_trainable values.

Each new id gets a `RowInit`: its piece and `source_old_ids`, the old tokenizer's encoding of the
new piece's bytes (the immediate old decomposition; `apply_plan` sets the row to their mean).

The seed's example, compact-268 -> balanced-272 at d = 64, tied, with a bias:

>>> from tinyllm.eval.seed_candidates import seed_candidates
>>> compact, balanced = (c.tokenizer for c in seed_candidates()[:2])
>>> plan = resize_plan(compact, balanced, 64, tied=True, bias=True)
>>> plan.shapes["input_embedding"], plan.shapes["output_bias"]
(((268, 64), (272, 64)), ((268,), (272,)))
>>> plan.delta_input, plan.delta_bias, plan.delta_trainable, plan.optimizer_values
(256, 4, 260, 520)
>>> [(r.new_id, r.source_old_ids) for r in plan.new_row_initialization]
[(268, (101, 114)), (269, (114, 101)), (270, (61, 61)), (271, (49, 48))]
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The plan's JSON format name.
FORMAT = "tinyllm-resize-plan-v1"


@dataclass(frozen=True)
class RowInit:
    """One appended row: `new_id`, its `piece` (the token string) and `source_old_ids`, the old
    tokenizer's ids for the piece's bytes; `kind` is "model" for a model piece, "added" for an
    added token (whose content the old tokenizer encodes as plain text)."""

    new_id: int
    piece: str
    source_old_ids: tuple[int, ...]
    kind: str = "model"

    def to_json(self) -> dict:
        return {"new_id": self.new_id, "piece": self.piece, "source_old_ids": list(self.source_old_ids),
                "kind": self.kind}


@dataclass(frozen=True)
class Plan:
    """What an append-only resize changes (see the module docstring). Shapes and deltas are
    derived from the sizes and flags, so a plan cannot disagree with itself."""

    old_vocab_size: int
    new_vocab_size: int
    d_model: int
    tied: bool
    bias: bool
    optimizer_slots: int = 2
    new_row_initialization: tuple[RowInit, ...] = ()
    old_semantic_hash: str = ""
    new_semantic_hash: str = ""
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def delta_vocab(self) -> int:
        return self.new_vocab_size - self.old_vocab_size

    @property
    def shapes(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """name -> (shape before, shape after) of each vocabulary-axis tensor; a tied output head
        has no entry of its own (it is the input table)."""
        d, old, new = self.d_model, self.old_vocab_size, self.new_vocab_size
        out = {"input_embedding": ((old, d), (new, d))}
        if not self.tied:
            out["output_embedding"] = ((old, d), (new, d))
        if self.bias:
            out["output_bias"] = ((old,), (new,))
        return out

    @property
    def delta_input(self) -> int:
        return self.delta_vocab * self.d_model

    @property
    def delta_output(self) -> int:
        return 0 if self.tied else self.delta_vocab * self.d_model

    @property
    def delta_bias(self) -> int:
        return self.delta_vocab if self.bias else 0

    @property
    def delta_trainable(self) -> int:
        return self.delta_input + self.delta_output + self.delta_bias

    @property
    def optimizer_values(self) -> int:
        return self.optimizer_slots * self.delta_trainable

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "old_vocab_size": self.old_vocab_size, "new_vocab_size": self.new_vocab_size,
            "d_model": self.d_model, "tied": self.tied, "bias": self.bias,
            "optimizer_slots": self.optimizer_slots,
            "old_semantic_hash": self.old_semantic_hash, "new_semantic_hash": self.new_semantic_hash,
            "shapes": {name: [list(before), list(after)] for name, (before, after) in self.shapes.items()},
            "delta_vocab": self.delta_vocab, "delta_input": self.delta_input, "delta_output": self.delta_output,
            "delta_bias": self.delta_bias, "delta_trainable": self.delta_trainable,
            "optimizer_values": self.optimizer_values,
            "new_row_initialization": [r.to_json() for r in self.new_row_initialization],
            "notes": list(self.notes),
        }


def _wordpiece_sources(model, piece: str) -> list[int]:
    """Greedy longest match of a WordPiece piece over the old vocabulary: a `##` piece starts as a
    continuation, so every part of it carries the prefix (the model's own rule past the first
    character)."""
    prefix = model.prefix
    continuing = bool(prefix) and piece.startswith(prefix) and len(piece) > len(prefix)
    word = piece[len(prefix):] if continuing else piece
    out, start = [], 0
    while start < len(word):
        head = prefix if (start > 0 or continuing) else ""
        for end in range(len(word), start, -1):
            i = model.vocab.get(head + word[start:end])
            if i is not None:
                out.append(i)
                start = end
                break
        else:
            return [model.unk_id] if model.unk_id is not None else []
    return out


def old_decomposition(old, row: dict) -> tuple[list[int], str]:
    """The old tokenizer's ids for a new row and the row's kind: an added token's content is
    encoded as plain text (control text stays text); a model piece goes through the old model
    alone, since it is already normalized and pre-tokenized."""
    added = row.get("added")
    if added is not None:
        return list(old.encode(added["content"])), "added"
    model = getattr(old, "model", None)
    piece = row["piece"]
    if getattr(model, "type", None) == "WordPiece":
        return _wordpiece_sources(model, piece), "model"
    tokenize = getattr(model, "tokenize", None)
    if tokenize is None:
        raise ValueError(f"resize_plan: old: {type(old).__name__} has no model to decompose {piece!r} with")
    return [i for i, _, _ in tokenize(piece)], "model"


def _check_size(name: str, value, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"resize_plan: {name}: found {value!r}, expected an int >= {low}")


def resize_plan(old, new, d_model: int, *, tied: bool, bias: bool, optimizer_slots: int = 2) -> Plan:
    """The `Plan` of an append-only change from `old` to `new` (model directories, bundles or
    tokenizers); `AppendOnlyError` when it is not append-only, ValueError when a new row has no
    decomposition in the old tokenizer."""
    from tinyllm.migrate.append_only import append_only_rows
    from tinyllm.migrate.sides import side

    _check_size("d_model", d_model, 1)
    _check_size("optimizer_slots", optimizer_slots, 0)
    old_tok, new_tok = side(old, "old").tokenizer, side(new, "new").tokenizer
    rows = append_only_rows(old_tok, new_tok)
    v_old, v_new = old_tok.vocab_size, new_tok.vocab_size
    inits, notes = [], []
    unk = getattr(old_tok, "unk_id", None)
    for new_id in range(v_old, v_new):
        row = rows[new_id]
        if row.get("piece") is None and row.get("added") is None:
            raise ValueError(f"resize_plan: new id {new_id} holds no piece; expected every appended id to be a "
                             "model piece or an added token")
        sources, kind = old_decomposition(old_tok, row)
        piece = row["added"]["content"] if kind == "added" else row["piece"]
        if not sources:
            raise ValueError(f"resize_plan: new id {new_id} ({piece!r}) has no decomposition in the old tokenizer; "
                             "expected at least one old id to initialize its row from")
        if unk is not None and unk in sources:
            notes.append(f"new id {new_id} ({piece!r}) starts partly from the unknown row {unk}")
        inits.append(RowInit(new_id, piece, tuple(sources), kind))
    return Plan(v_old, v_new, d_model, bool(tied), bool(bias), optimizer_slots, tuple(inits),
                old_tok.semantic_hash, new_tok.semantic_hash, tuple(notes))
