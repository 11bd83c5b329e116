"""The `tinyllm` command line.

    tinyllm encode "Hello, world"            # ids, space separated
    tinyllm encode --pieces "héllo"          # a table of id, piece and bytes
    echo -n "hi" | tinyllm encode --json     # text on stdin, machine-readable output
    tinyllm decode 104 195 169               # text
    tinyllm train char corpus.txt -o model/  # writes model/tinyllm_char.json and model/config.json
    tinyllm train bpe corpus.txt -o model/ --vocab-size 8000   # tokenizer.json + training_report.json
    tinyllm train wordpiece corpus.txt -o model/ --vocab-size 8000
    tinyllm train unigram corpus.txt -o model/ --vocab-size 8000
    tinyllm convert cl100k_base.tiktoken -o model/   # a Hugging Face tokenizer.json (also from a .model)
    tinyllm reconcile bundle.json            # "ok <bundle hash>", or the failed check and its field
    tinyllm manifest model/ -o manifest.json # semantic and release hashes, release files, policy
    tinyllm doctor model/ [--json]           # the failure lab: one line per check; exit 1 on an error
    tinyllm eval gpt2 o200k --data a.txt b.txt --baseline bytes --html report.html   # corpus metrics by slice
    tinyllm calc vocab --vocab-size 128000 --d-model 4096   # parameters, logit work, MiB
    tinyllm calc positions "A naïve cat."    # positions of ByT5, CANINE, Charformer, MEGABYTE (, BLT)
    tinyllm migrate classify OLD NEW         # what a vocabulary change is, and what it requires
    tinyllm migrate plan OLD NEW --d-model 64 --tied --bias   # shapes, deltas, new-row sources
    tinyllm release stage|admit|rollback|status   # whole releases in a SQLite store
    tinyllm encode-dataset data.jsonl -t gpt2 -o out/   # sharded ids bound to the tokenizer (resumable)
    tinyllm verify-dataset out/ -t gpt2      # re-hash the shards, check ids and the tokenizer binding
    tinyllm serve                            # the HTTP token service + playground on 127.0.0.1:8000

Errors print one line on stderr and exit with status 2 (`doctor` exits 1 when it finds an error,
`release admit` exits 3 when the candidate is rolled back).
"""

from __future__ import annotations

import argparse
import codecs
import json
import re
import sys
from pathlib import Path
from typing import NoReturn

from tinyllm import __version__
from tinyllm._io import atomic_write_json, atomic_write_text

DEFAULT_TOKENIZER = "gpt2"
EXIT_USAGE = 2
EXIT_FINDINGS = 1


