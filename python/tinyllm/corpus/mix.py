"""Source mix: the share of tokens each source supplies (seed 003, 0x00A "Mixing data sources").

Choosing a source with probability q_s says how many *documents* come from it; the share of
*tokens* also depends on how long its documents are once tokenized:

    π_s = q_s E[n_s] / Σ_j q_j E[n_j]

Half the documents from a source of 200-token documents and half from one of 800-token documents
give that first source 20% of the tokens:

>>> source_mix({"a": 0.5, "b": 0.5}, {"a": 200, "b": 800})
{'a': 0.2, 'b': 0.8}

`source_stats` measures a corpus per source with a given tokenizer (documents, tokens, bytes,
the document and token shares, mean tokens per document), and `predicted_mix` applies a sampling
plan to those means, so the token share a plan would give is visible before sampling:

>>> from tinyllm.tok import load
>>> docs = [{"source": "prose", "text": "The cat sleeps."},       # The| cat| sleeps|.   4 tokens
...         {"source": "prose", "text": "A train arrives."},      # A| train| arrives|.  4 tokens
...         {"source": "code", "text": "hello world"}]            # hello| world         2 tokens
>>> stats = source_stats(docs, load("gpt2"))
>>> print(stats.table())
source  docs  doc share  tokens  token share  mean tokens
code       1      33.3%       2        20.0%         2.00
prose      2      66.7%       8        80.0%         4.00
total      3     100.0%      10       100.0%         3.33
>>> predicted_mix(stats, {"code": 0.5, "prose": 0.5})
{'code': 0.3333333333333333, 'prose': 0.6666666666666666}

Removing long documents or changing the tokenizer changes E[n_s], and so the mix: the stats
record the tokenizer's semantic hash (when it has one) beside the counts.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

from tinyllm._io import show

#: Documents encoded per `encode_batch_flat` call: large enough for the Rust engine's parallel
#: batch path to pay off, small enough that one batch's ids stay a few megabytes, whatever the
#: corpus size.
BATCH_DOCUMENTS = 4096
BATCH_CHARACTERS = 8 * 1024 * 1024


def _as_mapping(value: object, name: str, where: str) -> dict:
    """A mapping as a dict (its order kept), a sequence as {0: v0, 1: v1, ...}."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return dict(enumerate(value))
    raise ValueError(f"{where}: {name} is a {type(value).__name__}; expected a mapping of source to number "
                     "or a sequence of numbers")


