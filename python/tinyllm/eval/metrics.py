"""Corpus metrics of a tokenizer over evaluation records (seed 003, 0x0C and 0x0C1).

For a record x: b(x) UTF-8 bytes, u(x) code points, w(x) reference words (`tinyllm.eval.words`,
counted without the tokenizer), n(x) tokens, q(x) one-byte final tokens and k(x) unknown tokens.
`evaluate` reports, over the records and over each slice of them:

=========================  ===========================================  ==================
field                      definition                                   seed 003 line
=========================  ===========================================  ==================
bytes_per_token            Σ b / Σ n                                    2586-2588
codepoints_per_token       Σ u / Σ n                                    2586-2588
fertility                  Σ n / Σ w                                    2586-2588
single_byte_fraction       Σ q / Σ n                                    2586-2588, 2609
unk_rate                   Σ k / Σ n  (0 when the tokenizer has no UNK) 2596
macro_bytes_per_token      mean over records with n > 0 of b / n        2592-2594
p50, p95, max              nearest-rank percentiles of n                2607
truncated                  records with n > max_length                  2608
attention_pairs            Σ n²  (never (Σ n)²)                         2488-2490, 2610
reconstruction_failures    ids of records with decode(encode(t)) != t   2669
amplification[s]           A_{c,s} = Σ_{x∈s} n_c / Σ_{x∈s} n_r          2602
deltas                     n_c(x) − n_r(x) per record id                2604
=========================  ===========================================  ==================

Every ratio is a ratio of totals: a corpus-cost question weighs each byte, word or position once
(seed 003 lines 2592-2594). The one average of per-record ratios is labelled as such
(`macro_bytes_per_token`) and excludes the records with no tokens, which `zero_token_records`
counts. A ratio whose denominator total is 0 is None (undefined), never 0 or infinity.

u(x) is `len(text)`: the code points of the text as the record stores it (any normalization
belongs to corpus preparation or to the tokenizer, not to the measurement). q(x) counts the
tokens whose `tokenizer.token_bytes(id)` (the bytes the token adds to decoded text inside a
sequence) is exactly one byte; a tokenizer without `token_bytes` has no byte view of its tokens,
so `single_byte_tokens` and `single_byte_fraction` are None for it, not a guess.

Tokens are counted as `encode(text)` emits them, without template specials (`add_special=False`):
the positions of the text itself, and the ids whose decode must give the text back.

>>> from tinyllm.tok import load
>>> records = [Record("a", "g1", "validation", "Hello world", slice="prose"),
...            Record("b", "g2", "validation", "x = 10**6", slice="code"),
...            Record("c", "g3", "validation", "")]
>>> report = evaluate(load("gpt2"), records, max_length=4)
>>> report.total_tokens, report.total_bytes, report.bytes_per_token
(7, 20, 2.857142857142857)
>>> report.macro_bytes_per_token, report.zero_token_records    # (11/2 + 9/5) / 2
(3.65, 1)
>>> report.p50, report.p95, report.max, report.truncated, report.attention_pairs
(2, 5, 5, 1, 29)
>>> sorted(report.slices), report.slices["code"].total_tokens
(['code', 'prose'], 5)
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from tinyllm import _native
from tinyllm.eval.records import Record
from tinyllm.eval.words import uax29_word_counts
from tinyllm.tok.base import ByteTokenizer

#: Records per reconstruction chunk are taken until their text reaches this many bytes: the
#: byte-level comparison holds a few arrays of this length at a time.
_CHUNK_BYTES = 1 << 22


@dataclass(frozen=True)
class Report:
    """What `evaluate` measured over a set of records (see the module docstring for each field).

    Totals are ints; ratios are floats, or None when their denominator total is 0.
    `single_byte_tokens` / `single_byte_fraction` are None for a tokenizer without `token_bytes`
    (nothing to measure a token's bytes by). The baseline fields are None / empty without a
    baseline. `slices` maps each slice name to a Report of the same shape over that slice's
    records (whose own `slices` and `amplification` are empty); records without a slice count in
    the totals only.
    """

    records: int
    total_tokens: int
    total_bytes: int
    total_codepoints: int
    total_words: int
    single_byte_tokens: Optional[int]
    unk_tokens: int
    bytes_per_token: Optional[float]
    codepoints_per_token: Optional[float]
    fertility: Optional[float]
    single_byte_fraction: Optional[float]
    unk_rate: Optional[float]
    #: A macro average: the mean of b(x)/n(x) over the records with n(x) > 0, each record weighing
    #: the same however long it is; not the corpus ratio `bytes_per_token`.
    macro_bytes_per_token: Optional[float]
    zero_token_records: int
    p50: int
    p95: int
    max: int
    max_length: Optional[int]
    truncated: int
    attention_pairs: int
    reconstruction_failures: tuple[str, ...]
    baseline_tokens: Optional[int] = None
    #: Σ n_c / Σ n_r over this report's records: A_{c,s} when the report is slice s's.
    amplification_total: Optional[float] = None
    amplification: dict[str, Optional[float]] = field(default_factory=dict)
    deltas: dict[str, int] = field(default_factory=dict)
    slices: dict[str, "Report"] = field(default_factory=dict)
    #: Tokens per record, in record order (for length distributions); left out of `to_json`.
    lengths: tuple[int, ...] = field(default=(), repr=False)
    #: Final emissions per id (index = id), over the whole set only (empty in slices): the
    #: exposure of each vocabulary row; left out of `to_json`, which carries `emitted_ids`.
    exposure: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @property
    def emitted_ids(self) -> int:
        """How many distinct ids were emitted at least once."""
        return sum(1 for c in self.exposure if c)

    def to_json(self) -> dict[str, Any]:
        """A plain JSON-safe dict (lists for tuples, nested dicts for slices; floats are finite).

        >>> from tinyllm.tok import ByteTokenizer
        >>> evaluate(ByteTokenizer(), [Record("a", "g", "test", "hé")]).to_json()["bytes_per_token"]
        1.0
        """
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name in ("lengths", "exposure"):
                continue  # one entry per record / per id: too long for a summary
            if name == "slices":
                value = {key: report.to_json() for key, report in value.items()}
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[name] = value
        return out

    def table(self) -> str:
        """One row for the whole set, then one per slice: the headline numbers side by side.

        >>> from tinyllm.tok import ByteTokenizer
        >>> print(evaluate(ByteTokenizer(), [Record("a", "g", "test", "hé", slice="fr")]).table())
        slice    records  tokens  bytes/tok  cp/tok  fertility  1-byte    unk  p95  A_c,s
        (all)          1       3      1.000   0.667      3.000   1.000  0.000    3      -
        fr             1       3      1.000   0.667      3.000   1.000  0.000    3      -
        """
        rows = [("(all)", self)] + sorted(self.slices.items())
        w = max(8, *(len(name) for name, _ in rows))
        lines = [f"{'slice':<{w}} {'records':>7} {'tokens':>7} {'bytes/tok':>10} {'cp/tok':>7} {'fertility':>10} "
                 f"{'1-byte':>7} {'unk':>6} {'p95':>4} {'A_c,s':>6}"]
        for name, r in rows:
            lines.append(f"{name:<{w}} {r.records:>7} {r.total_tokens:>7} {_fmt(r.bytes_per_token):>10} "
                         f"{_fmt(r.codepoints_per_token):>7} {_fmt(r.fertility):>10} "
                         f"{_fmt(r.single_byte_fraction):>7} {_fmt(r.unk_rate):>6} {r.p95:>4} "
                         f"{_fmt(r.amplification_total):>6}")
        return "\n".join(lines)

    def __str__(self) -> str:
        failures = len(self.reconstruction_failures)
        head = (f"{self.records} records, {self.total_tokens} tokens, {self.total_bytes} bytes; "
                f"macro bytes/token {_fmt(self.macro_bytes_per_token)} ({self.zero_token_records} records with no "
                f"token left out); max {self.max}, {self.truncated} over max_length {self.max_length}; "
                f"attention pairs {self.attention_pairs}; {failures} reconstruction failures")
        return head + "\n" + self.table()


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(numerator: int, denominator: int) -> Optional[float]:
    return None if denominator == 0 else numerator / denominator


def _nearest_rank(ordered: np.ndarray, p: int) -> int:
    """The nearest-rank p-th percentile of sorted ints: the value at rank ceil(p·N/100), exact
    (integer arithmetic, no interpolation), and always one of the values."""
    rank = max(1, -(-p * len(ordered) // 100))  # ceil(p·N / 100) without floats
    return int(ordered[rank - 1])


def _segment_sums(per_token: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-record sums of a per-token array, without a Python loop over records. `reduceat`
    reads a segment from each start to the next start, so the records with no token are left
    out of the starts (and given 0)."""
    counts = np.diff(offsets)
    out = np.zeros(len(counts), dtype=np.int64)
    filled = counts > 0
    if filled.any():
        out[filled] = np.add.reduceat(per_token.view(np.uint8) if per_token.dtype == bool else per_token,
                                      offsets[:-1][filled], dtype=np.int64)
    return out


def _encode(tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(ids as uint32, offsets as int64) through `encode_batch_flat` when the tokenizer has it
    (one call, the Rust engine's batch path), else `encode` per text."""
    flat = getattr(tokenizer, "encode_batch_flat", None)
    if flat is not None:
        ids, offsets = flat(texts)
        return (np.frombuffer(ids, dtype=np.uint32) if len(ids) else np.zeros(0, np.uint32),
                np.frombuffer(offsets, dtype=np.uint64).astype(np.int64))
    lists = [tokenizer.encode(t) for t in texts]
    lengths = np.fromiter((len(one) for one in lists), dtype=np.int64, count=len(lists))
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return np.fromiter((i for one in lists for i in one), dtype=np.uint32, count=int(offsets[-1])), offsets


class _Tables:
    """token_bytes of the ids that occur, and the bytes of every token of the batch through them:
    `single` (per token: one byte inside a sequence), `placed_length` / `placed_start` (per
    token, as placed: each record's first token as the first, which the WordPiece and Metaspace
    decoders treat differently), into `blob`. `vocab` is the tokenizer's `vocab_token_bytes()`
    (every id's bytes, position independent) when it has them, else None and `token_bytes` is
    asked once per distinct id (not once per token)."""

    def __init__(self, tokenizer, ids: np.ndarray, offsets: np.ndarray, placed: bool) -> None:
        vocab = getattr(tokenizer, "vocab_token_bytes", None)
        vocab = vocab() if vocab is not None else None
        if vocab is not None:
            self._from_vocab(vocab, ids, offsets, placed)
        else:
            self._per_id(tokenizer, ids, offsets, placed)

    def _from_vocab(self, vocab: tuple[np.ndarray, np.ndarray], ids: np.ndarray, offsets: np.ndarray,
                    placed: bool) -> None:
        """The fast path: `vocab_token_bytes()` gave every id's bytes at once (position independent,
        so a first token's bytes are its bytes). Same tables as `_per_id`, without a call per id;
        `tests/eval/test_metrics_fast.py` checks that the two agree."""
        self.vocab = vocab
        self.blob, offsets_of_id = vocab
        kind = np.int32 if len(self.blob) < 2 ** 31 else np.int64
        start = offsets_of_id[:-1].astype(kind)
        lengths = np.diff(offsets_of_id)
        self.single = (lengths == 1)[ids]
        # placed_length / placed_start only when `_suspects` (the reference) asks for them: the
        # Rust comparison reads `vocab` directly.
        self._placed = lambda: (lengths.astype(kind)[ids], start[ids])

    @functools.cached_property
    def placed_length(self) -> np.ndarray:
        return self._placed()[0]

    @functools.cached_property
    def placed_start(self) -> np.ndarray:
        return self._placed()[1]

    def _per_id(self, tokenizer, ids: np.ndarray, offsets: np.ndarray, placed: bool) -> None:
        """The reference: `token_bytes` asked once per distinct id (and once per distinct first id,
        with first=True). Tokenizers without `vocab_token_bytes` take this path (the cost it always
        had, not a slow path)."""
        self.vocab = None
        present = np.flatnonzero(np.bincount(ids)) if len(ids) else np.zeros(0, np.int64)
        width = int(present[-1]) + 1 if len(present) else 1
        firsts = offsets[:-1][np.diff(offsets) > 0]
        # Slot i: id i inside a sequence; slot width + i: id i as the first token.
        slots = [(int(i), tokenizer.token_bytes(int(i))) for i in present]
        if placed:
            slots += [(width + int(i), tokenizer.token_bytes(int(i), first=True)) for i in np.unique(ids[firsts])]
        size = sum(len(data) for _, data in slots)
        kind = np.int32 if size < 2 ** 31 else np.int64
        length, start = np.zeros(2 * width, dtype=kind), np.zeros(2 * width, dtype=kind)
        position = 0
        for slot, data in slots:
            length[slot], start[slot] = len(data), position
            position += len(data)
        self.blob = np.frombuffer(b"".join(data for _, data in slots), dtype=np.uint8)
        token_length = length[ids]
        self.single = token_length == 1
        if placed:
            self.placed_length, self.placed_start = token_length.copy(), start[ids]
            self.placed_length[firsts] = length[ids[firsts].astype(np.int64) + width]
            self.placed_start[firsts] = start[ids[firsts].astype(np.int64) + width]


def _suspects(tables: _Tables, offsets: np.ndarray, texts: list[str], utf8: np.ndarray) -> np.ndarray:
    """The records whose joined token bytes are not their text's UTF-8: the only ones that can
    fail to reconstruct when the tokenizer declares `token_bytes_exact` (joined token bytes
    decode to `decode`'s text). Byte work in numpy, a few MB of text at a time; no decode."""
    # at[t]: where token t's bytes start in the joined bytes of the whole batch.
    at = np.zeros(len(tables.placed_length) + 1, dtype=np.int64)
    np.cumsum(tables.placed_length, out=at[1:])
    suspect = at[offsets[1:]] - at[offsets[:-1]] != utf8
    record, total = 0, len(texts)
    while record < total:
        end, size = record, 0
        while end < total and (end == record or size + utf8[end] <= _CHUNK_BYTES):
            size += int(utf8[end])
            end += 1
        ok = ~suspect[record:end]
        lo, hi = offsets[record], offsets[end]
        length, start = tables.placed_length[lo:hi], tables.placed_start[lo:hi]
        if ok.all():
            where = at[lo:hi] - at[lo]
        else:
            keep = np.repeat(ok, np.diff(offsets[record:end + 1]))
            length, start = length[keep], start[keep]
            where = np.concatenate(([0], np.cumsum(length[:-1], dtype=np.int64)))
        if not length.all():  # tokens with no bytes take no place
            keep = length > 0
            length, start, where = length[keep], start[keep], where[keep]
        # The blob position of every joined byte: +1 along a token, a jump at each token's
        # first byte to where its bytes are; one cumulative sum.
        step = np.ones(int(length.sum(dtype=np.int64)), dtype=start.dtype)
        if len(step):
            jump = start.copy()
            jump[1:] -= start[:-1] + length[:-1] - 1
            step[where] = jump
        expected = "".join(t for t, good in zip(texts[record:end], ok.tolist()) if good).encode("utf-8")
        joined = tables.blob[np.cumsum(step, dtype=step.dtype)]
        wrong = np.flatnonzero(joined != np.frombuffer(expected, dtype=np.uint8))
        if len(wrong):
            members = np.flatnonzero(ok) + record
            ends = np.cumsum(utf8[members])
            suspect[members[np.unique(np.searchsorted(ends, wrong, side="right"))]] = True
        record = end
    return suspect


def _suspects_fast(tables: _Tables, ids: np.ndarray, offsets: np.ndarray, texts: list[str],
                   utf8: np.ndarray) -> np.ndarray:
    """`_suspects` in one Rust call (`tinyllm._core.joined_bytes_differ`, parallel over the records,
    no per-byte arrays) when the core is selected and the tables hold every id's bytes
    (`vocab_token_bytes`: position independent). Otherwise `_suspects` itself, the reference, at
    the cost it always had. `tests/eval/test_metrics_fast.py` checks that the two agree."""
    core = _native.core
    if core is None or tables.vocab is None:
        return _suspects(tables, offsets, texts, utf8)
    blob, offsets_of_id = tables.vocab
    differ = core.joined_bytes_differ(ids.astype(np.uint32, copy=False).tobytes(),
                                      offsets.astype(np.uint64).tobytes(), blob.tobytes(),
                                      offsets_of_id.astype(np.uint64).tobytes(), texts)
    return np.frombuffer(differ, dtype=np.uint8).astype(bool)


def _failures(tokenizer, ids: np.ndarray, offsets: np.ndarray, texts: list[str], utf8: np.ndarray,
              tables: Optional[_Tables]) -> np.ndarray:
    """Which records' `decode(encode(text))` is not the exact text. Decoding is Python work per
    token, so only the records the byte comparison cannot clear are decoded."""
    if tables is not None:
        check = np.flatnonzero(_suspects_fast(tables, ids, offsets, texts, utf8))
    else:
        check = np.arange(len(texts))
    failed = np.zeros(len(texts), dtype=bool)
    if not len(check):
        return failed
    batch = [ids[offsets[k]:offsets[k + 1]].tolist() for k in check]
    decode_batch = getattr(tokenizer, "decode_batch", None)
    decoded = decode_batch(batch) if decode_batch is not None else [tokenizer.decode(one) for one in batch]
    for k, text in zip(check, decoded):
        failed[k] = text != texts[k]
    return failed


@dataclass
class _PerRecord:
    """Per-record counts as arrays, in record order (q is None without token_bytes; nb is None
    without a baseline)."""

    ids: list[str]
    n: np.ndarray
    b: np.ndarray
    u: np.ndarray
    w: np.ndarray
    q: Optional[np.ndarray]
    k: np.ndarray
    failed: np.ndarray
    nb: Optional[np.ndarray]
    exposure: np.ndarray


def _check_records(records: Iterable[Record]) -> list[Record]:
    if isinstance(records, (str, bytes, Record)):
        raise ValueError(f"evaluate: records is a {type(records).__name__}; expected a sequence of Record")
    records = list(records)
    if not records:
        raise ValueError("evaluate: records is empty; expected at least one Record (no metric of an empty "
                         "corpus is defined)")
    seen: dict[str, int] = {}
    for index, record in enumerate(records):
        if not isinstance(record, Record):
            raise ValueError(f"evaluate: records[{index}] is a {type(record).__name__}; expected a Record")
        prior = seen.setdefault(record.record_id, index)
        if prior != index:
            raise ValueError(f"evaluate: records[{index}] (record_id {record.record_id!r}) repeats the id of "
                             f"records[{prior}]; expected unique record ids (deltas and failures are keyed by them)")
    return records


# Default word counts of the records still alive: w(x) depends on the text alone, so comparing
# several candidates on one evaluation set counts its words once. Keyed by the (frozen, hashable)
# Record; an entry goes when its record does.
_WORDS: "weakref.WeakKeyDictionary[Record, int]" = weakref.WeakKeyDictionary()


def _count_words(records: list[Record], counter: Optional[Callable[[str], int]]) -> np.ndarray:
    if counter is None:  # the default counter works on the whole batch at once
        known = [_WORDS.get(r) for r in records]  # one lookup per record (hashing a Record costs)
        missing = [k for k, count in enumerate(known) if count is None]
        for k, count in zip(missing, uax29_word_counts([records[k].text for k in missing])):
            known[k] = _WORDS[records[k]] = count
        return np.array(known, dtype=np.int64)
    out = np.zeros(len(records), dtype=np.int64)
    for index, record in enumerate(records):
        value = counter(record.text)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"evaluate: words({record.record_id!r}) = {value!r} for records[{index}]; "
                             "expected a non-negative int")
        out[index] = value
    return out


def _measure(tokenizer, records: list[Record], words: Optional[Callable[[str], int]], baseline) -> _PerRecord:
    texts = [r.text for r in records]
    ids, offsets = _encode(tokenizer, texts)
    n = np.diff(offsets)
    # An ASCII str (a flag CPython keeps) has one byte per code point: no need to encode it.
    utf8 = np.fromiter((len(t) if t.isascii() else len(t.encode("utf-8")) for t in texts), dtype=np.int64,
                       count=len(texts))
    codepoints = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))

    tables, q = None, None
    if hasattr(tokenizer, "token_bytes"):
        exact = getattr(tokenizer, "token_bytes_exact", False) is True
        tables = _Tables(tokenizer, ids, offsets, exact)
        q = _segment_sums(tables.single, offsets)
        if not exact:
            tables = None  # token bytes that need not join to the decode cannot clear a record

    unk_id = getattr(tokenizer, "unk_id", None)
    k = _segment_sums(ids == unk_id, offsets) if unk_id is not None else np.zeros(len(texts), np.int64)
    failed = _failures(tokenizer, ids, offsets, texts, utf8, tables)
    if baseline is None:
        nb = None
    elif type(baseline) is ByteTokenizer:
        nb = utf8  # one id per UTF-8 byte, by the byte tokenizer's definition
    else:
        nb = np.diff(_encode(baseline, texts)[1])
    exposure = np.bincount(ids, minlength=int(getattr(tokenizer, "vocab_size", 0) or 0)) if len(ids) else \
        np.zeros(int(getattr(tokenizer, "vocab_size", 0) or 0), np.int64)
    return _PerRecord([r.record_id for r in records], n, utf8, codepoints, _count_words(records, words), q, k,
                      failed, nb, exposure)


