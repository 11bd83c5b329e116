#!/usr/bin/env python3
"""Generate the Unicode tables of the NFKD, NFC, NFKC, StripAccents, Whitespace and UnicodeScripts stages by
measuring Hugging Face `tokenizers` (the companion of tools/gen_bert_tables.py, whose NFD and
combining-class tables these stages share).

HF classifies characters with its own crates (`unicode-normalization-alignments` 0.1 for NFKD
and combining marks, the `regex` crate's `\\w` and `\\s` for Whitespace, a generated script table
for UnicodeScripts); none has the running Python's Unicode version. So this script sends every
code point (surrogates aside) through HF's stages and writes what they did:

    python/tinyllm/tok/stages/unicode_tables.py   read by the pure-Python reference
    src/stages/unicode_tables.rs                  read by the Rust fast path

Measured:

* NFKD: the compatibility decomposition of every code point whose NFKD differs from its NFD;
* NFC and NFKC: the canonical composition pairs. A code point c that HF's NFD decomposes and its
  NFC leaves alone is a primary composite: its pair is (NFC of all but the last character of
  NFD(c), that last character), and HF must compose the pair back into c. Hangul syllables are
  computed, not listed. (Python's `unicodedata` is a newer Unicode: it composes U+11935 U+11930,
  which HF leaves apart, and knows combining classes HF does not.)
* StripAccents: the code points it deletes (combining marks, Mn/Mc/Me);
* Whitespace (`\\w+|[^\\w\\s]+`): the word characters and the whitespace characters; a code point
  is placed after `a` (it joins the piece when it is a word character) and after `!` (it joins
  when it is neither word nor whitespace), and one that no piece covers is whitespace;
* UnicodeScripts: a script class per code point, 0 for "Any" (spaces and unassigned code points,
  which never cause a cut). A code point c is "Any" when `a c α c a` is not cut at either c; the
  others are cut into runs of one script by sending them in code-point order, and runs are
  grouped into classes by asking HF whether two representatives stay together. Classes are
  numbered by their first code point. (HF maps Hiragana, Katakana and U+30FC to Han; the
  measurement sees that by itself.)

Punctuation uses BertPreTokenizer's table (tinyllm/tok/stages/bert_tables.py: the same
definition in HF); the check below confirms it.

    python3 tools/gen_stage_tables.py            # write both files, then verify
    python3 tools/gen_stage_tables.py --check    # verify the files in the tree, write nothing
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
from pathlib import Path

import tokenizers
from tokenizers import normalizers as hf_norm
from tokenizers import pre_tokenizers as hf_pre

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_bert_tables as common  # noqa: E402  (sweep, ranges, writers)

ROOT = common.ROOT
PY_OUT = ROOT / "python" / "tinyllm" / "tok" / "stages" / "unicode_tables.py"
RS_OUT = ROOT / "src" / "stages" / "unicode_tables.rs"
CODE_POINTS = common.CODE_POINTS
CHUNK = common.CHUNK
# NFKD maps some characters to '|' and '~' (the BERT sweep's separators); no stage here produces
# or removes these two controls.
common.SEPARATORS = ("\x00", "\x01")
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def piece_starts(pre_tokenizer, text: str) -> tuple[set[int], bytearray]:
    """Code-point offsets where HF starts a piece, and which offsets a piece covers."""
    starts: set[int] = set()
    covered = bytearray(len(text))
    for _, (s, e) in pre_tokenizer.pre_tokenize_str(text):
        starts.add(s)
        covered[s:e] = b"\x01" * (e - s)
    return starts, covered


def measure_whitespace() -> tuple[set[int], set[int]]:
    word: set[int] = set()
    space: set[int] = set()
    hf = hf_pre.Whitespace()
    for i in range(0, len(CODE_POINTS), CHUNK):
        chunk = CODE_POINTS[i:i + CHUNK]
        # per code point c: "a c \t ! c \t" (6 code points)
        text = "".join(f"a{chr(cp)}\t!{chr(cp)}\t" for cp in chunk)
        starts, covered = piece_starts(hf, text)
        for j, cp in enumerate(chunk):
            at = 6 * j
            if not covered[at + 1]:
                space.add(cp)
            elif at + 1 not in starts:
                word.add(cp)
            elif at + 4 not in starts:
                pass  # punctuation-like: joins '!'
            else:
                raise SystemExit(f"Whitespace: U+{cp:04X} is neither word, space nor other")
    return word, space


def measure_scripts() -> dict[int, int]:
    hf = hf_pre.UnicodeScripts()
    any_: set[int] = set()
    for i in range(0, len(CODE_POINTS), CHUNK):
        chunk = CODE_POINTS[i:i + CHUNK]
        text = "".join(f"a{chr(cp)}\u03b1{chr(cp)}a" for cp in chunk)
        starts, _ = piece_starts(hf, text)
        any_.update(cp for j, cp in enumerate(chunk) if 5 * j + 1 not in starts and 5 * j + 3 not in starts)
    rest = [cp for cp in CODE_POINTS if cp not in any_]
    runs: list[list[int]] = []  # [first, last] of consecutive same-script code points in `rest`
    for i in range(0, len(rest), CHUNK):
        chunk = rest[i:i + CHUNK]
        starts, _ = piece_starts(hf, "".join(map(chr, chunk)))
        for j, cp in enumerate(chunk):
            if j in starts and not (j == 0 and runs and _same(hf, runs[-1][1], cp)):
                runs.append([cp, cp])
            runs[-1][1] = cp
    reps: list[int] = []  # one code point per class, class k + 1
    classes: dict[int, int] = {}
    position = {cp: k for k, cp in enumerate(rest)}
    for first, last in runs:
        klass = next((k + 1 for k, rep in enumerate(reps) if _same(hf, rep, first)), None)
        if klass is None:
            reps.append(first)
            klass = len(reps)
        for cp in rest[position[first]:position[last] + 1]:
            classes[cp] = klass
    return classes


def _same(hf, a: int, b: int) -> bool:
    return len(hf.pre_tokenize_str(chr(a) + chr(b))) == 1


def measure() -> dict:
    print(f"measuring tokenizers {tokenizers.__version__} on {len(CODE_POINTS)} code points", file=sys.stderr)
    singles = [chr(cp) for cp in CODE_POINTS]
    nfd = dict(zip(CODE_POINTS, common.sweep(hf_norm.NFD(), singles)))
    nfkd = dict(zip(CODE_POINTS, common.sweep(hf_norm.NFKD(), singles)))
    compat = {cp: out for cp, out in nfkd.items() if out != nfd[cp]}
    for cp, out in compat.items():
        if any(nfkd[ord(ch)] != ch for ch in out):
            raise SystemExit(f"NFKD: the decomposition of U+{cp:04X} is not a full decomposition")
    stripped = dict(zip(CODE_POINTS, common.sweep(hf_norm.StripAccents(), singles)))
    marks = {cp for cp, out in stripped.items() if out == ""}
    odd = [cp for cp, out in stripped.items() if out not in ("", chr(cp))]
    if odd:
        raise SystemExit(f"StripAccents: unexpected outputs for {odd[:10]}")
    word, space = measure_whitespace()
    return {"compat": compat, "marks": marks, "word": word, "space": space, "scripts": measure_scripts(),
            "composition": measure_composition(nfd)}


def measure_composition(nfd: dict[int, str]) -> dict[tuple[int, int], int]:
    """(first, second) -> primary composite, for every composition HF's NFC makes (Hangul aside)."""
    nfc = dict(zip(CODE_POINTS, common.sweep(hf_norm.NFC(), [chr(cp) for cp in CODE_POINTS])))
    composites = [cp for cp in CODE_POINTS if nfd[cp] != chr(cp) and nfc[cp] == chr(cp)
                  and not HANGUL_FIRST <= cp <= HANGUL_LAST]
    heads = common.sweep(hf_norm.NFC(), [nfd[cp][:-1] for cp in composites])
    pairs: dict[tuple[int, int], int] = {}
    for cp, head in zip(composites, heads):
        if len(head) != 1:
            raise SystemExit(f"NFC: U+{cp:04X} is not the composition of one character and {nfd[cp][-1]!r}")
        pairs[(ord(head), ord(nfd[cp][-1]))] = cp
    back = common.sweep(hf_norm.NFC(), [chr(a) + chr(b) for a, b in pairs])
    for (a, b), composed in zip(pairs, back):
        if composed != chr(pairs[(a, b)]):
            raise SystemExit(f"NFC: U+{a:04X} U+{b:04X} gives {composed!r}, not U+{pairs[(a, b)]:04X}")
    return pairs


