"""The `tinyllm eval`, `tinyllm calc` and `tinyllm sweep` commands (the CLI registers them; the work is here).

    tinyllm eval gpt2 o200k --data corpus/*.txt --baseline bytes --html report.html
    tinyllm eval gpt2 --data manifest.jsonl --split validation --slice-by script --json
    tinyllm calc vocab --vocab-size 128000 --d-model 4096
    tinyllm calc positions "A naïve cat." --patch 4
    tinyllm sweep bpe corpus/*.txt --sizes 8k,16k,32k,64k --d-model 4096 --save candidates/

Data: a `.jsonl` file is a split manifest (`tinyllm.eval.records`); any other file is text, cut
into documents of whole lines of at least 2,000 characters, one group per file, the file's name
(without suffix) as the slice. `--slice-by script` replaces each record's slice by the script
most of its letters belong to (`dominant_script`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: The scripts `--slice-by script` tells apart; letters of any other script count as "other".
SCRIPTS = ("Latin", "Cyrillic", "Greek", "Arabic", "Hebrew", "Devanagari", "Thai", "Hangul", "Hiragana",
           "Katakana", "Han")
DOCUMENT_CHARS = 2000


def dominant_script(text: str) -> str:
    """The script most letters of `text` belong to ("none" without letters; Hiragana and Katakana
    count as Japanese kana separately, so mixed Japanese text is usually "Han").

    >>> dominant_script("def f(x): return x"), dominant_script("Привет, мир"), dominant_script("1 + 2")
    ('Latin', 'Cyrillic', 'none')
    """
    import regex

    counts = {name: len(regex.findall(rf"\p{{Script={name}}}", text)) for name in SCRIPTS}
    letters = len(regex.findall(r"\p{L}", text))
    counts["other"] = letters - sum(counts.values())
    best = max(counts.items(), key=lambda item: (item[1], -list(counts).index(item[0])))
    return best[0] if best[1] > 0 else "none"


def load_records(paths, split: str | None = None, slice_by: str = "field") -> list:
    """The `Record`s of `--data` (see the module docstring)."""
    from tinyllm.eval.records import Record, line_documents, read_manifest  # here: the CLI starts without it

    records: list[Record] = []
    for name in paths:
        path = Path(name)
        if path.suffix == ".jsonl":
            found = list(read_manifest(path).records)
            records += [r for r in found if split is None or r.split == split]
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"--data: {path}: cannot read it as UTF-8 text ({e})") from None
        records += [Record(f"{path}#{k}", str(path), "validation", doc, slice=path.stem)
                    for k, doc in enumerate(line_documents(text.splitlines(keepends=True), DOCUMENT_CHARS))]
    if not records:
        raise ValueError(f"--data: no records in {', '.join(map(str, paths))}"
                         + (f" with split {split!r}" if split else ""))
    if slice_by == "script":
        records = [Record(r.record_id, r.group_id, r.split, r.text, dominant_script(r.text), r.declared_utf8_bytes,
                          r.declared_codepoints) for r in records]
    return records


def _load(name: str):
    from tinyllm.tok import ByteTokenizer, load

    return ByteTokenizer() if name == "bytes" else load(name)


def cmd_eval(args) -> int:
    from tinyllm._io import atomic_write_text
    from tinyllm.eval.metrics import evaluate

    records = load_records(args.data, args.split, args.slice_by)
    baseline = _load(args.baseline) if args.baseline else None
    reports = {}
    for k, name in enumerate(args.tokenizers, 1):
        sys.stderr.write(f"evaluating {name} ({k}/{len(args.tokenizers)}) on {len(records)} records...\n")
        sys.stderr.flush()
        reports[name] = evaluate(_load(name), records, max_length=args.max_length, baseline=baseline)
    if args.json:
        sys.stdout.write(json.dumps({name: r.to_json() for name, r in reports.items()}, indent=2,
                                    ensure_ascii=False) + "\n")
    else:
        for name, report in reports.items():
            sys.stdout.write(f"{name}:\n{report}\n\n")
    if args.figures:
        from tinyllm._io import atomic_write_bytes
        from tinyllm.eval.plots import FIGURES

        directory = Path(args.figures)
        directory.mkdir(parents=True, exist_ok=True)
        for caption, draw in FIGURES.items():
            target = directory / f"{caption.replace(' ', '-')}.png"
            atomic_write_bytes(target, draw(reports))
            sys.stderr.write(f"wrote {target}\n")
    if args.html:
        from tinyllm.eval.report_html import render

        sys.stderr.write("drawing the figures...\n")
        baseline_note = f" Baseline: {args.baseline}." if args.baseline else ""
        notes = f"{len(records)} records from {', '.join(map(str, args.data))}.{baseline_note}"
        atomic_write_text(args.html, render(reports, notes=notes))
        sys.stderr.write(f"wrote {args.html}\n")
    return 0


def cmd_calc(args) -> int:
    from tinyllm.eval.calculators import positions, vocab_cost

    if args.calc_command == "vocab":
        cost = vocab_cost(args.vocab_size, args.d_model, tied=not args.untied, bias=args.bias,
                          dtype_bytes=args.dtype_bytes, positions=args.positions)
        for field, value in cost._asdict().items():
            sys.stdout.write(f"{field:<14} {value}\n")
        return 0
    text = args.text
    rows = [("byt5", {}), ("canine", {"stride": args.stride}),
            ("charformer", {"rate": args.rate, "widths": range(1, args.max_width + 1)}),
            ("megabyte", {"patch": args.patch})]
    if args.starts:
        rows.append(("blt", {"starts": [int(s) for s in args.starts.split(",")]}))
    sys.stdout.write(f"{len(text.encode('utf-8'))} bytes, {len(text)} code points\n")
    sys.stdout.write(f"{'model':<11} {'n_raw':>6} {'n_local':>8} {'n_global':>9} {'n_output':>9}\n")
    for model, params in rows:
        p = positions(text, model, **params)
        sys.stdout.write(f"{model:<11} {p.n_raw:>6} {p.n_local:>8} {p.n_global:>9} {p.n_output:>9}\n")
    return 0


def cmd_sweep(args) -> int:
    from tinyllm.eval.sweep import parse_sizes, sweep_bpe, table

    sizes = parse_sizes(args.sizes, "--sizes")
    texts = []
    for name in args.corpus:
        try:
            texts.append(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"CORPUS: {name}: cannot read it as UTF-8 text ({e})") from None
    rows = sweep_bpe(texts, sizes, holdout=args.holdout_every, d_model=args.d_model,
                     min_frequency=args.min_frequency, progress=True)
    if args.json:
        sys.stdout.write(json.dumps({"corpus": list(args.corpus), "holdout_every": args.holdout_every,
                                     "d_model": args.d_model, "training": rows[-1].tokenizer.training_report,
                                     "rows": [row.to_json() for row in rows]}, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table(rows, args.d_model) + "\n")
    if args.save:
        for row in rows:
            target = Path(args.save) / f"bpe-{row.requested_size}"
            row.tokenizer.save(target)
            sys.stderr.write(f"wrote {target}\n")
    return 0


def add_parsers(sub, tok_help: str) -> None:
    """Register `eval`, `calc` and `sweep` on the CLI's subparsers (imports nothing of the evaluation)."""
    ev = sub.add_parser("eval", help="measure tokenizers on a corpus: ratios of totals by slice, HTML report")
    ev.add_argument("tokenizers", nargs="+", metavar="TOK", help=tok_help + "; 'bytes' is the byte tokenizer")
    ev.add_argument("--data", nargs="+", required=True, metavar="FILE",
                    help="text files (cut into documents) or .jsonl split manifests")
    ev.add_argument("--split", help="with manifests: only this split (default: every record)")
    ev.add_argument("--slice-by", choices=("field", "script"), default="field",
                    help="slices from the records (file names for text) or by dominant script")
    ev.add_argument("--baseline", metavar="TOK", help="a tokenizer to compare against (amplification, deltas)")
    ev.add_argument("--max-length", type=int, help="count the records longer than this many tokens")
    ev.add_argument("--json", action="store_true", help="print the reports as JSON")
    ev.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with figures")
    ev.add_argument("--figures", metavar="DIR", help="also write each figure as a PNG file into DIR")
    ev.set_defaults(run=cmd_eval)

    calc = sub.add_parser("calc", help="vocabulary cost and position-count calculators")
    verbs = calc.add_subparsers(dest="calc_command", required=True)
    vocab = verbs.add_parser("vocab", help="parameters, logit work and storage of a vocabulary")
    vocab.add_argument("--vocab-size", type=int, required=True)
    vocab.add_argument("--d-model", type=int, required=True)
    vocab.add_argument("--untied", action="store_true", help="a separate output matrix")
    vocab.add_argument("--bias", action="store_true", help="an output bias")
    vocab.add_argument("--dtype-bytes", type=int, default=2)
    vocab.add_argument("--positions", type=int, help="N positions, for the logit FLOPs and entries")
    pos = verbs.add_parser("positions", help="positions of byte and character architectures on one text")
    pos.add_argument("text")
    pos.add_argument("--stride", type=int, default=4, help="CANINE's downsampling stride")
    pos.add_argument("--rate", type=int, default=2, help="Charformer's downsampling rate")
    pos.add_argument("--max-width", type=int, default=4, help="Charformer's block widths 1..this")
    pos.add_argument("--patch", type=int, default=4, help="MEGABYTE's patch size")
    pos.add_argument("--starts", help="BLT patch starts, comma-separated byte offsets")
    calc.set_defaults(run=cmd_calc)

    sweep = sub.add_parser("sweep", help="vocabulary-size sweep: nested candidates measured on held-out text")
    kinds = sweep.add_subparsers(dest="sweep_command", required=True)
    bpe = kinds.add_parser("bpe", help="one byte-level BPE at the largest size, smaller ones from its merge prefixes")
    bpe.add_argument("corpus", nargs="+", metavar="CORPUS", help="UTF-8 text files (cut into documents)")
    bpe.add_argument("--sizes", required=True,
                     help="comma-separated vocabulary sizes: '8k' = 8000, '8ki' = 8192, or plain integers")
    bpe.add_argument("--d-model", type=int, default=4096, help="hidden width for the vocabulary parameters")
    bpe.add_argument("--holdout-every", type=int, default=10, metavar="N",
                     help="hold out every N-th document (numbered over all files in order)")
    bpe.add_argument("--min-frequency", type=int, default=2, help="the trainer's minimum pair count")
    bpe.add_argument("--json", action="store_true", help="print the rows as JSON")
    bpe.add_argument("--save", metavar="DIR", help="write each candidate to DIR/bpe-SIZE/")
    sweep.set_defaults(run=cmd_sweep)
