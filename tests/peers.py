"""Peers and data for conformance tests: HF tokenizers, tiktoken, the shared corpora."""

from __future__ import annotations

import base64
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SHARED = ROOT.parent / "shared" / "data"
PRESETS = ROOT / "python" / "tinyllm" / "tok" / "presets"

GPT2_TIKTOKEN_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def tokenizer_path(name: str) -> Path:
    """The tokenizer.json of a preset (shipped) or of a shared-data tokenizer (skip if absent)."""
    for local in (PRESETS / name / "tokenizer.json", FIXTURES / name / "tokenizer.json"):
        if local.is_file():
            return local
    path = SHARED / "tokenizers" / name / "tokenizer.json"
    if not path.is_file():
        pytest.skip(f"{path} is not available (../shared/data is missing)")
    return path


@functools.lru_cache(maxsize=None)
def hf(name: str):
    tokenizers = pytest.importorskip("tokenizers")
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
    for text, a, b in zip(texts, mine, theirs):
        assert a == b, f"{name}: ids differ for {text!r}"
    for skip in (False, True):
        decoded = ref.decode_batch(theirs, skip_special_tokens=skip)
        for text, a, d in zip(texts, mine, decoded):
            assert tok.decode(a, skip_special=skip) == d, f"{name}: decode (skip_special={skip}) differs for {text!r}"


@functools.lru_cache(maxsize=None)
def ours_reference(name: str):
    from tinyllm.tok import load

    return load(tokenizer_path(name)).use_reference()


@functools.lru_cache(maxsize=None)
def tiktoken_gpt2():
    tiktoken = pytest.importorskip("tiktoken")
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


def shared_corpus_lines(every: int = 1) -> list[str]:
    """Every `every`-th line of every shared corpus file (skip if the shared data is absent)."""
    corpora = SHARED / "corpora"
    if not corpora.is_dir():
        pytest.skip(f"{corpora} is not available (../shared/data is missing)")
    lines: list[str] = []
    for path in sorted(corpora.rglob("*.txt")):
        with open(path, encoding="utf-8", newline="") as f:
            lines.extend(f.read().splitlines(keepends=True)[::every])
    return lines