class CliError(ValueError):
    """A problem to report in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(message)


def _read_stdin_text() -> str:
    return sys.stdin.buffer.read().decode("utf-8", "replace")


def _text_argument(text: str | None) -> str:
    """TEXT, or stdin when TEXT is absent or '-'. Stdin is taken exactly, trailing newline included."""
    if text is None or text == "-":
        return _read_stdin_text()
    return text


def _load_tokenizer(name: str):
    from tinyllm.tok import load

    return load(name)


def _special_set(values: list[str] | None):
    if not values:
        return ()
    return "all" if "all" in values else set(values)


def _cmd_encode(args: argparse.Namespace) -> None:
    tok = _load_tokenizer(args.tokenizer)
    text = _text_argument(args.text)
    ids = tok.encode(text, args.add_special, allowed_special=_special_set(args.allow_special))
    if args.json:
        doc: dict = {"ids": ids}
        if args.pieces:
            doc["pieces"] = [_piece_record(tok, i) for i in ids]
        _print(json.dumps(doc, ensure_ascii=False))
    elif args.pieces:
        rows = [_piece_record(tok, i) for i in ids]
        width_id = max([2, *(len(str(r["id"])) for r in rows)])
        width_piece = max([5, *(len(r["piece"]) for r in rows)])
        _print(f"{'id':>{width_id}}  {'piece':<{width_piece}}  bytes")
        for r in rows:
            _print(f"{r['id']:>{width_id}}  {r['piece']:<{width_piece}}  {r['bytes']}")
    else:
        _print(" ".join(map(str, ids)))


def _piece_record(tok, i: int) -> dict:
    token_bytes = getattr(tok, "token_bytes", None)
    raw = token_bytes(i) if callable(token_bytes) else tok.decode([i]).encode("utf-8")
    return {"id": i, "piece": tok.id_to_token(i), "bytes": raw.hex(" ")}


_ID = re.compile(r"-?\d+")


def _parse_ids(words: list[str]) -> list[int]:
    """Ids from arguments or stdin: separated by spaces or commas, optionally inside [ ]."""
    text = " ".join(words) if words else _read_stdin_text()
    tokens = [t for t in re.split(r"[\s,\[\]]+", text) if t]
    ids = []
    for position, token in enumerate(tokens):
        if not _ID.fullmatch(token):
            raise CliError(f"decode: ids[{position}] = {token!r} is not an integer id")
        ids.append(int(token))
    return ids


def _cmd_decode(args: argparse.Namespace) -> None:
    tok = _load_tokenizer(args.tokenizer)
    text = tok.decode(_parse_ids(args.ids), skip_special=args.skip_special)
    _print(json.dumps({"text": text}, ensure_ascii=False) if args.json else text)


def _iter_file_text(path: str, chunk_size: int = 1 << 20):
    """Yield a file's text in chunks, decoding UTF-8 strictly; '-' is stdin."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    stream = sys.stdin.buffer if path == "-" else None
    try:
        handle = stream or open(path, "rb")
    except OSError as e:
        raise CliError(f"train: {path}: {e.strerror}") from None
    offset = 0
    with handle if stream is None else _NoClose(handle) as f:
        while True:
            block = f.read(chunk_size)
            try:
                yield decoder.decode(block, final=not block)
            except UnicodeDecodeError as e:
                raise CliError(f"train: {path}: byte {offset + e.start} is not valid UTF-8") from None
            if not block:
                return
            offset += len(block)


class _NoClose:
    def __init__(self, handle) -> None:
        self.handle = handle

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc) -> None:
        return None


def _cmd_train(args: argparse.Namespace) -> None:
    from tinyllm.tok.char import FILE_NAME, CharTokenizer

    texts = (chunk for path in args.files for chunk in _iter_file_text(path))
    tok = CharTokenizer.train(texts, specials=args.special or ())
    out = Path(args.output)
    tok.save(out)
    _write_config(out / "config.json")
    n_special = len(tok.roles)
    _print(f"wrote {out / FILE_NAME}: {tok.vocab_size} ids ({n_special} special, {tok.vocab_size - n_special} characters)")


def _subword_trainer(args: argparse.Namespace):
    """The tokenizer class and its `train` keyword arguments for `tinyllm train KIND`."""
    if args.kind == "bpe":
        from tinyllm.tok.models.bpe_tokenizer import BPETokenizer

        return BPETokenizer, {"min_frequency": args.min_frequency, "special_tokens": args.special or (),
                              "pattern": args.pattern}
    options = {"unk_token": args.unk_token}
    if args.special:
        options["special_tokens"] = args.special
    if args.kind == "wordpiece":
        from tinyllm.tok.models.wordpiece_tokenizer import WordPieceTokenizer

        return WordPieceTokenizer, {**options, "min_frequency": args.min_frequency, "lowercase": not args.cased,
                                    "limit_alphabet": args.limit_alphabet}
    from tinyllm.tok.models.unigram_tokenizer import UnigramTokenizer

    return UnigramTokenizer, {**options, "character_coverage": args.character_coverage,
                              "max_piece_length": args.max_piece_length, "seed_size": args.seed_size,
                              "shrinking_factor": args.shrinking_factor, "sub_iterations": args.sub_iterations,
                              "m_step": args.m_step}


