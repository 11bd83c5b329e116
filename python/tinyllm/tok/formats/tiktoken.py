"""Read tiktoken `.tiktoken` files (lines `base64(token bytes) SPACE rank`) into tokenizer parts.

A `.tiktoken` file holds only the ranks; the pre-tokenizer regex and the special tokens are not in
it, so the caller names them (`pattern="cl100k"`, or a regex string; `special_tokens={...}`). The
result is a byte-level BPE that gives tiktoken's ids:

* vocabulary: each token's bytes spelled in the GPT-2 byte alphabet, id = rank;
* merges, derived from the ranks: for every token of 2+ bytes, each split into two parts that
  both have ranks is a merge producing that token; merges are ordered by (rank of the merged
  token, rank of the left part, rank of the right part). Merging adjacent pairs by lowest merge
  position then follows tiktoken's rule (merge the adjacent pair whose concatenation has the
  lowest rank, leftmost first);
* pre-tokenizer: `Split(pattern, Removed, invert=true)` (the regex matches are the pieces and
  text between matches is dropped, as tiktoken's `find_iter` does) followed by
  `ByteLevel(add_prefix_space=false, use_regex=false)`; decoder ByteLevel; no post-processor;
* special tokens: added tokens (special: true) at their ids, also entered in the model vocabulary
  so that Hugging Face keeps those ids; they may leave holes after the last rank (decoding a hole
  is a ValueError).

With the Rust core, the file is read by `_core.BpeTables.read_tiktoken` into tables the engine
shares (the same tokens, ids and merges; Python's vocabulary and merges are built on first use);
anything unusual is read here, whose errors name the line. Nothing here depends on the `tiktoken` package; the patterns and special tokens of OpenAI's
published encodings are restated below as data.

>>> import base64, pathlib, tempfile
>>> ranks = [bytes([b]) for b in range(256)] + [b"ab", b"abc"]
>>> text = "".join(f"{base64.b64encode(t).decode()} {r}\\n" for r, t in enumerate(ranks))
>>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.tiktoken"
>>> _ = path.write_text(text)
>>> parts = read_tiktoken(path, pattern="cl100k", special_tokens={"<|endoftext|>": 300})
>>> parts.model.merges
[('a', 'b'), ('ab', 'c')]
>>> [(t.content, t.id) for t in parts.added_tokens]
[('<|endoftext|>', 300)]
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from typing import Mapping, Optional

from tinyllm import _native
from tinyllm.tok.formats.tokenizer_json import TokenizerParts
from tinyllm.tok.models.bpe import BPEModel
from tinyllm.tok.stages import decoders, pre_tokenizers
from tinyllm.tok.stages.added_tokens import AddedToken
from tinyllm.tok.text.byte_alphabet import token_string

SUFFIX = ".tiktoken"

# The pre-tokenizer regexes and special tokens of OpenAI's encodings, copied from the `tiktoken`
# package 0.14.0 (tiktoken_ext/openai_public.py, MIT license); published facts, kept here as data.
# One change: cl100k's `\p{N}{1,3}+` is written `\p{N}{1,3}`. Nothing follows it in its branch,
# so the possessive never matters to tiktoken's engine, but in a saved tokenizer.json Hugging Face
# compiles the pattern with Oniguruma's Ruby syntax, where `{1,3}+` means "one or more runs of 1-3
# digits" and "3000" would become one piece.
_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
           r"""\s*[\r\n]|\s+(?!\S)|\s""")
_O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

#: Pattern name -> the pre-tokenizer regex (gpt2, r50k and p50k share GPT-2's).
PATTERNS: dict[str, str] = {"gpt2": _R50K, "r50k": _R50K, "p50k": _R50K, "cl100k": _CL100K, "o200k": _O200K}

#: Pattern name -> the special tokens of the encoding of that name (p50k: p50k_base).
SPECIAL_TOKENS: dict[str, dict[str, int]] = {
    "gpt2": {"<|endoftext|>": 50256},
    "r50k": {"<|endoftext|>": 50256},
    "p50k": {"<|endoftext|>": 50256},
    "cl100k": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
               "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    "o200k": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

#: File name stems that imply their pattern when none is given.
STEM_PATTERNS: dict[str, str] = {"gpt2": "gpt2", "r50k_base": "r50k", "p50k_base": "p50k",
                                 "cl100k_base": "cl100k", "o200k_base": "o200k"}

_NAME = re.compile(r"[A-Za-z0-9_]+")


def _names() -> str:
    return ", ".join(PATTERNS)


def _text(data: bytes, limit: int = 80) -> str:
    """A field of the file as text for an error message (undecodable bytes replaced)."""
    return data[:limit].decode("utf-8", errors="replace")


def read_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """`{token bytes: rank}` of a `.tiktoken` file; ValueError names the file, the line and what
    was found and expected (blank lines are skipped, as tiktoken does)."""
    from pathlib import Path  # the plain reader is the fallback: the fast one needs neither

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from None
    ranks: dict[bytes, int] = {}
    owner: dict[int, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        fields = line.split()
        if len(fields) != 2:
            raise ValueError(f"{where}: found {_text(line)!r}, expected 'base64 SPACE rank'")
        token_b64, rank_text = fields
        try:
            token = base64.b64decode(token_b64, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{where}: {_text(token_b64)!r} is not valid base64") from None
        if not token:
            raise ValueError(f"{where}: the token is empty; expected at least one byte")
        if not rank_text.isdigit():
            raise ValueError(f"{where}: rank {_text(rank_text)!r} is not a non-negative integer")
        rank = int(rank_text)
        if token in ranks:
            raise ValueError(f"{where}: token {token!r} already has rank {ranks[token]} (line {owner[ranks[token]]})")
        if rank in owner:
            raise ValueError(f"{where}: rank {rank} is already the rank of line {owner[rank]}; expected distinct ranks")
        ranks[token] = rank
        owner[rank] = number
    if not ranks:
        raise ValueError(f"{path}: no ranks; expected lines 'base64 SPACE rank'")
    for b in range(256):
        if bytes([b]) not in ranks:
            raise ValueError(f"{path}: byte 0x{b:02x} has no rank; expected all 256 single bytes")
    return ranks


def derive_merges(ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges equivalent to tiktoken's rank merging, in order: every split of each token of
    2+ bytes into two ranked parts, sorted by (rank of the token, rank of left, rank of right).

    >>> derive_merges({b"a": 0, b"b": 1, b"ab": 3, b"aab": 2, b"aa": 4})
    [(b'a', b'ab'), (b'aa', b'b'), (b'a', b'b'), (b'a', b'a')]
    """
    keyed = []
    for token, rank in ranks.items():
        for k in range(1, len(token)):
            left = ranks.get(token[:k])
            if left is None:
                continue
            right = ranks.get(token[k:])
            if right is not None:
                keyed.append((rank, left, right, token[:k], token[k:]))
    keyed.sort()
    return [(left, right) for _, _, _, left, right in keyed]


