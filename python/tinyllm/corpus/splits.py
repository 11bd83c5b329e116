"""Group-isolated splits: every group of documents goes whole to fit, validation or test (seed 003,
0x00A "We then set aside validation and test documents").

A group holds the documents that must not be separated: a page and its near duplicates, a text
and its translations, the shards of one document. If one copy went to fit and another to test,
the test set would measure text the tokenizer was fitted on. So the split is drawn per group,
never per record:

    u(group) = int.from_bytes(sha256(f"{seed}\\0{group_id}")[:8], "big") / 2**64

and u falls into the cumulative fractions in the declared split order fit, validation, test:
fit owns [0, f_fit), validation [f_fit, f_fit + f_validation), test the rest. The draw depends on
the seed and the group id only, so it does not depend on the order of the records, on how many
records a group has, or on which other groups exist: adding documents to a corpus never moves an
existing group to another split.

Tie-breaks: the intervals are half-open, so a u exactly on a boundary goes to the later split; a u
at or beyond the last boundary (the fractions may sum to 1 - 1e-9 in floating point) goes to the
last split with a positive fraction, so a split with fraction 0 never receives a group.

>>> records = [("r1", "cat", "The cat sleeps."), ("r2", "cat", "The cat wakes."),
...            ("r3", "train", "A train arrives.")]
>>> out = split_by_group(records, {"fit": 0.5, "validation": 0.25, "test": 0.25}, seed=0)
>>> [(r.record_id, r.group_id, r.split) for r in out]
[('r1', 'cat', 'validation'), ('r2', 'cat', 'validation'), ('r3', 'train', 'fit')]

u("cat") = 0.5286 falls in validation's [0.5, 0.75); u("train") = 0.0921 in fit's [0, 0.5):

>>> round(group_unit("cat", 0), 4), round(group_unit("train", 0), 4)
(0.5286, 0.0921)
>>> group_split("cat", {"fit": 0.5, "validation": 0.25, "test": 0.25}, seed=0)
'validation'
>>> split_by_group(records, {"fit": 0.8, "validation": 0.1}, seed=0)
Traceback (most recent call last):
...
ValueError: split_by_group: fractions sum to 0.9; expected fractions that sum to 1 (within 1e-09)

`write_split_manifest` splits the records and writes them as the manifest that
`tinyllm.eval.records.read_manifest` validates, bound to the corpus object extended with the split
settings (`split_corpus`), so the manifest's H_corpus changes when the fractions or the seed do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from typing import Any, Union

from tinyllm._io import show
from tinyllm.artifacts.canonical import MAX_SAFE_INTEGER
from tinyllm.eval.records import SPLITS, Record, write_manifest

#: How the split is drawn, as the corpus object records it.
SPLIT_METHOD = "sha256(seed, group_id)"

#: How far the fractions may sum from 1.
FRACTION_TOLERANCE = 1e-9

Seed = Union[int, str]


def _check_fractions(fractions: object, where: str) -> dict[str, float]:
    """`fractions` as {split: float} over all of SPLITS (an absent split is 0), in SPLITS order."""
    if not isinstance(fractions, Mapping):
        raise ValueError(f"{where}: fractions is a {type(fractions).__name__}; expected a mapping of split "
                         f"name to fraction, such as {{'fit': 0.8, 'validation': 0.1, 'test': 0.1}}")
    unknown = [key for key in fractions if key not in SPLITS]
    if unknown:
        raise ValueError(f"{where}: fractions has the keys {[str(k) for k in unknown]}; expected keys among "
                         f"{list(SPLITS)}")
    checked = {}
    for split in SPLITS:
        value = fractions.get(split, 0)
        # bool is an int to Python, but True as a fraction is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{where}: fractions[{split!r}] = {show(value)}; expected a number in [0, 1]")
        value = float(value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: fractions[{split!r}] = {value!r}; expected a finite number >= 0")
        checked[split] = value
    total = math.fsum(checked.values())
    if abs(total - 1.0) > FRACTION_TOLERANCE:
        raise ValueError(f"{where}: fractions sum to {total!r}; expected fractions that sum to 1 "
                         f"(within {FRACTION_TOLERANCE!r})")
    return checked


def _check_seed(seed: object, where: str) -> Seed:
    # The seed goes into the corpus object, whose canonical JSON holds safe integers and strings.
    if isinstance(seed, bool) or not isinstance(seed, (int, str)):
        raise ValueError(f"{where}: seed = {show(seed)} ({type(seed).__name__}); expected an int or a str")
    if isinstance(seed, int) and abs(seed) > MAX_SAFE_INTEGER:
        raise ValueError(f"{where}: seed = {seed}; expected an int within ±(2**53 - 1) or a str")
    if isinstance(seed, str):
        try:
            seed.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"{where}: seed has a lone surrogate at index {e.start}; expected text UTF-8 "
                             "can encode") from None
        # The first NUL of the hash input ends the seed: a seed holding one could draw another
        # seed's splits ("a\0b" with group "c" hashes as seed "a" with group "b\0c").
        if "\0" in seed:
            raise ValueError(f"{where}: seed has a NUL character at index {seed.index(chr(0))}; expected a seed "
                             "without NUL (it separates the seed from the group id)")
    return seed


def _boundaries(fractions: dict[str, float]) -> list[tuple[float, str]]:
    """(upper bound, split) of each split with a positive fraction, in SPLITS order; the last
    bound is +inf so that rounding in the sum never leaves u without a split."""
    positive = [(split, value) for split, value in fractions.items() if value > 0]
    bounds, running = [], 0.0
    for split, value in positive[:-1]:
        running += value
        bounds.append((running, split))
    bounds.append((math.inf, positive[-1][0]))
    return bounds


def group_unit(group_id: str, seed: Seed) -> float:
    """u(group) in [0, 1]: the first 8 bytes of sha256(f"{seed}\\0{group_id}"), big-endian, over 2**64.

    >>> group_unit("cat", 0) == int.from_bytes(hashlib.sha256(b"0\\0cat").digest()[:8], "big") / 2**64
    True
    """
    digest = hashlib.sha256(f"{seed}\0{group_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _split_of(u: float, bounds: list[tuple[float, str]]) -> str:
    for upper, split in bounds:
        if u < upper:
            return split
    raise AssertionError("unreachable: the last bound is +inf")


def group_split(group_id: str, fractions: Mapping[str, float], seed: Seed) -> str:
    """The split `split_by_group` gives every record of group `group_id`."""
    bounds = _boundaries(_check_fractions(fractions, "group_split"))
    seed = _check_seed(seed, "group_split")
    if not isinstance(group_id, str) or not group_id:
        raise ValueError(f"group_split: group_id = {show(group_id)}; expected a non-empty string")
    return _split_of(group_unit(group_id, seed), bounds)


_RECORD_SHAPE = ("a Record, a (record_id, group_id, text) tuple or a dict with the keys record_id, group_id, "
                 "text and optionally slice or source")


def _as_record(index: int, item: object, split: str) -> Record:
    """`item` as a Record carrying `split` (the placeholder until the group's split is known)."""
    if isinstance(item, Record):
        return dataclasses.replace(item, split=split)
    if isinstance(item, tuple):
        if len(item) != 3:
            raise ValueError(f"split_by_group: records[{index}] is a tuple of {len(item)} items; expected "
                             f"{_RECORD_SHAPE}")
        record_id, group_id, text = item
        return Record(record_id, group_id, split, text)
    if isinstance(item, Mapping):
        missing = [key for key in ("record_id", "group_id", "text") if key not in item]
        extra = sorted(str(k) for k in item if k not in ("record_id", "group_id", "text", "slice", "source"))
        if missing or extra:
            raise ValueError(f"split_by_group: records[{index}] has keys missing {missing}, unexpected {extra}; "
                             f"expected {_RECORD_SHAPE}")
        if "slice" in item and "source" in item and item["slice"] != item["source"]:
            raise ValueError(f"split_by_group: records[{index}] has slice = {show(item['slice'])} and source = "
                             f"{show(item['source'])}; expected one of them, or both equal")
        # A Record has no source field; the source is the report slice a per-source evaluation
        # wants, so it travels as the slice rather than being dropped.
        slice_ = item.get("slice", item.get("source"))
        return Record(item["record_id"], item["group_id"], split, item["text"], slice=slice_)
    raise ValueError(f"split_by_group: records[{index}] is a {type(item).__name__}; expected {_RECORD_SHAPE}")


def split_by_group(records: Iterable[Any], fractions: Mapping[str, float], seed: Seed) -> list[Record]:
    """New Records, in input order, with `split` set by their group's draw (see the module
    docstring). A Record's previous split is replaced; its other fields are kept.

    `fractions` maps split names (of SPLITS; an absent one is 0) to non-negative numbers that sum
    to 1 within 1e-9; `seed` is an int or a str without NUL (the int 7 and the str "7" draw the
    same splits, as the hash reads the seed's text, but bind different corpus objects). Record ids
    are not checked for uniqueness here: `validate_split_manifest` (and so `write_split_manifest`)
    does that.
    """
    bounds = _boundaries(_check_fractions(fractions, "split_by_group"))
    seed = _check_seed(seed, "split_by_group")
    drawn: dict[str, str] = {}  # group_id -> split: one hash per group, however many records it has
    out = []
    for index, item in enumerate(records):
        try:
            record = _as_record(index, item, SPLITS[0])
        except ValueError as e:
            message = str(e)
            if not message.startswith("split_by_group:"):
                message = f"split_by_group: records[{index}]: {message}"
            raise ValueError(message) from None
        split = drawn.get(record.group_id)
        if split is None:
            split = drawn[record.group_id] = _split_of(group_unit(record.group_id, seed), bounds)
        out.append(record if record.split == split else dataclasses.replace(record, split=split))
    return out


def split_settings(fractions: Mapping[str, float], seed: Seed) -> dict:
    """The split settings as the corpus object records them. Fractions are strings (the shortest
    repr of the float): canonical JSON carries exact decimals as strings, never floats.

    >>> settings = split_settings({"fit": 0.8, "validation": 0.1, "test": 0.1}, 7)
    >>> settings["method"], settings["seed"], settings["order"]
    ('sha256(seed, group_id)', 7, ['fit', 'validation', 'test'])
    >>> settings["fractions"]
    {'fit': '0.8', 'validation': '0.1', 'test': '0.1'}
    """
    checked = _check_fractions(fractions, "split_settings")
    seed = _check_seed(seed, "split_settings")
    return {"method": SPLIT_METHOD, "order": list(SPLITS),
            "fractions": {split: repr(value) for split, value in checked.items()}, "seed": seed}


def split_corpus(corpus: Mapping[str, Any], fractions: Mapping[str, float], seed: Seed) -> dict:
    """The corpus object a split manifest is bound to: `corpus` with the key "split" holding
    `split_settings(fractions, seed)`. A corpus that already has a different "split" is refused
    (binding one manifest to two settings would hide which one cut it).

    >>> split_corpus({"revision": "r1"}, {"fit": 1}, 0)["split"]["fractions"]
    {'fit': '1.0', 'validation': '0.0', 'test': '0.0'}
    """
    if not isinstance(corpus, Mapping):
        raise ValueError(f"split_corpus: corpus is a {type(corpus).__name__}; expected the corpus object (a mapping)")
    settings = split_settings(fractions, seed)
    if "split" in corpus and corpus["split"] != settings:
        raise ValueError(f"split_corpus: corpus['split'] = {show(corpus['split'])}; expected no 'split' key or "
                         f"the same settings {show(settings)}")
    return {**corpus, "split": settings}


def write_split_manifest(path: str | os.PathLike, records: Iterable[Any], fractions: Mapping[str, float],
                         seed: Seed, corpus: Mapping[str, Any]) -> str:
    """Split `records` (`split_by_group`) and write them to `path` as a split manifest
    (`tinyllm.eval.records.write_manifest`, in input order) bound to `split_corpus(corpus,
    fractions, seed)`; return that H_corpus.

    The manifest rules apply: record ids must be unique and every split must receive at least one
    record (a small corpus with an unlucky seed is refused by `validate_split_manifest`).
    """
    bound_corpus = split_corpus(corpus, fractions, seed)
    return write_manifest(path, split_by_group(records, fractions, seed), bound_corpus)
