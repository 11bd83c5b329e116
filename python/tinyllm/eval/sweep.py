"""A vocabulary-size sweep of nested byte-level BPE candidates (seed 003, 0x0C and 0x0C1).

    tinyllm sweep bpe corpus/*.txt --sizes 8k,16k,32k,64k --d-model 4096

`sweep_bpe` trains ONE byte-level BPE at the largest requested size, on the fit documents only,
and builds every smaller candidate from the first `size - 256 - len(special_tokens)` merges of
that one run. The candidates are therefore nested by construction: candidate k's merge list is a
prefix of candidate k+1's, every shared token keeps its id, and the width is the only thing that
varies (the seed's "append-only width", 003 lines 2582 and 2632-2646). The sweep asserts it for
every pair of neighbouring candidates (an AssertionError there would be a bug, not bad input).

Split rule (deterministic, declared): each text is cut into documents of whole lines of at least
2,000 characters (`tinyllm.eval.records.line_documents`, the rule of `tinyllm eval --data`); the
documents are numbered 1, 2, 3, ... over all texts in the order given, and document j is held out
when j % holdout == 0 (every `holdout`-th document, 10 by default); the rest is the fit split.
Training sees the fit documents only; every candidate is measured with `evaluate` on the held-out
documents (one `Record` per document, its own group).

Sizes: `parse_sizes("8k,16k")` reads "8k" as 8,000 (decimal, as the seed writes 32,000 and
128,000), "8ki" as 8,192 (binary), and a plain integer ("8192") as itself. The sizes are sorted
ascending; a repeated size is an error.

Training may stop before the largest size (no pair left, or none reaching `min_frequency`). The
candidates then get as many merges as were learned: `SweepRow.vocab_size` is the actual width,
`requested_size` the asked one, and `complete` is False for a row that got fewer merges than it
asked for; `table` says so in a note under the rows.

>>> texts = ["the cat sat on the mat. " * 100 + "\\n"] * 20
>>> rows = sweep_bpe(texts, [270, 260], holdout=5, d_model=8)
>>> [(r.requested_size, r.vocab_size, r.merges, r.complete) for r in rows]   # the text runs out of pairs
[(260, 260, 4, True), (270, 269, 13, False)]
>>> rows[1].tokens_saved > 0, rows[1].vocab_params - rows[0].vocab_params
(True, 72)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

#: "8k" = 8,000 and "8ki" = 8,192; a bare integer is itself.
_SIZE = re.compile(r"(\d+(?:\.\d+)?)(k|ki)?", re.IGNORECASE)
_UNITS = {None: 1, "k": 1000, "ki": 1024}


def parse_sizes(text: str, parameter: str = "sizes") -> list[int]:
    """Vocabulary sizes from "8k,16k,32k,64k": sorted ascending, no repeats.

    >>> parse_sizes("8k,16k"), parse_sizes("8ki, 300"), parse_sizes("1.5k")
    ([8000, 16000], [300, 8192], [1500])
    >>> parse_sizes("8k,8000")
    Traceback (most recent call last):
    ...
    ValueError: sizes: found 8000 twice in '8k,8000'; expected distinct sizes
    """
    if not isinstance(text, str):
        raise ValueError(f"{parameter}: found {text!r}; expected comma-separated sizes such as '8k,16k,32k'")
    sizes: list[int] = []
    for k, item in enumerate(text.split(",")):
        word = item.strip()
        match = _SIZE.fullmatch(word)
        if not match:
            raise ValueError(f"{parameter}: item {k} is {word!r} in {text!r}; expected an integer, 'Nk' "
                             "(N x 1000) or 'Nki' (N x 1024), e.g. '8k,16k,32k'")
        number, unit = match.groups()
        value = float(number) * _UNITS[unit.lower() if unit else None]
        if value != int(value):
            raise ValueError(f"{parameter}: item {k} is {word!r} = {value}; expected a whole number of tokens")
        if int(value) in sizes:
            raise ValueError(f"{parameter}: found {int(value)} twice in {text!r}; expected distinct sizes")
        sizes.append(int(value))
    return sorted(sizes)


def split_documents(corpus_texts: Sequence[str], holdout: int = 10) -> tuple[list[str], list[str]]:
    """(fit documents, held-out documents) by the module's split rule.

    >>> fit, held = split_documents(["a" * 2000 + "\\n"] * 5, holdout=2)
    >>> len(fit), len(held)
    (3, 2)
    """
    from tinyllm.eval.records import line_documents

    if isinstance(corpus_texts, (str, bytes)):
        raise ValueError(f"corpus_texts: found a single {type(corpus_texts).__name__}; expected a sequence "
                         "of texts (wrap it in a list)")
    if isinstance(holdout, bool) or not isinstance(holdout, int) or holdout < 2:
        raise ValueError(f"holdout: found {holdout!r}; expected an integer >= 2 (every holdout-th document "
                         "is held out)")
    fit: list[str] = []
    held: list[str] = []
    number = 0
    for k, text in enumerate(corpus_texts):
        if not isinstance(text, str):
            raise ValueError(f"corpus_texts[{k}]: found {type(text).__name__}; expected a str")
        for doc in line_documents(text.splitlines(keepends=True)):
            number += 1
            (held if number % holdout == 0 else fit).append(doc)
    if not held:
        raise ValueError(f"corpus_texts: found {number} documents (runs of whole lines of at least 2,000 "
                         f"characters); expected at least holdout = {holdout} so that one is held out")
    return fit, held


@dataclass(frozen=True)
class SweepRow:
    """One candidate of a sweep, measured on the held-out documents.

    `tokens_saved` / `gain` / `saved_per_row` compare with the previous (smaller) row: held-out
    tokens saved, that as a fraction of the previous row's tokens, and per added vocabulary row
    (None for the first row, and `saved_per_row` also when no row was added because training
    stopped early). A negative saving is possible on held-out text and is reported as it is.
    """

    requested_size: int
    vocab_size: int  # the actual width: 256 + merges + specials
    merges: int
    complete: bool  # False: training stopped before this size's merges were learned
    heldout_records: int
    heldout_tokens: int
    bytes_per_token: Optional[float]
    fertility: Optional[float]
    single_byte_fraction: Optional[float]
    vocab_params: int  # tied, no bias, at the sweep's d_model (`vocab_cost`)
    reconstruction_failures: int
    tokens_saved: Optional[int] = None
    gain: Optional[float] = None
    saved_per_row: Optional[float] = None
    #: The candidate tokenizer (for saving); not compared, not in `to_json`.
    tokenizer: Any = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "tokenizer"}


def _fmt(value: Optional[float], spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def table(rows: Sequence[SweepRow], d_model: Optional[int] = None) -> str:
    """One line per candidate, then a note when training stopped early."""
    params = f"params@{d_model}" if d_model else "vocab params"
    lines = [f"{'size':>7} {'V':>7} {'merges':>7} {'tokens':>9} {'bytes/tok':>9} {'fertility':>9} {'1-byte':>7} "
             f"{params:>14} {'saved':>8} {'gain':>7} {'saved/row':>9}"]
    for r in rows:
        gain = "-" if r.gain is None else f"{100 * r.gain:.2f}%"
        saved = "-" if r.tokens_saved is None else str(r.tokens_saved)
        lines.append(f"{r.requested_size:>7} {r.vocab_size:>7} {r.merges:>7} {r.heldout_tokens:>9} "
                     f"{_fmt(r.bytes_per_token):>9} {_fmt(r.fertility):>9} {_fmt(r.single_byte_fraction):>7} "
                     f"{r.vocab_params:>14,} {saved:>8} {gain:>7} {_fmt(r.saved_per_row, '.2f'):>9}")
    short = [r for r in rows if not r.complete]
    if short:
        report = getattr(short[0].tokenizer, "training_report", None) or {}
        reason = f" ({report['stop_reason']})" if "stop_reason" in report else ""
        lines.append(f"note: training stopped after {short[0].merges} merges{reason}; size(s) "
                     f"{', '.join(str(r.requested_size) for r in short)} got all of them (V = {short[0].vocab_size})")
    return "\n".join(lines)


def _candidate(pairs, m: int, report: dict, requested: int, largest: int):
    """The tokenizer of the first m merges (ids as trained), with its own training report."""
    from tinyllm.tok.models.bpe import BPEModel
    from tinyllm.tok.models.bpe_tokenizer import BPETokenizer
    from tinyllm.train.bpe import learned_parts
    from tinyllm.train.common import Learned

    specials = report["special_tokens"]
    model, stages = learned_parts(pairs[:m], specials, report["pattern"])
    own = dict(report, vocab_size=256 + m + len(specials), requested_vocab_size=requested, merges=m,
               nested_in=largest)
    if m < report["merges"]:
        own["stop_reason"] = "prefix"  # cut from the largest run, not stopped by training
    return BPETokenizer.from_learned(BPEModel, Learned(model, stages, own))


def sweep_bpe(corpus_texts: Sequence[str], sizes: Sequence[int], *, holdout: int = 10, d_model: int = 4096,
              min_frequency: int = 2, special_tokens: Sequence[str] = (), pattern: str = "gpt2",
              progress: bool = False) -> list[SweepRow]:
    """Nested byte-level BPE candidates at `sizes`, measured on held-out documents (module docstring).

    One row per size, ascending. `progress` writes training progress and one line per evaluated
    candidate to stderr. Errors are ValueErrors naming the parameter.
    """
    from tinyllm.eval.calculators import vocab_cost
    from tinyllm.eval.metrics import evaluate
    from tinyllm.eval.records import Record
    from tinyllm.train.bpe import check_parameters, train
    from tinyllm.train.common import check_special_tokens

    if isinstance(sizes, (str, bytes)) or not sizes:
        raise ValueError(f"sizes: found {sizes!r}; expected a non-empty sequence of vocabulary sizes")
    for k, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int):
            raise ValueError(f"sizes[{k}]: found {size!r}; expected an int")
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"sizes: found {list(sizes)}; expected distinct sizes")
    ordered = sorted(sizes)
    specials = check_special_tokens(special_tokens)
    if ordered[0] < 256 + len(specials):
        raise ValueError(f"sizes: found {ordered[0]}; expected every size >= {256 + len(specials)} (256 bytes + "
                         f"{len(specials)} special tokens)")
    check_parameters(ordered[-1], min_frequency, specials)
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"d_model: found {d_model!r}; expected a positive int")
    fit, held = split_documents(corpus_texts, holdout)
    if not fit:
        raise ValueError("corpus_texts: no fit document left after the hold-out; expected more documents")
    say = (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush())) if progress else (lambda line: None)
    largest = ordered[-1]
    say(f"sweep: {len(fit)} fit / {len(held)} held-out documents; training one BPE at {largest}...")
    learned = train(fit, largest, min_frequency=min_frequency, special_tokens=specials, pattern=pattern,
                    progress=progress)
    if progress:
        sys.stderr.write("\n")  # the trainer's progress line ends without one
    report = learned.report
    vocab = learned.model["vocab"]
    pairs = [(vocab[a], vocab[b]) for a, b in learned.model["merges"]]
    records = [Record(f"heldout#{k}", f"heldout#{k}", "validation", doc) for k, doc in enumerate(held)]

    rows: list[SweepRow] = []
    previous_merges = None
    for size in ordered:
        m = min(size - 256 - len(specials), report["merges"])
        tok = _candidate(pairs, m, report, size, largest)
        merges = list(tok.model.merges)
        if previous_merges is not None:  # nested by construction; checked, not assumed
            assert merges[:len(previous_merges)] == previous_merges, f"candidate {size} is not nested"
        previous_merges = merges
        width = 256 + m + len(specials)
        r = evaluate(tok, records)
        before = rows[-1] if rows else None
        saved = gain = per_row = None
        if before is not None:
            saved = before.heldout_tokens - r.total_tokens
            gain = saved / before.heldout_tokens if before.heldout_tokens else None
            per_row = saved / (width - before.vocab_size) if width > before.vocab_size else None
        rows.append(SweepRow(size, width, m, m == size - 256 - len(specials), r.records, r.total_tokens,
                             r.bytes_per_token, r.fertility, r.single_byte_fraction,
                             vocab_cost(width, d_model).vocab_params, len(r.reconstruction_failures), saved, gain,
                             per_row, tok))
        say(f"sweep: {size} (V = {width}, {m} merges): {r.total_tokens} held-out tokens, "
            f"{_fmt(r.bytes_per_token)} bytes/token")
    return rows


__all__ = ["SweepRow", "parse_sizes", "split_documents", "sweep_bpe", "table"]
