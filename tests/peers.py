"""Peers and data for conformance tests: HF tokenizers, tiktoken, the shared corpora."""

from __future__ import annotations

import base64
import functools
import os
from pathlib import Path

import pytest
import tiktoken
import tokenizers

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
# The shared data (read at run time, never copied: see ../shared/data/README.md).
# TINYLLM_SHARED_DATA points elsewhere (e.g. to check what happens when it is missing).
SHARED = Path(os.environ.get("TINYLLM_SHARED_DATA") or ROOT.parent / "shared" / "data")
# Under CI the shared data is required: a test that needs it fails instead of skipping.
CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
PRESETS = ROOT / "python" / "tinyllm" / "tok" / "presets"

GPT2_TIKTOKEN_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def require_shared(path: Path) -> Path:
    """`path` (under SHARED) if it exists. Otherwise the test skips, saying which path is missing,
    or, under CI=true, fails: CI must not pass by skipping the tests on real data."""
    path = Path(path)
    if path.exists():
        return path
    message = f"shared data missing: {path} does not exist (SHARED = {SHARED}; set TINYLLM_SHARED_DATA to move it)"
    if CI:
        pytest.fail(f"CI=true requires the shared test data; {message}", pytrace=False)
    pytest.skip(message)


def tokenizer_path(name: str) -> Path:
    """The tokenizer.json of a preset (shipped) or of a shared-data tokenizer (see require_shared)."""
    for local in (PRESETS / name / "tokenizer.json", FIXTURES / name / "tokenizer.json"):
        if local.is_file():
            return local
    return require_shared(SHARED / "tokenizers" / name / "tokenizer.json")


@functools.lru_cache(maxsize=None)
def hf(name: str):
    return tokenizers.Tokenizer.from_file(str(tokenizer_path(name)))


@functools.lru_cache(maxsize=None)
def hf_plain(name: str):
    """The Hugging Face tokenizer without the truncation and padding some files have baked in
    (BERT's pads everything to 128), which tinyllm ignores."""
    tok = hf(name)
    tok = type(tok).from_str(tok.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


@functools.lru_cache(maxsize=None)
def ours(name: str):
    from tinyllm.tok import load

    return load(tokenizer_path(name))


def assert_same_as_hf(name: str, texts: list[str], add_special: bool) -> None:
    """Ids (with or without the template) and decodes (skipping specials or not) equal HF's."""
    ref, tok = hf_plain(name), ours(name)
    theirs = [e.ids for e in ref.encode_batch(texts, add_special_tokens=add_special)]
    mine = tok.encode_batch(texts, add_special, allowed_special="all")
    for text, a, b in zip(texts, mine, theirs, strict=True):
        assert a == b, f"{name}: ids differ for {text!r}"
    for skip in (False, True):
        decoded = ref.decode_batch(theirs, skip_special_tokens=skip)
        for text, a, d in zip(texts, mine, decoded, strict=True):
            assert tok.decode(a, skip_special=skip) == d, f"{name}: decode (skip_special={skip}) differs for {text!r}"


@functools.lru_cache(maxsize=None)
def ours_reference(name: str):
    from tinyllm.tok import load

    return load(tokenizer_path(name)).use_reference()


@functools.lru_cache(maxsize=None)
def tiktoken_gpt2():
    ranks = {}
    for line in (FIXTURES / "gpt2.tiktoken").read_bytes().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        "gpt2-fixture", pat_str=GPT2_TIKTOKEN_PATTERN, mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 50256},
    )


def fixture_lines() -> list[str]:
    return (FIXTURES / "code_slice.txt").read_text(encoding="utf-8").splitlines(keepends=True)


def shared_corpus_documents(size: int = 2000, every: int = 1) -> list[str]:
    """Every `every`-th document of at least `size` characters (tests.support.documents) over
    every shared corpus file: texts long enough for the 64-byte block readers."""
    from tests.support.documents import documents

    return documents(shared_corpus_lines(), size)[::every]


def shared_corpus_lines(every: int = 1) -> list[str]:
    """Every `every`-th line of every shared corpus file (see require_shared)."""
    corpora = require_shared(SHARED / "corpora")
    lines: list[str] = []
    for path in sorted(corpora.rglob("*.txt")):
        with open(path, encoding="utf-8", newline="") as f:
            lines.extend(f.read().splitlines(keepends=True)[::every])
    return lines
