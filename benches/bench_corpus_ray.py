"""encode-dataset scaling: the local engine and the Ray engine with 1 and 2 workers, same corpus.

    python benches/bench_corpus_ray.py                     # the shared corpora x 4, 2 MB shards
    python benches/bench_corpus_ray.py --copies 8 --shard-mb 4 --repeat 3
    python benches/bench_corpus_ray.py --lines-per-doc 64          # fewer, longer documents

The corpus is every `corpora/*/*.txt` and `corpora/multi/leipzig-sentences/*.txt` of the shared
data (../shared/data, read at run time), one document a non-blank line (or `--lines-per-doc`
consecutive ones joined by "\n"), the whole set `--copies` times over (ids "COPY/FILE:LINE" of
the first line), read lazily from the files on every run as the CLI does. Ray is
a local cluster of this machine's CPUs, started once before the timed runs (its start-up is
printed apart, it is paid once per process). Each figure is the median of `--repeat` runs into a
fresh directory, after one untimed warm-up run per engine (Ray's workers load the tokenizer once
per process).

Columns: wall seconds, input MB/s, the ratio to the local engine with 1 worker, the speed-up over
the same engine with 1 worker, and `identical`: every output file and manifest.json byte-equal to
the local 1-worker run's.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYLLM_SHARED_DATA") or ROOT.parent / "shared" / "data")


def corpus_files() -> list[Path]:
    corpora = SHARED / "corpora"
    files = sorted(corpora.glob("*/*.txt")) + sorted(corpora.glob("multi/leipzig-sentences/*.txt"))
    if not files:
        sys.exit(f"bench_corpus_ray: no corpora under {corpora}; expected the shared data (TINYLLM_SHARED_DATA)")
    return files


def documents(files: list[Path], copies: int, lines_per_doc: int = 1):
    from tinyllm.corpus.documents import Document

    for copy in range(copies):
        for path in files:
            # Per file, not per document: pathlib's properties would cost the driver more than reading.
            prefix, source = f"{copy}/{path.parent.name}/{path.name}:", path.stem
            with open(path, encoding="utf-8", newline="") as f:
                group, first = [], 0
                for number, line in enumerate(f, 1):
                    text = line.rstrip("\r\n")
                    if text.strip():
                        first = first or number
                        group.append(text)
                    if len(group) == lines_per_doc:
                        yield Document(f"{prefix}{first}", "\n".join(group), source)
                        group, first = [], 0
                if group:
                    yield Document(f"{prefix}{first}", "\n".join(group), source)


def tree(out: Path) -> dict:
    """Every file under `out` -> its SHA-256 (manifest.json included)."""
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--shard-mb", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--lines-per-doc", type=int, default=1)
    args = parser.parse_args()

    from tinyllm.corpus.dataset_writer import encode_dataset
    from tinyllm.corpus.ray_engine import connect
    from tinyllm.tok import load

    files = corpus_files()
    tokenizer = load(args.tokenizer)

    def corpus():
        return documents(files, args.copies, args.lines_per_doc)

    size = sum(len(d.text.encode("utf-8")) for d in corpus())
    count = sum(1 for _ in corpus())
    shard_bytes = int(args.shard_mb * 1e6)
    workers_list = [int(w) for w in args.workers.split(",")]
    start = time.perf_counter()
    ray = connect(None)
    ray_start = time.perf_counter() - start
    cpus = int(ray.cluster_resources().get("CPU", 0))

    print(f"python {' '.join(sys.argv)}  ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, ray {ray.__version__})")
    print(f"corpus: {len(files)} files x {args.copies} = {count:,} documents, {size / 1e6:.1f} MB of UTF-8; "
          f"tokenizer {args.tokenizer}; shards of {args.shard_mb:g} MB; local Ray of {cpus} CPUs "
          f"started in {ray_start:.1f} s (not in the figures); load average {os.getloadavg()[0]:.1f}")
    scratch = Path(tempfile.mkdtemp(prefix="bench_corpus_ray-"))
    reference = None
    rows = []
    try:
        for engine in ("local", "ray"):
            extra = {"engine": engine}
            if engine == "ray":
                extra["tokenizer_source"] = args.tokenizer
            warm = scratch / f"warm-{engine}"
            encode_dataset(corpus(), tokenizer, warm, shard_bytes=shard_bytes, progress=False,
                           workers=max(workers_list), **extra)
            shutil.rmtree(warm)
            for workers in workers_list:
                times = []
                for run in range(args.repeat):
                    out = scratch / f"{engine}-{workers}-{run}"
                    begin = time.perf_counter()
                    manifest = encode_dataset(corpus(), tokenizer, out, shard_bytes=shard_bytes,
                                              progress=False, workers=workers, **extra)
                    times.append(time.perf_counter() - begin)
                    found = tree(out)
                    if reference is None:
                        reference = found
                    identical = found == reference
                    shutil.rmtree(out)
                    if not identical:
                        break
                rows.append((engine, workers, statistics.median(times), identical, len(manifest["shards"])))
                print(f"  {engine} x{workers}: {', '.join(f'{t:.2f}' for t in times)} s", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    base = {engine: t for engine, w, t, _, _ in rows if w == 1}
    local1 = base.get("local")
    print("| engine | workers | shards | wall s | MB/s | vs local x1 | vs same engine x1 | identical |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for engine, workers, t, identical, shards in rows:
        vs_local = f"{local1 / t:.2f}" if local1 else "-"
        vs_self = f"{base[engine] / t:.2f}" if engine in base else "-"
        print(f"| {engine} | {workers} | {shards} | {t:.2f} | {size / 1e6 / t:.1f} | {vs_local} | {vs_self} | "
              f"{identical} |")
    print(f"load average after: {os.getloadavg()[0]:.1f} (other processes on this machine share its CPUs)")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
