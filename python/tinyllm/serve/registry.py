"""The tokenizers a service answers for: loaded once, when the app is made, and looked up by name.

Names are what `tinyllm serve -t` was given: a preset name ("gpt2") or a path. `info(name)` is
what `GET /v1/tokenizers` lists for each.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional

from tinyllm.serve.errors import RequestError


class Registry:
    """Name -> loaded tokenizer, in the order given."""

    def __init__(self, names: Iterable, loader=None) -> None:
        if loader is None:
            from tinyllm.tok import load as loader
        self.tokenizers = {}
        self.templates = {}
        for name in names:
            key = os.fspath(name)
            if key not in self.tokenizers:
                self.tokenizers[key] = loader(key)
                # So that no request pays for what a tokenizer builds on its first calls.
                self.tokenizers[key].warm_up()
                self.templates[key] = _template(key)
        if not self.tokenizers:
            raise ValueError("tokenizers: found none; expected at least one preset name or path")
        self._info = {name: _describe(name, tok, self.templates[name]) for name, tok in self.tokenizers.items()}

    @property
    def default(self) -> str:
        return next(iter(self.tokenizers))

    def resolve(self, name: Optional[str]) -> tuple[str, object]:
        """(name, tokenizer) of a request's `tokenizer` field: the default one when it is None."""
        name = self.default if name is None else name
        return name, self.get(name)

    def identity(self, name: str) -> dict:
        """What every answer about tokenizer `name` starts with: its name and semantic hash."""
        return {"tokenizer": name, "semantic_hash": self._info[name]["semantic_hash"]}

    def get(self, name: str, param: str = "tokenizer"):
        """The tokenizer called `name`; a RequestError naming `param` for any other name."""
        tok = self.tokenizers.get(name)
        if tok is None:
            raise RequestError(param, f"{param}: found {name!r}; expected one of {', '.join(self.tokenizers)}")
        return tok

    def template(self, name: str):
        """The chat template served with tokenizer `name`; a RequestError when it has none."""
        found = self.templates.get(name)
        if found is None:
            raise RequestError("tokenizer", f"tokenizer: {name!r} has no chat template (its directory has no "
                                            "tokenizer_config.json chat_template or chat_template.jinja); expected "
                                            f"one of {', '.join(n for n, t in self.templates.items() if t) or '(none)'}")
        return found

    def info(self, name: str) -> dict:
        return self._info[name]

    def infos(self) -> list[dict]:
        return list(self._info.values())


def _template(name: str):
    """The chat template in a model directory (or a preset's), or None."""
    from tinyllm.seq.chat import ChatTemplate
    from tinyllm.tok.load import PRESET_DIR

    where = name if os.path.isdir(name) else os.path.join(PRESET_DIR, name)
    if not os.path.isdir(where):
        return None
    try:
        return ChatTemplate.from_dir(where)
    except ValueError:
        return None


def _describe(name: str, tok, template) -> dict:
    return {"name": name, "kind": type(tok).__name__, "vocab_size": tok.vocab_size,
            "semantic_hash": tok.semantic_hash, "special_ids": dict(getattr(tok, "special_ids", {}) or {}),
            "bos_id": tok.bos_id, "eos_id": tok.eos_id,
            "template_hash": template.hash if template is not None else None}
