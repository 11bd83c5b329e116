"""A yes-or-don't-know JSON Schema check, so that loading a valid file need not import jsonschema.

`schema_check.validate` asks `is_valid(doc, schema)` first: True means the document meets every
keyword of the schema, and jsonschema (whose import alone costs more than reading a mid-sized
tokenizer.json) is never loaded. Anything else, a broken document or a keyword this module does
not know, gives False, and jsonschema then runs as before, so every error message still comes
from jsonschema. The one thing this module must never do is say True where jsonschema would
report an error; tests/tok/formats/test_schema_verdict.py compares the two verdicts over real
files and many corrupted ones.

It knows the keywords of tinyllm's shipped schemas (Draft 2020-12): type, const, enum, properties,
required, additionalProperties, prefixItems, items, minItems, maxItems, uniqueItems (of strings),
minLength, maxLength, pattern, minimum, maximum, minProperties, maxProperties, allOf, anyOf, not,
if/then/else and local `$ref`s (`#/$defs/...`); annotations are ignored.

>>> schema = {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer", "minimum": 0}}}
>>> is_valid({"id": 3}, schema), is_valid({"id": -1}, schema), is_valid({"id": 3}, {"dependentRequired": {}})
(True, False, False)
"""

from __future__ import annotations

import re
from typing import Any

#: Keywords that say nothing about validity.
ANNOTATIONS = frozenset(("$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples"))


class _Unknown(Exception):
    """A keyword this module does not implement: let jsonschema decide."""


def _is_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if kind == "number":
        return True
    if kind == "integer":  # jsonschema counts 1.0 as an integer
        return isinstance(value, int) or value.is_integer()
    raise _Unknown(kind)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema has it: true and 1 differ, 1 and 1.0 do not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return a == b


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Checker:
    def __init__(self, root: dict) -> None:
        self.root = root

    def valid(self, value: Any, node: Any) -> bool:
        if node is True:
            return True
        if node is False:
            return False
        if not isinstance(node, dict):
            raise _Unknown(node)
        for keyword, arg in node.items():
            if keyword in ANNOTATIONS or keyword.startswith("x-") or keyword in ("then", "else"):
                continue
            if not self.keyword(keyword, arg, value, node):
                return False
        return True

    def keyword(self, keyword: str, arg: Any, value: Any, node: dict) -> bool:
        if keyword == "$ref":
            if not isinstance(arg, str) or not arg.startswith("#/$defs/"):
                raise _Unknown(arg)
            return self.valid(value, self.root["$defs"][arg[len("#/$defs/"):]])
        if keyword == "type":
            return any(_is_type(value, k) for k in ([arg] if isinstance(arg, str) else arg))
        if keyword == "const":
            return _equal(value, arg)
        if keyword == "enum":
            return any(_equal(value, choice) for choice in arg)
        if keyword == "allOf":
            return all(self.valid(value, s) for s in arg)
        if keyword == "anyOf":
            return any(self.valid(value, s) for s in arg)
        if keyword == "not":
            return not self.valid(value, arg)
        if keyword == "if":
            branch = "then" if self.valid(value, arg) else "else"
            return branch not in node or self.valid(value, node[branch])
        if keyword in ("properties", "required", "additionalProperties", "minProperties", "maxProperties"):
            return not isinstance(value, dict) or self.object_keyword(keyword, arg, value, node)
        if keyword in ("prefixItems", "items", "minItems", "maxItems", "uniqueItems"):
            return not isinstance(value, list) or self.array_keyword(keyword, arg, value, node)
        if keyword in ("minLength", "maxLength", "pattern"):
            if not isinstance(value, str):
                return True
            if keyword == "pattern":
                return re.search(arg, value) is not None
            return len(value) >= arg if keyword == "minLength" else len(value) <= arg
        if keyword in ("minimum", "maximum"):
            if not _number(value):
                return True
            return value >= arg if keyword == "minimum" else value <= arg
        raise _Unknown(keyword)

    def object_keyword(self, keyword: str, arg: Any, value: dict, node: dict) -> bool:
        if keyword == "properties":
            return all(self.valid(value[k], s) for k, s in arg.items() if k in value)
        if keyword == "required":
            return all(k in value for k in arg)
        if keyword == "additionalProperties":
            if "patternProperties" in node:
                raise _Unknown("patternProperties")
            known = node.get("properties", {})
            return all(self.valid(v, arg) for k, v in value.items() if k not in known)
        return len(value) >= arg if keyword == "minProperties" else len(value) <= arg

    def array_keyword(self, keyword: str, arg: Any, value: list, node: dict) -> bool:
        if keyword == "prefixItems":
            return all(self.valid(item, s) for item, s in zip(value, arg))
        if keyword == "items":
            return all(self.valid(item, arg) for item in value[len(node.get("prefixItems", ())):])
        if keyword == "uniqueItems":
            if not arg:
                return True
            if not all(isinstance(item, str) for item in value):
                raise _Unknown("uniqueItems over non-strings")
            return len(set(value)) == len(value)
        return len(value) >= arg if keyword == "minItems" else len(value) <= arg


def is_valid(doc: Any, schema: dict) -> bool:
    """True when `doc` surely meets `schema`; False when it does not or this module cannot tell."""
    try:
        return _Checker(schema).valid(doc, schema)
    except (_Unknown, re.error, RecursionError, TypeError, KeyError):
        return False
