"""Post-processors: what `add_special=True` wraps around the ids (the `post_processor`).

`TemplateProcessing` inserts special ids around a single sequence (`single`) or a pair (`pair`):
`[CLS] $A [SEP]`. The `ByteLevel` post-processor only adjusts offsets in Hugging Face and never
changes ids, so here it is the identity on ids.

>>> t = TemplateProcessing.from_json({"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
...     {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>",
...     "ids": [1], "tokens": ["<s>"]}}}, "post_processor")
>>> t.apply([7, 8])
([1, 7, 8], [True, False, False])
"""

from __future__ import annotations

from dataclasses import dataclass

from tinyllm.tok.byte_level import ByteLevelOptions


class PostProcessor:
    type: str = ""

    def apply(self, ids: list[int]) -> tuple[list[int], list[bool]]:
        """Return the wrapped ids and, for each, whether the processor inserted it."""
        return list(ids), [False] * len(ids)

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
        def items(key: str) -> tuple:
            out = []
            for k, item in enumerate(doc.get(key) or []):
                where = f"{path}.{key}[{k}]"
                if not isinstance(item, dict) or len(item) != 1:
                    raise ValueError(f"{where}: expected {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}")
                (kind, body), = item.items()
                if kind == "SpecialToken":
                    name = body.get("id")
                    if name not in (doc.get("special_tokens") or {}):
                        raise ValueError(f"{where}.SpecialToken.id: {name!r} is not in {path}.special_tokens")
                    out.append(("special", name))
                elif kind == "Sequence":
                    out.append(("sequence", body.get("id")))
                else:
                    raise ValueError(f"{where}: {kind!r} is not SpecialToken or Sequence")
            return tuple(out)

        specials = {}
        for name, body in (doc.get("special_tokens") or {}).items():
            ids = body.get("ids")
            if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
                raise ValueError(f"{path}.special_tokens.{name}.ids: expected a list of integer ids, found {ids!r}")
            specials[name] = tuple(ids)
        return cls(items("single"), items("pair"), specials, doc)

    def apply(self, ids: list[int]) -> tuple[list[int], list[bool]]:
        out: list[int] = []
        mask: list[bool] = []
        for kind, name in self.single:
            if kind == "special":
                out.extend(self.special_tokens[name])
                mask.extend([True] * len(self.special_tokens[name]))
            else:
                out.extend(ids)
                mask.extend([False] * len(ids))
        return out, mask

    def to_json(self) -> dict:
        return dict(self.raw, type="TemplateProcessing")
