"""`tinyllm doctor`: the failure lab (seed 003, 0x10) over a model directory or a bundle.

Tokenizer bugs keep shapes: the model still gets integer tensors and the decoded text looks fine.
The doctor looks where the shape does not: each check reads the files (and the loaded tokenizer)
and returns one `Finding`, a status (`ok`, `warn`, `error` or `skip`), what it saw (numbers, ids,
tokens) and how to fix it. A check that does not apply (bundle checks on a directory, rows without
a `config.json`) is reported as `skip` with the reason, never left out, so every run lists every
check in `CHECKS` order. Only `error` makes `has_errors` true (and `tinyllm doctor` exit 1). What
the checks read is gathered once by `tinyllm.artifacts.doctor_subject`.

The checks read the raw `tokenizer.json` where tinyllm's loader would refuse the file, so a file
the loader rejects still gets its findings, and the load error is a finding of its own.

>>> findings = diagnose("examples/bundles/ids-0-11/bundle.json")
>>> [f.check for f in findings if f.status != "ok"]
[]
>>> [f.status for f in diagnose("smollm2") if f.check == "pad_eos_labels"]
['warn']
>>> print(next(f for f in diagnose("smollm2") if f.check == "vocab_rows").line())
skip  vocab_rows: no config.json with vocab_size: no model rows to compare (49152 tokenizer ids)
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tinyllm.artifacts.doctor_subject import (Subject, added_tokens, error_text, gather, is_id, model_pieces,
                                              token_text, vocab_size_of)

STATUSES = ("ok", "warn", "error", "skip")

#: Every check, in the order they run and print. Names are stable: scripts branch on them.
CHECKS = (
    "tokenizer_load", "vocab_rows", "special_id_collision", "template_controls", "double_bos",
    "pad_eos_labels", "stop_ids_range", "added_token_flags", "bundle_reconcile", "vocab_grown_without_resize",
)

#: Control-looking spellings a chat template may write. The angle family (<|...|>, <s>, <bos>, ...)
#: is always meant as one special token; the bracket family ([INST], <<SYS>>) may be plain text by
#: design (Llama 2), so a miss there is a warning.
ANGLE_CONTROL = re.compile(r"<\|[^<>|\s]{1,48}\|>|<｜[^<>｜\s]{1,48}｜>|</?s>|<(?:bos|eos|pad|unk|mask|sep|cls|"
                           r"start_of_turn|end_of_turn|start_of_image|end_of_image)>")
BRACKET_CONTROL = re.compile(r"\[/?INST\]|<</?SYS>>|\[(?:CLS|SEP|PAD|MASK|UNK|AVAILABLE_TOOLS|/AVAILABLE_TOOLS|"
                             r"TOOL_CALLS|TOOL_RESULTS|/TOOL_RESULTS)\]")

#: Conversations rendered to see what a template writes (a template may reject some shapes).
PROBES = (
    ([{"role": "user", "content": "Hello"}], True),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
      {"role": "assistant", "content": "Hi."}], False),
    ([{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}], False),
)


@dataclass(frozen=True)
class Finding:
    """One check's result: `status` is one of STATUSES; `fix` is empty when there is nothing to do."""

    check: str
    status: str
    saw: str
    fix: str = ""

    def to_json(self) -> dict:
        return {"check": self.check, "status": self.status, "saw": self.saw, "fix": self.fix}

    def line(self) -> str:
        return f"{self.status:<5} {self.check}: {self.saw}" + (f" -> fix: {self.fix}" if self.fix else "")


def _few(items: list, limit: int = 4) -> str:
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


# -- the checks ------------------------------------------------------------------------------

def check_tokenizer_load(s: Subject) -> Finding:
    if s.tok is None:
        return Finding("tokenizer_load", "error", f"tinyllm cannot load it: {s.load_error or s.doc_error}",
                       "fix the file and field the error names; the checks that need a tokenizer are skipped")
    return Finding("tokenizer_load", "ok", f"{type(s.tok).__name__}, {s.tok.vocab_size} ids, "
                                           f"H_sem {s.tok.semantic_hash[:12]}…")


