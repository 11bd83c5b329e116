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
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.families import FAMILIES  # noqa: E402
from tests.support.split_patterns import first_difference, patterns, sweep_points  # noqa: E402

TEMPLATES = ["{c}", "a{c}b", "{c}'t", " {c}x", "1{c}", "{c}{c}", "\t{c}H", "{c}\n",
             "'{c}", "'{c}{c}", "A{c}a", "{c}A", "A{c} ", ".{c}z", "{c}1", " {c}\r\n"]
QUICK_TEMPLATES = ["a{c}b'{c}", " {c}A{c}a", "\t{c}{c}\n'{c}"]



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
