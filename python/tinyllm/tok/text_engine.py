"""Attach the Rust engine to WordPiece and Unigram pipelines.

The engine runs added-token splitting, the normalizer, the pre-tokenizer and the model in Rust
with the GIL released. It covers the stages real BERT and T5-style files use; for any other
pipeline (or without the compiled core) this returns None and the Python reference encodes.
"""

from __future__ import annotations

import json

ENGINE_NORMALIZERS = ("BertNormalizer", "Precompiled", "Replace", "Strip", "Sequence")
ENGINE_PRE_TOKENIZERS = ("BertPreTokenizer", "WhitespaceSplit", "Metaspace", "Sequence")


def _stages_supported(doc, allowed: tuple) -> bool:
    if doc is None:
        return True
    if doc["type"] not in allowed:
        return False
    inner = doc.get("normalizers", doc.get("pretokenizers"))
    return inner is None or all(_stages_supported(d, allowed) for d in inner)


def uses_first_scheme(pre_tokenizer: dict | None) -> bool:
    """Whether a pre-tokenizer (tokenizer.json object) has a Metaspace stage with the "first"
    prepend scheme, which depends on where each piece sits in the raw input."""
    if pre_tokenizer is None:
        return False
    if pre_tokenizer.get("type") == "Metaspace":
        return pre_tokenizer.get("prepend_scheme") == "first"
    return any(uses_first_scheme(stage) for stage in pre_tokenizer.get("pretokenizers") or ())


def build_text_engine(tok, model_type: str, model_spec: dict):
    from tinyllm._native import core

    if core is None or not hasattr(core, "TextEngine"):
        return None
    normalizer = tok.normalizer.to_json() if tok.normalizer is not None else None
    pre = tok.pre_tokenizer.to_json() if tok.pre_tokenizer is not None else None
    if not (_stages_supported(normalizer, ENGINE_NORMALIZERS) and _stages_supported(pre, ENGINE_PRE_TOKENIZERS)):
        return None
    if normalizer is not None and any(t.normalized for t in tok.added_tokens):
        return None  # normalized added tokens are matched after normalization: reference only
    if uses_first_scheme(pre):
        # "first" depends on where each piece sits in the raw input (after normalizer deletions
        # and earlier pre-tokenizer stages); the reference tracks that, the engine does not.
        return None
    added = [(t.content, t.id) for t in tok.added_tokens]
    try:
        return core.TextEngine(model_type, json.dumps(model_spec), json.dumps(normalizer), json.dumps(pre), added)
    except ValueError:
        return None