def _report(m: _PerRecord, rows: np.ndarray, max_length: Optional[int]) -> Report:
    """The Report over the records at `rows` (indices in record order)."""
    n, b = m.n[rows], m.b[rows]
    tokens, size = int(n.sum()), int(b.sum())
    codepoints, words, unk = int(m.u[rows].sum()), int(m.w[rows].sum()), int(m.k[rows].sum())
    single = int(m.q[rows].sum()) if m.q is not None else None
    nonzero = n > 0
    macro = float(np.mean(b[nonzero] / n[nonzero])) if nonzero.any() else None
    ordered = np.sort(n)
    ids = [m.ids[r] for r in rows]
    baseline_tokens, amplification, deltas = None, None, {}
    if m.nb is not None:
        nb = m.nb[rows]
        baseline_tokens = int(nb.sum())
        amplification = _ratio(tokens, baseline_tokens)
        deltas = {rid: int(d) for rid, d in zip(ids, (n - nb).tolist())}
    return Report(
        records=len(rows),
        total_tokens=tokens,
        total_bytes=size,
        total_codepoints=codepoints,
        total_words=words,
        single_byte_tokens=single,
        unk_tokens=unk,
        bytes_per_token=_ratio(size, tokens),
        codepoints_per_token=_ratio(codepoints, tokens),
        fertility=_ratio(tokens, words),
        single_byte_fraction=_ratio(single, tokens) if single is not None else None,
        unk_rate=_ratio(unk, tokens),
        macro_bytes_per_token=macro,
        zero_token_records=int((~nonzero).sum()),
        p50=_nearest_rank(ordered, 50),
        p95=_nearest_rank(ordered, 95),
        max=int(ordered[-1]),
        max_length=max_length,
        truncated=int((n > max_length).sum()) if max_length is not None else 0,
        # Python ints: exact however long a record is (n² of int64 could overflow).
        attention_pairs=sum(x * x for x in n.tolist()),
        reconstruction_failures=tuple(rid for rid, bad in zip(ids, m.failed[rows].tolist()) if bad),
        baseline_tokens=baseline_tokens,
        amplification_total=amplification,
        deltas=deltas,
        lengths=tuple(n.tolist()),
    )


