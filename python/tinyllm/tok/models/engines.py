"""Attach the Rust engines of `tinyllm._core` to pipeline tokenizers.

`build_bpe_engine` runs byte-level BPE pipelines (a normalizer of ENGINE_NORMALIZERS or none, a
pre-tokenizer ending in ByteLevel, no byte fallback, fused unknowns, prefix or suffix); `build_text_engine` runs
WordPiece, Unigram, WordLevel and character-level BPE pipelines (BPE whose pre-tokenizer is not
ByteLevel: Metaspace or none, Llama-2 style): added-token splitting, the normalizer, the
pre-tokenizer and the model, with the GIL released. Each returns None for a
pipeline outside what its engine implements, or without the compiled core; the tokenizer then
encodes with the readable reference and says so through `uses_fast_path`. Never silently: when
the core is there, the fallback warns `tinyllm.SlowPathWarning`, naming the component and why.
"""

from __future__ import annotations

import json
from typing import Optional

from tinyllm import _native
from tinyllm.tok.text.byte_alphabet import byte_alphabet, token_bytes

ENGINE_NORMALIZERS = ("BertNormalizer", "Precompiled", "Replace", "Strip", "NFD", "NFKD", "NFC", "NFKC", "StripAccents",
                      "Prepend", "Lowercase", "Sequence", "SentencePieceNormalizer")
# Split too, on a literal or on a pattern a Rust scanner knows (the engine refuses other regexes).
ENGINE_PRE_TOKENIZERS = ("BertPreTokenizer", "WhitespaceSplit", "Metaspace", "Whitespace", "Punctuation",
                         "CharDelimiterSplit", "UnicodeScripts", "Digits", "Split", "Sequence")


def _unsupported_stage(doc, allowed: tuple, path: str) -> Optional[str]:
    """The JSON path of the first stage of `doc` outside `allowed` (e.g. `normalizer.normalizers[0]`
    "NFC"), or None."""
    if doc is None:
        return None
    if doc["type"] not in allowed:
        return f"{path} {doc['type']}"
    key = "normalizers" if "normalizers" in doc else "pretokenizers"
    for k, inner in enumerate(doc.get(key) or ()):
        found = _unsupported_stage(inner, allowed, f"{path}.{key}[{k}]")
        if found:
            return found
    return None


def _reference(tok, component: str, reason: str) -> None:
    """No engine for `tok`: warn (SlowPathWarning) and return None."""
    _native.slow_path(type(tok).__name__, component, reason)
    return None


def _stage_problem(tok, normalizer, pre_tokenizer, pre_tokenizers: tuple) -> Optional[tuple[str, str]]:
    """(component, reason) that keeps the engine from running these stages, or None."""
    for found in (_unsupported_stage(normalizer, ENGINE_NORMALIZERS, "normalizer"),
                  _unsupported_stage(pre_tokenizer, pre_tokenizers, "pre_tokenizer")):
        if found:
            return found, "not implemented in the Rust engine yet"
    if normalizer is not None and any(t.normalized for t in tok.added_tokens):
        # Normalized added tokens are matched after normalization: reference only.
        return "added_tokens", "a token with normalized: true under a normalizer"
    return None


def build_bpe_engine(tok):
    """The Rust engine of a byte-level BPE tokenizer, or None."""
    model = tok.model
    if _native.core is None:
        return None
    if not model.plain:
        return _reference(tok, "model", "byte_fallback, fuse_unk or a subword prefix/suffix on a byte-level BPE")
    normalizer = tok.normalizer.to_json() if tok.normalizer is not None else None
    problem = _stage_problem(tok, normalizer, None, ())
    if problem:
        return _reference(tok, *problem)
    added = [(t.content, t.id) for t in tok.added_tokens]
    pre_json = json.dumps(tok.pre_tokenizer.to_json())
    if model.tables is not None:  # read by the core: the engine takes the shared tables as they are
        try:
            return _native.core.BpeEngine.from_tables(model.tables, model.ignore_merges, model.unk_id, added, pre_json,
                                                      json.dumps(normalizer))
        except ValueError as e:
            return _reference(tok, "pre_tokenizer", f"the engine refused it ({e})")
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
    try:
        return _native.core.BpeEngine(byte_ids, merges, whole, model.unk_id, added, pre_json, json.dumps(normalizer))
    except ValueError as e:  # e.g. a Split regex that fancy-regex cannot compile: the reference handles it
        return _reference(tok, "pre_tokenizer", f"the engine refused it ({e})")


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


def build_text_engine(tok, model_type: str, model_spec: Optional[dict], *, parts: Optional[tuple] = None):
    """The Rust engine of a WordPiece, Unigram, WordLevel or character-level BPE tokenizer
    (`model_type`), or None.

    The model comes as a JSON `model_spec`, or, several times faster for tens of thousands of
    entries, as `parts` handed over as they are, (constructor, arguments) of `_core.TextEngine`:
    ("from_spm_pieces", (texts, scores, types, byte_fallback)) for a SentencePiece model,
    ("from_spm_table", (pieces,)) for one whose pieces the core read (`_core.SpmPieces`, shared),
    ("from_unigram_pieces", (texts, scores, unk_id, byte_fallback)) for a Unigram one, and
    ("from_tables", (tables, unk_id, prefix, max_input_chars_per_word)) for a WordPiece or
    WordLevel model whose vocabulary the core read (the engine shares it)."""
    if _native.core is None:
        return None
    normalizer = tok.normalizer.to_json() if tok.normalizer is not None else None
    pre = tok.pre_tokenizer.to_json() if tok.pre_tokenizer is not None else None
    problem = _stage_problem(tok, normalizer, pre, ENGINE_PRE_TOKENIZERS)
    if problem:
        return _reference(tok, *problem)
    added = [(t.content, t.id) for t in tok.added_tokens]
    try:
        if parts is not None:
            constructor, arguments = parts
            typed = () if constructor == "from_unigram_pieces" else (model_type,)
            return getattr(_native.core.TextEngine, constructor)(*typed, *arguments, json.dumps(normalizer),
                                                                 json.dumps(pre), added)
        return _native.core.TextEngine(model_type, json.dumps(model_spec), json.dumps(normalizer), json.dumps(pre), added)
    except ValueError as e:
        return _reference(tok, "pipeline", f"the engine refused it ({e})")
