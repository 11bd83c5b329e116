"""Post-processors: what `add_special=True` wraps around the ids (the `post_processor`).

`TemplateProcessing` inserts special ids around a single sequence (`single`) or a pair (`pair`):
`[CLS] $A [SEP]`, `[CLS] $A [SEP] $B:1 [SEP]:1`, and gives every position a type id. The
`ByteLevel` post-processor only adjusts offsets in Hugging Face and never changes ids, so here it
is the identity on ids.

`RobertaProcessing` and `BertProcessing` are the fixed templates `<s> A </s> </s> B </s>` (every
type id 0) and `[CLS] A [SEP] B [SEP]` (B and its [SEP] type 1); a `Sequence` applies its
processors in order, each to what the one before produced.

As in Hugging Face, a processor maps a list of parts (one per input text, the pair's second part
starting with type id 1) to a list of parts (`process`), and the parts are concatenated at the
end. `apply_pair(a, b, add_special)` returns that concatenation as a `Wrapped`: ids, which of them
the processor inserted, type ids, and sequence ids (0 for `a`, 1 for `b`, None for inserted
specials), as Hugging Face's `Encoding` has them. Offsets are not the processors' business here:
`trim_offsets` (ByteLevel, RobertaProcessing) is read and written back but changes no offset
(see docs/tokenizer-json.md).

>>> t = TemplateProcessing.from_json({"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
...     {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>",
...     "ids": [1], "tokens": ["<s>"]}}}, "post_processor")
>>> t.apply([7, 8])
([1, 7, 8], [True, False, False])
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from tinyllm._io import show as _show
from tinyllm._record import record
from tinyllm.tok.stages.byte_level import ByteLevelOptions


class Wrapped(NamedTuple):
    ids: list[int]
    inserted: list[bool]
    type_ids: list[int]
    sequence_ids: list[Optional[int]]
    #: The special-token mask where a processor decided it, None where the token's own flag holds
    #: (HF's Roberta and Bert processors reset the mask of what they wrap to 0).
    mask: list[Optional[bool]] = []


class PostProcessor:
    type: str = ""

    def apply(self, ids: list[int]) -> tuple[list[int], list[bool]]:
        """Return the wrapped ids and, for each, whether the processor inserted it."""
        wrapped = self.apply_pair(ids, None, True)
        return wrapped.ids, wrapped.inserted

    def apply_pair(self, a: list[int], b: Optional[list[int]], add_special: bool) -> Wrapped:
        """The parts of `a` (and `b`) processed, then concatenated. Without a processor Hugging
        Face concatenates: type and sequence ids 0, then 1."""
        return _join(*self.process(initial_parts(a, b), add_special))

    def process(self, parts: list[Wrapped], add_special: bool) -> list[Wrapped]:
        """The parts after this processor (one part per input text; a template merges them)."""
        return parts

    def special_ids(self, path: str):
        """(JSON path, id) of every id this processor can insert, for the reader's check."""
        return []

    def to_json(self) -> dict:
        return {"type": self.type}


def initial_parts(a: list[int], b: Optional[list[int]]) -> list[Wrapped]:
    """The encodings before processing: `a` with type and sequence id 0, `b` with 1."""
    parts = [Wrapped(list(a), [False] * len(a), [0] * len(a), [0] * len(a), [None] * len(a))]
    if b is not None:
        parts.append(Wrapped(list(b), [False] * len(b), [1] * len(b), [1] * len(b), [None] * len(b)))
    return parts


def _special(token_id: int, type_id: int) -> Wrapped:
    return Wrapped([token_id], [True], [type_id], [None], [True])


def _unmasked(part: Wrapped) -> Wrapped:
    return part._replace(mask=[False] * len(part.ids))


def _join(*parts: Wrapped) -> Wrapped:
    out = Wrapped([], [], [], [], [])
    for part in parts:
        for field, values in zip(out, part):
            field.extend(values)
    return out


