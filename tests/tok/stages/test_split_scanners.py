"""The hand-written split scanners (src/stages/scanners.rs) equal Hugging Face and the Python reference.

Each recognised Split pattern (GPT-2/r50k, Llama-3, Qwen2, cl100k as convert writes it and as
tiktoken publishes it, o200k, DeepSeek-V3's three) must take its scanner, never the regex route
(`_core.pre_tokenizer_routes`), and then cut exactly as Oniguruma does: on every code point of
planes 0 and 1 and a sample of the others, in combined contexts (a CI-sized `benches/sweep_pretokenizer.py`),
on the stress strings, on hypothesis text against the `regex`-module reference, and inside whole
family pipelines on the shared corpora.
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinyllm.tok.stages.pre_tokenizers import BEHAVIORS, ByteLevel, Sequence, Split

from tinyllm.tok.text.byte_alphabet import token_string

from tests.peers import SHARED, require_shared, shared_corpus_documents, shared_corpus_lines
from tests.strategies import known_to_both, script_chars
from tests.support.families import FAMILIES, family_doc, family_tokenizer
from tests.support.rust import core, count_engine_calls, needs_rust
from tests.support.split_patterns import ci_points, first_difference, hf_pre_tokenizer, patterns, pre_tokenizer_of
from tests.support.stress import stress_strings

tokenizers = pytest.importorskip("tokenizers")

PATTERNS = patterns()
NAMES = list(PATTERNS)
# Two contexts per code point, each a few traps at once: before and after a letter, an apostrophe
# (contractions, case folding), a space, an upper-case run, a tab, a doubled char, a line break.
CONTEXTS = ["a{c}b'{c} {c}A{c}a", "\t{c}{c}\n'{c}{c}.{c}1"]
# What arbitrary text is made of: the patterns' traps, then any character.
_TRAPS = list("aZ é日本カ ab'sStTLlRrEeVvDdMm1234567890.!?/(\t\n\r\x0b\u3000\xa0\u2028-_") + [
    "ſ", "ǅ", "ʰ", "\u0301", "\u0903", "Ⅷ", "٣", "😀", "\x00", "\x1c", "\u200b", "HTTPRequest", "DON'T",
    "\r\n", "  ", "ǈ", "İ", "一", "龥", "ゟ", "゠", "ヿ", "\u309f", "\u30a0", "㐀"]
texts = st.lists(st.one_of(st.sampled_from(_TRAPS), script_chars, st.characters(blacklist_categories=("Cs",))),
                 max_size=30).map("".join).map(known_to_both)


@needs_rust
@pytest.mark.parametrize("name", NAMES)
def test_each_recognised_pattern_takes_its_scanner(name):
    pre, routes = pre_tokenizer_of(name)
    assert core.pre_tokenizer_routes(json.dumps(pre)) == routes == [name]


@needs_rust
@pytest.mark.parametrize("name", NAMES)
def test_a_scanned_pattern_is_compiled_by_the_reference_on_first_use(name):
    # Split skips compiling a pattern the core scans (no `regex` import at load): that is safe only
    # because each of them compiles once translated, which this holds. cl100k as tiktoken writes
    # it (`{1,3}+`) is refused by the translation, at construction, as before.
    assert core.split_scanner(PATTERNS[name]) == name
    if name == "cl100k-tiktoken":
        with pytest.raises(ValueError, match="repeats the interval in Oniguruma"):
            Split(PATTERNS[name], True, "Isolated")
        return
    split = Split(PATTERNS[name], True, "Isolated")
    assert split._compiled is None
    assert [p for p, _, _ in split.split_piece("Hello world's 123")] and split._compiled is not None


@needs_rust
def test_a_pattern_no_scanner_knows_is_still_refused_at_construction():
    assert core.split_scanner(PATTERNS["llama3"] + "|x") is None
    with pytest.raises(ValueError, match=r"Split: pattern '\(' is not a valid regex"):
        Split("(", True, "Isolated")


@needs_rust
def test_other_patterns_keep_the_regex_route():
    for pattern in [PATTERNS["llama3"] + "|x", r"\p{N}{1,2}", PATTERNS["o200k"].replace("{1,3}", "{1,4}")]:
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "Digits", "individual_digits": False},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
        assert core.pre_tokenizer_routes(json.dumps(pre)) == ["regex", "digits"]


@needs_rust
@pytest.mark.parametrize("name", [*NAMES, "deepseek-v3"])
@pytest.mark.parametrize("context", CONTEXTS)
def test_scanner_equals_hf_on_every_code_point(name, context):
    """All code points of planes 0 and 1 (every 31st elsewhere), joined in one text per context
    (`benches/sweep_pretokenizer.py --pattern all` sweeps every code point in sixteen contexts)."""
    require_shared(SHARED / "tokenizers" / "tiktoken")  # the family documents are built on it
    assert first_difference(name, context, ci_points()) is None


@needs_rust
@pytest.mark.parametrize("name", [*NAMES, *FAMILIES])
def test_scanner_equals_hf_on_stress_strings(name):
    require_shared(SHARED / "tokenizers" / "tiktoken")
    pre, _ = pre_tokenizer_of(name)
    spec, theirs = json.dumps(pre), hf_pre_tokenizer(pre)
    for text in stress_strings(1500, seed=7):
        expected = [p for p, _ in theirs.pre_tokenize_str(text)]
        assert [token_string(p) for p in core.pre_tokenize(spec, text)] == expected, f"{name}: {text!r}"


@needs_rust
@pytest.mark.parametrize("name", NAMES)
def test_scanner_equals_hf_on_whole_corpus_documents(name):
    """2,000-character documents: long ASCII stretches go through the 64-byte block readers
    (`src/stages/blocks/`), and blocks, whitespace runs and pieces cross each other's ends."""
    pre, _ = pre_tokenizer_of(name)
    spec, theirs = json.dumps(pre), hf_pre_tokenizer(pre)
    for text in shared_corpus_documents(every=6):
        expected = [p for p, _ in theirs.pre_tokenize_str(text)]
        assert [token_string(p) for p in core.pre_tokenize(spec, text)] == expected, f"{name}: {text!r}"


