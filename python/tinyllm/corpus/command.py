"""`tinyllm encode-dataset`, `tinyllm verify-dataset` and `tinyllm corpus ...` (the CLI registers
them; the work is in the corpus modules).

    tinyllm encode-dataset data/*.jsonl -t gpt2 -o out/ [--workers 2] [--engine ray --address auto]
    tinyllm verify-dataset out/ -t gpt2
    tinyllm corpus stats data/*.jsonl -t gpt2 [--source-field source]
    tinyllm corpus dedup data/*.jsonl -o kept.jsonl --log removed.jsonl [--near 0.8]
    tinyllm corpus split data/*.jsonl -o split.jsonl --fractions fit=0.8,validation=0.1,test=0.1 --seed 0
"""

from __future__ import annotations

import json
import sys


def _input_options(parser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help=".jsonl, .parquet or text files (one document a line)")
    parser.add_argument("--text-field", default="text", help="the text field of JSON lines / Parquet (default: text)")
    parser.add_argument("--id-field", help="the document id field (default: FILE:LINE)")
    parser.add_argument("--source-field", help="the source field (default: the file's stem)")
    parser.add_argument("--doc-per-file", action="store_true", help="a text file is one document, not one a line")


def _documents(args):
    from tinyllm.corpus.inputs import read_documents

    return read_documents(args.inputs, text_field=args.text_field, id_field=args.id_field,
                          source_field=args.source_field, doc_per_file=args.doc_per_file)


def _tokenizer(name: str):
    from tinyllm.tok.load import load

    return load(name)


def cmd_encode_dataset(args) -> int:
    from tinyllm.corpus.dataset_writer import encode_dataset

    tok = _tokenizer(args.tokenizer)
    manifest = encode_dataset(_documents(args), tok, args.output, policy=args.boundary, max_length=args.max_length,
                              shard_bytes=int(args.shard_mb * 1_000_000), shard_docs=args.shard_docs,
                              workers=args.workers, engine=args.engine, ray_address=args.address,
                              tokenizer_source=args.tokenizer, progress=not args.quiet)
    if args.json:
        sys.stdout.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    else:
        print(f"wrote {args.output}: {manifest['records']:,} documents, {manifest['tokens']:,} tokens in "
              f"{len(manifest['shards'])} shards ({manifest['settings']['dtype']}, largest id "
              f"{manifest['max_token_id']}, {manifest['truncated_records']} truncated)\n"
              f"tokenizer {manifest['tokenizer']['semantic_hash']}\ncorpus    {manifest['corpus_hash']}")
    return 0


def cmd_verify_dataset(args) -> int:
    from tinyllm.corpus.verify import verify_dataset

    manifest = verify_dataset(args.dataset, _tokenizer(args.tokenizer))
    print(f"ok {args.dataset}: {manifest['records']:,} documents, {manifest['tokens']:,} tokens, "
          f"{len(manifest['shards'])} shards; tokenizer {manifest['tokenizer']['semantic_hash']}")
    return 0


def cmd_stats(args) -> int:
    from tinyllm.corpus.mix import source_stats

    stats = source_stats(_documents(args), _tokenizer(args.tokenizer))
    sys.stdout.write(json.dumps(stats.to_json(), indent=1) + "\n" if args.json else stats.table() + "\n")
    return 0


def _fractions(text: str) -> dict:
    out = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--fractions: found {part!r}; expected NAME=NUMBER, e.g. fit=0.8") from None
    return out


def cmd_split(args) -> int:
    from tinyllm.corpus.splits import write_split_manifest

    docs = list(_documents(args))
    groups = {}
    if args.group_field:
        from tinyllm.corpus.inputs import read_group_ids

        groups = read_group_ids(args.inputs, args.group_field, args.id_field)
    records = [(d.document_id, groups.get(d.document_id, d.document_id), d.text) for d in docs]
    corpus = {"inputs": [str(p) for p in args.inputs], "text_field": args.text_field, "id_field": args.id_field,
              "group_field": args.group_field}
    bound = write_split_manifest(args.output, records, _fractions(args.fractions), args.seed, corpus)
    print(f"wrote {args.output}: {len(records):,} records; corpus hash {bound}")
    return 0