def check_vocab_rows(s: Subject) -> Finding:
    name = "vocab_rows"
    size = vocab_size_of(s)
    if s.rows_error:
        return Finding(name, "error", f"cannot read the rows: {s.rows_error}", "make config.json a JSON object")
    if not s.rows:
        return Finding(name, "skip", f"no config.json with vocab_size: no model rows to compare ({size} tokenizer ids)")
    if size is None:
        return Finding(name, "skip", "no tokenizer ids to compare (the tokenizer did not load)")
    short = [(where, rows) for where, rows in s.rows if rows < size]
    if short:
        return Finding(name, "error", "; ".join(f"{where} = {rows} < {size} = 1 + max id {size - 1}: ids "
                                                  f"{rows}..{size - 1} have no row" for where, rows in short),
                       f"resize the model to at least {size} rows (embeddings and output head) and train the new "
                       "rows, or use the tokenizer the model was trained with")
    parts = [f"{where} = {rows} for {size} ids" + (f" ({rows - size} padding rows, never emitted)" if rows > size else "")
             for where, rows in s.rows]
    return Finding(name, "ok", "; ".join(parts))


def check_special_id_collision(s: Subject) -> Finding:
    name = "special_id_collision"
    if s.doc is None:
        return Finding(name, "skip", f"no tokenizer.json to read ({s.doc_error or 'not a tokenizer.json model'})")
    pieces = model_pieces(s.doc)
    by_piece = {piece: i for i, piece in pieces.items()}
    errors, warnings = [], []
    unknown = {getattr(s.tok, "unk_id", None), getattr(getattr(s.tok, "special_token_policy", None), "unk_id", None)}
    for t in added_tokens(s.doc):
        i, content = t["id"], t.get("content")
        if i in pieces and pieces[i] != content:
            errors.append(f"id {i} is added token {content!r} and model piece {pieces[i]!r}")
        elif content in by_piece and by_piece[content] != i:
            warnings.append(f"{content!r} is added id {i} and also model piece id {by_piece[content]}")
        if t.get("special") and s.tok is not None:
            plain = s.tok.encode(content)
            if i in plain and i not in unknown:  # unknown input giving the unk id is its job
                errors.append(f"plain text {content!r} encodes to {plain}, which holds the control id {i}")
    if errors:
        return Finding(name, "error", _few(errors + warnings),
                       "give each special token an id of its own after the base vocabulary (ids >= the model's "
                       "base size) and resize the model; one id must mean one thing")
    if warnings:
        return Finding(name, "warn", _few(warnings),
                       "the same spelling has two ids: decode output cannot tell them apart; drop the model piece "
                       "or accept that plain text may produce it")
    specials = [t for t in added_tokens(s.doc) if t.get("special")]
    return Finding(name, "ok", f"{len(specials)} special ids, none shared with a different model piece")


def _variables(s: Subject) -> dict:
    """The template's special-token variables: tokenizer_config.json first, else the policy."""
    from tinyllm.seq.chat import template_variables

    variables = template_variables(s.tokenizer_config or {})
    for role in ("bos", "eos", "unk", "pad"):
        key = f"{role}_token"
        i = getattr(s.tok, f"{role}_id", None) if s.tok is not None else None
        if not variables[key] and i is not None:
            variables[key] = s.tok.id_to_token(i) or ""
    return variables


def _renders(s: Subject) -> tuple[list[str], list[str]]:
    from tinyllm.seq.chat import render_template_text

    texts, errors = [], []
    for messages, prompt in PROBES:
        try:
            texts.append(render_template_text(s.template, messages, _variables(s), prompt))
        except ValueError as e:
            errors.append(error_text(e))
    return texts, errors


def _template_missing(s: Subject) -> Optional[Finding]:
    """A skip or error finding when the template cannot be examined, else None (for both template checks)."""
    if s.template_error:
        return Finding("", "error", f"cannot read the chat template: {s.template_error}",
                       "fix the file the error names")
    if s.template is None:
        return Finding("", "skip", "no chat template (tokenizer_config.json, chat_template.json, .jinja or "
                                   "template.source)")
    if s.tok is None:
        return Finding("", "skip", "the tokenizer did not load (see tokenizer_load)")
    return None


