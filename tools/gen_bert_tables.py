#!/usr/bin/env python3
"""Generate the Unicode tables of BERT's text stages by measuring Hugging Face `tokenizers`.

Hugging Face's BertNormalizer and BertPreTokenizer classify characters with the Rust crates
`unicode_categories` 0.1 and `unicode-normalization-alignments` 0.1 and with Rust's std case
mapping. Each has its own Unicode version, none equal to the running Python's `unicodedata`, so
tinyllm does not ask `unicodedata` at all: this script sends every code point (surrogates aside)
through HF's own stages, one flag at a time, and writes what they did as range tables:

    python/tinyllm/tok/stages/bert_tables.py   read by the pure-Python reference (tinyllm.tok.stages.bert)
    src/stages/bert_tables.rs                  read by the Rust fast path (src/stages/bert.rs)

Both files come from the same measurements in one run, so the two implementations cannot drift.

What is measured, and how:

* clean_text: removed, mapped to ' ', or kept, per code point;
* handle_chinese_chars: which code points get a space on each side;
* strip_accents: the canonical decomposition (HF's NFD) of every code point, and which code points
  strip_accents deletes outright (nonspacing marks). Hangul syllables decompose by the algorithm of
  Unicode section 3.12 and are left out of the table; the sweep checks the algorithm;
* canonical combining classes, which decide how NFD reorders runs of marks: probed by sending
  pairs of marks through HF's NFD and watching which pairs swap (see `probe_combining_classes`);
* lowercase: every code point whose lowercase (Rust `char::to_lowercase`) is not itself;
* BertPreTokenizer / WhitespaceSplit: which code points split as whitespace, which are isolated
  as punctuation.

After writing, the script reloads tinyllm's reference and checks it against HF on every code point
and on random runs of combining marks; it exits non-zero if anything differs.

Rerun after upgrading `tokenizers` (the tables record the version they were measured with):

    python3 tools/gen_bert_tables.py            # write both files, then verify
    python3 tools/gen_bert_tables.py --check    # verify the files in the tree, write nothing
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import unicodedata
from pathlib import Path

import tokenizers
from tokenizers import normalizers as hf_norm
from tokenizers import pre_tokenizers as hf_pre

ROOT = Path(__file__).resolve().parents[1]
PY_OUT = ROOT / "python" / "tinyllm" / "tok" / "stages" / "bert_tables.py"
RS_OUT = ROOT / "src" / "stages" / "bert_tables.rs"

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
# Every stage keeps these, they block mark reordering, and no mapping produces them; the second
# serves the inputs that hold the first.
SEPARATORS = ("|", "~")
CHUNK = 8192

# Inputs whose HF outputs are stored as GOLDEN, for the Rust unit tests and the Python tests alike.
GOLDEN_INPUTS = [
    "Hello, World!",
    "\x7fA\x00B\ufffdC\x85D\xa0E\u200bF\t\n\r",
    "\u0130stanbul",
    "\u039f\u0394\u039f\u03a3 \u03c3\u03c2",
    "caf\u00e9 cafe\u0301 \u00c5ngstr\u00f6m \u212b",
    "\u91ce\u53e3\u91cc\u4f73 Noguchi Rika\uf900",
    "a\u0345\u0301\u0316b",
    "\ud55c\uad6d\uc5b4 \u1100\u1161",
    "\u0890\u08e2\U000110cd \U0001e900\U00010400",
    "\u1e9e \u2c2f \u00df \ufb01",
    "\u0e01\u0e34\u0e48 \u0915\u093f \u05e9\u05c1\u05b8",
]
# (clean_text, handle_chinese_chars, strip_accents, lowercase)
GOLDEN_FLAGS = [
    (True, True, None, True),
    (True, True, False, True),
    (True, True, True, False),
    (False, False, None, False),
    (True, False, False, False),
]


# ---------------------------------------------------------------------------------------------
# Measuring


def bert(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=False):
    return hf_norm.BertNormalizer(
        clean_text=clean_text, handle_chinese_chars=handle_chinese_chars,
        strip_accents=strip_accents, lowercase=lowercase,
    )


def sweep(normalizer, inputs: list[str]) -> list[str]:
    """HF's output for each input string, normalizing many at once between separators."""
    outputs: dict[int, str] = {}
    for separator in SEPARATORS:
        todo = [i for i, text in enumerate(inputs) if i not in outputs and separator not in text]
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start:start + CHUNK]
            joined = separator.join(inputs[i] for i in chunk) + separator
            parts = normalizer.normalize_str(joined).split(separator)
            if len(parts) != len(chunk) + 1:
                raise SystemExit(f"sweep: a mapping produced or removed {separator!r}")
            outputs.update(zip(chunk, parts))
    return [outputs[i] for i in range(len(inputs))]


