"""How vocabulary rows are used: direct exposure versus reachability (seed 003 lines 2683-2699).

Two different measurements, kept apart:

* **Direct exposure** (`exposure`): how often each id appears in the *final* encoding of a corpus
  (`encode(text)` without template specials). A merge row consumed by a later merge as an
  intermediate piece can have zero final emissions.
* **Reachability** (`reachable`): whether some permitted input makes the tokenizer emit the id
  *alone*. The procedure is one encode: take the row's own text, ``token_bytes(id, first=True)``
  (the bytes the id decodes to as the only token; byte-level BPE vocabulary strings are spelled
  in the GPT-2 byte alphabet, so the vocabulary string itself is *not* the text), decode it as
  strict UTF-8, encode it, and compare with ``[id]``.

  - Bytes that are not valid UTF-8 (a lone byte >= 0x80, a partial character such as E4 B8):
    False, since no text has exactly those bytes.
  - A special token: False unless ``allow_special=True``; then its content is encoded with that
    special allowed.
  - Why one encode decides it: if ``encode(t) == [id]`` and the tokenizer reconstructs t exactly,
    then ``t == decode([id])``, the row's own text. So for a tokenizer that reconstructs its
    inputs and has no normalizer (the seed's byte-level BPE candidates), the answer is exact. With
    a normalizer, other texts could normalize to the row's text: then True is still a proof
    (the witness input is the row's text), but False only says "not by its own text".

  Reachability alone is not reachability in context: the partial-UTF-8 row E4 B8 can never be
  emitted alone, yet ``丁`` (E4 B8 81) emits it followed by the byte 0x81.

Neither measurement says how a model learned the row (seed lines 2695-2699): a zero count is a
screening diagnostic, not evidence of an undertrained token.

The seed's example: in compact-268, "th" (264) and "ing" (267) are never emitted in the fit
records ("the" consumes "th"), yet each is reachable:

>>> from tinyllm.eval.seed_candidates import COMPACT_MERGES, SEED_RECORDS, byte_bpe
>>> tok = byte_bpe(COMPACT_MERGES)
>>> fit = [r.text for r in SEED_RECORDS if r.split == "fit"]
>>> counts = exposure(tok, fit)
>>> counts[264], counts[265], counts[267], tok.encode("th"), tok.encode("ing")
(0, 4, 0, [264], [267])
>>> reachable(tok, 264), reachable(tok, 267), reachable(tok, 0x80), reachable(tok, 256)
(True, True, False, False)
>>> report = exposure_report(tok, fit, rows=range(264, 268))
>>> report.never_emitted, report.unreachable
((264, 267), ())
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional


def _texts(where: str, texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError(f"{where}: texts is a str; expected an iterable of str (wrap one text in a list)")
    out = list(texts)
    for index, text in enumerate(out):
        if not isinstance(text, str):
            raise ValueError(f"{where}: texts[{index}] is a {type(text).__name__}; expected a str")
    return out


def _row(where: str, tokenizer, token_id: object) -> int:
    size = tokenizer.vocab_size
    if isinstance(token_id, bool) or not hasattr(token_id, "__index__"):
        raise ValueError(f"{where}: token_id = {token_id!r} (a {type(token_id).__name__}); "
                         f"expected an int in 0..{size - 1}")
    value = token_id.__index__()
    if not 0 <= value < size:
        raise ValueError(f"{where}: token_id = {value}; expected an int in 0..{size - 1}")
    return value


def exposure(tokenizer, texts: Iterable[str]) -> Counter:
    """Final emitted ids of `texts` (each encoded alone, no template specials): a Counter from id
    to its number of final emissions (ids never emitted are absent; a Counter answers 0).

    >>> from tinyllm.tok import ByteTokenizer
    >>> exposure(ByteTokenizer(), ["aba"])[ord("a")]
    2
    """
    texts = _texts("exposure", texts)
    counts: Counter = Counter()
    batch = getattr(tokenizer, "encode_batch", None)
    encoded = batch(texts) if batch is not None else [tokenizer.encode(t) for t in texts]
    for ids in encoded:
        counts.update(ids)
    return counts


def _own_bytes(tokenizer, token_id: int) -> bytes:
    try:
        return tokenizer.token_bytes(token_id, first=True)
    except TypeError:  # a tokenizer whose token_bytes has no position argument
        return tokenizer.token_bytes(token_id)


def reachable(tokenizer, token_id: int, *, allow_special: bool = False) -> bool:
    """Whether some permitted input emits `token_id` alone (see the module docstring for the exact
    procedure and when a False is exact). Specials count only with `allow_special`."""
    token_id = _row("reachable", tokenizer, token_id)
    if not isinstance(allow_special, bool):
        raise ValueError(f"reachable: allow_special = {allow_special!r}; expected True or False")
    specials = {i: s for s, i in tokenizer.special_ids.items()}
    if token_id in specials:
        if not allow_special:
            return False
        content = specials[token_id]
        return tokenizer.encode(content, allowed_special={content}) == [token_id]
    try:
        text = _own_bytes(tokenizer, token_id).decode("utf-8")
    except UnicodeDecodeError:
        return False
    except ValueError:  # a hole in the vocabulary: no row, nothing emits it
        return False
    return tokenizer.encode(text) == [token_id]


@dataclass(frozen=True)
class ExposureReport:
    """`counts`: final emissions per id over the texts; `never_emitted`: the rows examined with a
    zero count; `unreachable`: the rows examined that no permitted input emits alone. The two
    lists are separate questions: a row can be in either, both or neither."""

    texts: int
    rows: tuple[int, ...]
    counts: Counter
    never_emitted: tuple[int, ...]
    unreachable: tuple[int, ...]

    @property
    def never_emitted_but_reachable(self) -> tuple[int, ...]:
        """Rows with no final emission that an input still emits alone (the seed's "th", "ing")."""
        blocked = set(self.unreachable)
        return tuple(i for i in self.never_emitted if i not in blocked)


def exposure_report(tokenizer, texts: Iterable[str], *, rows: Optional[Iterable[int]] = None,
                    allow_special: bool = False) -> ExposureReport:
    """`exposure` of `texts` and `reachable` of each row of `rows` (default: every id), listing the
    rows never emitted and the rows unreachable separately, in id order. Cost: one encode per
    text and one per row examined."""
    texts = _texts("exposure_report", texts)
    counts = exposure(tokenizer, texts)
    if rows is None:
        examined = list(range(tokenizer.vocab_size))
    else:
        examined = sorted({_row("exposure_report", tokenizer, i) for i in rows})
    never = tuple(i for i in examined if counts[i] == 0)
    unreachable = tuple(i for i in examined if not reachable(tokenizer, i, allow_special=allow_special))
    return ExposureReport(len(texts), tuple(examined), counts, never, unreachable)
