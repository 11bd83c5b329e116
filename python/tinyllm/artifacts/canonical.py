"""Canonical JSON bytes and domain-framed SHA-256: the primitive every artifact identity uses.

`canonical_bytes(value)` is UTF-8 JSON with sorted keys and no insignificant whitespace, over a
narrow profile: null, booleans, strings that are valid Unicode (no lone surrogates), safe integers
(|n| <= 2**53 - 1), lists and objects with string keys. Floats are refused, NaN and infinities
included: exact decimals travel as strings. Strings are not Unicode-normalized (normalization is
tokenizer behaviour and must stay visible in the normalizer).

`framed_hash(domain, value)` is the hex SHA-256 of

    b"NUMINENS-TOKENIZER-MANIFEST\\x00" || u32be(len(domain)) || domain || u64be(len(C)) || C

with C = canonical_bytes(value) and an ASCII domain such as "tokenizer-semantic-v1": the lengths
keep two concatenations apart, the domain keeps one payload from meaning two artifact kinds.

>>> canonical_bytes({"b": 1, "a": [1, "é", None]})
b'{"a":[1,"\\xc3\\xa9",null],"b":1}'
>>> framed_hash("tokenizer-semantic-v1", {})
'b8879b599b54834b7d5c867b4fdf0f35d19dcc4675cd076764ec3d2fc57aaefc'
>>> framed_hash("tokenizer-semantic-v1", None)
'a82eeff338dc2a251080bd0a0cc7a1bc478358d89c5925bf0ffd71ec527fc0c2'
>>> canonical_bytes({"x": [0.5]})
Traceback (most recent call last):
ValueError: canonical_bytes: value.x[0] = 0.5 is a float; exact decimals must be strings
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = b"NUMINENS-TOKENIZER-MANIFEST\x00"
MAX_SAFE_INTEGER = 2**53 - 1


def _check(value: Any, path: str) -> None:
    """Raise ValueError naming `path` for anything outside the canonical profile."""
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise ValueError(f"canonical_bytes: {path} = {value} is outside the safe integers ±(2**53 - 1)")
        return
    if isinstance(value, float):
        raise ValueError(f"canonical_bytes: {path} = {value!r} is a float; exact decimals must be strings")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"canonical_bytes: {path} holds a lone surrogate at index {e.start}; "
                             "expected valid Unicode text") from None
        return
    if isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            _check(item, f"{path}[{k}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"canonical_bytes: {path} has the key {key!r} ({type(key).__name__}); "
                                 "expected string keys")
            _check(key, f"{path} key {key!r}")
            _check(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key, ensure_ascii=False)}]")
        return
    raise ValueError(f"canonical_bytes: {path} is a {type(value).__name__}; expected null, a bool, a safe "
                     "integer, a string, a list or an object")


def canonical_bytes(value: Any) -> bytes:
    """The canonical UTF-8 JSON bytes of `value` (see the module docstring)."""
    _check(value, "value")
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      sort_keys=True).encode("utf-8")


def framed_hash(domain: str, value: Any) -> str:
    """Hex SHA-256 of `value`'s canonical bytes, framed by the protocol prefix and `domain`."""
    if not isinstance(domain, str) or not domain or not domain.isascii():
        raise ValueError(f"framed_hash: domain = {domain!r}; expected a non-empty ASCII string")
    d = domain.encode("ascii")
    import hashlib  # here: loading a tokenizer imports this module but hashes nothing

    payload = canonical_bytes(value)
    h = hashlib.sha256()
    h.update(PREFIX)
    h.update(len(d).to_bytes(4, "big"))
    h.update(d)
    h.update(len(payload).to_bytes(8, "big"))
    h.update(payload)
    return h.hexdigest()