def sweep_code_points(normalizer) -> dict[int, str]:
    return dict(zip(CODE_POINTS, sweep(normalizer, [chr(cp) for cp in CODE_POINTS])))


def pre_tokenizer_classes(pre_tokenizer) -> tuple[set[int], set[int]]:
    """(whitespace, punctuation) code points of a pre-tokenizer, from where it cuts.

    Code points are placed between letters: one that no piece covers was removed as whitespace;
    one that is a piece by itself was isolated as punctuation.
    """
    whitespace: set[int] = set()
    punctuation: set[int] = set()
    for i in range(0, len(CODE_POINTS), CHUNK):
        chunk = CODE_POINTS[i:i + CHUNK]
        text = "a".join(map(chr, chunk))
        covered = bytearray(len(text))
        for _, (start, end) in pre_tokenizer.pre_tokenize_str(text):
            covered[start:end] = b"\x01" * (end - start)
            if end - start == 1 and start % 2 == 0:
                punctuation.add(chunk[start // 2])
        whitespace.update(cp for j, cp in enumerate(chunk) if not covered[2 * j])
    return whitespace, punctuation


def hangul_nfd(cp: int) -> str:
    """Unicode 3.12: a precomposed Hangul syllable is leading + vowel (+ trailing) jamo."""
    index = cp - HANGUL_FIRST
    lead, rest = divmod(index, 21 * 28)
    vowel, trail = divmod(rest, 28)
    jamo = chr(0x1100 + lead) + chr(0x1161 + vowel)
    return jamo + chr(0x11A7 + trail) if trail else jamo


def probe_combining_classes(decomposes: set[int]) -> dict[int, int]:
    """HF's canonical combining class of every code point that NFD can output, where non-zero.

    NFD moves a mark before the previous one when its class is lower (and both are non-zero), so
    `X + U+0334` (class 1) swaps exactly when class(X) > 1, and `U+0345 + X` (class 240) swaps
    exactly when 0 < class(X) < 240: together they find every non-zero class. The value is then
    the smallest known class k such that `X + marker(k)` does not swap. Markers are the lowest
    code point of each class in Python's tables, kept only if HF agrees on them.
    """
    nfd = hf_norm.NFD()
    candidates = [cp for cp in CODE_POINTS if cp not in decomposes and not HANGUL_FIRST <= cp <= HANGUL_LAST]
    after = sweep(nfd, [chr(cp) + "\u0334" for cp in candidates])
    before = sweep(nfd, ["\u0345" + chr(cp) for cp in candidates])
    nonzero = [
        cp for cp, a, b in zip(candidates, after, before)
        if a == "\u0334" + chr(cp) or b == chr(cp) + "\u0345"
    ]
    nonzero_set = set(nonzero)

    markers: dict[int, str] = {}
    for cp in CODE_POINTS:
        k = unicodedata.combining(chr(cp))
        if k and k not in markers and cp in nonzero_set:
            markers[k] = chr(cp)
    classes = sorted(markers)
    # A marker pair must swap exactly when their classes say so; otherwise HF's tables disagree
    # with Python's on a marker, and the derived values below could not be trusted.
    pairs = [(j, k) for j in classes for k in classes]
    swapped = sweep(nfd, [markers[k] + markers[j] for j, k in pairs])
    for (j, k), out in zip(pairs, swapped):
        if (out == markers[j] + markers[k]) != (j <= k):
            raise SystemExit(f"combining classes: markers of classes {j} and {k} do not order as expected")

    probes = [(cp, k) for cp in nonzero for k in classes]
    outputs = sweep(nfd, [chr(cp) + markers[k] for cp, k in probes])
    ccc: dict[int, int] = {}
    for (cp, k), out in zip(probes, outputs):
        if cp not in ccc and out == chr(cp) + markers[k]:
            ccc[cp] = k
    missing = nonzero_set - set(ccc)
    if missing:
        raise SystemExit(f"combining classes: no class found for {sorted(missing)[:10]}")
    return ccc


def measure() -> dict:
    print(f"measuring tokenizers {tokenizers.__version__} on {len(CODE_POINTS)} code points", file=sys.stderr)
    clean = sweep_code_points(bert(clean_text=True))
    chinese = sweep_code_points(bert(handle_chinese_chars=True))
    strip = sweep_code_points(bert(strip_accents=True))
    lower = sweep_code_points(bert(lowercase=True))
    nfd = sweep_code_points(hf_norm.NFD())

    removed = {cp for cp, out in clean.items() if out == ""}
    to_space = {cp for cp, out in clean.items() if out == " "}
    odd = [cp for cp, out in clean.items() if out not in ("", " ", chr(cp))]
    if odd:
        raise SystemExit(f"clean_text: unexpected outputs for {odd[:10]}")

    cjk = {cp for cp, out in chinese.items() if out == f" {chr(cp)} "}
    odd = [cp for cp, out in chinese.items() if cp not in cjk and out != chr(cp)]
    if odd:
        raise SystemExit(f"handle_chinese_chars: unexpected outputs for {odd[:10]}")

    for cp in range(HANGUL_FIRST, HANGUL_LAST + 1):
        if nfd[cp] != hangul_nfd(cp):
            raise SystemExit(f"NFD: U+{cp:04X} does not follow the Hangul algorithm")
    decomposition = {
        cp: out for cp, out in nfd.items() if out != chr(cp) and not HANGUL_FIRST <= cp <= HANGUL_LAST
    }
    # A table entry must be final: NFD never has to decompose its output again.
    for cp, out in decomposition.items():
        if any(ord(ch) in decomposition for ch in out):
            raise SystemExit(f"NFD: the decomposition of U+{cp:04X} is not a full decomposition")

    stripped = {cp for cp, out in strip.items() if out == ""}
    for cp, out in strip.items():
        if out != "".join(ch for ch in nfd[cp] if ord(ch) not in stripped):
            raise SystemExit(f"strip_accents: U+{cp:04X} is not NFD minus the deleted marks")

    lowercase = {cp: out for cp, out in lower.items() if out != chr(cp)}

    split_ws, split_punct = pre_tokenizer_classes(hf_pre.WhitespaceSplit())
    bert_ws, punctuation = pre_tokenizer_classes(hf_pre.BertPreTokenizer())
    if split_punct:
        raise SystemExit("WhitespaceSplit isolated characters: the sweep is wrong")
    if split_ws != bert_ws:
        raise SystemExit("BertPreTokenizer and WhitespaceSplit disagree on whitespace")

    decomposes = set(decomposition) | set(range(HANGUL_FIRST, HANGUL_LAST + 1))
    return {
        "removed": removed, "to_space": to_space, "cjk": cjk, "decomposition": decomposition,
        "decomposes": decomposes, "stripped": stripped,
        "combining_class": probe_combining_classes(decomposes),
        "lowercase": lowercase, "whitespace": bert_ws, "punctuation": punctuation,
    }


# ---------------------------------------------------------------------------------------------
# Compressing


def ranges(members: set[int], dont_care: frozenset[int] | set[int] = frozenset()) -> list[tuple[int, int]]:
    """Sorted inclusive (start, end) ranges covering `members`.

    A range may run across code points in `dont_care` (ones the table is never asked about,
    such as characters NFD always decomposes), which keeps the tables short.
    """
    return [(lo, hi) for lo, hi, _ in valued_ranges({cp: 1 for cp in members}, dont_care)]


def valued_ranges(values: dict[int, int], dont_care=frozenset()) -> list[tuple[int, int, int]]:
    """Sorted inclusive (start, end, value) ranges of consecutive code points with equal values."""
    out: list[list[int]] = []
    for cp in sorted(values):
        value = values[cp]
        if out and out[-1][2] == value and all(c in dont_care for c in range(out[-1][1] + 1, cp)):
            out[-1][1] = cp
        else:
            out.append([cp, cp, value])
    return [(lo, hi, v) for lo, hi, v in out]


# ---------------------------------------------------------------------------------------------
# Writing


def _printable(ch: str) -> bool:
    """Written as itself in a generated literal; everything else is escaped, so files stay ASCII."""
    return 0x20 <= ord(ch) < 0x7F and ch not in '"\\'


def py_str(text: str) -> str:
    return '"' + "".join(ch if _printable(ch) else _py_escape(ord(ch)) for ch in text) + '"'


def _py_escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def rs_str(text: str) -> str:
    return '"' + "".join(ch if _printable(ch) else f"\\u{{{ord(ch):x}}}" for ch in text) + '"'


def wrap(items: list[str], indent: str, width: int = 100) -> str:
    lines: list[str] = []
    line = indent
    for item in items:
        if len(line) + len(item) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + " "
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


TABLE_DOCS = {
    "CLEAN_REMOVED": "clean_text deletes these (NUL, U+FFFD and Cc/Cf/Co in unicode_categories 0.1, minus \\t\\n\\r).",
    "CLEAN_TO_SPACE": "clean_text turns these into ' ' (Rust `char::is_whitespace`, minus what it deletes).",
    "CJK": "handle_chinese_chars puts a space before and after these.",
    "STRIP_REMOVED": "strip_accents deletes these after NFD (nonspacing marks of unicode_categories 0.1).",
    "WHITESPACE": "BertPreTokenizer and WhitespaceSplit split on these and drop them (Rust `char::is_whitespace`).",
    "PUNCTUATION": "BertPreTokenizer isolates these (ASCII punctuation plus unicode_categories 0.1 P*).",
}
RANGE_TABLES = [
    ("CLEAN_REMOVED", "removed", False),
    ("CLEAN_TO_SPACE", "to_space", False),
    ("CJK", "cjk", False),
    ("STRIP_REMOVED", "stripped", True),
    ("WHITESPACE", "whitespace", False),
    ("PUNCTUATION", "punctuation", False),
]


def header_lines() -> list[str]:
    return [
        f"Measured from Hugging Face tokenizers {tokenizers.__version__} by tools/gen_bert_tables.py.",
        "GENERATED: do not edit. Rerun `python3 tools/gen_bert_tables.py` after upgrading tokenizers.",
        "Ranges are inclusive (start, end) pairs, sorted; where a table is only consulted on NFD output,",
        "a range may also cover code points that NFD always decomposes.",
    ]


def golden_cases() -> list[tuple[str, tuple, str]]:
    cases = []
    for flags in GOLDEN_FLAGS:
        normalizer = bert(*flags)
        for text in GOLDEN_INPUTS:
            cases.append((text, flags, normalizer.normalize_str(text)))
    return cases


def write_python(tables: dict, golden) -> str:
    out = ['"""Unicode tables of BERT\'s text stages (see tinyllm.tok.stages.bert).', ""]
    out += header_lines()
    out += ['"""', "", f'TOKENIZERS_VERSION = "{tokenizers.__version__}"', ""]
    for name, key, care_only_nfd in RANGE_TABLES:
        dont_care = tables["decomposes"] if care_only_nfd else frozenset()
        items = [f"(0x{lo:X}, 0x{hi:X})," for lo, hi in ranges(tables[key], dont_care)]
        out += [f"# {TABLE_DOCS[name]}", f"{name} = (", wrap(items, "    "), ")", ""]
    ccc = valued_ranges(tables["combining_class"], tables["decomposes"])
    out += ["# Canonical combining class (start, end, class) of NFD output, where not 0.",
            "COMBINING_CLASS = (", wrap([f"(0x{lo:X}, 0x{hi:X}, {v})," for lo, hi, v in ccc], "    "), ")", ""]
    items = [f"0x{cp:X}: {py_str(s)}," for cp, s in sorted(tables["decomposition"].items())]
    out += ["# Full canonical decomposition (HF's NFD) of every code point that has one, Hangul aside.",
            "DECOMPOSITION = {", wrap(items, "    "), "}", ""]
    items = [f"0x{cp:X}: {py_str(s)}," for cp, s in sorted(tables["lowercase"].items())]
    out += ["# Lowercase (Rust `char::to_lowercase`) of every code point that is not its own lowercase.",
            "LOWERCASE = {", wrap(items, "    "), "}", ""]
    items = [f"({py_str(t)}, {flags!r}, {py_str(expected)})," for t, flags, expected in golden]
    out += ["# Test data: (text, (clean_text, handle_chinese_chars, strip_accents, lowercase), HF output).",
            "# The Rust unit tests check the same cases (src/stages/bert_tables.rs holds a copy).",
            "GOLDEN = (", *["    " + i for i in items], ")", ""]
    return "\n".join(out)


def rs_flags(flags) -> str:
    """(true, true, None, true) for the Rust tuple of a normalizer's four flags."""
    clean_text, handle_chinese_chars, strip_accents, lowercase = flags
    strip = "None" if strip_accents is None else f"Some({str(strip_accents).lower()})"
    return f"({str(clean_text).lower()}, {str(handle_chinese_chars).lower()}, {strip}, {str(lowercase).lower()})"


def write_rust(tables: dict, golden) -> str:
    out = ["//! Unicode tables of BERT's text stages (see `stages::bert`).", "//!"]
    out += ["//! " + line for line in header_lines()]
    out += ["", f'pub const TOKENIZERS_VERSION: &str = "{tokenizers.__version__}";', ""]
    for name, key, care_only_nfd in RANGE_TABLES:
        dont_care = tables["decomposes"] if care_only_nfd else frozenset()
        items = [f"(0x{lo:X}, 0x{hi:X})," for lo, hi in ranges(tables[key], dont_care)]
        out += [f"/// {TABLE_DOCS[name]}", "#[rustfmt::skip]", f"pub static {name}: &[(u32, u32)] = &[",
                wrap(items, "    "), "];", ""]
    ccc = valued_ranges(tables["combining_class"], tables["decomposes"])
    out += ["/// Canonical combining class (start, end, class) of NFD output, where not 0.", "#[rustfmt::skip]",
            "pub static COMBINING_CLASS: &[(u32, u32, u8)] = &[",
            wrap([f"(0x{lo:X}, 0x{hi:X}, {v})," for lo, hi, v in ccc], "    "), "];", ""]
    items = [f"(0x{cp:X}, {rs_str(s)})," for cp, s in sorted(tables["decomposition"].items())]
    out += ["/// Full canonical decomposition (HF's NFD) of every code point that has one, Hangul aside.",
            "#[rustfmt::skip]", "pub static DECOMPOSITION: &[(u32, &str)] = &[", wrap(items, "    "), "];", ""]
    items = [f"(0x{cp:X}, {rs_str(s)})," for cp, s in sorted(tables["lowercase"].items())]
    out += ["/// Lowercase (Rust `char::to_lowercase` as HF was built) of every code point that is not its own.",
            "#[rustfmt::skip]", "pub static LOWERCASE: &[(u32, &str)] = &[", wrap(items, "    "), "];", ""]
    items = [f"({rs_str(text)}, {rs_flags(flags)}, {rs_str(expected)})," for text, flags, expected in golden]
    out += ["/// Test data: (clean_text, handle_chinese_chars, strip_accents, lowercase) of a golden case;",
            "/// the Python tests check the same cases (`GOLDEN` in tinyllm/tok/stages/bert_tables.py).",
            "#[cfg(test)]", "pub type GoldenFlags = (bool, bool, Option<bool>, bool);", "",
            "/// (text, flags, HF output) for the Rust unit tests.",
            "#[cfg(test)]", "#[rustfmt::skip]",
            "pub static GOLDEN: &[(&str, GoldenFlags, &str)] = &[",
            *["    " + i for i in items], "];", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Verifying


def verify() -> None:
    """Check tinyllm's reference (with the tables in the tree) against HF on every code point."""
    sys.path.insert(0, str(ROOT / "python"))
    for name in ("tinyllm.tok.stages.bert_tables", "tinyllm.tok.stages.bert"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
    bert_text = importlib.import_module("tinyllm.tok.stages.bert")
    tables = importlib.import_module("tinyllm.tok.stages.bert_tables")
    if tables.TOKENIZERS_VERSION != tokenizers.__version__:
        print(f"note: tables were measured with tokenizers {tables.TOKENIZERS_VERSION}, "
              f"installed is {tokenizers.__version__}", file=sys.stderr)
    singles = [chr(cp) for cp in CODE_POINTS]
    failures = 0
    for flags in [(True, True, None, True), (True, True, False, True), (True, True, True, False),
                  (False, False, True, False), (False, False, False, True)]:
        ours = bert_text.BertNormalizer(*flags)
        for text, want in zip(singles, sweep(bert(*flags), singles)):
            if ours.normalize(text) != want:
                failures += 1
                if failures < 10:
                    print(f"normalize{flags}: {text!r}: ours {ours.normalize(text)!r}, HF {want!r}", file=sys.stderr)
    failures += _verify_mark_runs(bert_text)
    failures += _verify_pre_tokenizers(bert_text)
    if failures:
        raise SystemExit(f"verify: {failures} differences from HF")
    print("verify: the reference agrees with HF on every code point and on mark runs", file=sys.stderr)


def _verify_mark_runs(bert_text) -> int:
    """Random runs of non-starters (and a few starters) through NFD with strip on and off."""
    from tinyllm.tok.stages import bert_tables as t

    rng = random.Random(0)
    marks = [chr(cp) for lo, hi, _ in t.COMBINING_CLASS for cp in range(lo, hi + 1)]
    marks += [chr(cp) for cp in (0x344, 0x1E08, 0x1FC1, 0xF73, 0x1D15E, 0x61, 0xAC01, 0x300C)]
    texts = ["".join(rng.choice(marks) for _ in range(rng.randint(1, 6))) for _ in range(100_000)]
    failures = 0
    for flags in [(False, False, True, False), (True, True, None, True)]:
        ours = bert_text.BertNormalizer(*flags)
        for text, want in zip(texts, sweep(bert(*flags), texts)):
            if ours.normalize(text) != want:
                failures += 1
                if failures < 10:
                    print(f"mark run {flags}: {text!r}: ours {ours.normalize(text)!r}, HF {want!r}", file=sys.stderr)
    return failures


def _verify_pre_tokenizers(bert_text) -> int:
    failures = 0
    for ours, theirs in [(bert_text.BertPreTokenizer(), hf_pre.BertPreTokenizer()),
                         (bert_text.WhitespaceSplit(), hf_pre.WhitespaceSplit())]:
        for i in range(0, len(CODE_POINTS), CHUNK):
            text = "a".join(map(chr, CODE_POINTS[i:i + CHUNK]))
            want = [(p, s, e) for p, (s, e) in theirs.pre_tokenize_str(text)]
            if ours.split_piece(text) != want:
                failures += 1
                print(f"{ours.type}: differs on the chunk starting at U+{CODE_POINTS[i]:04X}", file=sys.stderr)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="verify the tables in the tree; write nothing")
    args = parser.parse_args()
    if not args.check:
        tables = measure()
        golden = golden_cases()
        PY_OUT.write_text(write_python(tables, golden), encoding="utf-8")
        RS_OUT.write_text(write_rust(tables, golden), encoding="utf-8")
        differ = sum(1 for cp, k in tables["combining_class"].items() if unicodedata.combining(chr(cp)) != k)
        print(f"wrote {PY_OUT.relative_to(ROOT)} and {RS_OUT.relative_to(ROOT)} "
              f"({differ} combining classes differ from this Python's unicodedata "
              f"{unicodedata.unidata_version})", file=sys.stderr)
    verify()


if __name__ == "__main__":
    main()
