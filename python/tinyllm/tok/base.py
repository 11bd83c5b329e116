"""The Tokenizer contract, the one id check, and the byte tokenizer.

Every tokenizer in tinyllm (and any object a user brings) satisfies `Tokenizer`, so whatever
consumes tokens is written once. Two laws hold for each: `decode(encode(t)) == t` for every text the
vocabulary covers, and `encode` never raises on a `str` (unknown input becomes `unk_id`).

>>> tok = ByteTokenizer()
>>> tok.encode("hé")
[104, 195, 169]
>>> tok.decode([226, 130])   # an unfinished three-byte character: one U+FFFD
'�'
>>> tok.id_to_token(32)
'Ġ'
"""

from __future__ import annotations

import operator
import os
from array import array
from collections.abc import Iterable, Sequence
from typing import Optional, Protocol, runtime_checkable

from tinyllm.artifacts.canonical import framed_hash
from tinyllm.tok.encoded import EncodedSequence, check_budget, check_structured_options, truncate
from tinyllm.tok.policy import EMPTY_POLICY, SpecialTokenPolicy, resolve_policy, with_policy_files, write_policy_files
from tinyllm.tok.text.byte_alphabet import byte_alphabet, byte_of
from tinyllm.tok.stages.special_policy import SpecialPolicy, SpecialSet
from tinyllm.tok.text.clean import clean_text, require_str, to_utf8


@runtime_checkable
class Tokenizer(Protocol):
    """What every tokenizer offers. Structural: no inheritance is needed to satisfy it."""

    vocab_size: int
    special_ids: dict[str, int]
    unk_id: Optional[int]

    def encode(self, text: str, add_special: bool = False) -> list[int]: ...

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str: ...

    def token_to_id(self, s: str) -> Optional[int]: ...

    def id_to_token(self, i: int) -> str: ...

    def save(self, dir: str) -> None: ...

    @classmethod
    def load(cls, dir: str) -> "Tokenizer": ...


def _describe(value: object) -> str:
    return f"{value!r} (a {type(value).__name__}, expected an integer id)"


def check_id(value: object, vocab_size: int, label: str = "id") -> int:
    """One id: an integer (anything with `__index__`, but not a bool) in `0..vocab_size`."""
    if isinstance(value, bool) or type(value).__name__.startswith("bool") or not hasattr(value, "__index__"):
        raise ValueError(f"{label} = {_describe(value)}")
    i = operator.index(value)
    if not 0 <= i < vocab_size:
        raise ValueError(
            f"{label} = {i} is out of range for a vocabulary of {vocab_size} ids (0..{vocab_size - 1})"
        )
    return i


