"""The engine's tables in 2 MiB pages against 4 KiB pages, in one process: by how much the time moves.

    python benches/bench_huge_pages.py --tokenizer llama3 --corpus en --rounds 5

Each round loads the tokenizer twice, once with `TINYLLM_HUGE_PAGES=0` in the environment (every
table in ordinary pages) and once without, warms both word caches on the first half of the
documents (`unseen`) or on all of them (`again`), then times the second half, warm-up and timing
in the alternating turns of `bench_encode.paired_seconds` (whose docstring says why the warm-up
too). Both live in the same process, as a tokenizer lives beside other work, so each turn starts
with the other's data in the CPU's caches and TLB. The figure is the 4 KiB time over the 2 MiB
time (above 1: the huge pages are faster), the geometric mean over the rounds. The rounds also
alternate which one is made first, and the median of each order is printed: equal medians say
no order effect is left.

Linux only: elsewhere both tokenizers get ordinary memory. Ids are not compared here (the tests
do: tests/tok/test_huge_pages.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def round_ratio(name: str, warm: list[str], timed: list[str], order: tuple[str, str]) -> float:
    from bench_encode import paired_seconds, tokenizer_json
    from tinyllm.tok import load

    toks = {}
    for mode in order:
        os.environ["TINYLLM_HUGE_PAGES"] = mode  # read as each table is made: the load, the first encode
        toks[mode] = load(tokenizer_json(name))
        toks[mode].encode(warm[0])  # the word cache's lines are made now, under this setting
    os.environ.pop("TINYLLM_HUGE_PAGES")
    seconds = paired_seconds({mode: tok.encode for mode, tok in toks.items()}, warm, timed)
    return seconds["0"] / seconds["1"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", action="append", help="a bench_encode.py tokenizer name (repeatable)")
    ap.add_argument("--corpus", action="append", choices=("en", "code", "multi"), help="repeatable")
    ap.add_argument("--stage", default="unseen", choices=("unseen", "again"))
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each order")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before tests.support imports numpy
    sys.path.insert(0, str(HERE))
    from bench_encode import documents, prepare

    names = args.tokenizer or ["gpt2"]
    prepare(names)
    print("| tokenizer | corpus | stage | 4 KiB / 2 MiB time (geometric mean) | 4 KiB made first / second (medians) |")
    print("| --- | --- | --- | ---: | --- |")
    for name in names:
        for corpus in args.corpus or ["en"]:
            docs = documents(corpus)
            half = len(docs) // 2
            warm, timed = docs[:half], docs[half:]
            if args.stage == "again":
                warm = docs
            orders = [("0", "1") if k % 2 == 0 else ("1", "0") for k in range(2 * args.rounds)]
            ratios = [round_ratio(name, warm, timed, order) for order in orders]
            first, second = ratios[0::2], ratios[1::2]
            print(f"| {name} | {corpus} | {args.stage} | {statistics.geometric_mean(ratios):.3f} | "
                  f"{statistics.median(first):.3f} / {statistics.median(second):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
