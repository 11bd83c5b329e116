#!/usr/bin/env python3
r"""Generate the word-character table of the Rust word counter (src/text/words.rs).

A UAX #29 word segment counts as a word when it holds a letter, a number or an ideograph,
``[\p{L}\p{N}\p{Ideographic}]`` (see tinyllm/eval/words.py). The Rust side segments with
unicode-segmentation 1.13 (Unicode 17); `regex-syntax`'s tables, which the rest of the crate reads,
are Unicode 16, so a letter new in Unicode 17 would make a segment the Python reference counts and
the Rust counter skips. This script writes the class from the `regex` module's tables (those of the
Python reference, Unicode 17) as sorted, inclusive code point ranges:

    src/text/word_tables.rs    read by src/text/words.rs

Rerun after upgrading `regex` or unicode-segmentation:

    python3 tools/gen_word_tables.py            # write the file, then verify
    python3 tools/gen_word_tables.py --check    # verify the file in the tree, write nothing
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import regex

# The same line wrapping as the BERT tables' generator: one function for both.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_bert_tables import wrap  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RS_OUT = ROOT / "src" / "text" / "word_tables.rs"
CLASS = r"[\p{L}\p{N}\p{Ideographic}]"


def word_char_ranges() -> list[tuple[int, int]]:
    """The inclusive ranges of `CLASS` under the `regex` module's tables (surrogates are never in it)."""
    pattern = regex.compile(CLASS + "+")
    everything = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
    # Surrogates are dropped from `everything`: a run must not bridge U+D7FF and U+E000.
    out = []
    for m in pattern.finditer(everything):
        lo, hi = ord(m.group()[0]), ord(m.group()[-1])
        if lo < 0xD800 <= hi:
            out += [(lo, 0xD7FF), (0xE000, hi)]
        else:
            out.append((lo, hi))
    return out


def write_rust(ranges: list[tuple[int, int]]) -> str:
    items = [f"(0x{lo:X}, 0x{hi:X})," for lo, hi in ranges]
    out = [
        r"//! The word characters of `text::words`: `[\p{L}\p{N}\p{Ideographic}]`.",
        "//!",
        f"//! From the Python `regex` module {regex.__version__}'s Unicode tables by tools/gen_word_tables.py.",
        "//! GENERATED: do not edit. Rerun `python3 tools/gen_word_tables.py` after upgrading `regex` or",
        "//! unicode-segmentation. Ranges are inclusive (start, end) pairs, sorted.",
        "",
        f'pub const REGEX_VERSION: &str = "{regex.__version__}";',
        "",
        r"/// `[\p{L}\p{N}\p{Ideographic}]`: the characters that make a word segment a word.",
        "#[rustfmt::skip]",
        "pub static WORD_CHARS: &[(u32, u32)] = &[",
        wrap(items, "    "),
        "];",
        "",
    ]
    return "\n".join(out)


def read_rust(source: str) -> list[tuple[int, int]]:
    body = source.split("pub static WORD_CHARS", 1)[1]
    return [(int(lo, 16), int(hi, 16)) for lo, hi in re.findall(r"\(0x([0-9A-F]+), 0x([0-9A-F]+)\)", body)]


def verify() -> None:
    """The table in the tree is `CLASS` on every code point, for the installed `regex`."""
    if not RS_OUT.exists():
        sys.exit(f"{RS_OUT.relative_to(ROOT)} is missing: run python3 tools/gen_word_tables.py")
    table = read_rust(RS_OUT.read_text(encoding="utf-8"))
    if any(hi < lo for lo, hi in table) or any(b[0] <= a[1] for a, b in zip(table, table[1:])):
        sys.exit(f"{RS_OUT.relative_to(ROOT)}: ranges are not sorted and disjoint")
    members = set()
    for lo, hi in table:
        members.update(range(lo, hi + 1))
    pattern = regex.compile(CLASS)
    wrong = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF
             and (cp in members) != bool(pattern.match(chr(cp)))]
    if wrong:
        shown = ", ".join(f"U+{cp:04X}" for cp in wrong[:10])
        sys.exit(f"{RS_OUT.relative_to(ROOT)} differs from regex {regex.__version__} on {len(wrong)} "
                 f"code points ({shown}...): rerun python3 tools/gen_word_tables.py")
    print(f"{RS_OUT.relative_to(ROOT)}: {len(table)} ranges, {len(members)} code points, "
          f"equal to regex {regex.__version__} on every code point", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="verify the table in the tree; write nothing")
    args = parser.parse_args()
    if not args.check:
        RS_OUT.write_text(write_rust(word_char_ranges()), encoding="utf-8")
        print(f"wrote {RS_OUT.relative_to(ROOT)}", file=sys.stderr)
    verify()


if __name__ == "__main__":
    main()