TABLE_DOCS = {
    "COMBINING_MARKS": "StripAccents deletes these (combining marks of unicode-normalization-alignments 0.1).",
    "WORD": "Whitespace's \\w (the regex crate's Unicode word characters).",
    "SPACE": "Whitespace's \\s (the regex crate's Unicode White_Space).",
}
RANGE_TABLES = [("COMBINING_MARKS", "marks"), ("WORD", "word"), ("SPACE", "space")]


def header_lines() -> list[str]:
    return [
        f"Measured from Hugging Face tokenizers {tokenizers.__version__} by tools/gen_stage_tables.py.",
        "GENERATED: do not edit. Rerun `python3 tools/gen_stage_tables.py` after upgrading tokenizers.",
        "Ranges are inclusive (start, end) pairs, sorted.",
    ]


def write_python(tables: dict) -> str:
    out = ['"""Unicode tables of the NFKD, NFC, NFKC, StripAccents, Whitespace and UnicodeScripts stages.', ""]
    out += header_lines()
    out += ['"""', "", f'TOKENIZERS_VERSION = "{tokenizers.__version__}"', ""]
    for name, key in RANGE_TABLES:
        items = [f"(0x{lo:X}, 0x{hi:X})," for lo, hi in common.ranges(tables[key])]
        out += [f"# {TABLE_DOCS[name]}", f"{name} = (", common.wrap(items, "    "), ")", ""]
    scripts = common.valued_ranges(tables["scripts"])
    out += ["# UnicodeScripts: (start, end, class) ranges; a code point in none is \"Any\" (class 0).",
            "SCRIPT_CLASS = (", common.wrap([f"(0x{lo:X}, 0x{hi:X}, {v})," for lo, hi, v in scripts], "    "), ")", ""]
    items = [f"0x{cp:X}: {common.py_str(s)}," for cp, s in sorted(tables["compat"].items())]
    out += ["# Full compatibility decomposition (HF's NFKD) of every code point whose NFKD is not its NFD.",
            "COMPAT_DECOMPOSITION = {", common.wrap(items, "    "), "}", ""]
    items = [f"(0x{a:X}, 0x{b:X}): 0x{c:X}," for (a, b), c in sorted(tables["composition"].items())]
    out += ["# NFC and NFKC: (first, second) -> the primary composite HF makes of them (Hangul is computed).",
            "COMPOSITION = {", common.wrap(items, "    "), "}", ""]
    return "\n".join(out)


