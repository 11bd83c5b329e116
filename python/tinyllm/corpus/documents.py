"""Documents in, encoded documents out: each document encoded on its own, joined only when packed
(seed 003, 0x00A, "Keeping documents separate").

If one document ends in "rain" and the next starts with "bow", encoding the joined text gives
"rainbow", a word neither document holds. GPT-2 happens to cut "rainbow" at the seam, but not
"football": joined, "foot" + "ball" become one id that neither document contains. So
`encode_document` encodes one document with the boundary ids its `BoundaryPolicy` declares, and
`join_encoded` concatenates encoded documents, never texts:

>>> from tinyllm.tok import load
>>> gpt2 = load("gpt2")
>>> foot, ball = Document("d1", "foot"), Document("d2", "ball")
>>> gpt2.encode("foot" + "ball")
[15914]
>>> join_encoded([encode_document(foot, gpt2, "eos"), encode_document(ball, gpt2, "eos")])
[5898, 50256, 1894, 50256]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence


class Document(NamedTuple):
    """One input document: its id, its text and the source it came from (a named tuple: a corpus
    has millions, and a tuple is the cheapest immutable record to make)."""

    document_id: str
    text: str
    source_id: str = ""


@dataclass(frozen=True)
class BoundaryPolicy:
    """Which ids mark a document's ends: `bos` before, `eos` after (the tokenizer's BOS / EOS)."""

    name: str
    bos: bool
    eos: bool

    def ids(self, tokenizer) -> tuple[Optional[int], Optional[int]]:
        """(bos id or None, eos id or None); ValueError when the tokenizer lacks a needed one."""
        out = []
        for role, wanted in (("bos", self.bos), ("eos", self.eos)):
            value = getattr(tokenizer, f"{role}_id", None) if wanted else None
            if wanted and value is None:
                raise ValueError(f"boundary policy {self.name!r}: the tokenizer has no {role}_id; expected a "
                                 f"tokenizer with a {role.upper()} role, or the policy 'none'")
            out.append(value)
        return out[0], out[1]

    def to_json(self) -> dict:
        return {"name": self.name, "bos": self.bos, "eos": self.eos}


#: The declared policies.
POLICIES = {p.name: p for p in (BoundaryPolicy("none", False, False), BoundaryPolicy("eos", False, True),
                                BoundaryPolicy("bos", True, False), BoundaryPolicy("bos_eos", True, True))}


def boundary_policy(policy) -> BoundaryPolicy:
    """A `BoundaryPolicy` from itself or its name."""
    if isinstance(policy, BoundaryPolicy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"boundary policy: found {policy!r}; expected one of {', '.join(POLICIES)}")
    return POLICIES[policy]


@dataclass(frozen=True)
class EncodedDocument:
    """The seed's encoded document: its ids (boundary ids included), where it came from, which
    tokenizer made the ids and with which boundary policy; `truncated` when `max_length` cut it."""

    ids: tuple[int, ...]
    source_id: str
    document_id: str
    tokenizer_hash: str
    boundary_policy: str
    truncated: bool = False


def bounded_ids(ids: Sequence[int], bos: Optional[int], eos: Optional[int], max_length: Optional[int]):
    """(ids with the boundary ids around them, truncated?): with `max_length`, content is cut from
    the right so that the boundary ids always fit."""
    specials = (bos is not None) + (eos is not None)
    keep = len(ids)
    if max_length is not None:
        if max_length < specials:
            raise ValueError(f"max_length: found {max_length}; expected at least {specials} (the boundary ids)")
        keep = min(keep, max_length - specials)
    out = ([bos] if bos is not None else []) + list(ids[:keep]) + ([eos] if eos is not None else [])
    return out, keep < len(ids)


def encode_document(doc: Document, tokenizer, policy="eos", max_length: Optional[int] = None) -> EncodedDocument:
    """Encode one document on its own (user text: typed control text stays text)."""
    rule = boundary_policy(policy)
    bos, eos = rule.ids(tokenizer)
    ids, truncated = bounded_ids(tokenizer.encode(doc.text), bos, eos, max_length)
    return EncodedDocument(tuple(ids), doc.source_id, doc.document_id, tokenizer.semantic_hash, rule.name, truncated)


def join_encoded(documents: Sequence[EncodedDocument]) -> list[int]:
    """The ids of encoded documents one after another: the packing step, on ids. Refuses
    documents encoded by different tokenizers or policies."""
    if not documents:
        return []
    first = documents[0]
    out: list[int] = []
    for k, d in enumerate(documents):
        for field in ("tokenizer_hash", "boundary_policy"):
            if getattr(d, field) != getattr(first, field):
                raise ValueError(f"documents[{k}].{field}: found {getattr(d, field)!r}, expected "
                                 f"{getattr(first, field)!r} as documents[0]: one pack has one tokenizer and policy")
        out += d.ids
    return out