def evaluate(tokenizer, records: Sequence[Record], *, max_length: Optional[int] = None, baseline=None,
             words: Optional[Callable[[str], int]] = None) -> Report:
    """Measure `tokenizer` on `records` (see the module docstring for every definition).

    - `max_length`: the declared maximum sequence length; `truncated` counts the records longer
      than it (0 when None). A positive int or None.
    - `baseline`: another tokenizer r; the report then carries `baseline_tokens`,
      `amplification_total`, `amplification[slice]` = A_{c,s} and `deltas` (n_c − n_r per id).
    - `words`: the reference word counter, a function from one text to a non-negative int;
      default `tinyllm.eval.words.uax29_word_count` (counted for the whole batch at once).

    An empty `records` is a ValueError: percentiles and the maximum of nothing are undefined, and
    an empty evaluation set is a mistake upstream rather than a corpus with no cost. Record ids
    must be unique.

    Cost: one `encode_batch_flat` call per tokenizer; per-record counts come from the offsets and
    per-token flags via cumulative sums, the token bytes come from `vocab_token_bytes()` (kept
    per tokenizer) or else `token_bytes` once per distinct id, the joined bytes are compared with
    each text in one Rust call (`_suspects_fast`, ByteLevel decoders), and only the records whose
    joined token bytes differ from their text are decoded (all of them when the tokenizer does
    not declare `token_bytes_exact`). The word count is the largest cost
    after encoding.

    >>> from tinyllm.tok import ByteTokenizer, load
    >>> records = [Record("a", "g", "test", "naïve café", slice="fr"), Record("b", "g", "test", "ok")]
    >>> report = evaluate(load("gpt2"), records, baseline=ByteTokenizer())
    >>> report.baseline_tokens, report.total_tokens, report.amplification
    (14, 4, {'fr': 0.25})
    >>> report.deltas
    {'a': -9, 'b': -1}
    """
    records = _check_records(records)
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
        raise ValueError(f"evaluate: max_length = {max_length!r}; expected None or a positive int")
    if words is not None and not callable(words):
        raise ValueError(f"evaluate: words = {words!r}; expected a function from a text to its word count")
    measured = _measure(tokenizer, records, words, baseline)

    slice_rows: dict[str, list[int]] = {}
    for index, record in enumerate(records):
        if record.slice is not None:
            slice_rows.setdefault(record.slice, []).append(index)
    slices = {name: _report(measured, np.array(rows, dtype=np.int64), max_length)
              for name, rows in sorted(slice_rows.items())}
    report = _report(measured, np.arange(len(records)), max_length)
    amplification = {name: r.amplification_total for name, r in slices.items()} if baseline is not None else {}
    return Report(**{**{name: getattr(report, name) for name in report.__dataclass_fields__},
                     "slices": slices, "amplification": amplification,
                     "exposure": tuple(measured.exposure.tolist())})


__all__ = ["Report", "evaluate"]
