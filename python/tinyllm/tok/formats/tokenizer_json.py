"""Read Hugging Face `tokenizer.json` files, strictly, into their components.

The reader accepts the subset tinyllm implements exactly and rejects everything else with a
ValueError that names the JSON path and the value, so a file never loads into a tokenizer that
would give different ids than Hugging Face:

    tokenizer.json: model.dropout: 0.1 is not supported; expected one of null, 0
    tokenizer.json: model.merges[1207]: 'Ġth e' uses 'Ġth', which is not in model.vocab

Accepted: normalizers null, NFC, NFKC, NFD, NFKD, Lowercase, StripAccents, Prepend, BertNormalizer,
Precompiled, Replace, Strip, Sequence; pre-tokenizers ByteLevel, Digits, Split (String or Regex
pattern, any behaviour, invert), BertPreTokenizer, WhitespaceSplit, Whitespace, Punctuation,
CharDelimiterSplit, UnicodeScripts, Metaspace and Sequence; the models BPE (with or without "type",
merges as "a b" strings or [a, b] pairs; byte-level or character-level, with byte_fallback,
fuse_unk, unk_token, continuing_subword_prefix, end_of_word_suffix, ignore_merges; dropout null
or 0), WordPiece, Unigram (with byte_fallback) and WordLevel; post-processors null, ByteLevel,
TemplateProcessing (single and pair), RobertaProcessing, BertProcessing and Sequence; decoders
null, ByteLevel, WordPiece, Metaspace, ByteFallback, Fuse, Strip, Replace and Sequence (after a Fuse
or ByteLevel only what streams exactly: Fuse, Strip, String Replace, Metaspace).
`truncation` and `padding` are ignored. Token ids are integers in [0, 2**24).

Order of checks: the document is first validated against the shipped JSON Schema
(`tinyllm/tok/schemas/tokenizer-json.schema.json`, which states this subset), then this reader checks
what a schema cannot express (merge parts in the vocabulary, distinct ids, added tokens consistent
with the vocabulary, regexes that compile). The items of `model.vocab` and `model.merges` (hundreds
of thousands in real files) are checked by the reader's own loops, with the schema's wording, since
jsonschema would take seconds over them.

Reading a file with the Rust core: the core finds the text of `model.vocab` and `model.merges`
(`_core.split_tokenizer_json`), Python parses the small rest (the schema check and every check
of this reader run on it unchanged), and a BPE model's vocabulary and merges (a WordPiece or
WordLevel model's vocabulary) are read by serde_json into `_core.BpeTables`, shared with the
engine; a Unigram model's pieces into two lists (`_core.read_unigram_pieces`). The tables are
all or nothing: for anything they would not take as the Python loops would (a bad id, a merge
missing from the vocabulary, another model type, ...) the whole file is read again the plain
way, so errors are worded and ordered as without the core.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, NamedTuple, Optional

from tinyllm import _native
from tinyllm._io import read_json_file
from tinyllm.tok.formats import schema_check as schemas
from tinyllm.tok.stages import bert, decoders, normalizers, pre_tokenizers, processors
from tinyllm.tok.stages.added_tokens import AddedToken

TOP_LEVEL = ("version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
             "post_processor", "decoder", "model")
ADDED_TOKEN_KEYS = ("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special")
BPE_KEYS = ("type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
            "byte_fallback", "ignore_merges", "vocab", "merges")
WORDPIECE_KEYS = ("type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab")
UNIGRAM_KEYS = ("type", "unk_id", "vocab", "byte_fallback")
WORDLEVEL_KEYS = ("type", "vocab", "unk_token")
METASPACE_KEYS = ("type", "replacement", "add_prefix_space", "prepend_scheme", "split", "str_rep")
SCHEMA = "tokenizer-json"
#: Ids index dense tables, so they are bounded (the largest real vocabularies hold about 2**18).
MAX_ID = 2**24 - 1
#: The containers whose items the reader checks itself instead of through jsonschema.
BIG = ("vocab", "merges")

_show = schemas.show


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID


class _Fallback(Exception):
    """The fast read cannot take this file: read it the plain way (which words any error)."""


class _Big(NamedTuple):
    """The file's bytes and the (start, end) ranges of model.vocab and model.merges in them."""

    data: bytes
    vocab: Optional[tuple[int, int]]
    merges: Optional[tuple[int, int]]

    def _read(self, with_merges: bool, read, *spans_and_options):
        """`read(self.data, *spans_and_options)`, a reader of the core, for a model whose file
        has (`with_merges`) or has not a `model.merges` beside `model.vocab`; raises _Fallback
        when the file is not of that shape or the core declines (returns None)."""
        if self.vocab is None or (self.merges is not None) != with_merges:
            raise _Fallback
        found = read(self.data, *spans_and_options)
        if found is None:
            raise _Fallback
        return found

    def bpe_tables(self, prefix: Optional[str]):
        """A BPE model's vocabulary and merges as shared tables (`_core.BpeTables`)."""
        return self._read(True, _native.core.BpeTables.read, self.vocab, self.merges, prefix)

    def unigram_pieces(self) -> tuple[list[str], list[float]]:
        """(pieces, scores) of a Unigram `model.vocab` list, read by the core."""
        return self._read(False, _native.core.read_unigram_pieces, self.vocab)

    def vocab_table(self):
        """The `{token: id}` vocabulary alone (WordPiece, WordLevel) as shared tables."""
        return self._read(False, _native.core.BpeTables.read_vocab, self.vocab)