@record
class RobertaProcessing(PostProcessor):
    """`<s> A </s>` and `<s> A </s> </s> B </s>`, every type id 0 (also without specials).

    >>> RobertaProcessing(("</s>", 2), ("<s>", 0)).apply_pair([7], [8], True).ids
    [0, 7, 2, 2, 8, 2]
    """

    sep: tuple
    cls: tuple
    trim_offsets: bool = True
    add_prefix_space: bool = True
    type = "RobertaProcessing"

    def process(self, parts: list[Wrapped], add_special: bool) -> list[Wrapped]:
        parts = [p._replace(type_ids=[0] * len(p.ids)) for p in parts]
        if not add_special:
            return parts
        sep, cls = _special(self.sep[1], 0), _special(self.cls[1], 0)
        return [_join(cls if k == 0 else sep, _unmasked(p), sep) for k, p in enumerate(parts)]

    def special_ids(self, path: str):
        return [(f"{path}.sep[1]", self.sep[1]), (f"{path}.cls[1]", self.cls[1])]

    def to_json(self) -> dict:
        return {"type": self.type, "sep": list(self.sep), "cls": list(self.cls), "trim_offsets": self.trim_offsets,
                "add_prefix_space": self.add_prefix_space}


@record
class BertProcessing(PostProcessor):
    """`[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]`; B keeps its type id 1 and its [SEP] gets 1.

    >>> BertProcessing(("[SEP]", 102), ("[CLS]", 101)).apply_pair([7], [8], True).type_ids
    [0, 0, 0, 1, 1]
    """

    sep: tuple
    cls: tuple
    type = "BertProcessing"

    def process(self, parts: list[Wrapped], add_special: bool) -> list[Wrapped]:
        if not add_special:
            return parts
        return [_join(_special(self.cls[1], 0), _unmasked(p), _special(self.sep[1], 0)) if k == 0
                else _join(_unmasked(p), _special(self.sep[1], 1)) for k, p in enumerate(parts)]

    def special_ids(self, path: str):
        return [(f"{path}.sep[1]", self.sep[1]), (f"{path}.cls[1]", self.cls[1])]

    def to_json(self) -> dict:
        return {"type": self.type, "sep": list(self.sep), "cls": list(self.cls)}


@record
class Sequence(PostProcessor):
    """Processors applied in order, each to the parts the one before produced (HF's Sequence,
    e.g. ByteLevel then TemplateProcessing in Llama 3 files)."""

    processors: tuple = ()
    type = "Sequence"

    def __init__(self, processors) -> None:
        object.__setattr__(self, "processors", tuple(processors))

    def process(self, parts: list[Wrapped], add_special: bool) -> list[Wrapped]:
        for processor in self.processors:
            parts = processor.process(parts, add_special)
        return parts

    def special_ids(self, path: str):
        return [found for k, p in enumerate(self.processors) for found in p.special_ids(f"{path}.processors[{k}]")]

    def to_json(self) -> dict:
        return {"type": "Sequence", "processors": [p.to_json() for p in self.processors]}


@record
class ByteLevel(ByteLevelOptions, PostProcessor):
    """Offsets only in Hugging Face; the identity on ids."""


@record
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

    def process(self, parts: list[Wrapped], add_special: bool) -> list[Wrapped]:
        """One part per template piece (as HF: a processor after this one sees them all): each
        special token, each sequence with the template's type id."""
        out = []
        for kind, name, type_id in (self.single if len(parts) == 1 else self.pair):
            if kind == "special":
                if add_special:
                    ids = self.special_tokens[name]
                    out.append(Wrapped(list(ids), [True] * len(ids), [type_id] * len(ids), [None] * len(ids),
                                       [True] * len(ids)))
            else:
                part = parts[0 if name == "A" else 1]
                out.append(part._replace(type_ids=[type_id] * len(part.ids)))
        return out

    def special_ids(self, path: str):
        return [(f"{path}.special_tokens[{_show(name)}].ids[{k}]", i)
                for name, ids in self.special_tokens.items() for k, i in enumerate(ids)]

    def to_json(self) -> dict:
        return dict(self.raw, type="TemplateProcessing")



