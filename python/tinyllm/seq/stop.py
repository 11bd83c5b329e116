"""Stop-safe output streaming: generated ids in, client text out, stops never leaked or missed.

The path of one generated id:

    id -> exact token bytes -> stop matching -> holdback -> incremental UTF-8 -> client text

A `StopPolicy` declares when generation ends:

* `single_token_ids`: control ids (EOS, EOT) that stop as soon as they are generated;
* `multi_token_sequences`: exact id sequences, matched on the generated ids;
* `text_stop_strings`: strings matched on the output *bytes*, so they are found whatever the
  segmentation and across token boundaries;
* `max_new_tokens`: a budget of generated ids;
* `strip_matched_stop`: whether the matched stop's text is left out of the visible text.

Matching starts at the prompt boundary: only the ids pushed into the stream are generated, the
prompt never seeds a match. When several rules fire on the same id, the order is single id,
then id sequence, then text string, then the budget.

Nothing that may still turn out to be part of a stop is shown. The stream holds back (a) the
longest suffix of the pending bytes that is a proper prefix of a stop string (at most
max(len(stop)) - 1 bytes) and (b) the bytes of the trailing ids that begin an id sequence, and
the UTF-8 decoder holds an unfinished character. Everything else is released at once.

`OutputStream.push(id)` returns the newly visible text; `finish()` releases what is held and
returns an `OutputResult`: `visible_text`, `processed_ids` (every id pushed, the stop included),
`finish_reason` ("stop", "length" or "end") and `matched_stop` (the id, id tuple or string).

Seed 003's cases, on a synthetic vocabulary (400 = "OK ", 401 = e2, 402 = 82 ac, 403 = "ST",
260 = an end-of-turn control):

>>> vocab = {400: b"OK ", 401: b"\\xe2", 402: b"\\x82\\xac", 403: b"ST", 260: b"<|eot|>", 33: b"!"}
>>> token_bytes = lambda i: vocab[i] if i in vocab else bytes([i])
>>> def run(ids, **policy):
...     stream = OutputStream(token_bytes, StopPolicy(**policy))
...     for i in ids:
...         if stream.finished:
...             break
...         stream.push(i)
...     r = stream.finish()
...     return r.visible_text, r.finish_reason, r.matched_stop, r.processed_ids
>>> run([400, 401, 402, 260], single_token_ids=[260])
('OK €', 'stop', 260, [400, 401, 402, 260])
>>> run([400, 83, 84, 79, 80, 33], multi_token_sequences=[[83, 84, 79, 80]])
('OK ', 'stop', (83, 84, 79, 80), [400, 83, 84, 79, 80])
>>> run([400, 403, 79, 80, 33], multi_token_sequences=[[83, 84, 79, 80]], text_stop_strings=["STOP"])
('OK ', 'stop', 'STOP', [400, 403, 79, 80])
>>> run([400, 65, 66, 67], max_new_tokens=3)
('OK AB', 'length', None, [400, 65, 66])
>>> run([400, 33])
('OK !', 'end', None, [400, 33])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

from tinyllm.tok.text.utf8 import new_utf8_decoder

Matched = Union[int, tuple, str, None]
FINISH_REASONS = ("stop", "length", "end")


def _int_id(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: expected a non-negative integer id, found {value!r}")
    return value


@dataclass(frozen=True)
class StopPolicy:
    """When generation stops; see the module docstring. Validated and normalized on creation."""

    single_token_ids: frozenset = frozenset()
    multi_token_sequences: tuple = ()
    text_stop_strings: tuple = ()
    strip_matched_stop: bool = True
    max_new_tokens: Optional[int] = None

    def __post_init__(self) -> None:
        singles = frozenset(_int_id(i, f"StopPolicy.single_token_ids[{k}]")
                            for k, i in enumerate(_as_list(self.single_token_ids, "single_token_ids")))
        sequences = []
        for k, seq in enumerate(_as_list(self.multi_token_sequences, "multi_token_sequences")):
            ids = tuple(_int_id(i, f"StopPolicy.multi_token_sequences[{k}][{j}]")
                        for j, i in enumerate(_as_list(seq, f"multi_token_sequences[{k}]")))
            if not ids:
                raise ValueError(f"StopPolicy.multi_token_sequences[{k}]: expected at least one id, found ()")
            sequences.append(ids)
        strings = []
        for k, s in enumerate(_as_list(self.text_stop_strings, "text_stop_strings")):
            if not isinstance(s, str) or not s:
                raise ValueError(f"StopPolicy.text_stop_strings[{k}]: expected a non-empty str, found {s!r}")
            strings.append(s)
        if not isinstance(self.strip_matched_stop, bool):
            raise ValueError(f"StopPolicy.strip_matched_stop: expected a bool, found {self.strip_matched_stop!r}")
        budget = self.max_new_tokens
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"StopPolicy.max_new_tokens: expected None or an integer >= 1, found {budget!r}")
        object.__setattr__(self, "single_token_ids", singles)
        object.__setattr__(self, "multi_token_sequences", tuple(sequences))
        object.__setattr__(self, "text_stop_strings", tuple(strings))

    @property
    def max_stop_bytes(self) -> int:
        """The longest stop string in UTF-8 bytes (0 without text stops)."""
        return max((len(s.encode("utf-8")) for s in self.text_stop_strings), default=0)


def _as_list(value, name: str) -> list:
    if isinstance(value, (str, bytes)):
        raise ValueError(f"StopPolicy.{name}: expected a sequence, found the single {type(value).__name__} {value!r}")
    try:
        return list(value)
    except TypeError:
        raise ValueError(f"StopPolicy.{name}: expected a sequence, found {value!r}") from None


@dataclass
class OutputResult:
    visible_text: str
    processed_ids: list[int]
    finish_reason: str
    matched_stop: Matched = None


def _bytes_function(token_bytes) -> Callable[[int], bytes]:
    if callable(getattr(token_bytes, "token_bytes", None)):
        return token_bytes.token_bytes
    if callable(token_bytes):
        return token_bytes
    raise ValueError(f"OutputStream: token_bytes must be a tokenizer or a function from id to bytes, "
                     f"found {type(token_bytes).__name__}")


def longest_stop_prefix_suffix(data: bytes, stops: Sequence[bytes]) -> int:
    """The longest k < len(stop) such that data's last k bytes begin some stop (0 if none).

    >>> longest_stop_prefix_suffix(b"OK ST", [b"STOP"]), longest_stop_prefix_suffix(b"OK S", [b"STOP", b"SO"])
    (2, 1)
    """
    best = 0
    for stop in stops:
        for k in range(min(len(stop) - 1, len(data)), best, -1):
            if data.endswith(stop[:k]):
                best = k
                break
    return best


class OutputStream:
    """Generated ids in, stop-safe text out (see the module docstring).

    `token_bytes` is a tokenizer (its `token_bytes(id)` gives each token's exact bytes) or a
    function from id to bytes. Ids are checked by it (a tokenizer raises ValueError naming the id).
    """

    def __init__(self, token_bytes, policy: StopPolicy) -> None:
        if not isinstance(policy, StopPolicy):
            raise ValueError(f"OutputStream: policy must be a StopPolicy, found {type(policy).__name__}")
        self.policy = policy
        self._token_bytes = _bytes_function(token_bytes)
        self._stops = [s.encode("utf-8") for s in policy.text_stop_strings]
        self._longest_sequence = max((len(s) for s in policy.multi_token_sequences), default=0)
        self._utf8 = new_utf8_decoder()
        self._pending = bytearray()  # bytes not yet released to the UTF-8 decoder
        # Byte counts of the last ids, as many as the longest id sequence: the ones an id-sequence
        # match or hold can cover, which are always still wholly pending.
        self._tail_sizes: list[int] = []
        self.processed_ids: list[int] = []
        self._visible: list[str] = []
        self._result: Optional[OutputResult] = None

    @property
    def finished(self) -> bool:
        return self._result is not None

    @property
    def held_bytes(self) -> int:
        """Bytes held back for stop matching (the UTF-8 decoder's own partial character excluded)."""
        return len(self._pending)

    def push(self, token_id: int) -> str:
        """Process one generated id; return the text it makes visible (possibly "")."""
        if self._result is not None:
            raise ValueError(f"push: the stream already finished ({self._result.finish_reason}); "
                             f"id {token_id!r} was not processed")
        i = _int_id(token_id, "push: token_id")
        policy = self.policy
        if i in policy.single_token_ids:
            self.processed_ids.append(i)
            return self._stop(i, b"" if policy.strip_matched_stop else bytes(self._token_bytes(i)), 0)
        raw = bytes(self._token_bytes(i))
        self.processed_ids.append(i)
        self._pending += raw
        self._tail_sizes.append(len(raw))
        del self._tail_sizes[: -self._longest_sequence or None]
        sequence = self._matched_sequence()
        if sequence is not None:
            cut = sum(self._tail_sizes[-len(sequence):])
            return self._stop(sequence, b"", cut if policy.strip_matched_stop else 0)
        found = self._first_text_stop()
        if found is not None:
            at, stop = found
            keep = at if policy.strip_matched_stop else at + len(stop.encode("utf-8"))
            return self._stop(stop, b"", len(self._pending) - keep)
        if policy.max_new_tokens is not None and len(self.processed_ids) >= policy.max_new_tokens:
            return self._finish("length", None)
        return self._release(len(self._pending) - self._hold())

    def push_many(self, ids) -> str:
        """Push ids until the stream stops; the ids after a stop are not processed."""
        out = []
        for i in ids:
            if self.finished:
                break
            out.append(self.push(i))
        return "".join(out)

    def finish(self) -> OutputResult:
        """Release everything held (no stop can complete any more) and return the result.
        Calling it again returns the same result."""
        if self._result is None:
            self._finish("end", None)
        return self._result

    # -- internals --------------------------------------------------------------------------
    def _matched_sequence(self) -> Optional[tuple]:
        tail = self.processed_ids[-self._longest_sequence:] if self._longest_sequence else []
        for seq in self.policy.multi_token_sequences:
            if len(seq) <= len(tail) and tuple(tail[-len(seq):]) == seq:
                return seq
        return None

    def _first_text_stop(self) -> Optional[tuple[int, str]]:
        """(byte position, stop) of the earliest-starting stop string in the pending bytes; at one
        position, the stop listed first."""
        best = None
        for stop, raw in zip(self.policy.text_stop_strings, self._stops, strict=True):
            at = self._pending.find(raw)
            if at >= 0 and (best is None or at < best[0]):
                best = (at, stop)
        return best

    def _hold(self) -> int:
        """How many pending bytes must stay back: stop-string prefixes and id-sequence prefixes."""
        text = longest_stop_prefix_suffix(bytes(self._pending), self._stops) if self._stops else 0
        ids = 0
        if self._longest_sequence:
            tail = self.processed_ids[-(self._longest_sequence - 1):] if self._longest_sequence > 1 else []
            for k in range(len(tail), 0, -1):
                if any(len(seq) > k and tuple(tail[-k:]) == seq[:k] for seq in self.policy.multi_token_sequences):
                    ids = sum(self._tail_sizes[-k:])
                    break
        return min(max(text, ids), len(self._pending))

    def _release(self, n: int) -> str:
        """Hand the first n pending bytes to the UTF-8 decoder; return the text that completes."""
        if n <= 0:
            return ""
        chunk = bytes(self._pending[:n])
        del self._pending[:n]
        text = self._utf8.push(chunk)
        self._visible.append(text)
        return text

    def _stop(self, matched: Matched, extra: bytes, cut: int) -> str:
        """Finish with reason "stop": drop the last `cut` pending bytes, append `extra`."""
        if cut:
            del self._pending[len(self._pending) - cut:]
        self._pending += extra
        return self._finish("stop", matched)

    def _finish(self, reason: str, matched: Matched) -> str:
        text = self._release(len(self._pending))
        tail = self._utf8.flush()  # an unfinished character at the very end: U+FFFD
        self._visible.append(tail)
        self._result = OutputResult("".join(self._visible), list(self.processed_ids), reason, matched)
        return text + tail
