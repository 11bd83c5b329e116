"""Sentence-pair throughput: tinyllm's encode_pair / encode_structured against HF's encode(a, b).

    python benches/bench_pairs.py                                   # BERT on the en corpus
    python benches/bench_pairs.py --tokenizer gpt2 --pairs 1000

Sentences of ../shared/data/corpora/en (cut at . ! ? followed by whitespace, 20-400 characters)
are paired with the next one. Each library is warmed on the first half of the pairs and timed on
the second half, one call per pair, single-threaded, in the same process; every figure is the
median of --repeat runs. "reference" is tinyllm's readable pipeline (`use_reference()`), which
encode_pair always ran before the engines gave offsets. Exactness: the share of timed pairs whose
ids, type ids and source offsets equal Hugging Face's.

Without ../shared/data it says so and exits 0.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "python"))


def sentence_pairs(limit: int) -> list[tuple[str, str]]:
    sentences = []
    for path in sorted((SHARED / "corpora" / "en").glob("*.txt")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        sentences += [s for s in re.split(r"(?<=[.!?])\s+", text) if 20 <= len(s) <= 400]
    step = max(1, len(sentences) // (2 * limit))
    picked = sentences[::step]
    return list(zip(picked[::2], picked[1::2]))[:limit]


def rate(call, pairs, repeat: int) -> float:
    """Pairs per second of `call(a, b)` over `pairs` (median of `repeat` runs)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for a, b in pairs:
            call(a, b)
        times.append(time.perf_counter() - start)
    return len(pairs) / statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="bert-base-uncased")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = SHARED / "tokenizers" / args.tokenizer / "tokenizer.json"
    if not path.is_file():
        print(f"no shared data at {path}: nothing to measure")
        return 0
    import tokenizers

    from tinyllm.tok import load

    pairs = sentence_pairs(args.pairs)
    warm, timed = pairs[: len(pairs) // 2], pairs[len(pairs) // 2:]
    tok = load(path)
    reference = tok.use_reference()
    hf = tokenizers.Tokenizer.from_file(str(path))
    hf.no_truncation()
    hf.no_padding()
    calls = {
        "tinyllm encode_pair": lambda a, b: tok.encode_pair(a, b),
        "tinyllm encode_structured(a)": lambda a, b: tok.encode_structured(a, True),
        "reference encode_pair (before)": lambda a, b: reference.encode_pair(a, b),
        "reference encode_structured(a) (before)": lambda a, b: reference.encode_structured(a, True),
        "HF encode(a, b)": lambda a, b: hf.encode(a, b),
    }
    for call in calls.values():
        rate(call, warm, 1)
    exact = 0
    for a, b in timed:
        mine, theirs = tok.encode_pair(a, b), hf.encode(a, b)
        exact += (mine.ids == theirs.ids and mine.type_ids == theirs.type_ids
                  and [o for o in mine.offsets if o is not None]
                  == [tuple(o) for o, s in zip(theirs.offsets, theirs.sequence_ids) if s is not None])
    print(f"{args.tokenizer}: {len(timed)} timed sentence pairs of corpora/en, engine attached: {tok.uses_fast_path}")
    print(f"exactness vs HF (ids, type ids, offsets): {exact}/{len(timed)}")
    results = {}
    for name, call in calls.items():  # interleaved repeats would not change the order of magnitude
        results[name] = rate(call, timed, args.repeat)
    hf_rate = results["HF encode(a, b)"]
    for name, value in results.items():
        print(f"  {name:42s} {value:10.0f} pairs/s   {value / hf_rate:6.2f}x HF")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
