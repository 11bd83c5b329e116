"""Prefix-cache keys of a long prompt against the time it takes to encode that prompt.

    python benches/bench_cache_keys.py                      # 131072 ids (128k), B = 16
    python benches/bench_cache_keys.py --ids 32768 --block-size 16 --repeat 9

The prompt is the English corpus of ../shared/data, cut to the first --ids GPT-2 ids (repeated
when the corpus is shorter) and compiled into a `CompiledRequest`. Timed, each the median of
--repeat runs in one process:

* `keys (Rust)`: `cache_blocks(request, B, "conservative", state)`, the whole call from Python
  (the ids cross into the core, the key strings come back);
* `keys (reference)`: the same keys from the pure-Python reference, `reference_block_keys`;
* encoding the prompt text to ids: tinyllm (a freshly loaded tokenizer each run, so its word
  cache starts cold, as for a first request), Hugging Face `tokenizers` and tiktoken, each from
  the same shared GPT-2 files.

`keys / encode` is the keys' time over each encoder's: below 1.0 the keys cost less than the
encoding they follow. `exact` says the Rust keys equal the reference's and each peer's ids equal
tinyllm's. Without ../shared/data it says so and exits 0; missing peers are skipped.
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
GPT2 = SHARED / "tokenizers" / "gpt2"


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def prompt_text(tok, n_ids: int) -> str:
    """A run of whole corpus lines with at least `n_ids` ids (counted line by line, with a margin
    for the merges across line ends)."""
    files = sorted((SHARED / "corpora" / "en").glob("*.txt"))
    corpus = "".join(p.read_text(encoding="utf-8") for p in files)
    lines, text, count = corpus.splitlines(keepends=True), [], 0
    while count < n_ids * 1.01:
        for line in lines:
            text.append(line)
            count += len(tok.encode(line))
            if count >= n_ids * 1.01:
                break
    return "".join(text)


def peers():
    out = {}
    try:
        import tokenizers

        hf = tokenizers.Tokenizer.from_file(str(GPT2 / "tokenizer.json"))
        out["HF tokenizers"] = lambda text: hf.encode(text, add_special_tokens=False).ids
    except ImportError:
        print("(tokenizers not installed: skipped)")
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        from tinyllm.tok.formats.tiktoken import PATTERNS

        enc = tiktoken.Encoding("gpt2", pat_str=PATTERNS["gpt2"], mergeable_ranks=load_tiktoken_bpe(
            str(GPT2 / "gpt2.tiktoken")), special_tokens={})
        out["tiktoken"] = lambda text: enc.encode_ordinary(text)
    except ImportError:
        print("(tiktoken not installed: skipped)")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, default=131072)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    if not (GPT2 / "tokenizer.json").is_file():
        print(f"shared data missing: {GPT2} (set TINYLLM_SHARED_DATA); nothing measured")
        return 0

    from tinyllm import _native
    from tinyllm.runtime import CompiledRequest, ModelState, cache_blocks
    from tinyllm.runtime import prefix_cache
    from tinyllm.tok import load

    if _native.core is None:
        print("the Rust core is not selected (TINYLLM_PURE_PYTHON=1?): the fast keys cannot be measured")
        return 1
    path = str(GPT2 / "tokenizer.json")
    tok = load(path)
    text = prompt_text(tok, args.ids)
    ids = tuple(tok.encode(text))[: args.ids]
    request = CompiledRequest(ids, len(ids), (0,) * len(ids), ("messages[0]:user",) * len(ids),
                              tok.semantic_hash, "0" * 64)
    state = ModelState("gpt2@main")
    B = args.block_size

    blocks, _ = cache_blocks(request, B, "conservative", state)
    policy = f"{prefix_cache.KEY_POLICY}/conservative"
    z = prefix_cache.state_hash(prefix_cache.state_identity(request, "conservative", state))
    reference = prefix_cache.reference_block_keys(ids, B, policy, z)
    keys_exact = [k for _, _, k in blocks] == reference

    rust = median_time(lambda: cache_blocks(request, B, "conservative", state), args.repeat)
    python = median_time(lambda: prefix_cache.reference_block_keys(ids, B, policy, z), max(1, args.repeat // 3))
    fresh = iter([load(path) for _ in range(args.repeat + 1)])  # loaded before the clock starts
    encoders = {"tinyllm (cold cache)": lambda t: next(fresh).encode(t)}
    encoders.update(peers())
    full_ids = tok.encode(text)

    print(f"prompt: {len(ids)} ids ({len(text.encode('utf-8'))} bytes of English text), B = {B}: "
          f"{len(blocks)} keys; {args.repeat} runs, medians\n")
    print(f"{'what':<24} {'ms':>9} {'keys (Rust) / this':>19} {'exact':>6}")
    print(f"{'keys (Rust)':<24} {rust * 1e3:>9.2f} {1.0:>19.2f} {str(keys_exact):>6}")
    print(f"{'keys (reference)':<24} {python * 1e3:>9.2f} {rust / python:>19.3f} {str(keys_exact):>6}")
    for name, encode in encoders.items():
        seconds = median_time(lambda: encode(text), args.repeat)
        exact = list(encode(text)) == full_ids  # tinyllm: the one fresh tokenizer left over
        print(f"{'encode: ' + name:<24} {seconds * 1e3:>9.2f} {rust / seconds:>19.3f} {str(exact):>6}")
    return 0 if keys_exact else 1


if __name__ == "__main__":
    sys.exit(main())
