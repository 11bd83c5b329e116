"""Structure checks of artifact documents against the shipped JSON Schemas (Draft 2020-12, in
`tinyllm/artifacts/schemas/`): the first problem in document order, as (JSON path, message).

Relations across fields and documents (hashes, bindings, row counts) are not a schema's business;
`tinyllm.artifacts.bundle.reconcile` checks them after the structure holds.

>>> first_problem({"format": "tinyllm-tokenizer-manifest-v1"}, "manifest")
('semantic_hash', 'missing; expected a SHA-256 as 64 lowercase hex digits')
"""

from __future__ import annotations

import functools
import json
from importlib.resources import files
from typing import Any

from tinyllm.tok.formats.schema_check import check_depth, explain

# At one place: a wrong type first, then a wrong value (an empty {} component), then what is missing.
_RANK = {"type": 0, "const": 1, "enum": 1, "not": 1, "required": 2, "additionalProperties": 3}


@functools.lru_cache(maxsize=None)
def schema(name: str) -> dict:
    """The shipped schema `name` ("bundle" or "manifest")."""
    return json.loads(files("tinyllm.artifacts").joinpath("schemas", f"{name}.schema.json").read_text("utf-8"))


@functools.lru_cache(maxsize=None)
def validator(name: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(name))


def _order(doc: Any, error) -> tuple:
    position, node = [], doc
    for part in error.absolute_path:
        position.append(list(node).index(part) if isinstance(node, dict) else part)
        node = node[part]
    return position, _RANK.get(error.validator, 9), str(error.absolute_schema_path)


def first_problem(doc: Any, name: str) -> tuple[str, str] | None:
    """(JSON path, message) of the first way `doc` breaks schema `name`, or None when it holds."""
    check_depth(doc, name)
    errors = list(validator(name).iter_errors(doc))
    if not errors:
        return None
    return explain(min(errors, key=lambda e: _order(doc, e)), schema(name))
