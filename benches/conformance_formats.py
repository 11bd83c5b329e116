"""The files people have, on every line of every shared corpus: `.model` against sentencepiece,
`.tiktoken` against tiktoken, and `tinyllm convert`'s output, loaded by Hugging Face, against both.

    python benches/conformance_formats.py                  # everything (a few minutes)
    python benches/conformance_formats.py --only llama --only cl100k

SentencePiece models are trained here with sentencepiece's trainer, in the configurations the
tests use (tests/support/spm_models.py: BPE and Unigram, byte fallback, five normalization rules,
user-defined and control symbols, whitespace options), plus rut5-base's real spiece.model. For each:
ids and decoded text of tinyllm's `load(x.model)` on every corpus line and 2,000 stress strings,
then the ids of Hugging Face on the converted tokenizer.json (where a conversion exists). Exits 1
if tinyllm's own loading differs anywhere or a Llama-style or tiktoken conversion differs; the
other conversions print their agreement (Hugging Face's own limits, see docs/formats.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the trained-model configurations and stress strings

from tests.peers import PRESETS, SHARED, shared_corpus_lines  # noqa: E402
from tests.support.stress import stress_strings  # noqa: E402

#: Conversions that must agree with the source library exactly.
EXACT_CONVERSIONS = ("llama", "cl100k", "o200k")


def _hf(directory: Path):
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))


def _report(label: str, expected: list, got: list, lines: list[str]) -> int:
    bad = [k for k, (a, b) in enumerate(zip(expected, got)) if a != b]
    first = f"; first: line {bad[0]} {lines[bad[0]][:40]!r}" if bad else ""
    print(f"  {label}: {len(lines) - len(bad):,} / {len(lines):,} equal{first}")
    return len(bad)


def check_model(name: str, data: bytes, lines: list[str]) -> int:
    import sentencepiece

    from tinyllm.tok import load
    from tinyllm.tok.convert import convert

    sp = sentencepiece.SentencePieceProcessor(model_proto=data)
    work = Path(tempfile.mkdtemp())
    (work / f"{name}.model").write_bytes(data)
    start = time.perf_counter()
    tok = load(work / f"{name}.model")
    expected = sp.encode(lines)
    print(f"{name} (.model, {'Rust' if tok.uses_fast_path else 'reference'}):")
    failures = _report("tinyllm ids vs sentencepiece", expected, tok.encode_batch(lines), lines)
    failures += _report("tinyllm decode vs sentencepiece", [sp.decode(ids) for ids in expected],
                        [tok.decode(ids) for ids in expected], lines)
    try:
        convert(work / f"{name}.model", work / "hf")
    except ValueError as e:
        print(f"  convert: refused ({str(e)[:90]})")
    else:
        got = [e.ids for e in _hf(work / "hf").encode_batch_fast(lines, add_special_tokens=False)]
        differ = _report("Hugging Face on the converted file vs sentencepiece", expected, got, lines)
        failures += differ if name in EXACT_CONVERSIONS else 0
    print(f"  ({time.perf_counter() - start:.0f} s)")
    return failures


def check_tiktoken(name: str, lines: list[str]) -> int:
    import tiktoken
    import tiktoken.load

    from tinyllm.tok import load
    from tinyllm.tok.convert import convert
    from tinyllm.tok.formats.tiktoken import PATTERNS, SPECIAL_TOKENS

    file = PRESETS / name / f"{name}_base.tiktoken"
    official = PATTERNS[name].replace(r"\p{N}{1,3}", r"\p{N}{1,3}+") if name == "cl100k" else PATTERNS[name]
    enc = tiktoken.Encoding(name, pat_str=official, mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(file)),
                            special_tokens=SPECIAL_TOKENS[name])
    start = time.perf_counter()
    expected = enc.encode_ordinary_batch(lines)
    print(f"{name} (.tiktoken):")
    failures = _report("tinyllm ids vs tiktoken", expected, load(file).encode_batch(lines), lines)
    out = Path(tempfile.mkdtemp())
    convert(file, out)
    # Hugging Face always matches added tokens in text (tiktoken's encode_ordinary never does), so
    # lines that spell a special token are left out of this comparison.
    plain = [k for k, line in enumerate(lines) if not any(s in line for s in SPECIAL_TOKENS[name])]
    got = [e.ids for e in _hf(out).encode_batch_fast([lines[k] for k in plain], add_special_tokens=False)]
    failures += _report(f"Hugging Face on the converted file vs tiktoken ({len(lines) - len(plain)} lines that "
                        "spell a special left out)", [expected[k] for k in plain], got, [lines[k] for k in plain])
    print(f"  ({time.perf_counter() - start:.0f} s)")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a trained configuration, rut5-base, cl100k or o200k")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"conformance skipped: {SHARED} is missing")
        return 0
    from tests.support.spm_models import CONFIGS, spm_model

    lines = shared_corpus_lines() + stress_strings(2000)
    wanted = set(args.only or [*CONFIGS, "rut5-base", "cl100k", "o200k"])
    failures = 0
    for name in CONFIGS:
        if name in wanted:
            failures += check_model(name, spm_model(name), lines)
    if "rut5-base" in wanted:
        failures += check_model("rut5-base", (SHARED / "tokenizers" / "rut5-base" / "spiece.model").read_bytes(), lines)
    for name in ("cl100k", "o200k"):
        if name in wanted:
            failures += check_tiktoken(name, lines)
    print("conformance:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
