"""Attach the Rust engines of `tinyllm._core` to pipeline tokenizers.

`build_bpe_engine` runs byte-level BPE pipelines (a normalizer of ENGINE_NORMALIZERS or none, a
pre-tokenizer ending in ByteLevel, no byte fallback, fused unknowns, prefix or suffix); `build_text_engine` runs
WordPiece, Unigram, WordLevel and character-level BPE pipelines (BPE whose pre-tokenizer is not
ByteLevel: Metaspace or none, Llama-2 style): added-token splitting, the normalizer, the
pre-tokenizer and the model, with the GIL released. Each returns None for a
pipeline outside what its engine implements, or without the compiled core; the tokenizer then
encodes with the readable reference and says so through `uses_fast_path`.
"""

from __future__ import annotations

import json
from typing import Optional

from tinyllm import _native
from tinyllm.tok.stages.pre_tokenizers import uses_first_scheme
from tinyllm.tok.text.byte_alphabet import byte_alphabet, token_bytes

ENGINE_NORMALIZERS = ("BertNormalizer", "Precompiled", "Replace", "Strip", "NFD", "NFKD", "StripAccents", "Prepend",
                      "Sequence", "SentencePieceNormalizer")
ENGINE_PRE_TOKENIZERS = ("BertPreTokenizer", "WhitespaceSplit", "Metaspace", "Whitespace", "Punctuation",
                         "CharDelimiterSplit", "UnicodeScripts", "Sequence")


def _stages_supported(doc, allowed: tuple) -> bool:
    if doc is None:
        return True
    if doc["type"] not in allowed:
        return False
    inner = doc.get("normalizers", doc.get("pretokenizers"))
    return inner is None or all(_stages_supported(d, allowed) for d in inner)


def build_bpe_engine(tok):
    """The Rust engine of a byte-level BPE tokenizer, or None."""
    model = tok.model
    if _native.core is None or not tok.byte_level or not model.plain:
        return None
    normalizer = tok.normalizer.to_json() if tok.normalizer is not None else None
    if not _stages_supported(normalizer, ENGINE_NORMALIZERS):
        return None
    if normalizer is not None and any(t.normalized for t in tok.added_tokens):
        return None  # normalized added tokens are matched after normalization: reference only
    alphabet = byte_alphabet()
    byte_ids = [model.vocab.get(alphabet[b]) for b in range(256)]
    merges = [(left, right, rank, merged) for (left, right), (rank, merged) in model.ranks.items()]
    whole = None
    if model.ignore_merges:
        whole = []
        for token, i in model.vocab.items():
            try:
                whole.append((token_bytes(token), i))
            except ValueError:
                continue  # a token outside the byte alphabet can never equal a byte-level piece
    added = [(t.content, t.id) for t in tok.added_tokens]
    try:
        return _native.core.BpeEngine(byte_ids, merges, whole, model.unk_id, added, json.dumps(tok.pre_tokenizer.to_json()),
                                      json.dumps(normalizer))
    except ValueError:
        return None  # e.g. a Split regex that fancy-regex cannot compile: the reference handles it


def bpe_text_spec(model) -> dict:
    """The TextEngine spec of a character-level BPE model (ids, not strings, for the merges)."""
    return {
        "vocab": model.vocab,
        "merges": [[left, right, rank, merged] for (left, right), (rank, merged) in model.ranks.items()],
        "unk_id": model.unk_id,
        "byte_fallback": model.byte_fallback,
        "fuse_unk": model.fuse_unk,
        "prefix": model.prefix or "",
        "suffix": model.suffix or "",
        "ignore_merges": model.ignore_merges,
    }


def build_text_engine(tok, model_type: str, model_spec: Optional[dict], *, spm_pieces: Optional[tuple] = None):
    """The Rust engine of a WordPiece, Unigram, WordLevel or character-level BPE tokenizer
    (`model_type`), or None. A SentencePiece model may come as `spm_pieces` = (texts, scores,
    types, byte_fallback) instead of `model_spec`: lists handed over as they are, which for a
    quarter of a million pieces is several times faster than a JSON spec."""
    if _native.core is None:
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
        if spm_pieces is not None:
            return _native.core.TextEngine.from_spm_pieces(model_type, *spm_pieces, json.dumps(normalizer),
                                                           json.dumps(pre), added)
        return _native.core.TextEngine(model_type, json.dumps(model_spec), json.dumps(normalizer), json.dumps(pre), added)
    except ValueError:
        return None
