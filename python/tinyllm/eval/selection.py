"""Choosing one tokenizer among candidates on validation, with the test split sealed (seed 003,
0x0C1, lines 2541-2705).

`select(candidates, records, gates)`:

1. Each candidate is a `Candidate` holding a ready tokenizer or a function fitting one from the
   fit texts (it is given the fit split only), or any tokenizer object with a `candidate_id`
   attribute. Candidate ids must be unique, and so must semantic hashes (one tokenizer entered
   twice would make the winner depend on its label).
2. The records must be a valid split manifest (seed lines 2556-2566). The test records' *texts*
   are never read here: group ownership is checked on their ids, groups and splits alone; their
   text checks run in `Selection.test_report()`.
3. Every candidate is measured with `evaluate` on the validation split only, and its learned
   rows' final emissions are counted on the fit split (the seed's "fit diagnostic", line 2685).
4. Gates (seed lines 2647, 2669-2699); a candidate failing any is rejected, with each failed gate's
   found and expected values:

   ================  ====================================================  ===============
   gate              passes when                                           seed 003 lines
   ================  ====================================================  ===============
   reconstruction    decode(encode(x)) == x for every validation record     2669
   vocab_params      P_vocab = `vocab_cost(V, d_model, tied, bias)`          2647, 2673-2681
                     .vocab_params <= max_vocab_params
   exposure          learned rows with < min_row_emissions final            2647, 2685-2699
                     emissions on fit <= max_underexposed_rows
   ================  ====================================================  ===============

   A *learned row* is an id that is neither a special token nor a one-byte row (the base
   alphabet): for byte-level BPE, exactly the merge rows. A limit left at None is not checked;
   reconstruction is always checked.
5. The winner is the minimum of (validation_tokens, vocabulary_parameters, candidate_id) among
   the eligible (seed lines 2649-2663): independent of the order candidates are listed in.
6. The candidate set is identified by `framed_hash("tokenizer-candidate-set-v1", sorted semantic
   hashes)` (seed line 2667): file order cannot choose the winner.

The `Selection` is frozen. `Selection.test_report()` is the only way to test metrics: it
evaluates the winner alone on the test split, once (later calls return the same report).

>>> from tinyllm.eval.seed_candidates import SEED_GATES, SEED_RECORDS, seed_candidates
>>> words = lambda text: len(text.split())      # a reference word counter (w(x) feeds fertility only)
>>> selection = select(seed_candidates(), SEED_RECORDS, SEED_GATES, words=words)
>>> selection.winner
'balanced-272'
>>> [(r.candidate_id, r.validation_tokens, r.vocabulary_parameters) for r in selection.results]
[('balanced-272', 64, 17680), ('compact-268', 72, 17420), ('expanded-279', 55, 18135)]
>>> [(f.gate, f.found, f.expected) for f in selection.rejected["expanded-279"]]
[('vocab_params', 18135, '<= 18000'), ('exposure', 5, '<= 2')]
>>> selection.test_report().total_tokens
27
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from tinyllm.artifacts.canonical import framed_hash
from tinyllm.eval.calculators import vocab_cost
from tinyllm.eval.row_exposure import exposure
from tinyllm.eval.metrics import Report, evaluate
from tinyllm.eval.records import Record, validate_split_manifest

#: The framed-hash domain of a candidate set (sorted semantic hashes).
CANDIDATE_SET_DOMAIN = "tokenizer-candidate-set-v1"


def _nonneg_int(name: str, value: object, *, optional: bool, minimum: int = 0) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        none = "None or " if optional else ""
        raise ValueError(f"Gates: {name} = {value!r}; expected {none}an int >= {minimum}")


@dataclass(frozen=True)
class Gates:
    """The declared model contract and release limits.

    `d_model`, `tied`, `bias` and `dtype_bytes` are the model side `vocab_cost` prices a
    vocabulary with (the seed's contract: d_model=64, tied=True, bias=True, dtype_bytes=2, so
    P_vocab = 65 V). `max_vocab_params`: the parameter limit (None: unchecked).
    `min_row_emissions` / `max_underexposed_rows`: a learned row with fewer than
    `min_row_emissions` final emissions on the fit split is underexposed; more than
    `max_underexposed_rows` of them fails the exposure gate (None: unchecked).

    >>> Gates(d_model=0, tied=True, bias=False)
    Traceback (most recent call last):
    ...
    ValueError: Gates: d_model = 0; expected an int >= 1
    """

    d_model: int
    tied: bool
    bias: bool
    dtype_bytes: int = 2
    max_vocab_params: Optional[int] = None
    min_row_emissions: int = 1
    max_underexposed_rows: Optional[int] = None

    def __post_init__(self) -> None:
        _nonneg_int("d_model", self.d_model, optional=False, minimum=1)
        for name in ("tied", "bias"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Gates: {name} = {getattr(self, name)!r}; expected True or False")
        _nonneg_int("dtype_bytes", self.dtype_bytes, optional=False, minimum=1)
        _nonneg_int("max_vocab_params", self.max_vocab_params, optional=True)
        _nonneg_int("min_row_emissions", self.min_row_emissions, optional=False, minimum=1)
        _nonneg_int("max_underexposed_rows", self.max_underexposed_rows, optional=True)


@dataclass(frozen=True)
class Candidate:
    """A candidate: its id and either a ready `tokenizer` or `fit`, a function from the list of
    fit texts to a tokenizer (exactly one of the two)."""

    candidate_id: str
    tokenizer: Any = None
    fit: Optional[Callable[[list[str]], Any]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.candidate_id, str) or not self.candidate_id:
            raise ValueError(f"Candidate: candidate_id = {self.candidate_id!r}; expected a non-empty str")
        if (self.tokenizer is None) == (self.fit is None):
            raise ValueError(f"Candidate {self.candidate_id!r}: tokenizer = {_kind(self.tokenizer)}, fit = "
                             f"{_kind(self.fit)}; expected exactly one of them")
        if self.fit is not None and not callable(self.fit):
            raise ValueError(f"Candidate {self.candidate_id!r}: fit = {self.fit!r}; expected a function from "
                             "the fit texts to a tokenizer")


def _kind(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


@dataclass(frozen=True)
class GateFailure:
    """One failed gate: its name, the value found, the condition expected, and details (ids)."""

    gate: str
    found: int
    expected: str
    detail: str = ""

    def __str__(self) -> str:
        tail = f" ({self.detail})" if self.detail else ""
        return f"{self.gate}: found {self.found}, expected {self.expected}{tail}"


@dataclass(frozen=True)
class CandidateResult:
    """What selection measured for one candidate (validation split, and the fit diagnostic)."""

    candidate_id: str
    semantic_hash: str
    vocab_size: int
    validation: Report
    validation_tokens: int
    vocabulary_parameters: int
    #: F_logits = 2 N d V over the N validation positions (seed line 2679).
    logit_flops: int
    learned_rows: int
    #: Learned rows with fewer than `min_row_emissions` final emissions on fit, in id order.
    underexposed_rows: tuple[int, ...]
    failures: tuple[GateFailure, ...]

    @property
    def eligible(self) -> bool:
        return not self.failures

    @property
    def key(self) -> tuple[int, int, str]:
        """The ordering key of the eligible: (validation_tokens, vocabulary_parameters, candidate_id)."""
        return self.validation_tokens, self.vocabulary_parameters, self.candidate_id


@dataclass(frozen=True)
class Selection:
    """The frozen outcome of `select`: `results` in candidate_id order, `winner` (an id), the
    `candidate_set_hash`, the `gates`. Test metrics only through `test_report()`."""

    gates: Gates
    candidate_set_hash: str
    results: tuple[CandidateResult, ...]
    winner: str
    _winner_tokenizer: Any = field(repr=False, compare=False)
    _records: tuple[Record, ...] = field(repr=False, compare=False)
    _words: Any = field(repr=False, compare=False, default=None)
    _sealed: dict = field(repr=False, compare=False, default_factory=dict)
    _lock: Any = field(repr=False, compare=False, default_factory=threading.Lock)

    @property
    def rejected(self) -> dict[str, tuple[GateFailure, ...]]:
        """candidate_id -> the gates it failed, for each rejected candidate."""
        return {r.candidate_id: r.failures for r in self.results if r.failures}

    @property
    def eligible(self) -> tuple[str, ...]:
        """The ids of the candidates that passed every gate, in candidate_id order."""
        return tuple(r.candidate_id for r in self.results if not r.failures)

    def result(self, candidate_id: str) -> CandidateResult:
        for r in self.results:
            if r.candidate_id == candidate_id:
                return r
        raise ValueError(f"Selection.result: candidate_id = {candidate_id!r}; expected one of "
                         f"{[r.candidate_id for r in self.results]}")

    def test_report(self) -> Report:
        """The winner's metrics on the test split, evaluated once (the first call) and returned
        unchanged afterwards. This is where the test records are first read: their manifest
        checks (declared byte and code-point counts) run here too. The report describes the
        selected candidate; it cannot revise the selection (seed line 2703)."""
        with self._lock:
            if "report" not in self._sealed:
                validate_split_manifest(self._records)
                test = [r for r in self._records if r.split == "test"]
                self._sealed["report"] = evaluate(self._winner_tokenizer, test, words=self._words)
            return self._sealed["report"]


def _candidates(candidates: Iterable[object]) -> list[Candidate]:
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
        raise ValueError(f"select: candidates = {_kind(candidates)}; expected an iterable of candidates")
    out = []
    for index, c in enumerate(candidates):
        if isinstance(c, Candidate):
            out.append(c)
        elif isinstance(getattr(c, "candidate_id", None), str) and callable(getattr(c, "encode", None)):
            out.append(Candidate(c.candidate_id, c))
        else:
            raise ValueError(f"select: candidates[{index}] is {_kind(c)}; expected a Candidate or a tokenizer "
                             "with a candidate_id attribute")
    if not out:
        raise ValueError("select: candidates is empty; expected at least one candidate")
    seen: dict[str, int] = {}
    for index, c in enumerate(out):
        prior = seen.setdefault(c.candidate_id, index)
        if prior != index:
            raise ValueError(f"select: candidates[{index}] has candidate_id {c.candidate_id!r}, already used by "
                             f"candidates[{prior}]; expected unique candidate ids")
    return out


def _split_records(records: Iterable[Record]) -> tuple[tuple[Record, ...], list[Record], list[Record]]:
    """(all records, fit, validation), after the manifest checks that need no test text: the
    test records are checked through stand-ins carrying their id, group and split only."""
    if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
        raise ValueError(f"select: records = {_kind(records)}; expected an iterable of Record")
    records = tuple(records)
    visible = []
    for index, record in enumerate(records):
        if not isinstance(record, Record):
            raise ValueError(f"select: records[{index}] is {_kind(record)}; expected a Record")
        if record.split == "test":
            visible.append(Record(record.record_id, record.group_id, "test", ""))  # no text read
        else:
            visible.append(record)
    validate_split_manifest(visible)
    fit = [r for r in records if r.split == "fit"]
    validation = [r for r in records if r.split == "validation"]
    return records, fit, validation


def _learned_rows(tokenizer) -> list[int]:
    """Ids that are neither specials nor one-byte rows (holes skipped)."""
    specials = set(tokenizer.special_ids.values())
    rows = []
    for i in range(tokenizer.vocab_size):
        if i in specials:
            continue
        try:
            data = tokenizer.token_bytes(i)
        except ValueError:
            continue
        if len(data) != 1:
            rows.append(i)
    return rows


def _measure(candidate: Candidate, tokenizer, fit_texts: list[str], validation: list[Record], gates: Gates,
             words) -> CandidateResult:
    semantic = tokenizer.semantic_hash
    report = evaluate(tokenizer, validation, words=words)
    cost = vocab_cost(tokenizer.vocab_size, gates.d_model, tied=gates.tied, bias=gates.bias,
                      dtype_bytes=gates.dtype_bytes, positions=report.total_tokens)
    counts = exposure(tokenizer, fit_texts)
    learned = _learned_rows(tokenizer)
    under = tuple(i for i in learned if counts[i] < gates.min_row_emissions)

    failures = []
    if report.reconstruction_failures:
        shown = ", ".join(report.reconstruction_failures[:5])
        failures.append(GateFailure("reconstruction", len(report.reconstruction_failures), "0 failing records",
                                    f"record ids {shown}"))
    if gates.max_vocab_params is not None and cost.vocab_params > gates.max_vocab_params:
        failures.append(GateFailure("vocab_params", cost.vocab_params, f"<= {gates.max_vocab_params}",
                                    f"V = {tokenizer.vocab_size}, d_model = {gates.d_model}, tied = {gates.tied}, "
                                    f"bias = {gates.bias}"))
    if gates.max_underexposed_rows is not None and len(under) > gates.max_underexposed_rows:
        failures.append(GateFailure("exposure", len(under), f"<= {gates.max_underexposed_rows}",
                                    f"learned rows with < {gates.min_row_emissions} fit emissions: "
                                    f"{list(under)}"))
    return CandidateResult(candidate.candidate_id, semantic, tokenizer.vocab_size, report, report.total_tokens,
                           cost.vocab_params, cost.logit_flops, len(learned), under, tuple(failures))


def select(candidates: Iterable[Union[Candidate, Any]], records: Iterable[Record], gates: Gates, *,
           words: Optional[Callable[[str], int]] = None) -> Selection:
    """Measure every candidate on validation, apply `gates`, pick the winner (see the module
    docstring). `words` is `evaluate`'s reference word counter. ValueError when the inputs are
    malformed, or when no candidate passes the gates (naming every candidate's failures)."""
    if not isinstance(gates, Gates):
        raise ValueError(f"select: gates = {_kind(gates)}; expected a Gates")
    candidates = _candidates(candidates)
    records, fit, validation = _split_records(records)
    fit_texts = [r.text for r in fit]

    tokenizers = {}
    for c in candidates:
        tok = c.tokenizer if c.tokenizer is not None else c.fit(list(fit_texts))
        if not callable(getattr(tok, "encode", None)) or not isinstance(getattr(tok, "semantic_hash", None), str):
            raise ValueError(f"select: candidate {c.candidate_id!r} gave {_kind(tok)}; expected a tokenizer with "
                             "encode and semantic_hash")
        tokenizers[c.candidate_id] = tok
    by_hash: dict[str, str] = {}
    for c in candidates:
        h = tokenizers[c.candidate_id].semantic_hash
        prior = by_hash.setdefault(h, c.candidate_id)
        if prior != c.candidate_id:
            raise ValueError(f"select: candidate {c.candidate_id!r} has semantic hash {h}, the same as candidate "
                             f"{prior!r}; expected distinct tokenizers")
    set_hash = framed_hash(CANDIDATE_SET_DOMAIN, sorted(by_hash))

    results = tuple(sorted((_measure(c, tokenizers[c.candidate_id], fit_texts, validation, gates, words)
                            for c in candidates), key=lambda r: r.candidate_id))
    eligible = [r for r in results if not r.failures]
    if not eligible:
        lines = "; ".join(f"{r.candidate_id}: " + ", ".join(str(f) for f in r.failures) for r in results)
        raise ValueError(f"select: no candidate passes the gates ({lines}); expected at least one eligible")
    winner = min(eligible, key=lambda r: r.key).candidate_id
    return Selection(gates, set_hash, results, winner, tokenizers[winner], records, words)


__all__ = ["CANDIDATE_SET_DOMAIN", "Candidate", "CandidateResult", "GateFailure", "Gates", "Selection", "select"]