def _schema_view(doc: Any) -> Any:
    """`doc` with the big `model.vocab` / `model.merges` containers emptied (same JSON type)."""
    model = doc.get("model") if isinstance(doc, dict) else None
    if not isinstance(model, dict) or not any(isinstance(model.get(k), (dict, list)) for k in BIG):
        return doc
    light = dict(model)
    for key in BIG:
        if isinstance(light.get(key), (dict, list)):
            light[key] = type(light[key])()
    return {**doc, "model": light}


def _model_kind(model: dict) -> Any:
    """`model.type` as found (any JSON value), or, when it is absent or null, the type inferred
    from the fields: BPE with `merges`, WordPiece with `max_input_chars_per_word`, else None.
    The one place that decides: `_Reader.model` reads by it, `_read_light` chooses the fast read."""
    kind = model.get("type")
    if kind is not None:
        return kind
    if "merges" in model:
        return "BPE"
    return "WordPiece" if "max_input_chars_per_word" in model else None


class _Reader:
    """Carries the file name so that every error names file, JSON path and value."""

    def __init__(self, source: str, big: Optional[_Big] = None) -> None:
        self.source = source
        self.big = big  # set when model.vocab and model.merges were cut out of the document

    def error(self, path: str, message: str) -> ValueError:
        return ValueError(f"{self.source}: {path}: {message}")

    def unsupported(self, path: str, value: Any) -> ValueError:
        return self.error(path, f"{_show(value)} is not supported")

    def object(self, value: Any, path: str, allowed: tuple) -> dict:
        if not isinstance(value, dict):
            raise self.error(path, f"expected an object, found {_show(value)}")
        for key in value:
            if key not in allowed:
                raise self.error(f"{path}.{key}" if path else key, f"unknown field (value {_show(value[key])}) is not supported")
        return value

    def boolean(self, obj: dict, key: str, path: str, default: bool | None = None, must_be: bool | None = None) -> bool:
        if key not in obj:
            if default is None:
                raise self.error(f"{path}.{key}", "missing")
            return default
        value = obj[key]
        if not isinstance(value, bool):
            raise self.error(f"{path}.{key}", f"expected true or false, found {_show(value)}")
        if must_be is not None and value != must_be:
            raise self.unsupported(f"{path}.{key}", value)
        return value

    def byte_level(self, doc: dict, path: str) -> dict:
        """The three ByteLevel flags (Hugging Face's defaults where absent), for any of its roles."""
        self.object(doc, path, ("type", "add_prefix_space", "trim_offsets", "use_regex"))
        return {flag: self.boolean(doc, flag, path, default=True)
                for flag in ("add_prefix_space", "trim_offsets", "use_regex")}

    def sequence(self, doc: dict, path: str, key: str, parse) -> list:
        """The stages of a `{"type": "Sequence", key: [...]}` object, each read by `parse`."""
        self.object(doc, path, ("type", key))
        items = doc.get(key)
        if not isinstance(items, list):
            raise self.error(f"{path}.{key}", f"expected a list, found {_show(items)}")
        out = []
        for k, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.error(f"{path}.{key}[{k}]", f"expected an object, found {_show(item)}")
            out.append(parse(item, f"{path}.{key}[{k}]"))
        return out

    def type_of(self, obj: Any, path: str) -> str:
        if not isinstance(obj, dict):
            raise self.error(path, f"expected an object, found {_show(obj)}")
        if "type" not in obj:
            raise self.error(f"{path}.type", "missing")
        if not isinstance(obj["type"], str):
            raise self.error(f"{path}.type", f"expected a string, found {_show(obj['type'])}")
        return obj["type"]

    # -- stages -------------------------------------------------------------------------------
    def normalizer(self, doc: Any, path: str):
        if doc is None:
            return None
        kind = self.type_of(doc, path)
        if kind in normalizers.SIMPLE:
            self.object(doc, path, ("type",))
            return normalizers.SIMPLE[kind]()
        if kind == "Sequence":
            return normalizers.Sequence(self.sequence(doc, path, "normalizers", self.normalizer))
        if kind == "BertNormalizer":
            self.object(doc, path, ("type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"))
            strip = doc.get("strip_accents")
            if strip is not None and not isinstance(strip, bool):
                raise self.error(f"{path}.strip_accents", f"expected true, false or null, found {_show(strip)}")
            return bert.BertNormalizer(clean_text=self.boolean(doc, "clean_text", path, default=True),
                                       handle_chinese_chars=self.boolean(doc, "handle_chinese_chars", path, default=True),
                                       strip_accents=strip,
                                       lowercase=self.boolean(doc, "lowercase", path, default=True))
        if kind == "Precompiled":
            self.object(doc, path, ("type", "precompiled_charsmap"))
            charsmap = doc.get("precompiled_charsmap")
            if not isinstance(charsmap, str):
                raise self.error(f"{path}.precompiled_charsmap", f"expected a base64 string, found {_show(charsmap)}")
            try:
                from tinyllm.tok.stages.precompiled import Precompiled  # only for a file that has one

                return Precompiled.from_base64(charsmap)
            except ValueError as e:
                raise self.error(f"{path}.precompiled_charsmap", str(e)) from None
        if kind == "Replace":
            self.object(doc, path, ("type", "pattern", "content"))
            kind_, text = self.pattern(doc, path)
            content = doc.get("content")
            if not isinstance(content, str):
                raise self.error(f"{path}.content", f"expected a string, found {_show(content)}")
            try:
                return normalizers.Replace(text, kind_ == "Regex", content)
            except ValueError as e:  # does not compile, or reads differently in Oniguruma
                raise self.error(f"{path}.pattern.{kind_}", str(e)) from None
        if kind == "Prepend":
            self.object(doc, path, ("type", "prepend"))
            return normalizers.Prepend(self.string(doc, "prepend", path))
        if kind == "Strip":
            self.object(doc, path, ("type", "strip_left", "strip_right"))
            return normalizers.Strip(self.boolean(doc, "strip_left", path, default=True),
                                     self.boolean(doc, "strip_right", path, default=True))
        raise self.unsupported(f"{path}.type", kind)

    def pre_tokenizer(self, doc: Any, path: str):
        if doc is None:
            return None
        kind = self.type_of(doc, path)
        if kind == "ByteLevel":
            return pre_tokenizers.ByteLevel(**self.byte_level(doc, path))
        if kind == "Digits":
            self.object(doc, path, ("type", "individual_digits"))
            return pre_tokenizers.Digits(self.boolean(doc, "individual_digits", path, default=False))
        if kind == "Split":
            return self.split(doc, path)
        if kind in ("BertPreTokenizer", "WhitespaceSplit"):
            self.object(doc, path, ("type",))
            return getattr(bert, kind)()
        if kind == "Metaspace":
            return pre_tokenizers.Metaspace(**self.metaspace(doc, path))
        if kind in ("Whitespace", "UnicodeScripts"):
            self.object(doc, path, ("type",))
            return getattr(pre_tokenizers, kind)()
        if kind == "Punctuation":
            self.object(doc, path, ("type", "behavior"))
            return pre_tokenizers.Punctuation(self.behavior(doc, path, default="Isolated"))
        if kind == "CharDelimiterSplit":
            self.object(doc, path, ("type", "delimiter"))
            return pre_tokenizers.CharDelimiterSplit(self.one_char(doc, "delimiter", path))
        if kind == "Sequence":
            stages = self.sequence(doc, path, "pretokenizers", self.pre_tokenizer)
            for k, stage in enumerate(stages[:-1]):
                if stage.type == "ByteLevel" or stage.type == "Sequence":
                    raise self.error(f"{path}.pretokenizers[{k}]",
                                     f"{stage.type} is supported only as the last stage of a Sequence")
            return pre_tokenizers.Sequence(stages)
        raise self.unsupported(f"{path}.type", kind)

    def pattern(self, doc: dict, path: str) -> tuple[str, str]:
        """("Regex" or "String", text) of a `{"pattern": {"Regex": ...}}` field."""
        pattern = doc.get("pattern")
        if not isinstance(pattern, dict) or len(pattern) != 1 or next(iter(pattern)) not in ("Regex", "String"):
            raise self.error(f"{path}.pattern", f"expected {{\"Regex\": ...}} or {{\"String\": ...}}, found {_show(pattern)}")
        (kind, text), = pattern.items()
        if not isinstance(text, str):
            raise self.error(f"{path}.pattern.{kind}", f"expected a string, found {_show(text)}")
        return kind, text

    def metaspace(self, doc: dict, path: str) -> dict:
        """Metaspace's fields, for the pre-tokenizer and the decoder; old files say
        `add_prefix_space` instead of `prepend_scheme` (Hugging Face's reading of both)."""
        self.object(doc, path, METASPACE_KEYS)
        replacement = doc.get("replacement")
        if not isinstance(replacement, str) or len(replacement) != 1:
            raise self.error(f"{path}.replacement", f"expected one character, found {_show(replacement)}")
        scheme = doc.get("prepend_scheme", "always")
        if scheme not in decoders.PREPEND_SCHEMES:
            raise self.error(f"{path}.prepend_scheme", f"found {_show(scheme)}, expected one of {', '.join(decoders.PREPEND_SCHEMES)}")
        if "add_prefix_space" in doc and not self.boolean(doc, "add_prefix_space", path):
            if scheme != "never":
                raise self.error(f"{path}.add_prefix_space",
                                 f"false contradicts prepend_scheme {_show(scheme)} (false means \"never\")")
        return {"replacement": replacement, "prepend_scheme": scheme,
                "split": self.boolean(doc, "split", path, default=True)}

    def string(self, doc: dict, key: str, path: str) -> str:
        value = doc.get(key)
        if not isinstance(value, str):
            raise self.error(f"{path}.{key}", f"expected a string, found {_show(value)}")
        return value

    def one_char(self, doc: dict, key: str, path: str) -> str:
        value = doc.get(key)
        if not isinstance(value, str) or len(value) != 1:
            raise self.error(f"{path}.{key}", f"expected one character, found {_show(value)}")
        return value

    def behavior(self, doc: dict, path: str, default: str | None = None) -> str:
        behavior = doc.get("behavior", default)
        if behavior not in pre_tokenizers.BEHAVIORS:
            raise self.error(f"{path}.behavior", f"found {_show(behavior)}, expected one of {', '.join(pre_tokenizers.BEHAVIORS)}")
        return behavior

    def split(self, doc: dict, path: str):
        self.object(doc, path, ("type", "pattern", "behavior", "invert"))
        kind, text = self.pattern(doc, path)
        behavior = self.behavior(doc, path)
        invert = self.boolean(doc, "invert", path, default=False)
        try:
            return pre_tokenizers.Split(text, kind == "Regex", behavior, invert)
        except ValueError as e:  # does not compile, or reads differently in Oniguruma
            raise self.error(f"{path}.pattern.{kind}", str(e)) from None

    def post_processor(self, doc: Any, path: str):
        if doc is None:
            return None
        kind = self.type_of(doc, path)
        if kind == "ByteLevel":
            return processors.ByteLevel(**self.byte_level(doc, path))
        if kind == "TemplateProcessing":
            self.object(doc, path, ("type", "single", "pair", "special_tokens"))
            try:
                return processors.TemplateProcessing.from_json(doc, path)
            except ValueError as e:
                raise ValueError(f"{self.source}: {e}") from None
        if kind == "RobertaProcessing":
            self.object(doc, path, ("type", "sep", "cls", "trim_offsets", "add_prefix_space"))
            return processors.RobertaProcessing(self.processor_special(doc, "sep", path),
                                                self.processor_special(doc, "cls", path),
                                                self.boolean(doc, "trim_offsets", path, default=True),
                                                self.boolean(doc, "add_prefix_space", path, default=True))
        if kind == "BertProcessing":
            self.object(doc, path, ("type", "sep", "cls"))
            return processors.BertProcessing(self.processor_special(doc, "sep", path),
                                             self.processor_special(doc, "cls", path))
        if kind == "Sequence":
            stages = self.sequence(doc, path, "processors", self.post_processor)
            templates = [k for k, stage in enumerate(stages) if stage.type == "TemplateProcessing"]
            if len(templates) > 1:
                # A template yields one part per piece; HF panics when a later template gets more than two.
                raise self.error(f"{path}.processors[{templates[1]}]",
                                 "a second TemplateProcessing in a Sequence is not supported (Hugging Face panics on it)")
            return processors.Sequence(stages)
        raise self.unsupported(f"{path}.type", kind)

    def processor_special(self, doc: dict, key: str, path: str) -> tuple[str, int]:
        """A `[token, id]` pair of RobertaProcessing / BertProcessing."""
        value = doc.get(key)
        if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
                or not _is_id(value[1])):
            raise self.error(f"{path}.{key}", f"expected a [token, id] pair, found {_show(value)}")
        return value[0], value[1]

    def decoder(self, doc: Any, path: str):
        if doc is None:
            return None
        kind = self.type_of(doc, path)
        if kind == "ByteLevel":
            return decoders.ByteLevel(**self.byte_level(doc, path))
        if kind == "WordPiece":
            self.object(doc, path, ("type", "prefix", "cleanup"))
            prefix = doc.get("prefix", "##")
            if not isinstance(prefix, str):
                raise self.error(f"{path}.prefix", f"expected a string, found {_show(prefix)}")
            return decoders.WordPiece(prefix, self.boolean(doc, "cleanup", path, default=True))
        if kind == "Metaspace":
            return decoders.Metaspace(**self.metaspace(doc, path))
        if kind in ("ByteFallback", "Fuse"):
            self.object(doc, path, ("type",))
            return getattr(decoders, kind)()
        if kind == "Strip":
            self.object(doc, path, ("type", "content", "start", "stop"))
            counts = {}
            for key in ("start", "stop"):
                value = doc.get(key)
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise self.error(f"{path}.{key}", f"expected a non-negative integer, found {_show(value)}")
                counts[key] = value
            return decoders.Strip(self.one_char(doc, "content", path), **counts)
        if kind == "Replace":
            self.object(doc, path, ("type", "pattern", "content"))
            kind_, text = self.pattern(doc, path)
            content = self.string(doc, "content", path)
            try:
                return decoders.Replace(text, kind_ == "Regex", content)
            except ValueError as e:  # does not compile, or reads differently in Oniguruma
                raise self.error(f"{path}.pattern.{kind_}", str(e)) from None
        if kind == "Sequence":
            stages = self.sequence(doc, path, "decoders", self.decoder)
            try:
                return decoders.Sequence(stages)
            except ValueError as e:  # a decoder that cannot stream after a fusing one
                raise ValueError(f"{self.source}: {path}.{e}") from None
        raise self.unsupported(f"{path}.type", kind)

    def added_tokens(self, doc: Any) -> list[AddedToken]:
        if doc is None:
            return []
        if not isinstance(doc, list):
            raise self.error("added_tokens", f"expected a list, found {_show(doc)}")
        out = []
        for k, item in enumerate(doc):
            path = f"added_tokens[{k}]"
            self.object(item, path, ADDED_TOKEN_KEYS)
            token_id, content = item.get("id"), item.get("content")
            if not _is_id(token_id):
                raise self.error(f"{path}.id", f"expected {schemas.expected(SCHEMA, 'token_id')}, found {_show(token_id)}")
            if not isinstance(content, str) or not content:
                raise self.error(f"{path}.content", f"expected a non-empty string, found {_show(content)}")
            for flag in ("single_word", "lstrip", "rstrip"):
                self.boolean(item, flag, path, default=False, must_be=False)
            out.append(AddedToken(token_id, content,
                                  special=self.boolean(item, "special", path, default=False),
                                  normalized=self.boolean(item, "normalized", path, default=False)))
        return out

    def bpe(self, doc: dict, path: str):
        self.object(doc, path, BPE_KEYS)
        dropout = doc.get("dropout")
        # Hugging Face treats 0 as no dropout; any other p makes its encode random, which a file
        # cannot pin: tinyllm draws BPE-dropout per call instead (`encode(dropout=p, seed=...)`).
        if dropout is not None and not (isinstance(dropout, (int, float)) and not isinstance(dropout, bool)
                                        and dropout == 0):
            raise self.error(f"{path}.dropout", f"{_show(dropout)} is not supported; expected null or 0 "
                                                f"(BPE-dropout is per call: encode(dropout=p, seed=...))")
        fields = {}
        for key in ("continuing_subword_prefix", "end_of_word_suffix", "unk_token"):
            value = doc.get(key)
            if value is not None and not isinstance(value, str):
                raise self.error(f"{path}.{key}", f"expected a string or null, found {_show(value)}")
            fields[key] = value
        for key in ("fuse_unk", "byte_fallback", "ignore_merges"):
            fields[key] = self.boolean(doc, key, path, default=False)
        from tinyllm.tok.models.bpe import BPEModel  # imported only for a file that needs it

        if self.big is not None:
            tables = self.big.bpe_tables(fields["continuing_subword_prefix"])
            try:
                return BPEModel.from_tables(tables, where=path, **fields)
            except ValueError as e:
                raise ValueError(f"{self.source}: {e}") from None
        vocab = self.vocab_ids(doc, path)
        merges = doc.get("merges")
        if not isinstance(merges, list):
            raise self.error(f"{path}.merges", f"expected a list, found {_show(merges)}")
        pairs = []
        for k, m in enumerate(merges):
            if isinstance(m, str):
                parts = m.split(" ")
            elif isinstance(m, list):
                parts = m
            else:
                parts = None
            if parts is None or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
                raise self.error(f"{path}.merges[{k}]", f"expected {schemas.expected(SCHEMA, 'merge')}, found {_show(m)}")
            pairs.append((parts[0], parts[1]))
        try:
            return BPEModel(vocab, pairs, where=path, **fields)
        except ValueError as e:
            raise ValueError(f"{self.source}: {e}") from None

    def model(self, doc: Any):
        if not isinstance(doc, dict):
            raise self.error("model", f"expected an object, found {_show(doc)}")
        kind = _model_kind(doc)
        if kind is not None and not isinstance(kind, str):
            raise self.error("model.type", f"expected a string, found {_show(kind)}")
        if kind == "BPE":
            return self.bpe(doc, "model")
        if kind == "WordPiece":
            return self.wordpiece(doc, "model")
        if kind == "WordLevel":
            return self.wordlevel(doc, "model")
        if kind == "Unigram":
            return self.unigram(doc, "model")
        if kind is None:
            raise self.error("model.type", "missing, and the model has neither merges (BPE) nor "
                                           "max_input_chars_per_word (WordPiece) to infer it from")
        raise self.unsupported("model.type", kind)

    def vocab_ids(self, doc: dict, path: str) -> dict:
        """A `{token: id}` vocabulary with distinct non-negative ids."""
        vocab = doc.get("vocab")
        if not isinstance(vocab, dict):
            raise self.error(f"{path}.vocab", f"expected an object mapping tokens to ids, found {_show(vocab)}")
        owner: dict[int, str] = {}
        for token, i in vocab.items():
            if not _is_id(i):
                raise self.error(f"{path}.vocab[{_show(token)}]",
                                 f"expected {schemas.expected(SCHEMA, 'token_id')}, found {_show(i)}")
            if i in owner:
                raise self.error(f"{path}.vocab[{_show(token)}]", f"id {i} is already the id of {_show(owner[i])}")
            owner[i] = token
        return vocab

    def vocabulary(self, doc: dict, path: str):
        """(vocab, None) of a `{token: id}` vocabulary read here, or (None, tables) when the core
        read it (checked in the same place, so errors keep their order)."""
        if self.big is not None:
            return None, self.big.vocab_table()
        return self.vocab_ids(doc, path), None

    def wordpiece(self, doc: dict, path: str):
        from tinyllm.tok.models.wordpiece import WordPieceModel  # imported only for a file that needs it

        self.object(doc, path, WORDPIECE_KEYS)
        vocab, tables = self.vocabulary(doc, path)
        fields = {}
        for key, default in (("unk_token", "[UNK]"), ("continuing_subword_prefix", "##")):
            value = doc.get(key, default)
            if not isinstance(value, str):
                raise self.error(f"{path}.{key}", f"expected a string, found {_show(value)}")
            fields[key] = value
        fields["max_input_chars_per_word"] = doc.get("max_input_chars_per_word", 100)
        try:
            if tables is not None:
                return WordPieceModel.from_tables(tables, where=path, **fields)
            return WordPieceModel(vocab, where=path, **fields)
        except ValueError as e:
            raise ValueError(f"{self.source}: {e}") from None

    def wordlevel(self, doc: dict, path: str):
        from tinyllm.tok.models.wordlevel import WordLevelModel

        self.object(doc, path, WORDLEVEL_KEYS)
        vocab, tables = self.vocabulary(doc, path)
        unk = doc.get("unk_token")
        if not isinstance(unk, str):
            raise self.error(f"{path}.unk_token", f"expected a string, found {_show(unk)}")
        try:
            if tables is not None:
                return WordLevelModel.from_tables(tables, unk_token=unk, where=path)
            return WordLevelModel(vocab, unk_token=unk, where=path)
        except ValueError as e:
            raise ValueError(f"{self.source}: {e}") from None

    def unigram(self, doc: dict, path: str):
        from tinyllm.tok.models.unigram import UnigramModel

        self.object(doc, path, UNIGRAM_KEYS)
        byte_fallback = self.boolean(doc, "byte_fallback", path, default=False)
        if self.big is not None:
            # Read by the core, checked as the loop below checks (or the file is read again whole).
            texts, scores = self.big.unigram_pieces()
        else:
            texts, scores = self.unigram_vocab(doc, path)
        unk_id = doc.get("unk_id")
        if unk_id is not None and (not isinstance(unk_id, int) or isinstance(unk_id, bool)):
            raise self.error(f"{path}.unk_id", f"expected an integer or null, found {_show(unk_id)}")
        try:
            return UnigramModel.from_columns(texts, scores, unk_id, byte_fallback, where=path)
        except ValueError as e:
            raise ValueError(f"{self.source}: {e}") from None

    def unigram_vocab(self, doc: dict, path: str) -> tuple[list[str], list[float]]:
        """(pieces, scores) of a Unigram `model.vocab`, each [piece, score] item checked."""
        vocab = doc.get("vocab")
        if not isinstance(vocab, list):
            raise self.error(f"{path}.vocab", f"expected a list of [piece, score] pairs, found {_show(vocab)}")
        texts, scores = [], []
        for k, item in enumerate(vocab):
            if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str) or not item[0]
                    or not isinstance(item[1], (int, float)) or isinstance(item[1], bool)):
                raise self.error(f"{path}.vocab[{k}]",
                                 f"expected {schemas.expected(SCHEMA, 'unigram_piece')}, found {_show(item)}")
            try:
                score = float(item[1])
            except OverflowError:
                score = math.inf
            if not math.isfinite(score):
                raise self.error(f"{path}.vocab[{k}][1]", f"expected a finite number, found {_show(item[1])}")
            texts.append(item[0])
            scores.append(score)
        return texts, scores


