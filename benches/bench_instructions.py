"""Encode cost in instructions, not seconds: tinyllm against its peers under callgrind.

    python benches/bench_instructions.py                                  # GPT-2, English
    python benches/bench_instructions.py --tokenizer qwen2 --corpus multi --lib tinyllm --lib fastokens

These machines have slow phases in which the same binary runs at a third of its speed, and no
hardware counters. Valgrind's callgrind counts the instructions a process executes, whatever the
machine is doing, so two builds or two libraries can be compared on one run each. Instructions
are not time (a cache miss costs one instruction and a hundred cycles), so this complements
`bench_encode.py`'s paired timings; it does not replace them.

Each library runs in two child processes under callgrind, on the same documents as
`bench_encode.py` (a slice of --docs of them, warm half then timed half): one loads, encodes the
warm half and then counts the timed half (unseen); the other also encodes the timed half once
first and counts it AGAIN times (cached), each time on new `str` objects. Only the counted work
is collected: it runs inside a C call (`qsort` of two items, whose comparison is a Python
callback) and callgrind is told to collect inside `qsort` alone, so loading, start-up and their
run-to-run variation (hash seeds, a few million instructions) are not in the figures, and a rerun
gives the same counts to within about 0.1%. `exact` is the share of timed documents whose ids
equal Hugging Face's (computed without valgrind). A peer that is not installed or cannot read the
file is listed as such. Needs `valgrind` (Debian package) and `pip install '.[bench]'`.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench_encode import ALL, ONE_THREAD, SHARED, documents, fresh, load_libraries, prepare, try_load

AGAIN = 3


def halves(corpus: str, count: int) -> tuple[list[str], list[str]]:
    docs = documents(corpus)[:count]
    return docs[: len(docs) // 2], docs[len(docs) // 2:]


def counted(work) -> None:
    """Run `work` inside libc's `qsort` (the only span callgrind collects, see the docstring)."""
    libc = ctypes.CDLL(None)
    compare_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    done = []

    def compare(a, b):
        if not done:
            work()
            done.append(True)
        return 0

    items = (ctypes.c_int * 2)(1, 2)
    libc.qsort(items, 2, ctypes.sizeof(ctypes.c_int), compare_type(compare))
    if not done:
        raise RuntimeError("qsort did not call the comparison: nothing was counted")


def child(lib: str, name: str, corpus: str, stage: str, count: int) -> None:
    """The work one callgrind run measures (see the module docstring)."""
    encode, _ = load_libraries(name)[lib]()
    warm, timed = halves(corpus, count)
    for d in warm + (timed if stage == "again" else []):
        encode(d)

    # Each pass over the timed half gets new `str` objects (bench_encode.fresh): no pass finds
    # the UTF-8 copy an earlier one left in CPython's objects.
    passes = [fresh(timed) for _ in range(AGAIN if stage == "again" else 1)]

    def work():
        for texts in passes:
            for d in texts:
                encode(d)

    counted(work)


def instructions(lib: str, name: str, corpus: str, stage: str, count: int) -> int:
    """Instructions callgrind counted inside `counted` in one child run."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=qsort*",
               f"--callgrind-out-file={tmp}/out",
               sys.executable, __file__, "--child", lib, name, corpus, stage, str(count)]
        env = dict(os.environ, **ONE_THREAD)
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or not found:
        raise RuntimeError(f"{lib} {stage}: callgrind run failed:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def exactness(libs: list[str], name: str, timed: list[str]) -> dict[str, float | str]:
    """Share of `timed` documents whose ids equal Hugging Face's, per library (or why it cannot run)."""
    factories = load_libraries(name)
    reference, _ = factories["hf-tokenizers"]()
    expected = [reference(d) for d in timed]
    shares: dict[str, float | str] = {}
    for lib in libs:
        if lib not in factories:
            shares[lib] = f"not a library for {name} (known: {', '.join(factories)})"
            continue
        got, error = try_load(factories[lib])
        if got is None:
            shares[lib] = error
            continue
        encode, _ = got
        shares[lib] = sum(encode(d) == e for d, e in zip(timed, expected)) / len(timed)
    return shares


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", default="gpt2", choices=ALL)
    ap.add_argument("--corpus", default="en", choices=("en", "code", "multi"))
    ap.add_argument("--lib", action="append", help="tinyllm, fastokens, hf-tokenizers, tiktoken, ... "
                    "(repeatable; default tinyllm and fastokens)")
    ap.add_argument("--docs", type=int, default=300, help="documents of ~2,000 characters (half timed)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        lib, name, corpus, stage, count = args.child
        child(lib, name, corpus, stage, int(count))
        return 0
    if not (SHARED / "corpora").is_dir():
        print(f"no shared data at {SHARED}: nothing to measure")
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)")
        return 1
    prepare([args.tokenizer])
    libs = args.lib or ["tinyllm", "fastokens"]
    _, timed = halves(args.corpus, args.docs)
    nbytes = sum(len(d.encode("utf-8")) for d in timed)
    exact = exactness(libs, args.tokenizer, timed)
    print(f"{args.tokenizer}, {args.corpus}: {len(timed)} timed documents, {nbytes:,} bytes; "
          "instructions per byte of the timed half (callgrind, one thread)")
    print("| library | unseen | again | tinyllm / library: unseen | again | exact |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    per_byte = {}
    for lib in libs:
        if isinstance(exact[lib], str):
            print(f"| {lib} | - | - | - | - | {exact[lib]} |")
            continue
        unseen = instructions(lib, args.tokenizer, args.corpus, "unseen", args.docs)
        again = instructions(lib, args.tokenizer, args.corpus, "again", args.docs)
        per_byte[lib] = (unseen / nbytes, again / AGAIN / nbytes)
    ours = per_byte.get("tinyllm")
    for lib, (unseen, again) in per_byte.items():
        ratios = (f"{ours[0] / unseen:.2f} | {ours[1] / again:.2f}" if ours else "- | -")
        print(f"| {lib} | {unseen:.1f} | {again:.1f} | {ratios} | {100 * exact[lib]:.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
