"""`tinyllm eval` with two tokenizers against just encoding the same text with both.

    python benches/bench_eval.py                    # 50 MB, gpt2 and o200k
    python benches/bench_eval.py --mb 10 --repeat 3

The records are the shared corpora cut into documents of whole lines of at least 2,000
characters (one group per file), repeated with fresh record ids until there are --mb megabytes
of UTF-8. Timed, each the median of --repeat runs with fresh `Record`s (so word counts are not
carried over from a previous run):

* `encode x2`: `encode_batch_flat` of all texts with each tokenizer, what evaluating cannot avoid;
* `evaluate x2`: `evaluate(tok, records)` for each tokenizer, the work of
  `tinyllm eval TOK1 TOK2 --data ...` after reading the files (word counts once, shared).

`ratio` is evaluate / encode; the issue's target is at most 2.0. `exact` checks that the report's
token total equals the number of ids `encode_batch_flat` gave.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYLLM_SHARED_DATA") or ROOT.parent / "shared" / "data")
sys.path.insert(0, str(ROOT))


def texts_of(megabytes: float) -> list[tuple[str, str]]:
    from tests.support.documents import documents

    base = []
    for path in sorted((SHARED / "corpora").glob("*/*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        base += [(str(path), doc) for doc in documents(lines)]
    out, size, target = [], 0, int(megabytes * 1e6)
    while size < target:
        for group, doc in base:
            out.append((group, doc))
            size += len(doc.encode("utf-8"))
            if size >= target:
                break
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizer", action="append", help="default: gpt2 and o200k")
    args = parser.parse_args(argv)
    if not (SHARED / "corpora").is_dir():
        print(f"shared data missing: {SHARED / 'corpora'} (set TINYLLM_SHARED_DATA); nothing measured")
        return 0
    from tinyllm.eval import Record, evaluate
    from tinyllm.tok import load

    names = args.tokenizer or ["gpt2", "o200k"]
    toks = [load(name) for name in names]
    docs = texts_of(args.mb)
    texts = [d for _, d in docs]
    size = sum(len(t.encode("utf-8")) for t in texts)

    def fresh():
        return [Record(f"r{k}", group, "validation", text) for k, (group, text) in enumerate(docs)]

    encode_times, eval_times, exact = [], [], True
    for _ in range(args.repeat):
        start = time.perf_counter()
        counts = [len(tok.encode_batch_flat(texts)[0]) for tok in toks]
        encode_times.append(time.perf_counter() - start)
        records = fresh()
        start = time.perf_counter()
        reports = [evaluate(tok, records) for tok in toks]
        eval_times.append(time.perf_counter() - start)
        exact &= [r.total_tokens for r in reports] == counts
    encode, ev = statistics.median(encode_times), statistics.median(eval_times)
    print(f"{len(texts)} documents, {size / 1e6:.1f} MB, tokenizers {', '.join(names)}; medians of {args.repeat}\n")
    print(f"{'encode x' + str(len(toks)):<14} {encode:>8.2f} s")
    print(f"{'evaluate x' + str(len(toks)):<14} {ev:>8.2f} s")
    print(f"{'ratio':<14} {ev / encode:>8.2f}    exact {exact}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
