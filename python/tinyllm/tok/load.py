"""`load(path_or_name)`: one entry point for model directories, tokenizer files and presets.

Resolution order:

1. an existing directory: its `config.json` names the kind in `tl_tokenizer`
   (`"bytes"`: the byte tokenizer, `"file"`: the tokenizer file inside the directory); without
   a `config.json`, the tokenizer file inside it is used;
2. an existing file: `tokenizer.json`, `tinyllm_char.json`, a JSON file in either format, a
   tiktoken `.tiktoken` file (see below), or a SentencePiece `.model` file (ids and decodes equal
   sentencepiece's). A directory with no tokenizer.json or tinyllm_char.json but one `*.model` or
   `*.tiktoken` file loads that file (tokenizer.json wins when both are there);
3. a built-in preset name: `"bytes"`, `"gpt2"`, `"smollm2"`, `"cl100k"` or `"o200k"` (the last two
   are OpenAI's cl100k_base and o200k_base, from their `.tiktoken` files).

A `.tiktoken` file holds only ranks, so `load` takes the pre-tokenizer as `pattern=` (one of
`"gpt2"`, `"r50k"`, `"p50k"`, `"cl100k"`, `"o200k"`, or a regex string) and the special tokens as
`special_tokens={text: id}` (default: those of the named encoding; none for a regex string), also
for a directory whose tokenizer is a `.tiktoken` file. When
`pattern` is not given, a file whose name stem is exactly `cl100k_base`, `o200k_base`,
`r50k_base`, `p50k_base` or `gpt2` implies its pattern; any other `.tiktoken` file without
`pattern` is a ValueError listing the pattern names. `pattern` and `special_tokens` apply to
`.tiktoken` files only; passing them for anything else is a ValueError.

A directory (and a file-backed preset) also gives the special-token roles of its
`generation_config.json` and `tokenizer_config.json` (see `tinyllm.tok.policy`); a tokenizer file
loaded by its own path names no roles beyond its own.

>>> load("bytes").vocab_size
256
>>> load("gpt2").encode(" cat")
[3797]
>>> load("cl100k").encode("Hello world")
[9906, 1917]
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Callable, Optional

from tinyllm._io import read_json_file
from tinyllm.tok.formats.schema_check import show
from tinyllm.tok.base import ByteTokenizer, Tokenizer
from tinyllm.tok.policy import with_policy_files

if TYPE_CHECKING:
    from pathlib import Path

    from tinyllm.tok.formats.tokenizer_json import TokenizerParts

CONFIG_FILE = "config.json"
HF_FILE = "tokenizer.json"
# The names of the other formats' files. Each format's reader (tokenizer.json's too) is imported
# when a file of that format is loaded.
CHAR_FILE = "tinyllm_char.json"
TIKTOKEN_SUFFIX = ".tiktoken"
SPM_SUFFIX = ".model"

# Paths are strings until a directory is walked: loading one file does not import pathlib (7 ms).
PRESET_DIR = os.path.join(os.path.dirname(__file__), "presets")


def tokenizer_class(model_type: str) -> type:
    """The tokenizer class of a tokenizer.json model type (imported on first use)."""
    if model_type == "BPE":
        from tinyllm.tok.models.bpe_tokenizer import BPETokenizer
        return BPETokenizer
    if model_type == "WordPiece":
        from tinyllm.tok.models.wordpiece_tokenizer import WordPieceTokenizer
        return WordPieceTokenizer
    if model_type == "Unigram":
        from tinyllm.tok.models.unigram_tokenizer import UnigramTokenizer
        return UnigramTokenizer
    if model_type == "WordLevel":
        from tinyllm.tok.models.wordlevel_tokenizer import WordLevelTokenizer
        return WordLevelTokenizer
    raise KeyError(model_type)


def tokenizer_from_parts(parts: "TokenizerParts", *, generation_config: Optional[dict] = None,
                         tokenizer_config: Optional[dict] = None) -> Tokenizer:
    """The tokenizer of the model's type around parsed tokenizer.json components, with the
    special-token roles of the two config files (parsed; see `tinyllm.tok.policy`)."""
    return tokenizer_class(parts.model.type)(parts.model, **parts.stages(), generation_config=generation_config,
                                             tokenizer_config=tokenizer_config)


def _char_tokenizer():
    from tinyllm.tok.char import CharTokenizer
    return CharTokenizer


def _spm_tokenizer():
    from tinyllm.tok.models.spm_tokenizer import SentencePieceTokenizer
    return SentencePieceTokenizer


def read_tiktoken(path, pattern=None, special_tokens=None) -> "TokenizerParts":
    from tinyllm.tok.formats.tiktoken import read_tiktoken as read
    return read(path, pattern, special_tokens)


def _read_char_file(path: str | os.PathLike) -> Tokenizer:
    return _char_tokenizer().from_file(path)


def tokenizer_from_document(doc: object, source: str = "tokenizer.json", *, generation_config: Optional[dict] = None,
                            tokenizer_config: Optional[dict] = None) -> Tokenizer:
    """The tokenizer of a parsed tokenizer.json document (ValueError names the JSON path of a
    problem, prefixed by `source`), with the roles of a parsed generation_config.json and
    tokenizer_config.json (ValueError names the file and the field)."""
    from tinyllm.tok.formats.tokenizer_json import parse_document

    return tokenizer_from_parts(parse_document(doc, source), generation_config=generation_config,
                                tokenizer_config=tokenizer_config)


def read_tokenizer_file(path: str | os.PathLike) -> Tokenizer:
    """The tokenizer of a tokenizer.json file (no config files: a file alone names no roles)."""
    from tinyllm.tok.formats.tokenizer_json import read_tokenizer_json

    return tokenizer_from_parts(read_tokenizer_json(path))


def read_tokenizer_dir_file(path: str | os.PathLike) -> Tokenizer:
    """The tokenizer of `path` (a tokenizer.json) with the roles of the config files beside it."""
    from tinyllm.tok.formats.tokenizer_json import read_tokenizer_json

    parts = read_tokenizer_json(path)
    return with_policy_files(os.path.dirname(path), lambda **configs: tokenizer_from_parts(parts, **configs))


def _preset(name: str) -> Callable[[], Tokenizer]:
    """A preset shipped as a model directory (its tokenizer file and config files); parsed once per
    process, since presets are immutable."""
    return functools.lru_cache(maxsize=None)(lambda: _load_file_in_dir(_dir_path(os.path.join(PRESET_DIR, name))))


PRESETS: dict[str, Callable[[], Tokenizer]] = {
    "bytes": ByteTokenizer,
    "gpt2": _preset("gpt2"),
    "smollm2": _preset("smollm2"),
    "cl100k": _preset("cl100k"),
    "o200k": _preset("o200k"),
}

# The tokenizer files a model directory may hold, and how to read each.
FILE_LOADERS: dict[str, Callable[[str | os.PathLike], Tokenizer]] = {
    CHAR_FILE: _read_char_file,
    HF_FILE: read_tokenizer_file,
}

TL_TOKENIZER_KINDS = ("bytes", "file")


def _dir_path(directory: str | os.PathLike) -> "Path":
    from pathlib import Path  # directories are walked with pathlib, imported when one is

    return Path(directory)


def _load_file(path: str | os.PathLike) -> Tokenizer:
    loader = FILE_LOADERS.get(os.path.basename(path))
    if loader is not None:
        return loader(path)
    doc = read_json_file(path) if os.path.splitext(path)[1] == ".json" else None
    if isinstance(doc, dict) and doc.get("type") == "char":
        return _char_tokenizer().from_file(path)
    if isinstance(doc, dict) and "model" in doc:
        return tokenizer_from_document(doc, str(path))
    raise ValueError(
        f"{path}: not a tokenizer file tinyllm knows; expected {HF_FILE}, {CHAR_FILE}, a file in one of their formats, "
        f"a {TIKTOKEN_SUFFIX} file or a SentencePiece {SPM_SUFFIX} file"
    )


def _refuse_tiktoken_options(options: dict, what: str) -> None:
    raise ValueError(f"load: {' and '.join(options)} apply only to {TIKTOKEN_SUFFIX} files; {what}")


def _load_file_in_dir(directory: Path, tiktoken_options: Optional[dict] = None) -> Tokenizer:
    found = [directory / name for name in FILE_LOADERS if (directory / name).is_file()]
    if not found:
        return _load_vocab_file_in_dir(directory, tiktoken_options)
    if tiktoken_options:
        _refuse_tiktoken_options(tiktoken_options, f"{directory} holds {found[0].name}")
    if len(found) > 1:
        names = " and ".join(p.name for p in found)
        raise ValueError(f"{directory}: holds both {names}; keep one tokenizer file per model directory")
    path = found[0]
    if path.name == CHAR_FILE:
        return _char_tokenizer().from_file(path, policy_dir=directory)
    return read_tokenizer_dir_file(path)


def _load_vocab_file_in_dir(directory: Path, tiktoken_options: Optional[dict]) -> Tokenizer:
    """The one SentencePiece `*.model` or tiktoken `*.tiktoken` file of a directory without a
    tokenizer.json, with the roles of the directory's config files."""
    files = sorted(p for suffix in (SPM_SUFFIX, TIKTOKEN_SUFFIX) for p in directory.glob(f"*{suffix}") if p.is_file())
    if not files:
        expected = ", ".join((CONFIG_FILE, *FILE_LOADERS, f"a SentencePiece *{SPM_SUFFIX} file",
                              f"a *{TIKTOKEN_SUFFIX} file"))
        raise ValueError(f"{directory}: no tokenizer here; expected one of {expected}")
    if len(files) > 1:
        names = ", ".join(p.name for p in files)
        raise ValueError(f"{directory}: holds several vocabulary files ({names}) and no {HF_FILE}; "
                         "keep one tokenizer file per model directory")
    file = files[0]
    if file.suffix == SPM_SUFFIX:
        if tiktoken_options:
            _refuse_tiktoken_options(tiktoken_options, f"{directory} holds {file.name}")
        return _spm_tokenizer().from_dir_file(file)
    parts = read_tiktoken(file, **(tiktoken_options or {}))
    return with_policy_files(directory, lambda **configs: tokenizer_from_parts(parts, **configs))


