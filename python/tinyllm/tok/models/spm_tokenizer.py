"""`SentencePieceTokenizer`: a SentencePiece `.model` file as a tinyllm tokenizer.

Ids and decoded text equal sentencepiece's own `encode` / `decode` (sentencepiece 0.2.x; the
tests compare every line of the shared corpora and thousands of stress strings). The pipeline is
`SpmNormalizer` -> `SpmBpeModel` / `SpmUnigramModel` -> `SpmDecoder`, with CONTROL pieces as
special added tokens (see `tinyllm.tok.formats.sentencepiece`). Encoding runs in the Rust
`TextEngine` when the core is built, else in the readable reference; `uses_fast_path` tells.

`save(dir)` writes the `.model` file itself (`dir/tokenizer.model`, byte for byte what was read)
and the special-token roles into the config files, so `load(dir)` gives the same tokenizer and
the same semantic hash. It does not write a tokenizer.json: the stages are sentencepiece's, which
Hugging Face's tokenizer.json cannot express exactly (conversion is a separate step).

>>> tok = SentencePieceTokenizer.from_file("spiece.model")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Optional

from tinyllm._io import atomic_write_bytes
from tinyllm.tok.formats.sentencepiece import SUFFIX, SentencePieceParts, read_sentencepiece
from tinyllm.tok.models.engines import build_text_engine
from tinyllm.tok.models.spm_pieces import PIECE_TYPES
from tinyllm.tok.pipeline import PipelineTokenizer
from tinyllm.tok.policy import with_policy_files, write_policy_files


class SentencePieceTokenizer(PipelineTokenizer):
    """A SentencePiece BPE or Unigram model (see the module docstring)."""

    FILE_NAME = "tokenizer.model"

    def __init__(self, parts: SentencePieceParts, *, generation_config: Optional[dict] = None,
                 tokenizer_config: Optional[dict] = None) -> None:
        super().__init__(parts.model, **parts.stages(), generation_config=generation_config,
                         tokenizer_config=tokenizer_config)
        self.parts = parts
        m = self.model
        if m._core is not None:  # pieces the core read: the engine shares them
            parts = ("from_spm_table", (m._core,))
        else:
            parts = ("from_spm_pieces", (*m.columns, m.byte_fallback))
        self._fast = build_text_engine(self, m.type, None, parts=parts)

    def engine_model_spec(self) -> dict:
        """The model as the Rust engine's JSON spec: pieces [text, score, type] in id order. (The
        tokenizer itself hands the engine the piece lists, `TextEngine.from_spm_pieces`: the same
        engine without a JSON round trip of a quarter of a million pieces.)"""
        m = self.model
        return {"pieces": m.pieces, "byte_fallback": m.byte_fallback}  # tuples serialize as lists

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "SentencePieceTokenizer":
        """The tokenizer of a `.model` file alone (no config files: it names no roles of its own
        beyond the unknown piece)."""
        return cls(read_sentencepiece(path))

    @classmethod
    def from_dir_file(cls, path: str | os.PathLike) -> "SentencePieceTokenizer":
        """The tokenizer of a `.model` file with the roles of the config files beside it."""
        parts = read_sentencepiece(path)
        return with_policy_files(os.path.dirname(path), lambda **configs: cls(parts, **configs))

    @classmethod
    def load(cls, dir: str | os.PathLike) -> "SentencePieceTokenizer":
        """`dir/tokenizer.model` (or the one `*.model` file in `dir`, or that file) with the roles
        of `dir`'s config files."""
        from pathlib import Path  # on use: loading one file does not import pathlib

        path = Path(dir)
        if path.is_dir():
            found = sorted(path.glob(f"*{SUFFIX}"))
            file = path / cls.FILE_NAME if (path / cls.FILE_NAME).is_file() else (found[0] if len(found) == 1 else None)
            if file is None:
                raise ValueError(f"{path}: expected one {SUFFIX} file, found {len(found)}")
            return cls.from_dir_file(file)
        return cls.from_file(path)

    def save(self, dir: str | os.PathLike) -> None:
        """Write `dir/tokenizer.model` (the bytes that were read) and the special-token roles."""
        from pathlib import Path

        path = Path(dir)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path / self.FILE_NAME, self.parts.data)
        write_policy_files(path, self.special_token_policy, self.id_to_token)

    def to_document(self) -> dict:
        raise ValueError("a SentencePiece tokenizer has no tokenizer.json form in tinyllm yet; save() writes the "
                         ".model file")

    def semantic_components(self) -> dict:
        """As for every pipeline tokenizer, with the model's scores as exact decimal strings."""
        import decimal  # on use, as in the other pipelines' hash

        out = super().semantic_components()
        model = dict(out["model"])
        model["pieces"] = [[p, str(decimal.Decimal(s)), PIECE_TYPES[t]] for p, s, t in self.model.pieces]
        out["model"] = model
        return out
