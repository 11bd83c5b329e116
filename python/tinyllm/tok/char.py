"""One id per Unicode code point, with a vocabulary fixed by a rule, not by the data's order.

Vocabulary rule: id 0 is `<unk>`; then the requested specials (`<bos>`, `<eos>`, `<pad>`) in the
order given, each once; then every code point seen in training, sorted by code point. Retraining on
shuffled texts therefore gives the same ids. Encoding never normalizes (é and e + U+0301 stay
different), maps unseen code points to `<unk>`, and treats a typed `<eos>` as five characters.

>>> tok = CharTokenizer.train(["hello", "hi"], specials=("<bos>", "<eos>"))
>>> tok.vocab
['<unk>', '<bos>', '<eos>', 'e', 'h', 'i', 'l', 'o']
>>> tok.encode("hi!"), tok.encode("hi", add_special=True)
([4, 5, 0], [1, 4, 5, 2])
>>> tok.decode([4, 5, 0]), tok.decode([4, 5, 0], skip_special=True)
('hi<unk>', 'hi')

Saved as `tinyllm_char.json`: `{"type": "char", "vocab": [...], "specials": {"unk": 0, ...}}`.
`specials` maps roles to ids, so any reader finds `<unk>` without guessing its spelling.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from tinyllm._io import atomic_write_json, read_json_file
from tinyllm.tok.formats import schema_check as schemas
from tinyllm.tok.encoded import (EncodedSequence, check_budget, check_structured_options, content_budget,
                                 content_window, truncate)
from tinyllm.tok.base import TokenizerBase, check_id, check_ids
from tinyllm.tok.policy import with_policy_files
from tinyllm.tok.stages.special_policy import SpecialPolicy, SpecialSet, split_on_specials
from tinyllm.tok.text.clean import clean_text, require_str

FILE_NAME = "tinyllm_char.json"
ROLE_TEXTS = {"unk": "<unk>", "bos": "<bos>", "eos": "<eos>", "pad": "<pad>"}
_ROLE_OF_TEXT = {text: role for role, text in ROLE_TEXTS.items()}


def validate_char_document(doc: Any, source: str) -> tuple[list[str], dict[str, int]]:
    """Check a parsed tinyllm_char.json document; return (vocab, roles).

    Every problem raises ValueError naming `source` and the field, e.g.
    `tinyllm_char.json: vocab[4]: 'ab' has 2 code points; ...`.
    """

    def fail(field: str, message: str) -> ValueError:
        return ValueError(f"{source}: {field}: {message}")

    if not isinstance(doc, dict):
        raise ValueError(f"{source}: expected a JSON object, found {type(doc).__name__}")
    for key in doc:
        if key not in ("type", "vocab", "specials"):
            raise fail(key, "unknown field; expected only type, vocab and specials")
    for key in ("type", "vocab", "specials"):
        if key not in doc:
            raise fail(key, "missing")
    if doc["type"] != "char":
        raise fail("type", f"found {doc['type']!r}, expected 'char'")

    vocab = doc["vocab"]
    if not isinstance(vocab, list) or not vocab:
        raise fail("vocab", f"expected a non-empty list of strings, found {vocab!r:.60}")
    first_seen: dict[str, int] = {}
    for i, entry in enumerate(vocab):
        if not isinstance(entry, str) or not entry:
            raise fail(f"vocab[{i}]", f"found {entry!r}, expected a non-empty string")
        if clean_text(entry) != entry:
            raise fail(f"vocab[{i}]", f"{entry!r} contains a surrogate code point, which UTF-8 cannot carry")
        if entry in first_seen:
            raise fail(f"vocab[{i}]", f"{entry!r} repeats vocab[{first_seen[entry]}]; entries must be unique")
        first_seen[entry] = i

    specials = doc["specials"]
    if not isinstance(specials, dict):
        raise fail("specials", f"expected an object mapping roles to ids, found {type(specials).__name__}")
    role_of_id: dict[int, str] = {}
    for role, value in specials.items():
        field = f"specials.{role}"
        if role not in ROLE_TEXTS:
            raise fail(field, f"unknown role; expected one of {', '.join(ROLE_TEXTS)}")
        try:
            i = check_id(value, len(vocab), "id")
        except ValueError as e:
            raise fail(field, str(e)) from None
        if i in role_of_id:
            raise fail(field, f"id {i} is already the id of specials.{role_of_id[i]}")
        role_of_id[i] = role
    if "unk" not in specials:
        raise fail("specials.unk", "missing; every char tokenizer needs an unknown id")

    for i, entry in enumerate(vocab):
        if i not in role_of_id and len(entry) != 1:
            raise fail(
                f"vocab[{i}]",
                f"{entry!r} has {len(entry)} code points; entries that are not special tokens "
                "must be exactly one code point",
            )
    return list(vocab), {role: int(specials[role]) for role in specials}


class CharTokenizer(TokenizerBase):
    """A character-level tokenizer. Build it with `train`, or from a vocabulary and roles."""

    def __init__(self, vocab: Sequence[str], specials: Mapping[str, int], *,
                 generation_config: Optional[dict] = None, tokenizer_config: Optional[dict] = None) -> None:
        """`generation_config` / `tokenizer_config`: parsed config files naming special-token roles
        (see `tinyllm.tok.policy`); they must agree with `specials`."""
        self.vocab, self.roles = validate_char_document(
            {"type": "char", "vocab": list(vocab), "specials": dict(specials)}, "CharTokenizer"
        )
        special = set(self.roles.values())
        self._special_id_set = frozenset(special)
        self._id_of = {entry: i for i, entry in enumerate(self.vocab)}
        # Only ordinary entries are matched in text: a special's text never maps to its id here.
        self._char_id = {entry: i for i, entry in enumerate(self.vocab) if i not in special}
        own = {role: (f"{FILE_NAME}: specials.{role} = {i}", i) for role, i in self.roles.items()}
        self._resolve_policy(generation_config, tokenizer_config, own)

    def semantic_components(self) -> dict:
        """The vocabulary ordered by id and the role ids (encode matches specials by role and
        inserts bos/eos with `add_special`), plus the special-token policy."""
        model = {"type": "Char", "vocab": list(self.vocab), "specials": dict(self.roles)}
        return {"normalizer": None, "pre_tokenizer": None, "model": model, "post_processor": None,
                "decoder": None, "added_tokens": [], "special_tokens": self.special_token_policy.to_json()}

    # -- the protocol -------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def special_ids(self) -> dict[str, int]:
        return {self.vocab[i]: i for i in sorted(self._special_id_set)}

    @property
    def unk_id(self) -> int:
        return self.roles["unk"]

    @classmethod
    def train(cls, texts: Iterable[str], specials: Sequence[str] = ()) -> "CharTokenizer":
        """Collect the code points of `texts`; lay out ids by the vocabulary rule.

        `specials` may name `<bos>`, `<eos>` and `<pad>` (and `<unk>`, which is always id 0); a
        repeat counts once, anything else is a ValueError.
        """
        if isinstance(specials, str):
            raise ValueError(f"train: specials: expected a sequence of special texts, found the string {specials!r}")
        roles = {"unk": 0}
        vocab = ["<unk>"]
        for position, text in enumerate(specials):
            role = _ROLE_OF_TEXT.get(text) if isinstance(text, str) else None
            if role is None:
                raise ValueError(
                    f"train: specials[{position}] = {text!r} is not a special this format knows; "
                    f"expected one of {', '.join(ROLE_TEXTS.values())}"
                )
            if role not in roles:
                roles[role] = len(vocab)
                vocab.append(text)
        if isinstance(texts, str):
            texts = [texts]
        seen: set[str] = set()
        for position, text in enumerate(texts):
            seen.update(clean_text(require_str(text, f"train: texts[{position}]")))
        vocab.extend(sorted(seen))
        return cls(vocab, roles)

    def encode(
        self,
        text: str,
        add_special: bool = False,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = (),
        max_length: Optional[int] = None,
        truncation_side: str = "right",
    ) -> list[int]:
        """Ids of `text`. With `max_length=N` at most N ids: the inserted `<bos>`/`<eos>` are kept
        and the content is cut ("right": its end, "left": its start); adjacent allowed specials
        go or stay together (see `tinyllm.tok.encoded.content_window`).

        >>> tok = CharTokenizer.train(["hello"], specials=("<bos>", "<eos>"))
        >>> tok.encode("hello", add_special=True, max_length=4)
        [1, 4, 3, 2]
        >>> tok.encode("h<eos><eos>", allowed_special="all", max_length=2)  # the run of two goes whole
        [4]
        """
        units = self._units(clean_text(require_str(text, "encode: text")), allowed_special, disallowed_special)
        ids = [i for i, _, _, _ in units]
        if max_length is not None or truncation_side != "right":
            check_budget(max_length, truncation_side)
            if max_length is not None:
                inserted = len(self._bos()) + len(self._eos()) if add_special else 0
                start, end = content_window([u[3] for u in units], content_budget(max_length, inserted),
                                            truncation_side)
                ids = ids[start:end]
        if add_special:
            ids = self._bos() + ids + self._eos()
        return ids

    def _units(self, text: str, allowed_special: SpecialSet, disallowed_special: SpecialSet) -> list[tuple]:
        """(id, start, end, special) per id of `text` (already clean): one code point, or an
        allowed special's whole text."""
        policy = SpecialPolicy.resolve(self.special_ids, allowed_special, disallowed_special)
        unk, lookup = self.unk_id, self._char_id.get
        units, pos = [], 0
        for segment, is_special in split_on_specials(text, policy):
            if is_special:
                units.append((self._id_of[segment], pos, pos + len(segment), True))
            else:
                units.extend((lookup(ch, unk), pos + k, pos + k + 1, False) for k, ch in enumerate(segment))
            pos += len(segment)
        return units

    def _bos(self) -> list[int]:
        return [self.roles["bos"]] if "bos" in self.roles else []

    def _eos(self) -> list[int]:
        return [self.roles["eos"]] if "eos" in self.roles else []

    def encode_structured(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
                          disallowed_special: SpecialSet = (), offset_coordinate: str = "raw_codepoints",
                          max_length: Optional[int] = None, truncation_side: str = "right") -> EncodedSequence:
        """The ids with their pieces, special mask and offsets; inserted BOS/EOS have offset None.

        >>> tok = CharTokenizer.train(["hé"], specials=("<bos>",))
        >>> enc = tok.encode_structured("hé", add_special=True, offset_coordinate="raw_utf8_bytes")
        >>> enc.pieces, enc.offsets, enc.special_tokens_mask
        (['<bos>', 'h', 'é'], [None, (0, 1), (1, 3)], [True, False, False])
        """
        check_structured_options(offset_coordinate, max_length, truncation_side)
        text = clean_text(require_str(text, "encode_structured: text"))
        units = self._units(text, allowed_special, disallowed_special)
        if offset_coordinate == "raw_utf8_bytes":
            at = [0]
            for ch in text:
                at.append(at[-1] + len(ch.encode("utf-8")))
            units = [(i, at[s], at[e], special) for i, s, e, special in units]
        ids = [i for i, _, _, _ in units]
        mask = [special for _, _, _, special in units]
        spans: list = [(s, e) for _, s, e, _ in units]
        if add_special:
            bos, eos = self._bos(), self._eos()
            ids = bos + ids + eos
            mask = [True] * len(bos) + mask + [True] * len(eos)
            spans = [None] * len(bos) + spans + [None] * len(eos)
        encoded = EncodedSequence(ids, [self.vocab[i] for i in ids], mask, spans, offset_coordinate)
        return truncate(encoded, max_length, truncation_side, self.semantic_hash)

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str:
        checked = check_ids(ids, self.vocab_size, context="decode")
        vocab = self.vocab
        if skip_special:
            drop = self._special_id_set
            return "".join(vocab[i] for i in checked if i not in drop)
        return "".join(vocab[i] for i in checked)

    def token_to_id(self, s: str) -> Optional[int]:
        return self._id_of.get(s) if isinstance(s, str) else None

    def id_to_token(self, i: int) -> str:
        return self.vocab[check_id(i, self.vocab_size, "id_to_token: id")]

    def token_bytes(self, i: int) -> bytes:
        """The UTF-8 bytes of token `i` (the streaming decoder's input)."""
        return self.id_to_token(i).encode("utf-8")

    # -- files --------------------------------------------------------------------------------
    def to_document(self) -> dict:
        return {"type": "char", "vocab": list(self.vocab), "specials": dict(self.roles)}

    def save(self, dir: str | os.PathLike) -> None:
        """Write `dir/tinyllm_char.json` atomically, creating `dir` if needed."""
        path = Path(dir)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path / FILE_NAME, self.to_document())

    @classmethod
    def load(cls, dir: str | os.PathLike) -> "CharTokenizer":
        """Load `dir/tinyllm_char.json` (or the file itself), checking everything the constructor checks."""
        path = Path(dir)
        if path.is_dir():
            return cls.from_file(path / FILE_NAME, policy_dir=path)
        return cls.from_file(path)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, policy_dir: str | os.PathLike | None = None) -> "CharTokenizer":
        """Read a tinyllm_char.json: its JSON Schema (tokenizer-char.schema.json) first, then the
        rules a schema cannot express; ValueError names the file and the JSON path. With
        `policy_dir`, that directory's generation_config.json and tokenizer_config.json name roles."""
        doc = read_json_file(path)
        source = str(path)
        schemas.validate(doc, "tokenizer-char", source)
        vocab, roles = validate_char_document(doc, source)
        if policy_dir is None:
            return cls(vocab, roles)
        return with_policy_files(policy_dir, lambda **configs: cls(vocab, roles, **configs))

    def __repr__(self) -> str:
        roles = ", ".join(f"{r}={i}" for r, i in self.roles.items())
        return f"CharTokenizer(vocab_size={self.vocab_size}, {roles})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CharTokenizer) and self.vocab == other.vocab and self.roles == other.roles
                and self.special_token_policy == other.special_token_policy)

    __hash__ = None  # mutable-looking attributes; equality is by content


def json_schema() -> dict:
    """The JSON Schema of tinyllm_char.json shipped with the package."""
    return schemas.schema("tokenizer-char")