class TokenizerParts(NamedTuple):
    """The parsed components of a tokenizer.json: the model and the pipeline stages around it.
    `tinyllm.tok.load` picks the tokenizer class for `model.type` and builds it from these."""

    model: Any
    normalizer: Optional[Any]
    pre_tokenizer: Optional[Any]
    post_processor: Optional[Any]
    decoder: Optional[Any]
    added_tokens: list

    def stages(self) -> dict:
        """Everything but the model, as the keyword arguments of a pipeline tokenizer."""
        return {name: getattr(self, name) for name in self._fields[1:]}


def _token_id(model, token: str) -> Optional[int]:
    lookup = getattr(model, "token_id", None)
    return lookup(token) if lookup is not None else model.vocab.get(token)


def _token_of(model, i: int) -> Optional[str]:
    lookup = getattr(model, "token_of", None)
    if lookup is not None:
        return lookup(i)
    return model.id_to_token[i] if i < len(model.id_to_token) else None


def parse_document(doc: Any, source: str = "tokenizer.json", big: Optional[_Big] = None) -> TokenizerParts:
    """The components of a parsed tokenizer.json document; ValueError names the JSON path of
    anything outside the accepted subset. With `big`, `doc` is the light document of a file
    whose vocabulary and merges are read from `big` (raises _Fallback when they cannot be)."""
    r = _Reader(source, big)
    schemas.validate(_schema_view(doc), SCHEMA, source)
    r.object(doc, "", TOP_LEVEL)
    if doc.get("version", "1.0") != "1.0":
        raise r.error("version", f"found {_show(doc['version'])}, expected \"1.0\"")
    if "model" not in doc:
        raise r.error("model", "missing")
    model = r.model(doc["model"])
    added = r.added_tokens(doc.get("added_tokens"))
    first_of_id: dict[int, int] = {}
    first_of_content: dict[str, int] = {}
    for k, token in enumerate(added):
        j = first_of_id.setdefault(token.id, k)
        if added[j].content != token.content:
            raise r.error(f"added_tokens[{k}].id", f"{token.id} is already the id of added_tokens[{j}] "
                                                   f"({_show(added[j].content)}); expected distinct ids")
        j = first_of_content.setdefault(token.content, k)
        if added[j].id != token.id:
            raise r.error(f"added_tokens[{k}].content", f"{_show(token.content)} is already added_tokens[{j}] "
                                                        f"with id {added[j].id}; expected one id per content")
        known = _token_id(model, token.content)
        if known is not None and known != token.id:
            raise r.error(f"added_tokens[{k}].id",
                          f"{token.id} differs from model.vocab[{_show(token.content)}] = {known}")
        holder = _token_of(model, token.id)
        if holder is not None and holder != token.content:
            raise r.error(f"added_tokens[{k}].id",
                          f"{token.id} is already model.vocab[{_show(holder)}]; expected a free id or the same content")
    post_processor = r.post_processor(doc.get("post_processor"), "post_processor")
    if post_processor is not None:
        # What encode(add_special=True) inserts must be a token, or decode would refuse it.
        added_ids = {token.id for token in added}
        for where, i in post_processor.special_ids("post_processor"):
            if _token_of(model, i) is None and i not in added_ids:
                raise r.error(where, f"{i} is not the id of a token; expected an id of model.vocab or added_tokens")
    return TokenizerParts(
        model,
        normalizer=r.normalizer(doc.get("normalizer"), "normalizer"),
        pre_tokenizer=r.pre_tokenizer(doc.get("pre_tokenizer"), "pre_tokenizer"),
        post_processor=post_processor,
        decoder=r.decoder(doc.get("decoder"), "decoder"),
        added_tokens=added,
    )


def _read_light(path: str | os.PathLike) -> Optional[tuple[Any, _Big]]:
    """(light document, big parts) of the file at `path` through the Rust core, or None (no
    core, nothing big, or anything unusual: the plain read words the error)."""
    if _native.core is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    split = _native.core.split_tokenizer_json(data)
    if split is None or (split[1] is None and split[2] is None):
        return None
    light, vocab, merges = split
    try:
        doc = json.loads(light.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    if not isinstance(model, dict) or _model_kind(model) not in ("BPE", "WordPiece", "WordLevel", "Unigram"):
        return None  # no model type to read: the plain read words the error
    return doc, _Big(data, vocab, merges)


def _refuse_constant(name: str):
    raise ValueError(name)  # NaN, Infinity: not JSON; the plain read says where


def read_tokenizer_json(path: str | os.PathLike) -> TokenizerParts:
    """The components of the tokenizer.json file at `path`."""
    light = _read_light(path)
    if light is not None:
        try:
            return parse_document(light[0], str(path), light[1])
        except _Fallback:
            pass
    return parse_document(read_json_file(path), str(path))