def _check_number(value: object, name: str, key: Hashable, where: str) -> Fraction:
    """`value` as an exact Fraction (a float converts exactly), refused unless finite and >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{where}: {name}[{key!r}] = {show(value)}; expected a number >= 0")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: {name}[{key!r}] = {value!r}; expected a finite number >= 0")
    return Fraction(value)


def _same_sources(first: dict, first_name: str, second: dict, second_name: str, where: str) -> None:
    if set(first) != set(second):
        missing = [k for k in first if k not in second]
        extra = [k for k in second if k not in first]
        raise ValueError(f"{where}: {second_name} lacks the sources {missing} of {first_name} and has the "
                         f"sources {extra} that {first_name} lacks; expected the same sources in both")


def _mix(q: dict, n: dict, q_name: str, n_name: str, where: str) -> dict:
    _same_sources(q, q_name, n, n_name, where)
    # Exact rational arithmetic, then one rounding per share: the result does not depend on the
    # order of the sources, and a share that is a float exactly (0.2 of the seed) comes out as it.
    products = {key: _check_number(q[key], q_name, key, where) * _check_number(n[key], n_name, key, where)
                for key in q}
    total = sum(products.values(), Fraction(0))
    if total == 0:
        raise ValueError(f"{where}: Σ_j q_j E[n_j] = 0 over {q_name} and {n_name} (no source has both a "
                         "positive probability and a positive mean length); expected at least one such source")
    return {key: float(product / total) for key, product in products.items()}


def source_mix(probabilities: Union[Mapping[Any, float], Sequence[float]],
               mean_tokens: Union[Mapping[Any, float], Sequence[float]]) -> dict:
    """π_s = q_s E[n_s] / Σ_j q_j E[n_j] for every source s, in `probabilities`' order.

    `probabilities` (q_s) and `mean_tokens` (E[n_s]) are mappings keyed by source, or
    equal-length sequences (the keys are then 0..n-1). The probabilities need not sum to 1: the
    formula normalizes, so sampling weights give the same mix.

    >>> source_mix([1, 3], [300, 100])
    {0: 0.5, 1: 0.5}
    >>> source_mix({"a": 1}, {"b": 10})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: source_mix: mean_tokens lacks the sources ['a'] of probabilities and has the sources ['b'] ...
    """
    where = "source_mix"
    q = _as_mapping(probabilities, "probabilities", where)
    n = _as_mapping(mean_tokens, "mean_tokens", where)
    return _mix(q, n, "probabilities", "mean_tokens", where)


@dataclass(frozen=True)
class SourceRow:
    """One source's counts: `documents`, `tokens` (the tokenizer's ids, no special tokens),
    `bytes` (UTF-8), the shares of the corpus totals and the mean tokens per document."""

    source: Any
    documents: int
    tokens: int
    bytes: int
    document_share: float
    token_share: float
    mean_tokens: float

    def to_json(self) -> dict:
        return {"source": self.source, "documents": self.documents, "document_share": self.document_share,
                "tokens": self.tokens, "token_share": self.token_share, "bytes": self.bytes,
                "mean_tokens": self.mean_tokens}


@dataclass(frozen=True)
class SourceStats:
    """Per-source counts of a corpus under one tokenizer (`source_stats`). `rows` are sorted by
    the source's text (then its type name), so the order does not depend on the documents' order.
    A share whose total is 0 (no documents, or only empty ones) is 0.0."""

    rows: tuple[SourceRow, ...]
    documents: int
    tokens: int
    bytes: int
    tokenizer_hash: Optional[str] = None

    @property
    def sources(self) -> list:
        return [row.source for row in self.rows]

    def row(self, source: Any) -> SourceRow:
        for row in self.rows:
            if row.source == source:
                return row
        raise ValueError(f"SourceStats.row: source = {show(source)}; expected one of {show(self.sources)}")

    def mean_tokens(self) -> dict:
        """{source: mean tokens per document}: the E[n_s] of `source_mix`."""
        return {row.source: row.mean_tokens for row in self.rows}

    def table(self) -> str:
        """A text table: source, docs, doc share, tokens, token share, mean tokens, and a total row."""
        header = ("source", "docs", "doc share", "tokens", "token share", "mean tokens")
        body = [(str(r.source), str(r.documents), f"{r.document_share:.1%}", str(r.tokens),
                 f"{r.token_share:.1%}", f"{r.mean_tokens:.2f}") for r in self.rows]
        mean = self.tokens / self.documents if self.documents else 0.0
        body.append(("total", str(self.documents), f"{1.0 if self.documents else 0.0:.1%}", str(self.tokens),
                     f"{1.0 if self.tokens else 0.0:.1%}", f"{mean:.2f}"))
        widths = [max(len(line[k]) for line in [header, *body]) for k in range(len(header))]

        def render(line: tuple) -> str:
            # The source name reads left to right; the numbers line up on their last digit.
            cells = [line[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(line[1:], widths[1:])]
            return "  ".join(cells).rstrip()

        return "\n".join(render(line) for line in [header, *body])

    def to_json(self) -> dict:
        return {"tokenizer_hash": self.tokenizer_hash, "documents": self.documents, "tokens": self.tokens,
                "bytes": self.bytes, "sources": [row.to_json() for row in self.rows]}


SourceKey = Union[str, Callable[[Any], Any], None]


def _field(document: Any, names: tuple[str, ...]) -> tuple[bool, Any]:
    """(found, value) of the first of `names` the document has, as a key of a mapping or as an attribute."""
    for name in names:
        if isinstance(document, Mapping):
            if name in document:
                return True, document[name]
        elif hasattr(document, name):
            return True, getattr(document, name)
    return False, None


def _source_and_text(index: int, document: Any, source_key: SourceKey) -> tuple[Hashable, str]:
    where = f"source_stats: documents[{index}]"
    if callable(source_key):
        source, found = source_key(document), True
    else:
        names = (source_key,) if source_key is not None else ("source_id", "source")
        found, source = _field(document, names)
    if not found:
        raise ValueError(f"{where} ({type(document).__name__}) has no {' or '.join(repr(n) for n in names)}; "
                         "expected a document with its source")
    if source is None or not isinstance(source, Hashable):
        raise ValueError(f"{where}: source = {show(source)}; expected a hashable, non-null source id")
    found, text = _field(document, ("text",))
    if not found or not isinstance(text, str):
        raise ValueError(f"{where}: text = {show(text)}; expected a str")
    return source, text


def _token_counts(tokenizer: Any, texts: list[str]) -> list[int]:
    """Tokens per text, no special tokens: one `encode_batch_flat` call when the tokenizer has it
    (the Rust engine's batch path, no Python list per text), else `encode` per text."""
    flat = getattr(tokenizer, "encode_batch_flat", None)
    if flat is not None:
        _, offsets = flat(texts)
        return [offsets[k + 1] - offsets[k] for k in range(len(texts))]
    return [len(tokenizer.encode(text)) for text in texts]


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def source_stats(documents: Iterable[Any], tokenizer: Any, *, source_key: SourceKey = None) -> SourceStats:
    """Count documents, tokens and UTF-8 bytes per source.

    A document is an object with `.source_id` (or `.source`) and `.text`, or a dict with
    "source_id" (or "source") and "text". `source_key` reads the source otherwise: a str names
    the attribute or key to read (`source_key="slice"` for `tinyllm.eval.records.Record`), a
    callable maps a document to its source. Tokens are `tokenizer.encode(text)` with no special
    tokens (through `encode_batch_flat` when the tokenizer has it); the documents are read once,
    in batches, so a generator over a large corpus works.
    """
    if source_key is not None and not callable(source_key) and (not isinstance(source_key, str) or not source_key):
        raise ValueError(f"source_stats: source_key = {show(source_key)}; expected None, a non-empty str or a "
                         "callable")
    counts: dict[Hashable, list[int]] = {}  # source -> [documents, tokens, bytes]
    batch_sources: list[Hashable] = []
    batch_texts: list[str] = []
    batch_chars = 0

    def flush() -> None:
        for source, text, tokens in zip(batch_sources, batch_texts, _token_counts(tokenizer, batch_texts)):
            row = counts.setdefault(source, [0, 0, 0])
            row[0] += 1
            row[1] += tokens
            row[2] += len(text.encode("utf-8"))
        batch_sources.clear()
        batch_texts.clear()

    for index, document in enumerate(documents):
        source, text = _source_and_text(index, document, source_key)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"source_stats: documents[{index}]: text has a lone surrogate at index {e.start}; "
                             "expected text that UTF-8 can encode") from None
        batch_sources.append(source)
        batch_texts.append(text)
        batch_chars += len(text)
        if len(batch_texts) >= BATCH_DOCUMENTS or batch_chars >= BATCH_CHARACTERS:
            flush()
            batch_chars = 0
    if batch_texts:
        flush()

    total_docs = sum(row[0] for row in counts.values())
    total_tokens = sum(row[1] for row in counts.values())
    total_bytes = sum(row[2] for row in counts.values())
    # Sorted by text, then type name: 1 and "1" are two sources but need one fixed order.
    order = sorted(counts, key=lambda s: (str(s), type(s).__name__))
    rows = tuple(SourceRow(source, d, t, b, _share(d, total_docs), _share(t, total_tokens), t / d)
                 for source in order for d, t, b in [counts[source]])
    tokenizer_hash = getattr(tokenizer, "semantic_hash", None)
    return SourceStats(rows, total_docs, total_tokens, total_bytes,
                       tokenizer_hash if isinstance(tokenizer_hash, str) else None)


def predicted_mix(stats: SourceStats, probabilities: Union[Mapping[Any, float], Sequence[float]]) -> dict:
    """The token share each source would supply if documents were drawn with `probabilities`:
    `source_mix(probabilities, stats.mean_tokens())`. The probabilities must name the sources of
    `stats` (0 for a source the plan does not sample)."""
    where = "predicted_mix"
    if not isinstance(stats, SourceStats):
        raise ValueError(f"{where}: stats is a {type(stats).__name__}; expected the SourceStats of source_stats")
    q = _as_mapping(probabilities, "probabilities", where)
    # The exact means, not their float roundings: the same counts give the same mix, to the last bit.
    means = {row.source: Fraction(row.tokens, row.documents) for row in stats.rows}
    return _mix(q, means, "probabilities", "stats", where)
