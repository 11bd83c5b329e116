"""Post-processors: what `add_special=True` wraps around the ids (the `post_processor`).

`TemplateProcessing` inserts special ids around a single sequence (`single`) or a pair (`pair`):
`[CLS] $A [SEP]`, `[CLS] $A [SEP] $B:1 [SEP]:1`, and gives every position a type id. The
`ByteLevel` post-processor only adjusts offsets in Hugging Face and never changes ids, so here it
is the identity on ids.

`apply_pair(a, b, add_special)` returns a `Wrapped`: ids, which of them the processor inserted,
type ids, and sequence ids (0 for `a`, 1 for `b`, None for inserted specials), as Hugging Face's
`Encoding` has them.

>>> t = TemplateProcessing.from_json({"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
...     {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>",
...     "ids": [1], "tokens": ["<s>"]}}}, "post_processor")
>>> t.apply([7, 8])
([1, 7, 8], [True, False, False])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

from tinyllm._io import show as _show
from tinyllm.tok.stages.byte_level import ByteLevelOptions


class Wrapped(NamedTuple):
    ids: list[int]
    inserted: list[bool]
    type_ids: list[int]
    sequence_ids: list[Optional[int]]


class PostProcessor:
    type: str = ""

    def apply(self, ids: list[int]) -> tuple[list[int], list[bool]]:
        """Return the wrapped ids and, for each, whether the processor inserted it."""
        wrapped = self.apply_pair(ids, None, True)
        return wrapped.ids, wrapped.inserted

    def apply_pair(self, a: list[int], b: Optional[list[int]], add_special: bool) -> Wrapped:
        """Without a template, Hugging Face concatenates: type and sequence ids 0, then 1."""
        return default_pair(a, b)

    def to_json(self) -> dict:
        return {"type": self.type}


@dataclass(frozen=True)
class ByteLevel(ByteLevelOptions, PostProcessor):
    """Offsets only in Hugging Face; the identity on ids."""


@dataclass(frozen=True)
class TemplateProcessing(PostProcessor):
    single: tuple
    pair: tuple
    special_tokens: dict
    raw: dict
    type = "TemplateProcessing"

    @classmethod
    def from_json(cls, doc: dict, path: str) -> "TemplateProcessing":
        declared = doc.get("special_tokens")
        if declared is None:
            declared = {}
        if not isinstance(declared, dict):
            raise ValueError(f"{path}.special_tokens: expected an object, found {_show(declared)}")

        def items(key: str) -> tuple:
            out = []
            listed = doc.get(key)
            if listed is None:
                return ()
            if not isinstance(listed, list):
                raise ValueError(f"{path}.{key}: expected a list, found {_show(listed)}")
            for k, item in enumerate(listed):
                where = f"{path}.{key}[{k}]"
                if not isinstance(item, dict) or len(item) != 1:
                    raise ValueError(f"{where}: expected {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}")
                (kind, body), = item.items()
                if not isinstance(body, dict):
                    raise ValueError(f"{where}.{kind}: expected an object, found {body!r}")
                type_id = body.get("type_id", 0)
                if not isinstance(type_id, int) or isinstance(type_id, bool) or type_id < 0:
                    raise ValueError(f"{where}.{kind}.type_id: expected a non-negative integer, found {type_id!r}")
                if kind == "SpecialToken":
                    name = body.get("id")
                    if not isinstance(name, str) or name not in declared:
                        raise ValueError(f"{where}.SpecialToken.id: {name!r} is not in {path}.special_tokens")
                    out.append(("special", name, type_id))
                elif kind == "Sequence":
                    name = body.get("id")
                    allowed = ("A",) if key == "single" else ("A", "B")
                    if name not in allowed:
                        raise ValueError(f"{where}.Sequence.id: expected one of {allowed}, found {name!r}")
                    out.append(("sequence", name, type_id))
                else:
                    raise ValueError(f"{where}: {kind!r} is not SpecialToken or Sequence")
            return tuple(out)

        specials = {}
        for name, body in declared.items():
            if not isinstance(body, dict):
                raise ValueError(f"{path}.special_tokens[{_show(name)}]: expected an object, found {_show(body)}")
            ids = body.get("ids")
            if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
                raise ValueError(f"{path}.special_tokens[{_show(name)}].ids: expected a list of integer ids, found {_show(ids)}")
            specials[name] = tuple(ids)
        return cls(items("single"), items("pair"), specials, doc)

    def apply_pair(self, a: list[int], b: Optional[list[int]], add_special: bool) -> Wrapped:
        out = Wrapped([], [], [], [])
        for kind, name, type_id in (self.single if b is None else self.pair):
            if kind == "special":
                if add_special:
                    ids = self.special_tokens[name]
                    _extend(out, ids, True, type_id, None)
            else:
                seq = 0 if name == "A" else 1
                _extend(out, a if seq == 0 else b, False, type_id, seq)
        return out

    def to_json(self) -> dict:
        return dict(self.raw, type="TemplateProcessing")


def _extend(out: Wrapped, ids: list[int], inserted: bool, type_id: int, seq: Optional[int]) -> None:
    out.ids.extend(ids)
    out.inserted.extend([inserted] * len(ids))
    out.type_ids.extend([type_id] * len(ids))
    out.sequence_ids.extend([seq] * len(ids))


def default_pair(a: list[int], b: Optional[list[int]]) -> Wrapped:
    out = Wrapped([], [], [], [])
    _extend(out, a, False, 0, 0)
    if b is not None:
        _extend(out, b, False, 1, 1)
    return out
