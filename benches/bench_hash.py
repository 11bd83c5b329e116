"""Semantic hashing cost: how long H_sem takes on loaded tokenizers, next to what peers check.

    python benches/bench_hash.py                 # gpt2, smollm2 and, when ../shared is there, o200k

No peer has a semantic identity: tiktoken checks the SHA-256 of the raw file, Hugging Face has
none. So the row compares H_sem (parse nothing again: the components of an already loaded tokenizer,
canonical bytes, framed SHA-256) with a plain SHA-256 of the file's bytes, measured in the same run.
The target is under 1 s for a 200k-vocabulary tokenizer. Each figure is the median of --repeat
fresh tokenizers (the hash is cached per tokenizer, so every run hashes a new one).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
FILES = {
    "gpt2": ROOT / "python" / "tinyllm" / "tok" / "presets" / "gpt2" / "tokenizer.json",
    "smollm2": ROOT / "python" / "tinyllm" / "tok" / "presets" / "smollm2" / "tokenizer.json",
    "gpt-4o-o200k": SHARED / "tokenizers" / "gpt-4o-o200k" / "tokenizer.json",
}


def main() -> int:
    from tinyllm.tok.load import load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"python {' '.join(sys.argv)}  ({time.strftime('%Y-%m-%d')})")
    print("| tokenizer | ids | H_sem s | sha256(file) s | ratio | H_sem equal across runs |")
    print("|---|---:|---:|---:|---:|---|")
    for name, path in FILES.items():
        if not path.is_file():
            print(f"| {name} | missing: {path} | | | | |")
            continue
        semantic, raw, hashes = [], [], set()
        for _ in range(args.repeat):
            tok = load(path)
            start = time.perf_counter()
            hashes.add(tok.semantic_hash)
            semantic.append(time.perf_counter() - start)
            start = time.perf_counter()
            hashlib.sha256(path.read_bytes()).hexdigest()
            raw.append(time.perf_counter() - start)
        s, r = statistics.median(semantic), statistics.median(raw)
        print(f"| {name} | {tok.vocab_size:,} | {s:.3f} | {r:.4f} | {s / r:.0f}x | {len(hashes) == 1} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
