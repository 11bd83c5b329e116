"""How much of the machine's cores a batch gets: each library's batch against one process per core
that each encode alone, all at the same moment.

    python benches/bench_batch_ceiling.py --tokenizer llama3 --tokenizer gpt2
    python benches/bench_batch_ceiling.py --tokenizer gpt-4o-o200k --corpus en --rounds 5

A batch on N cores cannot beat N processes that each encode with one thread, at once, on N
copies of the same text: those share nothing but the machine. That is this machine's ceiling for
the batch (`procs / single`), and on the hosts these benchmarks run on it is below N: two
single-thread processes released together by a barrier each took 12-22% more CPU per timed run
than one alone (Llama-3-style English), where the same two unsynchronized (each timed run beside
the other's loading and warming) took none more. Most of a batch's extra CPU per MB over single
calls is then the machine's (two busy cores slowing each other), not its threads'.
`batch / procs` says how much of that ceiling the batch reaches.

For every library with a batch call and each corpus: a fresh instance per repeat, warmed on the
first half of the documents (as `bench_encode.py` does) and timed on new `str` objects of the
other half, which it has not seen.

- `single`: one process, one thread (RAYON_NUM_THREADS=1), `[encode(t) for t in texts]`;
- `procs`: one such process per core, each on the full timed half, released together by a
  barrier before every timed run; MB/s is the sum of theirs (each over its own time, so that
  one process woken late by the barrier does not count as slow);
- `batch`: one process, every core, one batch call;
- `flat` (tinyllm only): the same with `encode_batch_flat`, which makes no Python list: every
  `encode_batch` list is made by the one thread that holds the GIL, work the processes share out.
- `cores` (the first library only, printed under the table): single calls in a process pinned
  to each core in turn. The cores of these hosts are not always alike: for stretches of minutes
  one of the two ran the same single-thread work 1.5x slower than the other (GPT-2 code, a
  pinned loop: 7.3 ms on one, 11.3 on the other), and then no batch can reach 1.8x a single
  thread on the fast core.

The modes take turns, round by round, in a rotating order (a slow phase of the machine falls on
each alike). `exact`: every run's ids equal those of the first library's single calls (tinyllm's
unless --lib leaves it out; compared as a digest of all ids).

Needs `pip install '.[bench]'`; peers that are missing or cannot load the file are skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import statistics
import sys
import time
from array import array
from pathlib import Path
from queue import Empty

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_encode  # noqa: E402  (the corpora, the tokenizer files and the peers' loaders)

PEERS = ("tinyllm", "fastokens", "hf-tokenizers", "tiktoken")


def digest(results) -> str:
    """SHA-256 of every id of every text, in order (texts delimited by their lengths)."""
    h = hashlib.sha256()
    for ids in results:
        h.update(len(ids).to_bytes(4, "little"))
        h.update(array("I", ids).tobytes())
    return h.hexdigest()


def worker(lib: str, name: str, corpus: str, mode: str, repeat: int, barrier, queue) -> None:
    """Time `repeat` runs of one library in one mode, after one untimed run (a new process's
    first run pays for its code's and allocator's first use); put (walls, digest of the last)."""
    try:
        queue.put(timed_runs(lib, name, corpus, mode, repeat, barrier))
    except Exception as e:  # reported by the parent, which would otherwise wait for ever
        if barrier is not None:
            barrier.abort()
        queue.put(f"{lib} {mode}: {type(e).__name__}: {e}")


def timed_runs(lib: str, name: str, corpus: str, mode: str, repeat: int, barrier):
    if mode.startswith("core"):
        os.sched_setaffinity(0, {int(mode[4:])})
        mode = "single"
    docs = bench_encode.documents(corpus)
    warm, timed = docs[: len(docs) // 2], docs[len(docs) // 2:]
    walls, last = [], None
    for _ in range(repeat + 1):
        if mode == "flat":
            encode, batch = None, flat_batch(name)
        else:
            encode, batch = bench_encode.load_libraries(name)[lib]()
        if mode in ("batch", "flat"):
            batch(warm)
        else:
            for d in warm:
                encode(d)
        texts = bench_encode.fresh(timed)
        if barrier is not None:
            barrier.wait(timeout=600)
        start = time.perf_counter()
        results = [encode(d) for d in texts] if mode in ("single", "procs") else batch(texts)
        walls.append(time.perf_counter() - start)
        last = digest(results if mode != "flat" else split_flat(*results))
        del results
    return walls[1:], last


def flat_batch(name: str):
    """tinyllm's `encode_batch_flat` on a fresh instance: one id buffer, no Python list."""
    from tinyllm.tok import load

    tok = load(bench_encode.tokenizer_json(name))
    tok.warm_up()  # as bench_encode's tinyllm instances (see its `load_libraries`)
    return tok.encode_batch_flat