def resolve_pattern(pattern: Optional[str], source: str) -> tuple[Optional[str], str]:
    """(pattern name or None, regex) of a `pattern` argument; a bare word must be a known name."""
    where = f"{source}: pattern"
    if pattern is None:
        stem = os.path.splitext(os.path.basename(source))[0]
        if stem not in STEM_PATTERNS:
            raise ValueError(f"{where}: missing; a .tiktoken file holds no pre-tokenizer regex, so name one of "
                             f"{_names()} (or give a regex string); only the file names {', '.join(STEM_PATTERNS)} "
                             "imply theirs")
        pattern = STEM_PATTERNS[stem]
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{where}: found {pattern!r}, expected one of {_names()} or a regex string")
    if pattern in PATTERNS:
        return pattern, PATTERNS[pattern]
    if _NAME.fullmatch(pattern):
        raise ValueError(f"{where}: {pattern!r} is not a pattern name; expected one of {_names()} or a regex string")
    import regex  # the `regex` module takes 17 ms to import; only a custom pattern needs it here

    try:
        regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"{where}: the regex does not compile ({e})") from None
    return None, pattern


def parts_from_ranks(ranks: Mapping[bytes, int], pattern: str, special_tokens: Mapping[str, int],
                     source: str = SUFFIX) -> TokenizerParts:
    """The tokenizer parts of parsed ranks, a pre-tokenizer regex and special tokens."""
    # token_string for every token at once: bytes as latin-1 code points, mapped to the alphabet.
    spell = {b: token_string(bytes([b])) for b in range(256)}
    strings = {token: token.decode("latin-1").translate(spell) for token in ranks}
    vocab = {strings[token]: rank for token, rank in ranks.items()}
    merges = [(strings[left], strings[right]) for left, right in derive_merges(ranks)]
    by_id = {rank: token for token, rank in ranks.items()}
    added = []
    seen: dict[int, str] = {}
    for content, token_id in special_tokens.items():
        where = f"{source}: special_tokens[{content!r}]"
        if not isinstance(content, str) or not content:
            raise ValueError(f"{source}: special_tokens: found key {content!r}, expected a non-empty string")
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**24:
            raise ValueError(f"{where}: found {token_id!r}, expected an id in [0, 2**24)")
        if token_id in by_id:
            raise ValueError(f"{where}: id {token_id} is the rank of {by_id[token_id]!r} in the file; "
                             "expected an id no token of the file has")
        if token_id in seen:
            raise ValueError(f"{where}: id {token_id} is already the id of {seen[token_id]!r}")
        seen[token_id] = content
        added.append(AddedToken(token_id, content, special=True, normalized=False))
    added.sort(key=lambda t: t.id)
    # The specials sit in the model vocabulary too (as in Hugging Face's o200k file): Hugging Face
    # gives an added token that is not a model token the next free id, not its stated one, and a
    # special after a hole (cl100k's <|endoftext|> is 100257, the last rank 100255) would move.
    vocab.update({t.content: t.id for t in added})
    return _parts(BPEModel(vocab, merges, where=source), pattern, added)


