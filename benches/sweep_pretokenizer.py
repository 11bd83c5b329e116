"""Sweep every Unicode code point through the Rust GPT-2 scanner and Hugging Face's pre-tokenizer.

    python benches/sweep_pretokenizer.py

Each code point c is placed in eight contexts (`c`, `acb`, `c't`, ` cx`, `1c`, `cc`, `\\tcH`, `c\\n`),
the cases of one context are joined with NUL separators into one text, and the pieces of the
scanner (`tinyllm._core.pre_tokenize`) must equal those of `tokenizers.pre_tokenizers.ByteLevel`
(Oniguruma with the GPT-2 pattern). About 9 million cases; a few minutes, mostly in the oracle.
Exits 1 on the first difference, printing it.
"""

from __future__ import annotations

import json
import sys
import time

TEMPLATES = ["{c}", "a{c}b", "{c}'t", " {c}x", "1{c}", "{c}{c}", "\t{c}H", "{c}\n"]


def main() -> int:
    try:
        from tokenizers.pre_tokenizers import ByteLevel
    except ImportError:
        print("sweep skipped: the `tokenizers` package is not installed (pip install '.[bench]')")
        return 0
    from tinyllm import _core
    from tinyllm.tok.text.byte_alphabet import token_string

    oracle = ByteLevel(add_prefix_space=False, use_regex=True)
    spec = json.dumps({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True})
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    total = 0
    for template in TEMPLATES:
        start = time.perf_counter()
        joined = "\x00".join(template.format(c=chr(c)) for c in points)
        expected = [piece for piece, _ in oracle.pre_tokenize_str(joined)]
        got = [token_string(b) for b in _core.pre_tokenize(spec, joined)]
        total += len(points)
        if got != expected:
            k = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
            print(f"template {template!r}: piece {k} differs: ours {got[k]!r}, Hugging Face {expected[k]!r}")
            return 1
        print(f"template {template!r}: {len(points):,} code points, {len(expected):,} pieces, identical "
              f"({time.perf_counter() - start:.1f} s)")
    print(f"all {total:,} cases identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