def write_rust(tables: dict) -> str:
    out = ["//! Unicode tables of the NFKD, NFC, NFKC, StripAccents, Whitespace and UnicodeScripts stages.", "//!"]
    out += ["//! " + line for line in header_lines()]
    out += ["", f'pub const TOKENIZERS_VERSION: &str = "{tokenizers.__version__}";', ""]
    for name, key in RANGE_TABLES:
        items = [f"(0x{lo:X}, 0x{hi:X})," for lo, hi in common.ranges(tables[key])]
        out += [f"/// {TABLE_DOCS[name]}", "#[rustfmt::skip]", f"pub static {name}: &[(u32, u32)] = &[",
                common.wrap(items, "    "), "];", ""]
    scripts = common.valued_ranges(tables["scripts"])
    out += ["/// UnicodeScripts: (start, end, class) ranges; a code point in none is \"Any\" (class 0).",
            "#[rustfmt::skip]", "pub static SCRIPT_CLASS: &[(u32, u32, u16)] = &[",
            common.wrap([f"(0x{lo:X}, 0x{hi:X}, {v})," for lo, hi, v in scripts], "    "), "];", ""]
    items = [f"(0x{cp:X}, {common.rs_str(s)})," for cp, s in sorted(tables["compat"].items())]
    out += ["/// Full compatibility decomposition (HF's NFKD) of every code point whose NFKD is not its NFD.",
            "#[rustfmt::skip]", "pub static COMPAT_DECOMPOSITION: &[(u32, &str)] = &[",
            common.wrap(items, "    "), "];", ""]
    items = [f"(0x{a:X}, 0x{b:X}, 0x{c:X})," for (a, b), c in sorted(tables["composition"].items())]
    out += ["/// NFC and NFKC: (first, second, primary composite), sorted by (first, second); Hangul is computed.",
            "#[rustfmt::skip]", "pub static COMPOSITION: &[(u32, u32, u32)] = &[",
            common.wrap(items, "    "), "];", ""]
    return "\n".join(out)