def _reference(pattern: str, behavior: str, invert: bool, text: str) -> list[bytes]:
    return [p[0].encode("utf-8") for p in Split(pattern, True, behavior, invert).pre_tokenize(text)]


# cl100k as tiktoken publishes it (`\p{N}{1,3}+`) is refused by the reference (Ruby and Python read
# `{n,m}+` differently, see tinyllm.tok.stages.oniguruma): only Hugging Face judges that scanner.
@needs_rust
@pytest.mark.parametrize("name", [n for n in NAMES if n != "cl100k-tiktoken"])
@pytest.mark.parametrize("behavior, invert", [("Isolated", False), ("Removed", True), ("Removed", False),
                                              ("MergedWithPrevious", False), ("Contiguous", True)])
# 45 combinations of up to 30 trap-biased characters: 60 texts each (2700 in all); the scanners'
# classes are swept whole on every code point above, the behaviours are what varies here.
@settings(max_examples=60)
@given(text=texts)
def test_scanner_equals_the_python_reference(name, behavior, invert, text):
    assert behavior in BEHAVIORS
    pattern = PATTERNS[name]
    pre = Sequence([Split(pattern, True, behavior, invert), ByteLevel(use_regex=False, add_prefix_space=False)])
    spec = json.dumps(pre.to_json())
    assert core.pre_tokenizer_routes(spec) == [name]
    assert core.pre_tokenize(spec, text) == _reference(pattern, behavior, invert, text)


@functools.lru_cache(maxsize=None)
def _deepseek_pre_tokenizer() -> dict:
    require_shared(SHARED / "tokenizers" / "tiktoken")
    return family_doc("deepseek-v3")["pre_tokenizer"]


@needs_rust
@given(text=texts)
def test_deepseek_sequence_equals_the_python_reference(text):
    doc = _deepseek_pre_tokenizer()
    spec = json.dumps(doc)
    assert core.pre_tokenizer_routes(spec) == ["digit-groups", "deepseek-cjk", "deepseek-words"]
    splits = [Split(s["pattern"]["Regex"], True, s["behavior"], s["invert"]) for s in doc["pretokenizers"][:-1]]
    reference = [p[0].encode("utf-8") for p in Sequence(splits).pre_tokenize(text)]
    assert core.pre_tokenize(spec, text) == reference


@needs_rust
@pytest.mark.parametrize("name", FAMILIES)
def test_family_pipelines_equal_hf_on_the_shared_corpora(name, monkeypatch):
    doc = family_doc(name)
    # Every 4th line of every corpus; every 40th for Qwen2, a slice kept from when its NFC normalizer
    # ran on the Python reference (it runs on the engine now, and tests/tok/test_families.py and
    # test_nfc_pipelines.py compare it with HF on the corpora too); benches/bench_pretokenize.py
    # compares the whole corpora.
    lines = shared_corpus_lines(every=40 if name == "qwen2" else 4)
    ours, _ = family_tokenizer(name)  # built once per session (tests.support.families)
    theirs = tokenizers.Tokenizer.from_str(json.dumps(doc))
    expected = [e.ids for e in theirs.encode_batch(lines, add_special_tokens=False)]
    calls = count_engine_calls(monkeypatch, ours) if ours.uses_fast_path else None
    got = ours.encode_batch(lines)
    assert calls is None or sum(calls.values()) > 0, "the Rust engine did not run"
    for line, a, b in zip(lines, got, expected, strict=True):
        assert a == b, f"{name}: ids differ for {line!r}"
