"""What `tinyllm doctor` looks at, gathered once: a model directory or a bundle as a `Subject`.

The raw `tokenizer.json` is kept beside the loaded tokenizer (or the load error), so the checks in
`tinyllm.artifacts.doctor` can still read a file the loader refuses. A model directory's
`config.json` in Hugging Face style (no `tl_tokenizer`) gives the model's rows (`vocab_size`, or
`text_config.vocab_size`); a bundle gives its checkpoint's input and output rows.

>>> s = gather("examples/bundles/ids-0-11/bundle.json")
>>> s.kind, s.rows, vocab_size_of(s), token_text(s, 2)
('bundle', [('checkpoint.input_embedding_rows', 12), ('checkpoint.output_vocab_rows', 12)], 12, "2 '</s>'")
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tinyllm._io import read_json_file


@dataclass
class Subject:
    """What the checks look at, gathered once from a model directory or a bundle."""

    path: str
    kind: str  # "directory" or "bundle"
    doc: Optional[dict] = None  # the raw tokenizer.json (None: none, or unreadable: see doc_error)
    doc_error: str = ""
    tok: Any = None
    load_error: str = ""
    generation_config: Optional[dict] = None
    tokenizer_config: Optional[dict] = None
    template: Optional[str] = None
    template_error: str = ""
    rows: list = field(default_factory=list)  # [(where, rows)]
    rows_error: str = ""
    bundle: Optional[dict] = None


# -- gathering ---------------------------------------------------------------------------------

def error_text(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text


def _read_json_or_error(path: Path) -> tuple[Any, str]:
    try:
        return read_json_file(path), ""
    except (ValueError, OSError) as e:
        return None, error_text(e)


def _config_rows(config: Any, where: str) -> list:
    if not isinstance(config, dict):
        return []
    for keys in (("vocab_size",), ("text_config", "vocab_size")):
        value: Any = config
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return [(f"{where}: {'.'.join(keys)}", value)]
    return []


def _load_directory(directory: Path):
    """The directory's tokenizer with its policy. An HF `config.json` (no `tl_tokenizer`) describes
    the model, not the tokenizer, so the tokenizer file beside it is read directly."""
    from tinyllm.tok.load import load, read_tokenizer_dir_file

    config_path = directory / "config.json"
    if config_path.is_file() and (directory / "tokenizer.json").is_file():
        config, _ = _read_json_or_error(config_path)
        if not (isinstance(config, dict) and "tl_tokenizer" in config):
            return read_tokenizer_dir_file(directory / "tokenizer.json")
    return load(directory)


def _from_directory(directory: Path, shown: str) -> Subject:
    from tinyllm.seq.chat import directory_template
    from tinyllm.tok.char import FILE_NAME as CHAR_FILE

    if not any((directory / name).is_file() for name in ("tokenizer.json", CHAR_FILE, "config.json")):
        raise ValueError(f"doctor: {shown}: no tokenizer here; expected tokenizer.json, {CHAR_FILE} or config.json")
    s = Subject(shown, "directory")
    if (directory / "tokenizer.json").is_file():
        s.doc, s.doc_error = _read_json_or_error(directory / "tokenizer.json")
        if s.doc is not None and not isinstance(s.doc, dict):
            s.doc, s.doc_error = None, f"{directory / 'tokenizer.json'}: expected a JSON object"
    for name in ("generation_config", "tokenizer_config"):
        path = directory / f"{name}.json"
        if path.is_file():
            value, _ = _read_json_or_error(path)
            setattr(s, name, value if isinstance(value, dict) else None)
    try:
        s.tok = _load_directory(directory)
    except (ValueError, OSError) as e:
        s.load_error = error_text(e)
    if (directory / "config.json").is_file():
        config, error = _read_json_or_error(directory / "config.json")
        s.rows, s.rows_error = _config_rows(config, "config.json"), error
    try:
        s.template, _ = directory_template(directory)
    except (ValueError, OSError) as e:
        s.template_error = error_text(e)
    return s


def bundle_subject(bundle: dict, shown: str) -> Subject:
    """The subject of a bundle already parsed (`shown` names it in messages)."""
    from tinyllm.tok.load import tokenizer_from_document

    s = Subject(shown, "bundle", bundle=bundle)
    tokenizer = bundle.get("tokenizer") if isinstance(bundle.get("tokenizer"), dict) else {}
    doc = tokenizer.get("tokenizer_json")
    s.doc = doc if isinstance(doc, dict) else None
    if s.doc is None:
        s.doc_error = "tokenizer.tokenizer_json: missing or not an object"
    for name in ("generation_config", "tokenizer_config"):
        value = tokenizer.get(name)
        setattr(s, name, value if isinstance(value, dict) else None)
    try:
        s.tok = tokenizer_from_document(doc, "tokenizer.tokenizer_json", generation_config=s.generation_config,
                                        tokenizer_config=s.tokenizer_config)
    except (ValueError, KeyError, TypeError) as e:
        s.load_error = error_text(e)
    template = bundle.get("template")
    source = template.get("source") if isinstance(template, dict) else None
    s.template = source if isinstance(source, str) else None
    checkpoint = bundle.get("checkpoint") if isinstance(bundle.get("checkpoint"), dict) else {}
    for key in ("input_embedding_rows", "output_vocab_rows"):
        value = checkpoint.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            s.rows.append((f"checkpoint.{key}", value))
    return s


def gather(path: str | os.PathLike) -> Subject:
    """The subject of a model directory, a bundle JSON file or a preset name. ValueError (naming
    the path) when it is none of these or cannot be read; problems inside it become findings."""
    from tinyllm.tok.load import preset_directory

    p = Path(path)
    shown = os.fspath(path)
    if p.is_dir():
        return _from_directory(p, shown)
    if p.is_file():
        doc = read_json_file(p)
        if not isinstance(doc, dict) or not {"tokenizer", "declared_hashes"} & set(doc):
            raise ValueError(f"doctor: {shown}: found a JSON {type(doc).__name__} without tokenizer or "
                             "declared_hashes; expected a model directory or a bundle JSON file")
        return bundle_subject(doc, shown)
    preset = preset_directory(shown) if isinstance(path, str) else None
    if preset is not None:
        return _from_directory(preset, shown)
    raise ValueError(f"doctor: {shown}: no such directory or file; expected a model directory, a bundle JSON "
                     "file or a preset name")


# -- raw tokenizer.json views ------------------------------------------------------------------

def is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def model_pieces(doc: Optional[dict]) -> dict[int, str]:
    """id -> piece of the model's own vocabulary (BPE/WordPiece dict, Unigram list)."""
    model = doc.get("model") if isinstance(doc, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        return {i: piece for piece, i in vocab.items() if is_id(i)}
    if isinstance(vocab, list):
        return {k: item[0] for k, item in enumerate(vocab) if isinstance(item, list) and item}
    return {}


def added_tokens(doc: Optional[dict]) -> list[dict]:
    tokens = doc.get("added_tokens") if isinstance(doc, dict) else None
    return [t for t in tokens or [] if isinstance(t, dict) and is_id(t.get("id"))] if isinstance(tokens, list) else []


def vocab_size_of(s: Subject) -> Optional[int]:
    """1 + the largest id: the loaded tokenizer's, else the raw file's."""
    if s.tok is not None:
        return s.tok.vocab_size
    ids = [*model_pieces(s.doc), *(t["id"] for t in added_tokens(s.doc))]
    return 1 + max(ids) if ids else None


def token_text(s: Subject, i: Optional[int]) -> str:
    if i is None:
        return "None"
    piece = None
    if s.tok is not None:
        try:
            piece = s.tok.id_to_token(i)
        except (ValueError, IndexError, KeyError):
            piece = None
    return f"{i} {piece!r}" if piece is not None else str(i)