def split_flat(ids, offsets) -> list[list[int]]:
    """The per-text id lists of a flat batch (after the timer)."""
    return [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(offsets) - 1)]


def run(lib: str, name: str, corpus: str, mode: str, repeat: int) -> tuple[list[list[float]], set[str]]:
    """Per repeat, each process's wall time, and the digests seen."""
    ctx = mp.get_context("spawn")  # a child's thread pools read the environment it starts with
    n = (os.cpu_count() or 1) if mode == "procs" else 1
    barrier = ctx.Barrier(n) if mode == "procs" else None
    queue = ctx.Queue()
    saved = {k: os.environ.get(k) for k in bench_encode.ONE_THREAD}
    if mode in ("single", "procs") or mode.startswith("core"):
        os.environ.update(bench_encode.ONE_THREAD)
    try:
        children = [ctx.Process(target=worker, args=(lib, name, corpus, mode, repeat, barrier, queue))
                    for _ in range(n)]
        for child in children:
            child.start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    got = collect(queue, children)
    for child in children:
        child.join()
    failed = [g for g in got if isinstance(g, str)]
    if failed:
        raise RuntimeError(f"{name} {corpus}: " + "; ".join(failed))
    walls = [[w[k] for w, _ in got] for k in range(repeat)]
    return walls, {d for _, d in got}


def collect(queue, children) -> list:
    """One answer per child; an error instead of waiting for a child that died without one."""
    got = []
    while len(got) < len(children):
        try:
            got.append(queue.get(timeout=1))
        except Empty:
            dead = [c.exitcode for c in children if c.exitcode not in (None, 0)]
            if dead:
                for c in children:
                    c.terminate()
                raise RuntimeError(f"a timing process exited with {dead[0]} and no result")
    return got


def available(name: str, libs: list[str]) -> list[str]:
    """The libraries that load this file and have a batch call."""
    found = []
    for lib, factory in bench_encode.load_libraries(name).items():
        if lib in libs:
            loaded, _ = bench_encode.try_load(factory)
            if loaded is not None and loaded[1] is not None:
                found.append(lib)
    return found


def report(name: str, corpora: list[str], libs: list[str], rounds: int, repeat: int) -> None:
    cores = os.cpu_count() or 1
    print(f"\n{name}: MB/s (median of {rounds} x {repeat}); procs = {cores} single-thread "
          f"processes at once")
    print("| library | corpus | single | procs | batch | procs / single | batch / single "
          "| batch / procs | flat / single, / procs | exact |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    pinned = [f"core{c}" for c in allowed] if len(allowed) > 1 else []
    notes = []
    for corpus in corpora:
        docs = bench_encode.documents(corpus)
        mb = sum(len(d.encode()) for d in docs[len(docs) // 2:]) / 1e6
        reference = None
        for lib in libs:
            speeds: dict[str, list[float]] = {"single": [], "procs": [], "batch": []}
            if lib == "tinyllm":
                speeds["flat"] = []
            if lib == libs[0]:
                speeds.update({core: [] for core in pinned})
            digests: set[str] = set()
            for k in range(rounds):
                for mode in bench_encode.rotated(list(speeds), k):
                    walls, seen = run(lib, name, corpus, mode, repeat)
                    speeds[mode] += [sum(mb / w for w in each) for each in walls]
                    digests |= seen
                    if lib == libs[0] and mode == "single":
                        reference = reference or next(iter(seen))
            m = {mode: statistics.median(v) for mode, v in speeds.items()}
            exact = "yes" if digests == {reference} else f"no ({len(digests)} digests)"
            flat = (f"{m['flat'] / m['single']:.2f} / {m['flat'] / m['procs']:.2f}"
                    if "flat" in m else "-")
            print(f"| {lib} | {corpus} | {m['single']:.1f} | {m['procs']:.1f} | {m['batch']:.1f} "
                  f"| {m['procs'] / m['single']:.2f} | {m['batch'] / m['single']:.2f} "
                  f"| {m['batch'] / m['procs']:.2f} | {flat} | {exact} |", flush=True)
            if lib == libs[0] and pinned:
                notes.append(f"{corpus}, {lib}: {bench_encode.pinned_note([m[core] for core in pinned])}")
    for note in notes:
        print(f"\n{note}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", action="append", help="a shared file or family (default llama3)")
    ap.add_argument("--corpus", action="append", choices=bench_encode.CORPORA)
    ap.add_argument("--lib", action="append", choices=PEERS, help="default: all that load")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=4, help="timed runs per process per round")
    args = ap.parse_args()
    if not bench_encode.SHARED.is_dir():
        print(f"no shared data at {bench_encode.SHARED}; nothing to measure")
        return 0
    names = args.tokenizer or ["llama3"]
    bench_encode.prepare(names)
    for name in names:
        libs = available(name, args.lib or list(PEERS))
        report(name, args.corpus or list(bench_encode.CORPORA), libs, args.rounds, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
