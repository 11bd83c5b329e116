"""Validation against the JSON Schemas (Draft 2020-12) of tinyllm's tokenizer files (shipped in
`tinyllm/tok/schemas/`), with errors that read like the loaders' own: source, JSON path, what was
found, what was expected.

Loaders validate a parsed document here first and check only what a schema cannot express
afterwards. A document that `schema_verdict.is_valid` accepts is not shown to jsonschema at all
(importing it costs more than reading a tokenizer.json); jsonschema words every error. Of all the schema's complaints the first in document order is reported (at one place,
a wrong type before a wrong value), so the same file always gives the same message.

>>> validate({"type": "char", "vocab": ["<unk>", 7], "specials": {"unk": 0}}, "tokenizer-char", "tinyllm_char.json")
Traceback (most recent call last):
ValueError: tinyllm_char.json: vocab[1]: expected a non-empty string, found 7

Paths are dotted for field names and bracketed for list indexes, for keys that are data (tokens,
special-token names) and for keys that are not plain names: `model.merges[3]`,
`model.vocab["the"]`, `post_processor.special_tokens["[CLS]"].ids[0]`.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any, Iterable

from tinyllm._io import show  # noqa: F401 (how every loader error quotes a value)
from tinyllm.tok.formats.schema_verdict import is_valid

#: Deepest nesting of objects and lists a tokenizer file may have (real files stay below 10).
MAX_DEPTH = 64

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TYPE_WORDS = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}
_KEYWORD_RANK = {"type": 0, "required": 1, "additionalProperties": 2, "const": 3, "enum": 3}


#: Objects whose keys are data (tokens, special-token names), not field names: their keys are
#: always bracketed, `model.vocab["the"]`.
DATA_KEYED = ("vocab", "special_tokens")


def json_path(parts: Iterable[Any]) -> str:
    """`("model", "merges", 3)` -> `model.merges[3]`; `("model", "vocab", "the")` -> `model.vocab["the"]`."""
    out = ""
    previous = None
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _NAME.match(part) and previous not in DATA_KEYED:
            out += f".{part}" if out else part
        else:
            out += f"[{show(part)}]"
        previous = part
    return out


@functools.lru_cache(maxsize=None)
def schema(name: str) -> dict:
    """The shipped schema `name` ("tokenizer-json" or "tokenizer-char")."""
    # Read beside the package: importlib.resources costs 20 ms of imports, a third of a small load.
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "schemas", f"{name}.schema.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:  # installed somewhere without plain files (a zip)
        from importlib.resources import files

        return json.loads(files("tinyllm.tok").joinpath("schemas", f"{name}.schema.json").read_text("utf-8"))


@functools.lru_cache(maxsize=None)
def validator(name: str):
    """The compiled Draft 2020-12 validator of schema `name`, built once per process."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(name))


def expected(name: str, definition: str) -> str:
    """The wording of what `$defs/<definition>` of schema `name` expects (its `x-expected`)."""
    return describe(schema(name)["$defs"][definition], schema(name))


def describe(node: Any, root: dict) -> str:
    """What a schema node expects, in words."""
    if not isinstance(node, dict):
        return "a value"
    if "x-expected" in node:
        return node["x-expected"]
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and "type" not in node:
        return describe(root["$defs"][ref[len("#/$defs/"):]], root)
    if "const" in node:
        return show(node["const"])
    if "enum" in node:
        return _one_of(node["enum"])
    kinds = node.get("type")
    if kinds is None:
        return "a value"
    kinds = [kinds] if isinstance(kinds, str) else kinds
    words = []
    for kind in kinds:
        word = _TYPE_WORDS[kind]
        if kind == "string" and node.get("minLength") == 1:
            word = "a non-empty string"
        if kind == "integer" and node.get("minimum") == 0:
            word = "a non-negative integer"
        words.append(word)
    if words[:1] == ["true or false"] and len(words) == 2:
        return "true, false or null" if words[1] == "null" else " or ".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]


def _one_of(values: list) -> str:
    return show(values[0]) if len(values) == 1 else "one of " + ", ".join(show(v) for v in values)


def check_depth(doc: Any, source: str, limit: int = MAX_DEPTH) -> None:
    """Refuse documents nested deeper than `limit` (a schema validator and the readers recurse)."""
    stack = [(doc, (), 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        if depth >= limit:
            raise ValueError(f"{source}: {json_path(path) or '(top level)'}: nested more than {limit} levels deep; "
                             "expected a tokenizer file's shallow structure")
        stack.extend((value, (*path, key), depth + 1) for key, value in items)


def validate(doc: Any, name: str, source: str) -> None:
    """Raise ValueError for the first way `doc` breaks schema `name`, prefixed by `source`."""
    check_depth(doc, source)
    if is_valid(doc, schema(name)):
        return  # surely valid: jsonschema (slow to import) is only needed to word an error
    errors = list(validator(name).iter_errors(doc))
    if not errors:
        return
    error = min(errors, key=lambda e: _order(doc, e))
    path, text = explain(error, schema(name))
    raise ValueError(f"{source}: {path + ': ' if path else ''}{text}")


def _order(doc: Any, error) -> tuple:
    """Sort key: document position of the error's place, then the keyword's rank there."""
    position = []
    node = doc
    for part in error.absolute_path:
        if isinstance(node, dict):
            position.append(list(node).index(part))
        else:
            position.append(part)
        node = node[part]
    return (position, _KEYWORD_RANK.get(error.validator, 9), str(error.absolute_schema_path))


def explain(error, root: dict) -> tuple[str, str]:
    """(JSON path, message) of one jsonschema error."""
    parts = list(error.absolute_path)
    node, value, keyword = error.schema, error.instance, error.validator
    wanted = describe(node, root)
    if keyword == "required":
        missing = next(k for k in error.validator_value if k not in value)
        prop = node.get("properties", {}).get(missing)
        return json_path([*parts, missing]), f"missing; expected {describe(prop, root)}"
    if keyword == "additionalProperties":
        allowed = list(node.get("properties", {}))
        extra = next(k for k in value if k not in allowed)
        noun = node.get("x-field", "field")
        return (json_path([*parts, extra]),
                f"unknown {noun} (value {show(value[extra])}) is not supported; "
                f"expected only {', '.join(allowed) if allowed else 'no fields'}")
    if keyword in ("const", "enum"):
        choices = [error.validator_value] if keyword == "const" else error.validator_value
        if node.get("x-subset"):
            return json_path(parts), f"{show(value)} is not supported; expected {_one_of(choices)}"
        return json_path(parts), f"found {show(value)}, expected {_one_of(choices)}"
    if keyword == "uniqueItems":
        first: dict[str, int] = {}
        for k, item in enumerate(value):
            key = json.dumps(item, sort_keys=True)
            if key in first:
                return (json_path([*parts, k]),
                        f"{show(item)} repeats {json_path([*parts, first[key]])}; expected unique entries")
            first[key] = k
    if keyword in ("maximum", "minimum") and "x-expected" not in node:
        kind = "an integer" if "integer" in node.get("type", ()) else "a number"
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            wanted = f"{kind} in [{low}, {high}]"
        else:
            wanted = f"{kind} >= {low}" if low is not None else f"{kind} <= {high}"
    return json_path(parts), f"expected {wanted}, found {show(value)}"
