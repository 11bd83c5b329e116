"""Errors of the token service: every bad request is a 400 whose body names the field.

    {"error": {"param": "ids[3]", "message": "ids[3] = 99999999 is out of range ..."}}

`param` is a path into the request body (`texts[2]`, `messages[1].role`), or a header or query
name for those. `RequestError` is what the handlers raise; `param_of(loc)` turns a pydantic error
location into that path:

>>> param_of(("body", "messages", 1, "role"))
'messages[1].role'
>>> param_of(("body",))
'body'
"""

from __future__ import annotations

from typing import Sequence


class RequestError(ValueError):
    """A request the service refuses: the `param` it names, a message, and the HTTP status (400,
    or 401 / 413 where HTTP says so)."""

    def __init__(self, param: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.param, self.message, self.status = param, message, status

    def body(self) -> dict:
        return {"error": {"param": self.param, "message": self.message}}


def param_of(loc: Sequence) -> str:
    """A pydantic location (("body", "ids", 3), ...) as a field path ("ids[3]")."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header") and len(parts) > 1:
        parts = parts[1:]
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out:
            out = str(part)
        else:
            out += f".{part}"
    return out or "body"


def ids_param(error: ValueError, field: str = "ids") -> str:
    """The `ids[k]` a tokenizer's decode error names ("decode: ids[1] = ..."), else `field`."""
    message = str(error)
    start = message.find("ids[")
    if start < 0:
        return field
    end = message.find("]", start)
    return field + message[start + 3:end + 1] if end > 0 else field