def verify() -> None:
    """Check tinyllm's reference stages (with the tables in the tree) against HF."""
    sys.path.insert(0, str(ROOT / "python"))
    for name in ("tinyllm.tok.stages.unicode_tables", "tinyllm.tok.stages.decompose",
                 "tinyllm.tok.stages.compose", "tinyllm.tok.stages.normalizers", "tinyllm.tok.stages.pre_tokenizers"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
    norm = importlib.import_module("tinyllm.tok.stages.normalizers")
    pre = importlib.import_module("tinyllm.tok.stages.pre_tokenizers")
    singles = [chr(cp) for cp in CODE_POINTS]
    rng = random.Random(0)
    mixed = ["".join(rng.choice(singles[:0x3400] + singles[0xF900:0x10000] + singles[0x1D100:0x1D200])
                     for _ in range(rng.randint(1, 8))) for _ in range(50_000)]
    failures = 0
    for ours, theirs in [(norm.NFD(), hf_norm.NFD()), (norm.NFKD(), hf_norm.NFKD()),
                         (norm.StripAccents(), hf_norm.StripAccents())]:
        for texts in (singles, mixed):
            for text, want in zip(texts, common.sweep(theirs, texts)):
                if ours.normalize(text) != want:
                    failures += 1
                    if failures < 10:
                        print(f"{ours.type}: {text!r}: ours {ours.normalize(text)!r}, HF {want!r}", file=sys.stderr)
    failures += verify_composition(norm, mixed)
    for ours, theirs in [(pre.Whitespace(), hf_pre.Whitespace()), (pre.Punctuation(), hf_pre.Punctuation()),
                         (pre.UnicodeScripts(), hf_pre.UnicodeScripts())]:
        for i in range(0, len(CODE_POINTS), CHUNK):
            for joiner in ("a", " ", "\u03b1", "1"):
                text = joiner.join(map(chr, CODE_POINTS[i:i + CHUNK]))
                want = [(p, s, e) for p, (s, e) in theirs.pre_tokenize_str(text)]
                if ours.pre_tokenize(text) != want:
                    failures += 1
                    print(f"{ours.type}: differs on the chunk at U+{CODE_POINTS[i]:04X} joined by {joiner!r}",
                          file=sys.stderr)
    if failures:
        raise SystemExit(f"verify: {failures} differences from HF")
    print("verify: the reference agrees with HF on every code point", file=sys.stderr)


# Where the NFC / NFKC check puts every code point c: alone, after a starter it may join, before
# marks it may take (U+0301 U+0323 also tests reordering), and around Hangul jamo.
CONTEXTS = ["{}", "a{}", "{}\u0301", "{}\u0308", "{}\u0323", "{}\u0301\u0323", "e\u0301{}", "\u1100{}",
            "\uac00{}", "\u1100\u1161{}", "{}\u1161\u11a8", "\u0323{}\u0301"]


class _Ours:
    """A tinyllm stage under HF's `normalize_str` name, so that `common.sweep` batches it too."""

    def __init__(self, stage) -> None:
        self.normalize_str = stage.normalize


def unicodedata_pairs() -> list[str]:
    """Every canonical pair of this Python's (newer) Unicode, as text: HF must agree with the
    reference on each, whether or not it composes it."""
    import unicodedata

    out = []
    for cp in CODE_POINTS:
        d = unicodedata.decomposition(chr(cp)).split()
        if len(d) == 2 and not d[0].startswith("<"):
            out.append("".join(chr(int(h, 16)) for h in d))
    return out


def verify_composition(norm, mixed: list[str]) -> int:
    """NFC and NFKC of the reference against HF: every code point in every CONTEXTS slot, every
    canonical pair, and random mixed text; each compared in batches."""
    failures = 0
    inputs = [[form.format(chr(cp)) for cp in CODE_POINTS] for form in CONTEXTS] + [unicodedata_pairs(), mixed]
    for ours, theirs in [(norm.NFC(), hf_norm.NFC()), (norm.NFKC(), hf_norm.NFKC())]:
        for texts in inputs:
            got = common.sweep(_Ours(ours), texts)
            for text, mine, want in zip(texts, got, common.sweep(theirs, texts)):
                if mine != want:
                    failures += 1
                    if failures < 10:
                        print(f"{ours.type}: {text!r}: ours {mine!r}, HF {want!r}", file=sys.stderr)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="verify the tables in the tree; write nothing")
    args = parser.parse_args()
    if not args.check:
        tables = measure()
        PY_OUT.write_text(write_python(tables), encoding="utf-8")
        RS_OUT.write_text(write_rust(tables), encoding="utf-8")
        print(f"wrote {PY_OUT.relative_to(ROOT)} and {RS_OUT.relative_to(ROOT)}", file=sys.stderr)
    verify()


if __name__ == "__main__":
    main()
