"""Sweep every Unicode code point through a Rust split scanner and Hugging Face's pre-tokenizer.

    python benches/sweep_pretokenizer.py                       # GPT-2's ByteLevel(use_regex=True)
    python benches/sweep_pretokenizer.py --pattern o200k --pattern deepseek-words
    python benches/sweep_pretokenizer.py --pattern all         # every recognised pattern and family
    python benches/sweep_pretokenizer.py --pattern llama3 --quick   # planes 0-3 and 14, 3 contexts

Each code point c is placed in every context of TEMPLATES (`c`, `acb`, `c't`, ...), the cases of
one context are joined with NUL separators into one text, and the pieces of tinyllm's fast path
(`tinyllm._core.pre_tokenize`) must equal those of Hugging Face tokenizers (Oniguruma). A pattern
name is one of PATTERNS (one Split, Isolated, then ByteLevel(use_regex=False), as the family files
have it), `bytelevel` (GPT-2's ByteLevel with use_regex) or a family of tests/support/families.py
(its whole pre-tokenizer, e.g. DeepSeek-V3's Sequence of three Splits). The sweep also checks that
each Split took its scanner (`_core.pre_tokenizer_routes`), not the regex route.
About 1.1 million code points per context; a full pattern takes minutes, mostly in the oracle.
Exits 1 on the first difference, printing it. tests/tok/stages/test_split_scanners.py runs the
same check, CI-sized.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.families import DEEPSEEK_PATTERNS, FAMILIES, LLAMA3_PATTERN, QWEN2_PATTERN, family_doc  # noqa: E402

TEMPLATES = ["{c}", "a{c}b", "{c}'t", " {c}x", "1{c}", "{c}{c}", "\t{c}H", "{c}\n",
             "'{c}", "'{c}{c}", "A{c}a", "{c}A", "A{c} ", ".{c}z", "{c}1", " {c}\r\n"]
QUICK_TEMPLATES = ["a{c}b'{c}", " {c}A{c}a", "\t{c}{c}\n'{c}"]

_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_CL100K_TIKTOKEN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
                    r"""\s*[\r\n]|\s+(?!\S)|\s""")


def patterns() -> dict[str, str]:
    """Scanner name -> the Split pattern it recognises (as `_core.pre_tokenizer_routes` names it)."""
    from tinyllm.tok.formats.tiktoken import PATTERNS as TIKTOKEN

    return {"gpt2": _GPT2, "r50k": TIKTOKEN["r50k"], "llama3": LLAMA3_PATTERN, "qwen2": QWEN2_PATTERN,
            "cl100k": TIKTOKEN["cl100k"], "cl100k-tiktoken": _CL100K_TIKTOKEN, "o200k": TIKTOKEN["o200k"],
            "digit-groups": DEEPSEEK_PATTERNS[0], "deepseek-cjk": DEEPSEEK_PATTERNS[1],
            "deepseek-words": DEEPSEEK_PATTERNS[2]}


def split_pre_tokenizer(pattern: str) -> dict:
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}


def pre_tokenizer_of(name: str) -> tuple[dict, list[str]]:
    """(pre_tokenizer JSON, the routes its Splits must take) of a sweep name."""
    if name == "bytelevel":
        return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}, []
    if name in FAMILIES:
        pre = family_doc(name)["pre_tokenizer"]
        known = {pattern: route for route, pattern in patterns().items()}
        return pre, [known[s["pattern"]["Regex"]] for s in pre["pretokenizers"] if s["type"] == "Split"]
    return split_pre_tokenizer(patterns()[name]), [name]


def hf_pre_tokenizer(pre: dict):
    """Hugging Face's pre-tokenizer of a tokenizer.json `pre_tokenizer` object."""
    import tokenizers

    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
           "pre_tokenizer": pre, "post_processor": None, "decoder": None,
           "model": {"type": "BPE", "vocab": {}, "merges": []}}
    return tokenizers.Tokenizer.from_str(json.dumps(doc)).pre_tokenizer


def sweep_points(quick: bool) -> list[int]:
    """Every code point but the surrogates; `quick`: planes 0-3 and 14 (all that is assigned bar
    private use) and every 251st code point of the others."""
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    if quick:
        points = [c for c in points if c >> 16 in (0, 1, 2, 3, 14) or c % 251 == 0]
    return points


def first_difference(name: str, template: str, points: list[int]) -> str | None:
    """None when tinyllm's pieces equal Hugging Face's on `template` over `points`, else a message."""
    from tinyllm import _core
    from tinyllm.tok.text.byte_alphabet import token_string

    pre, routes = pre_tokenizer_of(name)
    spec = json.dumps(pre)
    took = [r for r in _core.pre_tokenizer_routes(spec) if r not in ("digits", "chars")]
    if took != routes:
        return f"{name}: the Splits took routes {took}, expected {routes}"
    joined = "\x00".join(template.format(c=chr(c)) for c in points)
    expected = [piece for piece, _ in hf_pre_tokenizer(pre).pre_tokenize_str(joined)]
    got = [token_string(b) for b in _core.pre_tokenize(spec, joined)]
    if got == expected:
        return None
    k = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    context = expected[max(0, k - 3): k + 3]
    return (f"{name}, template {template!r}: piece {k} differs: ours {got[k: k + 1]!r}, Hugging Face "
            f"{expected[k: k + 1]!r} (Hugging Face around it: {context!r})")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pattern", action="append",
                        help="a scanner name, 'bytelevel', a family, or 'all' (default: bytelevel)")
    parser.add_argument("--quick", action="store_true", help="planes 0-3 and 14, three combined contexts")
    args = parser.parse_args()
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        print("sweep skipped: the `tokenizers` package is not installed (pip install '.[bench]')")
        return 0
    names = args.pattern or ["bytelevel"]
    if "all" in names:
        names = ["bytelevel", *patterns(), *FAMILIES]
    points = sweep_points(args.quick)
    total = 0
    for name in names:
        for template in QUICK_TEMPLATES if args.quick else TEMPLATES:
            start = time.perf_counter()
            problem = first_difference(name, template, points)
            if problem:
                print(problem)
                return 1
            total += len(points)
            print(f"{name}, template {template!r}: {len(points):,} code points identical "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    print(f"all {total:,} cases identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
