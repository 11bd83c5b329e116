"""Single-thread encode speed file by file of the multilingual corpus: tinyllm against one peer.

    python benches/bench_languages.py                                   # o200k against tiktoken
    python benches/bench_languages.py --tokenizer gpt2 --peer fastokens --repeat 5

`bench_encode.py` times the multilingual corpus as one block; this splits its timed half by file
(one language per file of `leipzig-sentences`) to show which languages set the pace. For each file
and library, a fresh instance is warmed on the corpus's warm half (the first half of its
documents, as in `bench_encode.py`) and then timed on the file's second half; the two libraries
take turns file by file, and each figure is the best of --repeat. A file whose second half lies in
the warm half is marked `warm`: its pieces are cached, so it is not unseen text. Ratio = tinyllm /
peer; `same ids` is the share of the file's timed documents on which the two give the same ids.

One thread for both (`bench_encode.ONE_THREAD`, set before either library starts its pool).
Needs `pip install '.[bench]'`; without ../shared/data it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_encode  # noqa: E402


def file_documents(path: Path) -> list[str]:
    """The second half of a file's ~2,000-character documents."""
    with open(path, encoding="utf-8", newline="") as f:
        docs = bench_encode.group_lines(f.read().splitlines(keepends=True), 2000)
    return docs[len(docs) // 2:]


def timed_run(factory, warm: list[str], timed: list[str]) -> tuple[float, list]:
    """(seconds, ids) of a fresh instance's single calls over `timed`, after warming it on
    `warm` (`bench_encode.timed_calls`, results kept for the same-ids column)."""
    encode, _ = factory()
    return bench_encode.timed_calls(encode, warm, timed, keep=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", default="gpt-4o-o200k")
    ap.add_argument("--peer", default="tiktoken")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    corpus = bench_encode.SHARED / "corpora" / "multi"
    if not corpus.is_dir():
        print(f"{corpus} not found: nothing to measure")
        return
    os.environ.update(bench_encode.ONE_THREAD)
    bench_encode.prepare([args.tokenizer])
    libs = bench_encode.load_libraries(args.tokenizer)
    if args.peer not in libs:
        sys.exit(f"--peer: found {args.peer!r}; expected one of {sorted(set(libs) - {'tinyllm'})}")
    names = ["tinyllm", args.peer]
    docs = bench_encode.documents("multi")
    warm = docs[: len(docs) // 2]
    warm_text = "".join(warm)
    print(f"python benches/bench_languages.py --tokenizer {args.tokenizer} --peer {args.peer} "
          f"--repeat {args.repeat}  (single thread, best of {args.repeat})\n")
    print(f"| file | tinyllm MB/s | {args.peer} MB/s | ratio | same ids | |")
    print("|---|---:|---:|---:|---:|---|")
    for path in sorted(corpus.rglob("*.txt")):
        timed = file_documents(path)
        if not timed:
            continue
        mb = sum(len(d.encode("utf-8")) for d in timed) / 1e6
        best = {name: float("inf") for name in names}
        ids = {}
        for k in range(args.repeat):
            for name in bench_encode.rotated(names, k):
                seconds, ids[name] = timed_run(libs[name], warm, timed)
                best[name] = min(best[name], seconds)
        same = sum(a == b for a, b in zip(ids["tinyllm"], ids[args.peer])) / len(timed)
        ours, theirs = mb / best["tinyllm"], mb / best[args.peer]
        note = "warm" if timed[0] in warm_text and timed[-1] in warm_text else ""
        print(f"| {path.stem} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x | {same:.2%} | {note} |")


if __name__ == "__main__":
    main()
