"""Pre-tokenizer and whole-encode throughput of the byte-level families, tinyllm against HF, one thread.

    RAYON_NUM_THREADS=1 python benches/bench_pretokenize.py            # every family, en/code/multi
    RAYON_NUM_THREADS=1 python benches/bench_pretokenize.py --family deepseek-v3 --repeat 5

Families: gpt2 and gpt-4o-o200k (the shared tokenizer.json files), cl100k (`tinyllm convert`'s
document of the shared cl100k_base.tiktoken) and the llama3, qwen2, deepseek-v3 documents of
tests/support/families.py. For each corpus of ../shared/data/corpora the whole text is
pre-tokenized in one call (tinyllm: `_core.pre_tokenize_count`, no Python object per piece; HF:
`pre_tokenizer.pre_tokenize_str`, which builds one tuple per piece, so its figure is a lower
bound), then encoded as ~2,000-character documents one `encode` call each (warm-up on the
first half, timed on the second). Each figure is the median of --repeat runs, in MB/s of UTF-8.
The `route` column names how tinyllm runs each Split (a scanner's name, or `regex`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "python"))
from tests.support.documents import documents  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
FAMILIES = ("gpt2", "cl100k", "llama3", "qwen2", "deepseek-v3", "gpt-4o-o200k")


def family_json(name: str) -> str:
    if name in ("gpt2", "gpt-4o-o200k"):
        return (SHARED / "tokenizers" / name / "tokenizer.json").read_text(encoding="utf-8")
    if name == "cl100k":
        from tinyllm.tok import load
        from tinyllm.tok.convert import hf_document

        return json.dumps(hf_document(load(SHARED / "tokenizers" / "tiktoken" / "cl100k_base.tiktoken")))
    from tests.support.families import family_doc

    return json.dumps(family_doc(name))


def corpus_text(corpus: str) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted((SHARED / "corpora" / corpus).rglob("*.txt")))


def timed(fn, repeat: int, mb: float) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(mb / (time.perf_counter() - start))
    return statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", action="append", choices=FAMILIES)
    parser.add_argument("--corpus", action="append", choices=("en", "code", "multi"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pre-only", action="store_true", help="time the pre-tokenizers only, not encode")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"bench skipped: {SHARED} is missing")
        return 0
    import tokenizers

    from tinyllm import _core
    from tinyllm.tok import load

    print(f"{'family':<13} {'corpus':<6} {'pre tinyllm':>11} {'pre HF':>7} {'enc tinyllm':>11} {'enc HF':>7} "
          f"{'ids==HF':>7}  route")
    for family in args.family or FAMILIES:
        doc_json = family_json(family)
        pre_json = json.dumps(json.loads(doc_json)["pre_tokenizer"])
        hf = tokenizers.Tokenizer.from_str(doc_json)
        path = Path("/tmp") / f"bench_pretokenize_{family}.json"
        path.write_text(doc_json, encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SlowPathWarning: the table says "slow" instead
            tok = load(path)
        routes = ",".join(getattr(_core, "pre_tokenizer_routes", lambda _: ["?"])(pre_json))
        for corpus in args.corpus or ("en", "code", "multi"):
            text = corpus_text(corpus)
            mb = len(text.encode("utf-8")) / 1e6
            pre_ours = timed(lambda: _core.pre_tokenize_count(pre_json, text), args.repeat, mb)
            pre_hf = timed(lambda: hf.pre_tokenizer.pre_tokenize_str(text), args.repeat, mb)
            if args.pre_only:
                print(f"{family:<13} {corpus:<6} {pre_ours:>11.1f} {pre_hf:>7.1f} {'-':>11} {'-':>7} {'-':>7}  {routes}",
                      flush=True)
                continue
            docs = documents(text.splitlines(keepends=True))
            warm, rest = docs[: len(docs) // 2], docs[len(docs) // 2:]
            rest_mb = sum(len(d.encode("utf-8")) for d in rest) / 1e6
            for d in warm:
                tok.encode(d)
                hf.encode(d, add_special_tokens=False)
            enc_hf = timed(lambda: [hf.encode(d, add_special_tokens=False) for d in rest], args.repeat, rest_mb)
            same = all(list(tok.encode(d)) == hf.encode(d, add_special_tokens=False).ids for d in rest)
            # A pipeline the Rust engine cannot run yet (Qwen2's NFC) encodes on the reference: not timed.
            enc_ours = (f"{timed(lambda: [tok.encode(d) for d in rest], args.repeat, rest_mb):.1f}"
                        if tok.uses_fast_path else "slow")
            print(f"{family:<13} {corpus:<6} {pre_ours:>11.1f} {pre_hf:>7.1f} {enc_ours:>11} {enc_hf:>7.1f} "
                  f"{str(same):>7}  {routes}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
