"""The Split patterns tinyllm runs on hand-written scanners (src/stages/scanners.rs), and the
helpers that compare them with Hugging Face: for tests/tok/stages/test_split_scanners.py and
benches/sweep_pretokenizer.py.

>>> sorted(patterns())[:3]
['cl100k', 'cl100k-tiktoken', 'deepseek-cjk']
>>> pre_tokenizer_of("digit-groups")[1]
['digit-groups']
"""

from __future__ import annotations

import json

from tests.support.families import DEEPSEEK_PATTERNS, FAMILIES, LLAMA3_PATTERN, QWEN2_PATTERN, family_doc

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


def ci_points() -> list[int]:
    """For the test suite: planes 0 and 1 whole (every script's letters, marks, digits, spaces and
    symbols), every 31st code point elsewhere (plane 2-3 ideographs, plane 14 tags, unassigned)."""
    return [c for c in sweep_points(quick=False) if c >> 16 < 2 or c % 31 == 0]


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
    steps = pre.get("pretokenizers", [])
    if steps and _is_plain_byte_level(steps[-1]):
        # A trailing ByteLevel(use_regex=False, add_prefix_space=False) maps each piece's bytes to
        # its alphabet one to one and cuts nothing: the cuts are the Splits', compared as text
        # (half the time of mapping a million pieces both ways). A piece that ends inside a
        # character is not UTF-8, decodes with a backslash escape, and so differs.
        inner = steps[:-1]
        theirs = hf_pre_tokenizer(inner[0] if len(inner) == 1 else {"type": "Sequence", "pretokenizers": inner})
        expected = [piece for piece, _ in theirs.pre_tokenize_str(joined)]
        got = [b.decode("utf-8", "backslashreplace") for b in _core.pre_tokenize(spec, joined)]
    else:
        expected = [piece for piece, _ in hf_pre_tokenizer(pre).pre_tokenize_str(joined)]
        got = [token_string(b) for b in _core.pre_tokenize(spec, joined)]
    if got == expected:
        return None
    k = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    context = expected[max(0, k - 3): k + 3]
    return (f"{name}, template {template!r}: piece {k} differs: ours {got[k: k + 1]!r}, Hugging Face "
            f"{expected[k: k + 1]!r} (Hugging Face around it: {context!r})")


def _is_plain_byte_level(step: dict) -> bool:
    return (step.get("type") == "ByteLevel" and step.get("use_regex") is False
            and step.get("add_prefix_space") is False)
