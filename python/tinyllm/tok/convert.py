"""Convert the files people have into a Hugging Face model directory (`tinyllm convert`).

`convert(source, out_dir)` loads `source` with `tinyllm.tok.load` (a `.tiktoken` file, a
SentencePiece `.model`, a tokenizer.json or a model directory), expresses it with Hugging Face's
own components and writes:

* `tokenizer.json`, which `tokenizers.Tokenizer.from_file` loads and which gives the ids of the
  source library (tiktoken for `.tiktoken`, sentencepiece for `.model`);
* `tokenizer_config.json` with `"tokenizer_class": "PreTrainedTokenizerFast"` and the token of each
  special role (bos, eos, unk, pad) the source names, and `generation_config.json` with their ids.

Before anything is written the result is read back with tinyllm's strict tokenizer.json reader, so
a conversion that tinyllm itself could not load never reaches the disk. Every file is written
atomically.

>>> import tempfile
>>> out = tempfile.mkdtemp()
>>> tok = convert("o200k", out)
>>> load(out).encode("Hello world") == tok.encode("Hello world") == [13225, 2375]
True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional

from tinyllm._io import atomic_write_json, read_json_file
from tinyllm.tok.formats import spm_to_hf
from tinyllm.tok.load import load, tokenizer_from_document
from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer
from tinyllm.tok.pipeline import PipelineTokenizer
from tinyllm.tok.policy import TOKENIZER_CONFIG, write_policy_files

HF_TOKENIZER_CLASS = "PreTrainedTokenizerFast"


#: Texts the converted tokenizer must encode exactly as the source before anything is written.
SELF_CHECK = ("Hello world", "  two  spaces, a tab\tand a new line\n", "héllo wörld, ça va? 東京 😀",
              "x = f(1, 22, 333)  # code", "▁ typed ▁▁ marks", "")


def hf_document(tok, source: str = "tokenizer") -> dict:
    """The tokenizer.json document of `tok` in Hugging Face's components; ValueError when `tok`
    has no such form (the byte and character tokenizers are tinyllm's own formats)."""
    if isinstance(tok, SentencePieceTokenizer):
        return spm_to_hf.hf_document(tok.parts.proto, source)
    if isinstance(tok, PipelineTokenizer):
        return tok.to_document()
    raise ValueError(f"convert: a {type(tok).__name__} has no Hugging Face tokenizer.json form; "
                     "expected a .tiktoken file, a SentencePiece .model or a tokenizer.json")


def convert(source: str | os.PathLike, out_dir: str | os.PathLike, *, pattern: Optional[str] = None,
            special_tokens: Optional[Mapping[str, int]] = None):
    """Write `source` as a Hugging Face model directory `out_dir` and return the tokenizer read
    back from it. `pattern` and `special_tokens` are for `.tiktoken` sources (see `load`)."""
    tok = load(source, pattern=pattern, special_tokens=special_tokens)
    document = hf_document(tok, os.fspath(source))
    back = tokenizer_from_document(document, f"convert {os.fspath(source)}")
    if isinstance(tok, SentencePieceTokenizer):
        # Restated in other components: the ids must still agree on the self-check texts.
        for text in SELF_CHECK:
            if back.encode(text) != tok.encode(text):
                raise ValueError(f"convert: {os.fspath(source)}: the Hugging Face form encodes {text!r} as "
                                 f"{back.encode(text)}, the source as {tok.encode(text)}")
    else:
        # Same components, so the same ids; the roles are checked after they are written.
        before, after = _behaviour(tok), _behaviour(back)
        changed = sorted(k for k in before if before[k] != after.get(k))
        if changed:
            raise ValueError(f"convert: {os.fspath(source)} does not survive tokenizer.json unchanged "
                             f"(changed: {', '.join(changed)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "tokenizer.json", document, indent=1)
    write_policy_files(out, tok.special_token_policy, tok.id_to_token)
    config_path = out / TOKENIZER_CONFIG
    config = read_json_file(config_path) if config_path.is_file() else {}
    if not isinstance(config, dict):
        raise ValueError(f"{config_path}: expected a JSON object, found {type(config).__name__}")
    config.setdefault("tokenizer_class", HF_TOKENIZER_CLASS)
    atomic_write_json(config_path, config, indent=2)
    written = load(out)
    if written.special_token_policy != tok.special_token_policy:
        raise ValueError(f"convert: {out}: the special-token roles read back differ from {os.fspath(source)}'s "
                         f"({written.special_token_policy.to_json()} vs {tok.special_token_policy.to_json()})")
    return written


def _behaviour(tok) -> dict:
    """The semantic components that decide ids and text (all but the special-token roles, which
    live in the config files)."""
    parts = dict(tok.semantic_components())
    parts.pop("special_tokens", None)
    return parts