def _load_model_dir(directory: Path, tiktoken_options: Optional[dict] = None) -> Tokenizer:
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        return _load_file_in_dir(directory, tiktoken_options)
    config = read_json_file(config_path)
    expected = "one of " + ", ".join(show(kind) for kind in TL_TOKENIZER_KINDS)
    if not isinstance(config, dict):
        raise ValueError(f"{config_path}: expected a JSON object with tl_tokenizer, found {show(config)}")
    if "tl_tokenizer" not in config:
        raise ValueError(f"{config_path}: tl_tokenizer: missing; expected {expected}")
    kind = config["tl_tokenizer"]
    if kind == "bytes":
        if tiktoken_options:
            _refuse_tiktoken_options(tiktoken_options, f"{config_path} names the byte tokenizer")
        return with_policy_files(directory, ByteTokenizer)
    if kind == "file":
        return _load_file_in_dir(directory, tiktoken_options)
    raise ValueError(f"{config_path}: tl_tokenizer: found {show(kind)}, expected {expected}")


def load(path_or_name: str | os.PathLike, *, pattern: Optional[str] = None,
         special_tokens: Optional[dict] = None) -> Tokenizer:
    """Load a tokenizer from a model directory, a tokenizer file, or a preset name.

    `pattern` and `special_tokens` are for `.tiktoken` files only (see the module docstring): the
    pre-tokenizer (a name or a regex string) and the special tokens `{text: id}`."""
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise ValueError(f"load: expected a path or a preset name, got {type(path_or_name).__name__}")
    name = os.fspath(path_or_name)
    is_file, suffix = os.path.isfile(name), os.path.splitext(name)[1]
    if is_file and suffix == TIKTOKEN_SUFFIX:
        return tokenizer_from_parts(read_tiktoken(path_or_name, pattern, special_tokens))
    if is_file and suffix == SPM_SUFFIX and pattern is None and special_tokens is None:
        return _spm_tokenizer().from_file(path_or_name)
    options = {k: v for k, v in (("pattern", pattern), ("special_tokens", special_tokens)) if v is not None}
    if os.path.isdir(name):
        return _load_model_dir(_dir_path(name), options)
    if options:
        _refuse_tiktoken_options(options, f"{name!r} is not one")
    if is_file:
        return _load_file(path_or_name)
    if name in PRESETS:
        return PRESETS[name]()
    presets = ", ".join(sorted(PRESETS))
    raise ValueError(f"load: {name!r} is not a file, a directory or a preset name (presets: {presets})")


def preset_names() -> list[str]:
    return sorted(PRESETS)


def preset_directory(name: str) -> Path | None:
    """The shipped directory of a file-backed preset (its tokenizer_config.json, chat template),
    or None."""
    directory = _dir_path(os.path.join(PRESET_DIR, name))
    return directory if name in PRESETS and directory.is_dir() else None
