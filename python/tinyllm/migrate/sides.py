"""One side of a vocabulary transition, gathered once: a model directory, a bundle or a tokenizer.

`side(value, name)` accepts a model directory (or a preset name), a bundle JSON file or a bundle
dict (`tinyllm.artifacts.bundle`), or a loaded tinyllm tokenizer, and returns a `Side` with what
the transition checks compare: the tokenizer, the release files (a directory's files, a bundle's
declarations; none for a bare tokenizer), the chat template source and the golden cases a bundle
carries. `name` ("old" / "new") prefixes every error.

>>> s = side("examples/bundles/ids-0-11/bundle.json", "old")
>>> s.kind, s.tokenizer.vocab_size, [f["path"] for f in s.release_files], len(s.golden)
('bundle', 12, ['generation_config.json', 'tokenizer.json'], 4)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class Side:
    """What one side of a transition is (see the module docstring)."""

    name: str
    label: str
    kind: str  # "directory", "bundle" or "tokenizer"
    tokenizer: Any
    release_files: Optional[tuple] = None  # ({"path", "size", "sha256"}, ...) sorted by path
    template: Optional[str] = None
    golden: Optional[tuple] = None  # the golden records a bundle carries

    @property
    def template_hash(self) -> Optional[str]:
        from tinyllm.artifacts.domains import template_hash

        return None if self.template is None else template_hash(self.template)


def _from_subject(subject, name: str) -> Side:
    if subject.tok is None:
        raise ValueError(f"{name}: {subject.path}: the tokenizer does not load ({subject.load_error}); "
                         "expected a loadable tokenizer")
    if subject.kind == "bundle":
        bundle = subject.bundle
        files = tuple(bundle["tokenizer"].get("release_files") or ())
        cases = bundle.get("golden", {}).get("cases") if isinstance(bundle.get("golden"), dict) else None
        return Side(name, subject.path, "bundle", subject.tok, files, subject.template,
                    tuple(cases) if isinstance(cases, list) else None)
    from tinyllm.artifacts.identity import file_declarations
    from tinyllm.tok.load import preset_directory

    directory = subject.path if os.path.isdir(subject.path) else preset_directory(subject.path)
    return Side(name, subject.path, "directory", subject.tok, tuple(file_declarations(directory)), subject.template)


def side(value: Any, name: str) -> Side:
    """The `Side` of `value` (see the module docstring); ValueError naming `name` otherwise."""
    if isinstance(value, Side):
        return value
    if hasattr(value, "semantic_components"):
        return Side(name, type(value).__name__, "tokenizer", value)
    from tinyllm.artifacts.doctor_subject import bundle_subject, gather

    if isinstance(value, dict):
        return _from_subject(bundle_subject(value, f"{name} bundle"), name)
    if isinstance(value, (str, os.PathLike)):
        try:
            subject = gather(value)
        except ValueError as e:
            raise ValueError(f"{name}: {str(e).removeprefix('doctor: ')}") from None
        return _from_subject(subject, name)
    raise ValueError(f"{name}: found {type(value).__name__}; expected a model directory, a bundle (file or dict) "
                     "or a tinyllm tokenizer")