def _parts(model: BPEModel, pattern: str, added: list) -> TokenizerParts:
    split = pre_tokenizers.Split(pattern, True, "Removed", True)
    pre = pre_tokenizers.Sequence([split, pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                                   use_regex=False)])
    decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    return TokenizerParts(model=model, normalizer=None, pre_tokenizer=pre, post_processor=None, decoder=decoder,
                          added_tokens=added)


def read_tiktoken(path: str | os.PathLike, pattern: Optional[str] = None,
                  special_tokens: Optional[Mapping[str, int]] = None) -> TokenizerParts:
    """The parts of a `.tiktoken` file under `pattern` (a name in `PATTERNS` or a regex string;
    when None, implied by the file name stem if it is exactly one of `STEM_PATTERNS`).

    `special_tokens` defaults to the named pattern's encoding's specials (`SPECIAL_TOKENS`), or
    none for a regex string; pass `{}` for none."""
    source = os.fspath(path)
    name, regex_text = resolve_pattern(pattern, source)
    if special_tokens is None:
        special_tokens = SPECIAL_TOKENS.get(name, {}) if name is not None else {}
    if not isinstance(special_tokens, Mapping):
        raise ValueError(f"{source}: special_tokens: found {type(special_tokens).__name__}, "
                         "expected a mapping of token text to id")
    fast = _read_fast(path, special_tokens, source)
    if fast is not None:
        return _parts(fast, regex_text, sorted((AddedToken(i, content, special=True, normalized=False)
                                                for content, i in special_tokens.items()), key=lambda t: t.id))
    return parts_from_ranks(read_ranks(path), regex_text, special_tokens, source)


def _read_fast(path: str | os.PathLike, special_tokens: Mapping[str, int], source: str) -> Optional[BPEModel]:
    """The model of the file read by the Rust core into shared tables (`_core.BpeTables`), or
    None: no core, or anything unusual in the file or the specials (`read_ranks` and
    `parts_from_ranks` then read it and word the error)."""
    if _native.core is None:
        return None
    specials = list(special_tokens.items())
    if not all(isinstance(c, str) and c and isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 2**24
               for c, i in specials):
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    tables = _native.core.BpeTables.read_tiktoken(data, specials)
    return BPEModel.from_tables(tables, where=source) if tables is not None else None