def cmd_dedup(args) -> int:
    from tinyllm._io import atomic_write_text
    from tinyllm.corpus.dedup import NearDup, dedup, write_removal_log

    docs = list(_documents(args))
    near = None if args.near is None else NearDup(threshold=args.near, num_perm=args.num_perm, seed=args.seed,
                                                   k=args.shingle_words)
    result = dedup(docs, canonicalize=args.canonicalize, near=near)
    kept = set(result.kept)
    lines = [json.dumps({"id": d.document_id, "text": d.text, "source": d.source_id}, ensure_ascii=False)
             for d in docs if d.document_id in kept]
    atomic_write_text(args.output, "".join(line + "\n" for line in lines))
    if args.log:
        write_removal_log(args.log, result)
    exact = sum(r.kind == "exact" for r in result.removed)
    print(f"kept {len(result.kept):,} of {len(docs):,} documents in {args.output}; removed {exact:,} exact and "
          f"{len(result.removed) - exact:,} near duplicates" + (f" (log: {args.log})" if args.log else ""))
    return 0


def add_parsers(sub, tok_help: str) -> None:
    """Register `encode-dataset` and `verify-dataset` (imports nothing of the corpus layer)."""
    enc = sub.add_parser("encode-dataset", help="encode documents into sharded .npy files bound to the tokenizer")
    _input_options(enc)
    enc.add_argument("--tokenizer", "-t", required=True, help=tok_help)
    enc.add_argument("--output", "-o", required=True, help="the dataset directory (created; resumed if present)")
    enc.add_argument("--boundary", default="eos", choices=("none", "eos", "bos", "bos_eos"),
                     help="boundary ids around each document (default: eos)")
    enc.add_argument("--max-length", type=int, help="cut each document to this many ids (boundary ids kept)")
    enc.add_argument("--shard-mb", type=float, default=16.0, help="text per shard, in MB (default: 16)")
    enc.add_argument("--shard-docs", type=int, default=1 << 20, help="documents per shard at most")
    enc.add_argument("--workers", type=int, default=2,
                     help="shards encoded at once (default: 2; each shard's encoding also uses every core)")
    enc.add_argument("--engine", choices=("local", "ray"), default="local", help="local threads or Ray Data")
    enc.add_argument("--address", help="with --engine ray: the cluster address (default: a local Ray)")
    enc.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    enc.add_argument("--json", action="store_true", help="print the manifest")
    enc.set_defaults(run=cmd_encode_dataset)

    ver = sub.add_parser("verify-dataset", help="re-hash a dataset's shards, check its ids and tokenizer binding")
    ver.add_argument("dataset", metavar="DIR", help="a directory written by encode-dataset")
    ver.add_argument("--tokenizer", "-t", required=True, help=tok_help)
    ver.set_defaults(run=cmd_verify_dataset)

    corpus = sub.add_parser("corpus", help="corpus preparation: per-source statistics, group-isolated splits")
    verbs = corpus.add_subparsers(dest="corpus_command", required=True)
    stats = verbs.add_parser("stats", help="documents and tokens per source, and their shares")
    _input_options(stats)
    stats.add_argument("--tokenizer", "-t", required=True, help=tok_help)
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(run=cmd_stats)
    split = verbs.add_parser("split", help="assign whole groups to fit / validation / test; write a split manifest")
    _input_options(split)
    split.add_argument("--output", "-o", required=True, help="the split manifest (JSON lines) to write")
    split.add_argument("--fractions", default="fit=0.8,validation=0.1,test=0.1", help="NAME=FRACTION,...")
    split.add_argument("--seed", type=int, default=0, help="the split seed (default: 0)")
    split.add_argument("--group-field", help="JSON field of the group id (default: each document is its own group)")
    split.set_defaults(run=cmd_split)
    dd = verbs.add_parser("dedup", help="remove exact and near duplicates, keeping the first copy in input order")
    _input_options(dd)
    dd.add_argument("--output", "-o", required=True, help="the kept documents, as JSON lines (id, text, source)")
    dd.add_argument("--log", help="the removal log: one JSON line per removed document and what it duplicated")
    dd.add_argument("--canonicalize", default="none", choices=("none", "nfc", "whitespace", "casefold"),
                    help="what exact duplicates ignore (default: none)")
    dd.add_argument("--near", type=float, metavar="J", help="also remove near duplicates with Jaccard >= J (e.g. 0.8)")
    dd.add_argument("--num-perm", type=int, default=128, help="MinHash permutations (default: 128)")
    dd.add_argument("--shingle-words", type=int, default=2, help="words per shingle (default: 2)")
    dd.add_argument("--seed", type=int, default=0, help="MinHash seed (default: 0)")
    dd.set_defaults(run=cmd_dedup)
