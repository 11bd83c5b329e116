"""Every line of every shared corpus: tinyllm's ids and decodes against Hugging Face (and tiktoken).

    python benches/conformance_corpora.py                 # all five tokenizers
    python benches/conformance_corpora.py --tokenizer gpt2 --tokenizer rut5-base

The test suite checks a sample of these lines; this script checks all of them (about a minute per
tokenizer, mostly in the peers). Exits 1 if any line differs. Without ../shared/data it says so.
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def corpus_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted((SHARED / "corpora").rglob("*.txt")):
        with open(path, encoding="utf-8", newline="") as f:
            lines.extend(f.read().splitlines(keepends=True))
    return lines


NAMES = ["gpt2", "smollm2", "gpt-4o-o200k", "bert-base-uncased", "rut5-base"]
# Files whose post-processor adds tokens: checked with and without add_special.
WITH_TEMPLATES = ("bert-base-uncased", "rut5-base")


def check(name: str, lines: list[str]) -> int:
    import tokenizers

    from tinyllm.tok import load

    path = SHARED / "tokenizers" / name / "tokenizer.json"
    ours, hf = load(path), tokenizers.Tokenizer.from_file(str(path))
    hf.no_truncation()  # BERT's file pads and truncates to 128 tokens; tinyllm ignores both
    hf.no_padding()
    failures = 0
    for add_special in (False, True) if name in WITH_TEMPLATES else (False,):
        start = time.perf_counter()
        mine = ours.encode_batch(lines, add_special, allowed_special="all")
        theirs = [e.ids for e in hf.encode_batch(lines, add_special_tokens=add_special)]
        bad_ids = sum(a != b for a, b in zip(mine, theirs))
        bad_decodes = 0
        for skip in (False, True):
            decoded = hf.decode_batch(theirs, skip_special_tokens=skip)
            bad_decodes += sum(ours.decode(a, skip_special=skip) != d for a, d in zip(mine, decoded))
        print(f"{name} (add_special={add_special}): {len(lines):,} lines, {bad_ids} with different ids, "
              f"{bad_decodes} different decodes (skip_special false and true) "
              f"({time.perf_counter() - start:.0f} s)")
        failures += bad_ids + bad_decodes
    spiece = SHARED / "tokenizers" / name / "spiece.model"
    if spiece.is_file():
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=str(spiece))
        # Without the line break, which sentencepiece and Hugging Face treat differently.
        stripped = [line.rstrip("\r\n") for line in lines if line.strip()]
        plain = ours.encode_batch(stripped)
        theirs = [e.ids for e in hf.encode_batch(stripped, add_special_tokens=False)]
        agree = [k for k, (s_ids, h_ids) in enumerate(zip(sp.encode(stripped), theirs)) if s_ids == h_ids]
        bad = sum(plain[k] != theirs[k] for k in agree)
        print(f"{name} vs sentencepiece ({spiece.name}): of {len(stripped):,} non-empty lines, HF agrees with it "
              f"on {len(agree):,}; tinyllm differs from it on {bad} of those")
        failures += bad
    if name == "gpt2":
        import tiktoken

        ranks = {}
        for line in (SHARED / "tokenizers" / "gpt2" / "gpt2.tiktoken").read_bytes().splitlines():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        enc = tiktoken.Encoding("gpt2-file", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
        plain = ours.encode_batch(lines)
        bad = sum(a != b for a, b in zip(plain, enc.encode_ordinary_batch(lines)))
        print(f"gpt2 vs tiktoken (gpt2.tiktoken): {bad} lines with different ids")
        failures += bad
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", action="append")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"conformance skipped: {SHARED} is missing")
        return 0
    lines = corpus_lines()
    failures = sum(check(name, lines) for name in args.tokenizer or NAMES)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
