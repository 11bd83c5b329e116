"""Two builds of tinyllm against each other, in time: which one encodes faster, and by how much.

    python benches/bench_builds.py --tokenizer llama3 --corpus en --stage again /tmp/old /tmp/new

Each argument after the options is a directory holding a `tinyllm` package (a copy of
`python/tinyllm` with the `_core` built at one commit); the first is the baseline. The builds take
turns, each in a fresh process with that directory first on `PYTHONPATH`, for `--rounds` rounds.
In a process the tokenizer warms its cache on the first half of the documents (`unseen`), on
both halves (`again`: the timed pieces' cache lines were just read), or on the second half and
then the first (`cached`: every timed piece is cached, its line as long untouched as the
first half allows), and then times the second half. `unseen` minus `cached` is what the pieces
the cache lacks cost: their merges and their inserts. This is repeated `--passes` times, the
cache cleared before each (`BpeEngine.clear_cache`), and the process reports its fastest pass.
A round's ratio is the baseline's time over the build's, so above 1 is faster; the median over
the rounds is the figure (these machines have slow phases that last minutes, so a build's time is
only compared with the baseline's in the same round). Single thread, or with `--batch` one
`encode_batch` of the warm half and one of the timed half on every core. `same ids`: after its
passes, each process encodes the timed half once more the same way, untimed, and the digest of
all those ids must equal the baseline's in every round (an experiment that changes the ids is
not a speed-up; `bench_encode.py` and the tests compare with the reference libraries).

`--evict MIB` writes a byte of every 64 over that many MiB before each turn of 100 timed
documents, outside the timing: what `bench_encode.py`'s libraries in turns do to each other's
tables in the CPU caches (single thread only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(name: str, corpus: str, stage: str, docs: int, passes: int, batch: bool = False,
          evict: int = 0) -> tuple[float, str]:
    """The fastest of `passes` timed passes, in seconds, and the digest of the timed half's ids
    (run inside a build's process)."""
    sys.path.insert(0, str(HERE))
    from bench_batch_ceiling import digest
    from bench_encode import CHUNK_DOCS, fresh, tokenizer_json
    from bench_instructions import halves
    from tinyllm.tok import load

    tok = load(tokenizer_json(name))
    engine = tok.fast_engine()[0]
    warm, timed = halves(corpus, docs)
    def encode_all(texts: list[str]) -> None:
        if batch:
            tok.encode_batch(texts)
        else:
            for d in texts:
                tok.encode(d)

    junk = bytearray(evict << 20)
    fills = [bytes([k]) * len(junk[::64]) for k in (1, 2)]

    def timed_seconds(texts: list[str]) -> float:
        if not evict:
            start = time.perf_counter()
            encode_all(texts)
            return time.perf_counter() - start
        seconds = 0.0
        for k, at in enumerate(range(0, len(texts), CHUNK_DOCS)):
            junk[::64] = fills[k % 2]  # every line of junk written: the caches hold junk
            start = time.perf_counter()
            encode_all(texts[at:at + CHUNK_DOCS])
            seconds += time.perf_counter() - start
        return seconds

    best = float("inf")
    for _ in range(passes):
        engine.clear_cache()
        encode_all({"unseen": warm, "again": warm + timed, "cached": timed + warm}[stage])
        texts = fresh(timed)  # no UTF-8 copy left in the objects by an earlier pass
        best = min(best, timed_seconds(texts))
    return best, digest(tok.encode_batch(timed) if batch else [tok.encode(d) for d in timed])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="*", help="directories holding a tinyllm package; the first is the baseline")
    ap.add_argument("--tokenizer", default="gpt2")
    ap.add_argument("--corpus", default="en", choices=("en", "code", "multi"))
    ap.add_argument("--stage", default="again", choices=("unseen", "again", "cached"))
    ap.add_argument("--docs", type=int, default=4000, help="documents of the corpus (half timed)")
    ap.add_argument("--passes", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--batch", action="store_true", help="time encode_batch on every core instead")
    ap.add_argument("--evict", type=int, default=0, metavar="MIB",
                    help="write over this many MiB before each turn of 100 timed documents (single thread)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(*child(args.tokenizer, args.corpus, args.stage, args.docs, args.passes, args.batch, args.evict))
        return 0
    if len(args.builds) < 2:
        ap.error("give at least two build directories")
    if args.evict < 0 or (args.evict and args.batch):
        ap.error(f"--evict: {args.evict} MiB; expected a size >= 0, and no --batch")
    for build in args.builds:
        if not (Path(build) / "tinyllm").is_dir():
            ap.error(f"builds: {build!r} holds no tinyllm package")
    from bench_encode import CHUNK_DOCS, ONE_THREAD, prepare

    prepare([args.tokenizer])
    times: dict[str, list[float]] = {b: [] for b in args.builds}
    digests: dict[str, set[str]] = {b: set() for b in args.builds}
    cmd = [sys.executable, __file__, "--child", "--tokenizer", args.tokenizer, "--corpus", args.corpus,
           "--stage", args.stage, "--docs", str(args.docs), "--passes", str(args.passes),
           "--evict", str(args.evict)] + ["--batch"] * args.batch
    threads = {} if args.batch else ONE_THREAD
    for _ in range(args.rounds):
        for build in args.builds:
            env = dict(os.environ, PYTHONPATH=build, **threads)
            run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE.parent)
            if run.returncode != 0:
                raise RuntimeError(f"{build}: the timed process failed:\n{run.stderr[-2000:]}")
            seconds, ids = run.stdout.split()[-2:]
            times[build].append(float(seconds))
            digests[build].add(ids)
    base = args.builds[0]
    evicted = f", {args.evict} MiB written before each turn of {CHUNK_DOCS}" if args.evict else ""
    print(f"{args.tokenizer}, {args.corpus}, {args.stage}{', batch' * args.batch}{evicted}: {args.rounds} rounds, fastest "
          f"of {args.passes} passes in each; speed = baseline time / build time")
    print("| build | median ms | speed vs baseline: median | min | max | same ids |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for build in args.builds:
        ratios = [b / t for b, t in zip(times[base], times[build])]
        print(f"| {build} | {1000 * statistics.median(times[build]):.1f} | {statistics.median(ratios):.3f} | "
              f"{min(ratios):.3f} | {max(ratios):.3f} | {'yes' if digests[build] == digests[base] else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