def check_template_controls(s: Subject) -> Finding:
    name = "template_controls"
    missing = _template_missing(s)
    if missing is not None:
        return Finding(name, missing.status, missing.saw, missing.fix)
    texts, render_errors = _renders(s)
    source = re.sub(r"\{#.*?#\}", "", s.template, flags=re.S)
    found: dict[str, bool] = {}
    for text in [*texts, source]:
        for m in ANGLE_CONTROL.finditer(text):
            found[m.group()] = True
        for m in BRACKET_CONTROL.finditer(text):
            found.setdefault(m.group(), False)
    specials = dict(getattr(s.tok, "special_ids", {}) or {})
    added = {t.content: t for t in getattr(s.tok, "added_tokens", ())}
    errors, warnings, good = [], [], []
    for control, angle in found.items():
        if control in specials:
            good.append(f"{control} = {specials[control]}")
            continue
        if control in added:
            problem = f"{control} is added id {added[control].id} but not special (user text can produce it)"
        elif s.tok.token_to_id(control) is not None:
            problem = f"{control} is ordinary piece id {s.tok.token_to_id(control)}, not special"
        else:
            ids = s.tok.encode(control)
            problem = f"{control} is not in the vocabulary: encodes as {len(ids)} pieces {ids}"
        (errors if angle else warnings).append(problem)
    note = f" (renders failed: {render_errors[0]})" if render_errors and not texts else ""
    if errors:
        return Finding(name, "error", _few(errors + warnings) + note,
                       "add each control as one added token with special: true (and resize the model if that "
                       "adds ids), or change the template to the controls the model was trained with")
    if warnings:
        return Finding(name, "warn", _few(warnings) + note,
                       "fine if the model was trained on these as plain text (Llama 2); else add them as "
                       "special tokens")
    if not found:
        return Finding(name, "ok", "the template writes no control-looking text" + note)
    return Finding(name, "ok", "each control is one special token: " + _few(good) + note)


def check_double_bos(s: Subject) -> Finding:
    name = "double_bos"
    missing = _template_missing(s)
    if missing is not None:
        return Finding(name, missing.status, missing.saw, missing.fix)
    bos = s.tok.bos_id
    if bos is None:
        return Finding(name, "skip", "the tokenizer has no BOS id")
    from tinyllm.seq.chat import render_template_text

    messages, _ = PROBES[0]
    try:
        text = render_template_text(s.template, messages, _variables(s), False)
    except ValueError as e:
        return Finding(name, "warn", f"cannot render a one-message conversation: {error_text(e)}",
                       "check the template renders [{'role': 'user', 'content': 'Hello'}]")

    def leading(ids: list[int]) -> int:
        return next((k for k, i in enumerate(ids) if i != bos), len(ids))

    written = leading(s.tok.encode(text, allowed_special="all"))
    ids = s.tok.encode(text, add_special=True, allowed_special="all")
    total = leading(ids)
    saw = (f"BOS {token_text(s, bos)}: the template writes {written}, encode(render, add_special=True) starts with "
           f"{total} ({ids[:total + 2]}...)")
    if total >= 2:
        return Finding(name, "error", saw, "drop the BOS from the template ({{ bos_token }}) or encode the rendered "
                                           "text with add_special=False (apply_chat_template adds each control once)")
    return Finding(name, "ok", saw)


def check_pad_eos_labels(s: Subject) -> Finding:
    name = "pad_eos_labels"
    if s.tok is None:
        return Finding(name, "skip", "the tokenizer did not load (see tokenizer_load)")
    pad, stops = s.tok.pad_id, tuple(s.tok.stop_ids)
    if pad is None:
        return Finding(name, "ok", "no pad id: collation must choose one (a distinct token, masked by attention)")
    if pad == s.tok.eos_id or pad in stops:
        return Finding(name, "warn", f"pad {token_text(s, pad)} is also EOS/stop {list(stops)}: masking labels where "
                                     "id == pad also masks the real EOS, so the model never learns to stop",
                       "add a distinct pad token, or mask labels by the attention mask (padding positions) "
                       "rather than by id")
    return Finding(name, "ok", f"pad {token_text(s, pad)} differs from EOS {token_text(s, s.tok.eos_id)}")


