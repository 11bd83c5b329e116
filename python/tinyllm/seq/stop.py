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
`token_count`, `finish_reason` (one of FINISH_REASONS: "stop", "length", "end", "cancelled",
"deadline") and `matched_stop` (the id, id tuple or string).

A stream can also be interrupted from outside:

* `cancel()` finishes it with "cancelled" and returns the result (on a finished stream it returns
  the existing result unchanged: a cancel that races a stop changes nothing);
* `deadline=` is a time on `clock` (default `time.monotonic`). Once `clock() >= deadline`, the next
  `push` finishes the stream with "deadline" *instead of* processing its id, and returns the text
  that finishing releases; a server waiting for the model calls `poll()`, which does the same.

`on_interrupt` declares what happens to the bytes held back at an interrupt (a possible stop
prefix, an unfinished id sequence, the UTF-8 decoder's unfinished character): "release" (the
default) shows them as if the stream had ended, an unfinished character as one U+FFFD, exactly
what `finish()` does; "drop" never shows them and records them in `withheld_bytes`.

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

Cancelling while "OK " is out, e2 waits for the rest of its character and "S" may start STOP:

>>> def cancelled(**options):
...     stream = OutputStream(token_bytes, StopPolicy(text_stop_strings=["STOP"]), **options)
...     shown = stream.push_many([400, 401, 83])
...     r = stream.cancel()
...     return shown, r.visible_text, r.final_text, r.withheld_bytes, r.finish_reason, r.token_count
>>> cancelled()
('OK ', 'OK �S', '�S', b'', 'cancelled', 3)
>>> cancelled(on_interrupt="drop")
('OK ', 'OK ', '', b'\\xe2S', 'cancelled', 3)

A deadline, on a clock the caller controls; the id that arrives after it is not processed:

>>> now = [0.0]
>>> stream = OutputStream(token_bytes, StopPolicy(), deadline=5.0, clock=lambda: now[0])
>>> stream.push(400)
'OK '
>>> now[0] = 5.0
>>> stream.push(33), stream.finished, stream.finish().finish_reason, stream.finish().processed_ids
('', True, 'deadline', [400])
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

from tinyllm.tok.text.utf8 import new_utf8_decoder

Matched = Union[int, tuple, str, None]
FINISH_REASONS = ("stop", "length", "end", "cancelled", "deadline")
INTERRUPT_POLICIES = ("release", "drop")


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
    """How a stream ended. Three records differ on purpose (seed 003, "Tracking hidden stop tokens"):

    * `visible_text`: what the client was shown, UTF-8-valid and stop-safe;
    * `processed_ids`: every generated id the stream inspected, in order, the stop included;
    * `token_count`: how many of them there are (what a budget or a bill counts).

    They differ because a hidden stop id is processed and counted but shows no text, a stripped
    stop string's bytes are processed but not shown, and with on_interrupt="drop" the held-back
    bytes were processed but are never shown: they are kept in `withheld_bytes` (the decoder's
    unfinished character, then the stop holdback, in stream order; b"" unless bytes were dropped),
    so that nothing is lost silently.

    `final_text` is the end of `visible_text` released by the call that finished the stream: push
    and poll return it themselves; after finish() or cancel() it is what the client still needs.
    """

    visible_text: str
    processed_ids: list[int]
    finish_reason: str
    matched_stop: Matched = None
    withheld_bytes: bytes = b""
    final_text: str = ""

    @property
    def token_count(self) -> int:
        """The number of generated ids processed, a hidden stop id included."""
        return len(self.processed_ids)


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
    `deadline` (None: no deadline) is a time on `clock`, reached when `clock() >= deadline`;
    `on_interrupt` is "release" or "drop" (see the module docstring).
    """

    def __init__(self, token_bytes, policy: StopPolicy, *, deadline: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic, on_interrupt: str = "release") -> None:
        if not isinstance(policy, StopPolicy):
            raise ValueError(f"OutputStream: policy must be a StopPolicy, found {type(policy).__name__}")
        if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, numbers.Real)
                                     or math.isnan(deadline)):
            raise ValueError(f"OutputStream: deadline = {deadline!r}; expected None or a number (a time on clock)")
        if not callable(clock):
            raise ValueError(f"OutputStream: clock = {clock!r}; expected a function returning the current time")
        if not isinstance(on_interrupt, str) or on_interrupt not in INTERRUPT_POLICIES:
            raise ValueError(f"OutputStream: on_interrupt = {on_interrupt!r}; expected 'release' or 'drop'")
        self.policy = policy
        self.deadline = deadline
        self.on_interrupt = on_interrupt
        self._clock = clock
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
        """Process one generated id; return the text it makes visible (possibly "").

        When the deadline has been reached, the id is not processed: the stream finishes with
        "deadline" and the text that releases is returned (check `finished` after each push)."""
        if self._result is not None:
            raise ValueError(f"push: the stream already finished ({self._result.finish_reason}); "
                             f"id {token_id!r} was not processed")
        if self._deadline_reached():
            return self._interrupt("deadline")
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

    def poll(self) -> str:
        """For a server waiting for the next id: finish with "deadline" if it has been reached and
        return the text that releases; otherwise (or when finished already) return ""."""
        if self._result is None and self._deadline_reached():
            return self._interrupt("deadline")
        return ""

    def cancel(self) -> OutputResult:
        """Finish with "cancelled", treating held bytes as `on_interrupt` says, and return the
        result (its `final_text` is what the client has not been sent). On a finished stream,
        return its result unchanged: the first way the stream ended stands."""
        if self._result is None:
            self._interrupt("cancelled")
        return self._result

    # -- internals --------------------------------------------------------------------------
    def _deadline_reached(self) -> bool:
        return self.deadline is not None and self._clock() >= self.deadline

    def _interrupt(self, reason: str) -> str:
        """Finish with `reason` ("cancelled" or "deadline") under the on_interrupt policy."""
        withheld = b""
        if self.on_interrupt == "drop":
            # The decoder's bytes come first in the stream: everything in _pending is later.
            withheld = bytes(self._utf8.pending) + bytes(self._pending)
            self._pending.clear()
            self._utf8 = new_utf8_decoder()
        return self._finish(reason, None, withheld)

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

    def _finish(self, reason: str, matched: Matched, withheld: bytes = b"") -> str:
        text = self._release(len(self._pending))
        tail = self._utf8.flush()  # an unfinished character at the very end: U+FFFD
        self._visible.append(tail)
        self._result = OutputResult("".join(self._visible), list(self.processed_ids), reason, matched,
                                    withheld, text + tail)
        return text + tail
