"""`tinyllm migrate classify|plan` (the CLI registers them; the work is in `transition` and `plan`).

    tinyllm migrate classify OLD NEW [--json]
    tinyllm migrate plan OLD NEW --d-model 64 [--tied] [--bias] [--optimizer-slots 2] [--json] [-o plan.json]

OLD and NEW are model directories, bundle JSON files or preset names.
"""

from __future__ import annotations

import json
import sys


def _piece(tok, i: int) -> str:
    try:
        return repr(tok.id_to_token(i))
    except ValueError:
        return "?"


def classify_text(t) -> str:
    """The human report of a `Transition`."""
    from tinyllm.migrate.transition import ACTIONS

    lines = [f"transition: {t.kind}", f"vocabulary: {t.old_vocab_size} -> {t.new_vocab_size}", "evidence:"]
    lines += [f"  - {r}" for r in t.reasons]
    lines.append("required actions:")
    lines += [f"  - {a}: {ACTIONS[a]}" for a in t.required_actions]
    return "\n".join(lines) + "\n"


def plan_text(plan, old_tok=None) -> str:
    """The human report of a `Plan`: shapes, deltas and the new rows with their sources."""
    head = (f"resize plan: V {plan.old_vocab_size} -> {plan.new_vocab_size} (dV = {plan.delta_vocab}), "
            f"d = {plan.d_model}, {'tied' if plan.tied else 'untied'} head, "
            f"{'an' if plan.bias else 'no'} output bias, {plan.optimizer_slots} optimizer slots")
    rows = [("tensor", "before", "after")] + [(name, str(list(a)), str(list(b))) for name, (a, b) in plan.shapes.items()]
    if plan.tied:
        rows.append(("output_embedding", "tied", "tied (re-tied to the new input table)"))
    widths = [max(len(r[k]) for r in rows) for k in range(3)]
    table = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    deltas = (f"dP_input {plan.delta_input}  dP_output {plan.delta_output}  dP_bias {plan.delta_bias}  "
              f"dP_trainable {plan.delta_trainable}  optimizer values {plan.optimizer_values}")
    news = ["new rows (mean of the source rows):"]
    for r in plan.new_row_initialization:
        pieces = "" if old_tok is None else "  (" + ", ".join(_piece(old_tok, i) for i in r.source_old_ids) + ")"
        news.append(f"  {r.new_id} {r.piece!r} <- {list(r.source_old_ids)}{pieces}{'  [added]' if r.kind == 'added' else ''}")
    notes = [f"note: {n}" for n in plan.notes]
    return "\n".join([head, *table, deltas, *news, *notes]) + "\n"


def cmd_classify(args) -> int:
    from tinyllm.migrate.transition import classify_transition

    t = classify_transition(args.old, args.new)
    sys.stdout.write(json.dumps(t.to_json(), indent=2) + "\n" if args.json else classify_text(t))
    return 0


def cmd_plan(args) -> int:
    from tinyllm._io import atomic_write_text
    from tinyllm.migrate.plan import resize_plan
    from tinyllm.migrate.sides import side

    old = side(args.old, "old")
    plan = resize_plan(old, args.new, args.d_model, tied=args.tied, bias=args.bias,
                       optimizer_slots=args.optimizer_slots)
    doc = json.dumps(plan.to_json(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        atomic_write_text(args.output, doc)
    sys.stdout.write(doc if args.json else plan_text(plan, old.tokenizer))
    return 0


def add_parsers(sub) -> None:
    """Register `migrate classify` and `migrate plan` (imports nothing of the migration)."""
    mig = sub.add_parser("migrate", help="classify a tokenizer change and plan the tensor resize")
    verbs = mig.add_subparsers(dest="migrate_command", required=True)
    side_help = "a model directory, a bundle JSON file or a preset name"
    classify = verbs.add_parser("classify", help="byte_identical, repackage, template_only, append or incompatible")
    classify.add_argument("old", metavar="OLD", help=side_help)
    classify.add_argument("new", metavar="NEW", help=side_help)
    classify.add_argument("--json", action="store_true", help="print the transition as JSON")
    classify.set_defaults(run=cmd_classify)
    plan = verbs.add_parser("plan", help="shapes, parameter and optimizer deltas, and new-row sources")
    plan.add_argument("old", metavar="OLD", help=side_help)
    plan.add_argument("new", metavar="NEW", help=side_help)
    plan.add_argument("--d-model", type=int, required=True, help="the model's hidden width")
    plan.add_argument("--tied", action="store_true", help="the output head shares the input table")
    plan.add_argument("--bias", action="store_true", help="the output head has a bias")
    plan.add_argument("--optimizer-slots", type=int, default=2, help="moments per trainable value (Adam: 2)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--output", "-o", help="also write the plan JSON here (atomically)")
    plan.set_defaults(run=cmd_plan)