def _declared_stops(s: Subject) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    eos = (s.generation_config or {}).get("eos_token_id")
    for k, i in enumerate(eos if isinstance(eos, list) else [] if eos is None else [eos]):
        out.append(("generation_config.json: eos_token_id" + (f"[{k}]" if isinstance(eos, list) else ""), i))
    if s.bundle is not None:
        special = (s.bundle.get("checkpoint") or {}).get("special_ids") or {}
        for k, i in enumerate(special.get("stop") or []):
            out.append((f"checkpoint.special_ids.stop[{k}]", i))
    if s.tok is not None:
        out.extend(("the tokenizer's stop_ids", i) for i in s.tok.stop_ids)
    return out


def check_stop_ids_range(s: Subject) -> Finding:
    name = "stop_ids_range"
    size = vocab_size_of(s)
    stops = _declared_stops(s)
    if size is None:
        return Finding(name, "skip", "no vocabulary to compare (the tokenizer did not load)")
    if not stops:
        return Finding(name, "warn", "no stop ids: generation runs to max_tokens",
                       "set eos_token_id in generation_config.json")
    bad = [f"{where} = {i}" for where, i in stops if not is_id(i) or i >= size]
    if bad:
        return Finding(name, "error", f"{_few(bad)}: outside the vocabulary of {size} ids (0..{size - 1})",
                       "use the id of the real end-of-turn token (look it up with token_to_id) in "
                       "generation_config.json / the checkpoint's special_ids")
    ids = sorted({i for _, i in stops})
    return Finding(name, "ok", "stop ids " + ", ".join(token_text(s, i) for i in ids) + f" within {size} ids")


def check_added_token_flags(s: Subject) -> Finding:
    name = "added_token_flags"
    if s.doc is None:
        return Finding(name, "skip", f"no tokenizer.json added_tokens to read ({s.doc_error or 'not a tokenizer.json model'})")
    refused, surprises = [], []
    for t in added_tokens(s.doc):
        flags = [flag for flag in ("lstrip", "rstrip", "single_word") if t.get(flag) is True]
        if flags:
            refused.append(f"{t.get('content')!r} (id {t['id']}) {'/'.join(flags)}: true")
        if t.get("special") and t.get("normalized") is True:
            surprises.append(f"special {t.get('content')!r} (id {t['id']}) normalized: true")
    if refused:
        load = f"; load: {s.load_error}" if s.load_error else ""
        return Finding(name, "error", _few(refused) + " (the token eats the whitespace around it, or matches only "
                                                      "as a whole word; tinyllm refuses these)" + load,
                       "set lstrip/rstrip/single_word to false and put the whitespace in the template text")
    if surprises:
        return Finding(name, "warn", _few(surprises) + ": matched only after normalization, so a normalizer that "
                                                       "changes its text (lowercase, NFKC) hides the control",
                       "set normalized: false on special tokens (Hugging Face's default for them)")
    return Finding(name, "ok", f"{len(added_tokens(s.doc))} added tokens, no lstrip/rstrip/single_word, no normalized "
                               "special token")


#: reconcile check -> what to do about it
_RECONCILE_FIXES: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda c: c in ("structure", "canonical_order", "tokenizer_load"), "fix the bundle at the field named"),
    (lambda c: c == "bundle_hash", "the dataset or checkpoint declaration changed after sealing: re-seal "
                                   "(bundle.seal) and reconcile again to see which relation broke"),
    (lambda c: c.endswith("_hash") and not c.startswith(("dataset_", "checkpoint_")),
     "the contents changed after sealing: restore them, or re-seal and re-bind the dataset and checkpoint"),
    (lambda c: c.startswith("dataset_") and c.endswith("_hash"),
     "stale dataset hash: re-encode the dataset with this tokenizer/corpus/template, or bundle the ones it was "
     "encoded with"),
    (lambda c: c.startswith("checkpoint_") and c.endswith("_hash"),
     "the checkpoint was trained with another tokenizer/template: bundle those, or retrain"),
    (lambda c: c.startswith("checkpoint_"), "make generation_config.json and the checkpoint's special_ids agree"),
    (lambda c: c.endswith("_rows"), "resize the checkpoint's rows to cover every id (1 + max id)"),
    (lambda c: c == "dataset_max_token_id", "the dataset holds ids the tokenizer lacks: re-encode it"),
    (lambda c: c == "tied_storage", "verify the tied head shares storage, then set tied_storage_verified: true"),
    (lambda c: c == "golden_cases", "this runtime does not reproduce the recorded cases: find what changed in the "
                                    "tokenizer or engine, or re-record them with `tinyllm golden make` and re-seal"),
)


