"""Tokenizer files in the configurations of today's model families, for tests and benchmarks.

The shared data has no Llama-3, Qwen2 or DeepSeek-V3 file, but their pipelines are public facts:
the Split patterns, the normalizer, the ByteLevel options. Each family here is one of those
pipelines around a vocabulary we do have (the cl100k or o200k ranks of ../shared/data, as a
Hugging Face byte-level BPE via `tinyllm convert`'s document), so the ids are not the real
model's but every stage runs exactly as in the real file, at a realistic vocabulary size.

    doc = family_doc("qwen2")                # the tokenizer.json document
    path = family_file("qwen2", tmp_path)    # written, for the peers that read files
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK_PATTERNS = (
    r"\p{N}{1,3}",
    "[一-龥\u3040-ゟ゠-ヿ]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*"""
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
)

FAMILIES = ("llama3", "qwen2", "deepseek-v3")
_VOCAB = {"llama3": "cl100k_base", "qwen2": "o200k_base", "deepseek-v3": "cl100k_base"}
_SPECIALS = {
    "llama3": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    "deepseek-v3": ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"],
}


def _split(pattern: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def _byte_level(trim_offsets: bool) -> dict:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": trim_offsets, "use_regex": False}


def _added(content: str, i: int) -> dict:
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


@functools.lru_cache(maxsize=None)
def _base(vocab: str) -> str:
    from tests.peers import SHARED, require_shared
    from tinyllm.tok import load
    from tinyllm.tok.convert import hf_document

    tok = load(require_shared(SHARED / "tokenizers" / "tiktoken" / f"{vocab}.tiktoken"))
    return json.dumps(hf_document(tok))


def family_doc(name: str) -> dict:
    """The tokenizer.json document of family `name` (one of FAMILIES): a fresh copy each call."""
    if name not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}, found {name!r}")
    return json.loads(_family_json(name))


def family_specials(name: str) -> list[str]:
    """The contents of family `name`'s added tokens, in id order (without parsing its document)."""
    if name not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}, found {name!r}")
    return list(_SPECIALS[name])


@functools.lru_cache(maxsize=None)
def family_tokenizer(name: str):
    """tinyllm's tokenizer of `family_doc(name)`, built once per session (a 200k-vocabulary family
    takes seconds to build, and several test files use each), and the SlowPathWarnings its
    construction gave, as messages: a test that requires the engine asserts that tuple is empty.
    Tests share the object: they must not change it (monkeypatch or copy it)."""
    import warnings

    from tinyllm import SlowPathWarning
    from tinyllm.tok.load import tokenizer_from_document

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SlowPathWarning)
        tok = tokenizer_from_document(family_doc(name))
    return tok, tuple(str(w.message) for w in caught if issubclass(w.category, SlowPathWarning))


@functools.lru_cache(maxsize=None)
def _family_json(name: str) -> str:
    doc = json.loads(_base(_VOCAB[name]))
    model = doc["model"]
    # The vocabulary's own specials (which leave holes in the ids) give way to the family's, numbered
    # right after the ranks, as the real files do (some peers refuse a vocabulary with holes).
    for t in doc["added_tokens"]:
        del model["vocab"][t["content"]]
    first = max(model["vocab"].values()) + 1
    doc["added_tokens"] = [_added(t, first + k) for k, t in enumerate(_SPECIALS[name])]
    model["vocab"].update({t: first + k for k, t in enumerate(_SPECIALS[name])})
    doc["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    if name == "llama3":
        doc["normalizer"] = None
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [_split(LLAMA3_PATTERN), _byte_level(True)]}
        bos = _SPECIALS[name][0]
        doc["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {bos: {"id": bos, "ids": [first], "tokens": [bos]}}},
        ]}
    elif name == "qwen2":
        doc["normalizer"] = {"type": "NFC"}
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [_split(QWEN2_PATTERN), _byte_level(False)]}
        doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                 "use_regex": False}
    else:
        doc["normalizer"] = None
        doc["pre_tokenizer"] = {"type": "Sequence",
                                "pretokenizers": [_split(p) for p in DEEPSEEK_PATTERNS] + [_byte_level(False)]}
        doc["post_processor"] = None
    return json.dumps(doc)


def family_file(name: str, directory: Path) -> Path:
    """`family_doc(name)` written as `directory/name/tokenizer.json`; returns the path."""
    path = Path(directory) / name / "tokenizer.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(family_doc(name), ensure_ascii=False), encoding="utf-8")
    return path