def check_ids(ids: Sequence[int], vocab_size: int, *, context: str = "") -> list[int]:
    """Validate ids before anything trusts them; return them as a list of plain ints.

    Each id must be an integer (numpy integers pass through `__index__`), not a bool, float, str or
    None, and lie in `0 <= i < vocab_size`. Without the range check `vocab[-1]` would quietly decode
    to the last entry. The error names the position, the value and the vocabulary size:

    >>> check_ids([1, 256], 256, context="decode")
    Traceback (most recent call last):
    ...
    ValueError: decode: ids[1] = 256 is out of range for a vocabulary of 256 ids (0..255)
    """
    prefix = f"{context}: " if context else ""
    if isinstance(ids, str) or not isinstance(ids, Iterable):
        raise ValueError(f"{prefix}ids: expected a sequence of integer ids, got {type(ids).__name__}")
    dtype = getattr(ids, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", None) in ("i", "u") and getattr(ids, "ndim", 1) == 1:
        return _check_integer_array(ids, vocab_size, prefix)
    out = []
    for position, value in enumerate(ids):
        try:
            out.append(check_id(value, vocab_size, f"ids[{position}]"))
        except ValueError as e:
            raise ValueError(f"{prefix}{e}") from None
    return out


def _check_integer_array(ids, vocab_size: int, prefix: str) -> list[int]:
    """Vectorised range check for 1-D numpy integer arrays (no per-element Python work)."""
    if len(ids):
        bad = (ids < 0) | (ids >= vocab_size)
        if bad.any():
            position = int(bad.argmax())
            check_id(int(ids[position]), vocab_size, f"{prefix}ids[{position}]")
    return ids.tolist()


#: The domain of the semantic hash H_sem (see `TokenizerBase.semantic_hash`).
SEMANTIC_DOMAIN = "tokenizer-semantic-v1"


def flatten(batch: Iterable[Sequence[int]]) -> tuple[array, array]:
    """Lists of ids as (`array('I')` of all ids, `array('Q')` of the len + 1 offsets)."""
    ids, offsets = array("I"), array("Q", [0])
    for one in batch:
        ids.extend(one)
        offsets.append(len(ids))
    return ids, offsets


class TokenizerBase:
    """Shared conveniences for tinyllm's own tokenizers (not part of the Protocol): the
    special-token roles (`tinyllm.tok.policy`) and the semantic hash."""

    vocab_size: int
    special_token_policy: SpecialTokenPolicy = EMPTY_POLICY

    # -- special-token roles (set once, by the constructor) ------------------------------------
    def _resolve_policy(self, generation_config, tokenizer_config, own=None) -> None:
        """Resolve and attach the policy; called by constructors only, before any hash exists."""
        self.special_token_policy = resolve_policy(
            self.token_to_id, self.vocab_size, generation_config=generation_config,
            tokenizer_config=tokenizer_config, own=own)
        self.__dict__.pop("_semantic_hash", None)

    @property
    def bos_id(self) -> Optional[int]:
        return self.special_token_policy.bos_id

    @property
    def eos_id(self) -> Optional[int]:
        return self.special_token_policy.eos_id

    @property
    def pad_id(self) -> Optional[int]:
        return self.special_token_policy.pad_id

    @property
    def eot_id(self) -> Optional[int]:
        return self.special_token_policy.eot_id

    @property
    def stop_ids(self) -> tuple:
        """The EOS ids plus EOT, sorted."""
        return self.special_token_policy.stop_ids

    # -- identity ------------------------------------------------------------------------------
    def semantic_components(self) -> dict:
        """The parsed behaviour in the canonical profile (see docs/artifacts.md, "Identity")."""
        raise NotImplementedError

    @property
    def semantic_hash(self) -> str:
        """H_sem = framed_hash("tokenizer-semantic-v1", semantic_components()), computed once:
        a tokenizer does not change after construction."""
        cached = self.__dict__.get("_semantic_hash")
        if cached is None:
            cached = framed_hash(SEMANTIC_DOMAIN, self.semantic_components())
            self.__dict__["_semantic_hash"] = cached
        return cached

    def semantic_prefix(self, start: int, stop: int) -> str:
        """The semantic hash of ids [start, stop): their pieces, merge ranks, scores and
        added-token flags, with the stages and model options they depend on
        (`tinyllm.tok.vocab_rows`). An append-only vocabulary change keeps
        `new.semantic_prefix(0, V_old) == old.semantic_prefix(0, V_old)`.

        >>> from tinyllm.tok import load
        >>> load("gpt2").semantic_prefix(0, 256) == load("gpt2").semantic_prefix(0, 256)
        True
        """
        from tinyllm.tok.vocab_rows import SEMANTIC_PREFIX_DOMAIN, prefix_payload

        return framed_hash(SEMANTIC_PREFIX_DOMAIN, prefix_payload(self.semantic_components(), start, stop))

    def encode_batch(
        self,
        texts: Iterable[str],
        add_special: bool = False,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = (),
    ) -> list[list[int]]:
        """`encode` over many texts, in order."""
        return [
            self.encode(t, add_special, allowed_special=allowed_special, disallowed_special=disallowed_special)
            for t in texts
        ]

    def encode_batch_flat(
        self,
        texts: Iterable[str],
        add_special: bool = False,
        *,
        allowed_special: SpecialSet = (),
        disallowed_special: SpecialSet = (),
    ) -> tuple[array, array]:
        """`encode_batch` as two flat arrays, for bulk work: `ids` (`array('I')`, every id of every
        text in order) and `offsets` (`array('Q')`, len(texts) + 1 entries): text k's ids are
        `ids[offsets[k]:offsets[k + 1]]`. Tokenizers with a Rust engine fill them without making a
        Python int per id, in parallel; `numpy.frombuffer(ids, dtype=numpy.uint32)` views them
        without a copy.

        >>> from tinyllm.tok import load
        >>> tok = load("gpt2")
        >>> ids, offsets = tok.encode_batch_flat(["Hello world", "", "hi"])
        >>> list(offsets), ids[offsets[0]:offsets[1]].tolist() == tok.encode("Hello world")
        ([0, 2, 2, 3], True)
        """
        return flatten(self.encode_batch(texts, add_special, allowed_special=allowed_special,
                                         disallowed_special=disallowed_special))

    def decode_batch(self, batch: Iterable[Sequence[int]], skip_special: bool = False) -> list[str]:
        return [self.decode(ids, skip_special) for ids in batch]

    def warm_up(self) -> None:
        """Build now what early calls would otherwise build on their way, so that no request of a
        service pays for it (`tinyllm serve` calls this at start-up). Ids never change. Nothing
        to build here; a tokenizer with a Rust engine builds its BPE word-cache seeds (15-120
        ms) or its WordPiece tries (7 ms for BERT)."""

    def __len__(self) -> int:
        return self.vocab_size


def _existing_dir(dir: str | os.PathLike, where: str) -> "Path":
    from pathlib import Path  # imported on use: loading a tokenizer file does not need it

    path = Path(dir)
    if not path.is_dir():
        raise ValueError(f"{where}: {str(path)!r} is not a directory")
    return path


class ByteTokenizer(TokenizerBase):
    """The 256 byte values as ids: encode is UTF-8, decode is UTF-8 with replacement.

    No specials, no unknown id: every text encodes. Token strings are the GPT-2 byte map, so this
    is byte-level BPE with zero merges.
    """

    vocab_size = 256
    unk_id = None

    def __init__(self, *, generation_config: Optional[dict] = None, tokenizer_config: Optional[dict] = None) -> None:
        """`generation_config` / `tokenizer_config`: the parsed config files naming the
        special-token roles (see `tinyllm.tok.policy`); the byte tokenizer has no specials of its own."""
        if generation_config is not None or tokenizer_config is not None:
            self._resolve_policy(generation_config, tokenizer_config)

    def semantic_components(self) -> dict:
        return {"normalizer": None, "pre_tokenizer": None, "model": {"type": "Bytes"}, "post_processor": None,
                "decoder": None, "added_tokens": [], "special_tokens": self.special_token_policy.to_json()}

    @property
    def special_ids(self) -> dict[str, int]:
        return {}

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
        """The UTF-8 bytes of `text`; with `max_length=N`, the first N ("right") or the last N
        ("left"), which may cut a character (the budget counts ids, not characters).

        >>> ByteTokenizer().encode("héllo", max_length=2, truncation_side="left")
        [108, 111]
        """
        # Validates the policy's names even though no text can match: there are no specials.
        SpecialPolicy.resolve({}, allowed_special, disallowed_special)
        ids = list(to_utf8(require_str(text, "encode: text")))
        if max_length is not None or truncation_side != "right":
            check_budget(max_length, truncation_side)
            if max_length is not None and len(ids) > max_length:
                # No specials, none inserted: the budget is a plain slice.
                ids = ids[:max_length] if truncation_side == "right" else ids[len(ids) - max_length:]
        return ids

    def encode_structured(self, text: str, add_special: bool = False, *, allowed_special: SpecialSet = (),
                          disallowed_special: SpecialSet = (), offset_coordinate: str = "raw_codepoints",
                          max_length: Optional[int] = None, truncation_side: str = "right") -> EncodedSequence:
        """The ids with their pieces and offsets: byte k spans (k, k + 1) in `raw_utf8_bytes`, and the
        whole character it belongs to in `raw_codepoints`.

        >>> ByteTokenizer().encode_structured("hé").offsets
        [(0, 1), (1, 2), (1, 2)]
        """
        check_structured_options(offset_coordinate, max_length, truncation_side)
        ids = self.encode(text, add_special, allowed_special=allowed_special, disallowed_special=disallowed_special)
        if offset_coordinate == "raw_utf8_bytes":
            spans = [(k, k + 1) for k in range(len(ids))]
        else:
            spans = [(k, k + 1) for k, ch in enumerate(clean_text(text)) for _ in ch.encode("utf-8")]
        encoded = EncodedSequence(ids, [self.id_to_token(i) for i in ids], [False] * len(ids), spans,
                                  offset_coordinate)
        return truncate(encoded, max_length, truncation_side, self.semantic_hash)

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str:
        return bytes(check_ids(ids, 256, context="decode")).decode("utf-8", "replace")

    def token_to_id(self, s: str) -> Optional[int]:
        return byte_of(s) if isinstance(s, str) else None

    def id_to_token(self, i: int) -> str:
        return byte_alphabet()[check_id(i, 256, "id_to_token: id")]

    def token_bytes(self, i: int) -> bytes:
        """The raw bytes of token `i` (the streaming decoder's input)."""
        return bytes((check_id(i, 256, "token_bytes: id"),))

    def save(self, dir: str | os.PathLike) -> None:
        """Create `dir`; the byte tokenizer has no vocabulary to write, only its special-token
        roles, when it has any (generation_config.json / tokenizer_config.json)."""
        os.makedirs(dir, exist_ok=True)
        write_policy_files(dir, self.special_token_policy, self.id_to_token)

    @classmethod
    def load(cls, dir: str | os.PathLike) -> "ByteTokenizer":
        """The byte tokenizer, with the roles of `dir`'s generation_config.json and
        tokenizer_config.json when present."""
        return with_policy_files(_existing_dir(dir, "ByteTokenizer.load"), cls)

    def __repr__(self) -> str:
        return "ByteTokenizer()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByteTokenizer) and self.special_token_policy == other.special_token_policy

    def __hash__(self) -> int:
        return hash(ByteTokenizer)