def check_bundle_reconcile(s: Subject) -> Finding:
    name = "bundle_reconcile"
    if s.bundle is None:
        return Finding(name, "skip", "not a bundle: no dataset or checkpoint hashes to check")
    from tinyllm.artifacts.bundle import BundleError, reconcile

    try:
        reconcile(s.bundle)
    except BundleError as e:
        fix = next((text for match, text in _RECONCILE_FIXES if match(e.check)), "see the field named")
        return Finding(name, "error", str(e), fix)
    return Finding(name, "ok", f"reconcile passes: bundle hash {s.bundle['declared_hashes']['bundle_hash'][:12]}…")


def check_vocab_grown_without_resize(s: Subject) -> Finding:
    name = "vocab_grown_without_resize"
    if not s.rows:
        return Finding(name, "skip", "no model rows (config.json vocab_size or checkpoint rows) to compare")
    pieces = model_pieces(s.doc)
    size = vocab_size_of(s)
    if not pieces or size is None:
        return Finding(name, "skip", "no tokenizer.json base vocabulary to tell growth from")
    base = 1 + max(pieces)
    grown = sorted({t["id"] for t in added_tokens(s.doc) if t["id"] >= base})
    rows = dict(s.rows)
    problems = []
    for where, n in s.rows:
        if n >= size:
            continue
        if base > n:
            return Finding(name, "skip", f"the base vocabulary alone ({base} ids) exceeds {where} = {n}: not a "
                                         "growth but another tokenizer (see vocab_rows)")
        tokens = [token_text(s, i) for i in grown if i >= n]
        problems.append(f"{where} = {n}, but {len(tokens)} added ids beyond it ({_few(tokens, 3)})")
    resized = [f"{where} = {n}" for where, n in s.rows if n >= size]
    if problems and resized:
        problems[-1] += f" while {', '.join(resized)} was resized"
    dataset = (s.bundle or {}).get("dataset") or {}
    max_id = dataset.get("max_token_id")
    if is_id(max_id) and max_id >= min(rows.values()):
        problems.append(f"dataset.max_token_id = {max_id} has no row (the model has {min(rows.values())} rows)")
    if problems:
        return Finding(name, "error", "; ".join(problems),
                       f"resize embeddings and output head together to >= {size} rows and train the new rows "
                       "before the new ids are used")
    return Finding(name, "ok", f"{len(grown)} added ids beyond the base {base}; every id has a row "
                               f"({', '.join(f'{w} = {n}' for w, n in s.rows)})")


_CHECK_FUNCTIONS: dict[str, Callable[[Subject], Finding]] = {
    "tokenizer_load": check_tokenizer_load,
    "vocab_rows": check_vocab_rows,
    "special_id_collision": check_special_id_collision,
    "template_controls": check_template_controls,
    "double_bos": check_double_bos,
    "pad_eos_labels": check_pad_eos_labels,
    "stop_ids_range": check_stop_ids_range,
    "added_token_flags": check_added_token_flags,
    "bundle_reconcile": check_bundle_reconcile,
    "vocab_grown_without_resize": check_vocab_grown_without_resize,
}


def diagnose(path: str | os.PathLike) -> list[Finding]:
    """Every check's finding, in CHECKS order. ValueError when `path` is not a model directory, a
    bundle JSON file or a preset name; problems inside it are findings, never exceptions."""
    subject = gather(path)
    return [_CHECK_FUNCTIONS[name](subject) for name in CHECKS]


def has_errors(findings: list[Finding]) -> bool:
    return any(f.status == "error" for f in findings)


def report(findings: list[Finding], path: str) -> str:
    """One line per finding and a summary line."""
    counts = {status: sum(f.status == status for f in findings) for status in STATUSES}
    def n(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    summary = (f"doctor: {path}: {n(len(findings), 'check')}, {n(counts['error'], 'error')}, "
               f"{n(counts['warn'], 'warning')}, {counts['skip']} skipped")
    return "\n".join([*(f.line() for f in findings), summary]) + "\n"


def findings_json(findings: list[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], ensure_ascii=False, indent=1) + "\n"