def _cmd_train_subword(args: argparse.Namespace) -> None:
    """`tinyllm train bpe|wordpiece|unigram`: tokenizer.json, config.json, training_report.json."""
    import hashlib
    import resource
    import time

    show = not args.quiet and sys.stderr.isatty()
    corpus = []
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            raise CliError(f"train: {name}: not a readable file")
        corpus.append(path)

    def announce(k: int, path: Path):
        if show:
            sys.stderr.write(f"\rcounting {k + 1}/{len(corpus)}: {path.name[:40]:40}")
            sys.stderr.flush()
        return path

    cls, options = _subword_trainer(args)
    start = time.perf_counter()
    tok = cls.train((announce(k, p) for k, p in enumerate(corpus)), args.vocab_size, progress=show, **options)
    if show:
        sys.stderr.write("\n")
    seconds = time.perf_counter() - start
    out = Path(args.output)
    tok.save(out)
    _write_config(out / "config.json")
    report = {"model": args.kind, **tok.training_report}
    report["corpus"] = [{"path": str(p), "bytes": p.stat().st_size,
                         "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in corpus]
    report["seconds"] = round(seconds, 3)
    report["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.kind == "bpe":
        report["merges_learned"] = [list(m) for m in tok.model.merges]
    atomic_write_json(out / "training_report.json", report, indent=1)
    _print(f"wrote {out / 'tokenizer.json'}: {report['vocab_size']} ids (stopped: {report['stop_reason']}) "
           f"in {seconds:.1f} s")


def _write_config(path: Path) -> None:
    """Point the model directory at its tokenizer file, keeping any other config keys."""
    config = {}
    if path.is_file():
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CliError(f"train: {path}: existing file is not valid JSON ({e})") from None
        if not isinstance(config, dict):
            raise CliError(f"train: {path}: existing file is not a JSON object")
    config["tl_tokenizer"] = "file"
    atomic_write_json(path, config, indent=2)


def _cmd_reconcile(args: argparse.Namespace) -> None:
    """`tinyllm reconcile BUNDLE.json`: exit 0 with the bundle hash, or 2 naming the check and field."""
    from tinyllm._io import read_json_file
    from tinyllm.artifacts.bundle import reconcile

    bundle = read_json_file(args.bundle)
    reconcile(bundle)
    _print(f"ok {bundle['declared_hashes']['bundle_hash']}")


def _cmd_manifest(args: argparse.Namespace) -> None:
    """`tinyllm manifest MODEL_DIR [-o FILE]`: the tokenizer manifest as JSON."""
    from tinyllm.artifacts.manifest import manifest_text

    text = manifest_text(args.model_dir)
    if args.output:
        atomic_write_text(args.output, text)
        _print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)


def _cmd_doctor(args: argparse.Namespace) -> int:
    """`tinyllm doctor PATH [--json]`: one finding per check; exit 1 when any is an error."""
    from tinyllm.artifacts.doctor import diagnose, findings_json, has_errors, report

    findings = diagnose(args.path)
    sys.stdout.write(findings_json(findings) if args.json else report(findings, args.path))
    return EXIT_FINDINGS if has_errors(findings) else 0


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tinyllm", description="Exact, fast tokenization and the contracts around it.")
    parser.add_argument("--version", action="version", version=f"tinyllm {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, required=True)

    tok_help = f"a model directory, tokenizer file or preset name (default: {DEFAULT_TOKENIZER})"
    enc = sub.add_parser("encode", help="print the ids of a text")
    enc.add_argument("text", nargs="?", help="the text; read from stdin when absent or '-'")
    enc.add_argument("--tokenizer", "-t", default=DEFAULT_TOKENIZER, help=tok_help)
    enc.add_argument("--pieces", action="store_true", help="print a table of id, piece and bytes")
    enc.add_argument("--json", action="store_true", help="print JSON")
    enc.add_argument("--add-special", action="store_true", help="wrap the ids in the tokenizer's template")
    enc.add_argument(
        "--allow-special",
        action="append",
        metavar="TEXT",
        help="match this special token's text as a control token (repeatable; 'all' for every one)",
    )
    enc.set_defaults(run=_cmd_encode)

    dec = sub.add_parser("decode", help="print the text of ids")
    dec.add_argument("ids", nargs="*", help="ids; read from stdin when absent")
    dec.add_argument("--tokenizer", "-t", default=DEFAULT_TOKENIZER, help=tok_help)
    dec.add_argument("--skip-special", action="store_true", help="drop special tokens")
    dec.add_argument("--json", action="store_true", help="print JSON")
    dec.set_defaults(run=_cmd_decode)

    train = sub.add_parser("train", help="train a tokenizer")
    kinds = train.add_subparsers(dest="kind", parser_class=_Parser, required=True)
    char = kinds.add_parser("char", help="a character-level tokenizer")
    char.add_argument("files", nargs="+", help="UTF-8 text files ('-' for stdin)")
    char.add_argument("--output", "-o", required=True, help="the model directory to write")
    char.add_argument(
        "--special", action="append", metavar="TEXT", help="add <bos>, <eos> or <pad> (repeatable)"
    )
    char.set_defaults(run=_cmd_train)
    def subword(kind: str, help: str, vocab_help: str):
        p = kinds.add_parser(kind, help=help)
        p.add_argument("files", nargs="+", help="UTF-8 text files, read line by line")
        p.add_argument("--output", "-o", required=True, help="the model directory to write")
        p.add_argument("--vocab-size", type=int, required=True, help=vocab_help)
        p.add_argument("--special", action="append", metavar="TEXT", help="a special token (repeatable)")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
        p.set_defaults(run=_cmd_train_subword)
        return p

    bpe = subword("bpe", "a byte-level BPE tokenizer (tokenizer.json)", "final size: 256 bytes + merges + specials")
    bpe.add_argument("--min-frequency", type=int, default=2, help="stop when the best pair is rarer (default 2)")
    bpe.add_argument("--pattern", default="gpt2", help="pre-token regex: gpt2, llama3 or a regex")
    wordpiece = subword("wordpiece", "a BERT-style WordPiece tokenizer (tokenizer.json)",
                        "final size: specials + alphabet + merges")
    wordpiece.add_argument("--min-frequency", type=int, default=2, help="never merge a rarer pair (default 2)")
    wordpiece.add_argument("--unk-token", default="[UNK]", help="the unknown token, one of the specials")
    wordpiece.add_argument("--cased", action="store_true", help="keep case (and accents)")
    wordpiece.add_argument("--limit-alphabet", type=int, default=None, help="keep only the N most frequent characters")
    unigram = subword("unigram", "a SentencePiece-style Unigram tokenizer (tokenizer.json)",
                      "final size: specials + pieces")
    unigram.add_argument("--unk-token", default="<unk>", help="the unknown token, one of the specials")
    unigram.add_argument("--character-coverage", type=float, default=0.9995,
                         help="share of character occurrences the required characters cover (default 0.9995)")
    unigram.add_argument("--max-piece-length", type=int, default=16, help="longest piece in characters (default 16)")
    unigram.add_argument("--seed-size", type=int, default=1_000_000, help="seed candidates (default 1000000)")
    unigram.add_argument("--shrinking-factor", type=float, default=0.75, help="kept share per pruning (default 0.75)")
    unigram.add_argument("--sub-iterations", type=int, default=2, help="EM iterations per round (default 2)")
    unigram.add_argument("--m-step", choices=("ml", "digamma"), default="ml",
                         help="M-step: maximum likelihood p = c / sum c (default) or sentencepiece's digamma update")

    conv = sub.add_parser("convert", help="write a .tiktoken or SentencePiece .model file as a Hugging Face "
                                          "model directory (tokenizer.json, tokenizer_config.json)")
    conv.add_argument("input", help="a .tiktoken file, a SentencePiece .model, a tokenizer.json or a preset name")
    conv.add_argument("--output", "-o", required=True, help="the model directory to write")
    conv.add_argument("--pattern", help=".tiktoken only: gpt2, r50k, p50k, cl100k, o200k or a regex "
                                        "(implied by the file names cl100k_base, o200k_base, ...)")
    conv.add_argument("--special-tokens", metavar="JSON",
                      help='.tiktoken only: the special tokens as a JSON object {"<|endoftext|>": 100257, ...}')
    conv.set_defaults(run=_cmd_convert)

    rec = sub.add_parser("reconcile", help="check that a bundle's tokenizer, template, dataset and checkpoint agree")
    rec.add_argument("bundle", help="the bundle JSON file")
    rec.set_defaults(run=_cmd_reconcile)

    man = sub.add_parser("manifest", help="print the tokenizer manifest of a model directory")
    man.add_argument("model_dir", help="the model directory")
    man.add_argument("--output", "-o", help="write the manifest to this file (atomically) instead of stdout")
    man.set_defaults(run=_cmd_manifest)

    doc = sub.add_parser("doctor", help="check a model directory or bundle for tokenizer/model mismatches")
    doc.add_argument("path", help="a model directory, a bundle JSON file or a preset name")
    doc.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    doc.set_defaults(run=_cmd_doctor)

    from tinyllm.eval.command import add_parsers as add_eval_parsers

    add_eval_parsers(sub, tok_help)

    from tinyllm.migrate.command import add_parsers as add_migrate_parsers
    from tinyllm.migrate.release_command import add_parsers as add_release_parsers

    add_migrate_parsers(sub)
    add_release_parsers(sub)

    from tinyllm.corpus.command import add_parsers as add_corpus_parsers

    add_corpus_parsers(sub, tok_help)

    from tinyllm.serve.command import add_parsers as add_serve_parsers

    add_serve_parsers(sub)

    gold = sub.add_parser("golden", help="record golden cases of a tokenizer, or check it against them")
    verbs = gold.add_subparsers(dest="golden_command", metavar="{make,verify}", parser_class=_Parser, required=True)
    make = verbs.add_parser("make", help="encode the cases and write one record a line (JSON lines)")
    make.add_argument("tokenizer", metavar="TOK", help="a model directory, tokenizer file or preset name")
    make.add_argument("texts", metavar="TEXTS", nargs="?",
                      help="cases: one text a line, or JSON lines of {\"text\": ...} ('-' for stdin); "
                           "the shipped default set when absent")
    make.add_argument("--output", "-o", help="the golden file to write (stdout when absent)")
    verify = verbs.add_parser("verify", help="recompute every record; exit 2 with the first mismatch")
    verify.add_argument("tokenizer", metavar="TOK", help="a model directory, tokenizer file or preset name")
    verify.add_argument("golden", metavar="GOLDEN", help="a golden JSON-lines file from `golden make`")
    gold.set_defaults(run=_cmd_golden)
    return parser


def _cmd_convert(args) -> None:
    from tinyllm.tok.convert import convert

    specials = None
    if args.special_tokens is not None:
        try:
            specials = json.loads(args.special_tokens)
        except json.JSONDecodeError as e:
            raise CliError(f"--special-tokens: not JSON ({e.msg} at character {e.pos}); "
                           'expected an object like {"<|endoftext|>": 100257}') from None
        if not isinstance(specials, dict):
            raise CliError(f"--special-tokens: found {type(specials).__name__}, expected a JSON object of text to id")
    tok = convert(args.input, args.output, pattern=args.pattern, special_tokens=specials)
    print(f"wrote {Path(args.output) / 'tokenizer.json'}: {type(tok).__name__}, vocab {tok.vocab_size}, "
          f"semantic hash {tok.semantic_hash}")


def _cmd_golden(args) -> None:
    """`tinyllm golden make|verify` (imported only when used: the artifacts layer is not start-up work)."""
    from tinyllm.artifacts import golden

    (golden.cmd_make if args.golden_command == "make" else golden.cmd_verify)(args)


def main(argv: list[str] | None = None) -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        status = args.run(args)
    except (ValueError, OSError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        sys.stderr.write(f"tinyllm: error: {message}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - e.g. `tinyllm encode ... | head`
        return 0
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
