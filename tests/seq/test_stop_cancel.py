"""OutputStream interrupted from outside: cancel(), a deadline, and what happens to held-back bytes.

No test waits or measures time: the deadline is read from a FakeClock the test sets.

The property tests prove, for random synthetic vocabularies, id sequences, stop policies and an
interrupt after k ids (cancel(), or a deadline seen by push or poll):

(a) every text returned (by push, by the push or poll that finishes, or cancel()'s final_text)
    concatenates to result.visible_text;
(b) on_interrupt="release": visible_text, processed_ids and matched_stop equal those of a fresh
    stream fed the same ids and then finish()-ed; the reason is the interrupt's unless that stream
    had already stopped ("stop"/"length"), and the id pushed after the deadline is never processed;
(c) on_interrupt="drop": visible_text == the text returned before the interrupt, and
        release.visible_text == drop.visible_text + drop.withheld_bytes.decode("utf-8", "replace")
    (so drop's text is a prefix of release's), with the same processed_ids, while
    release.withheld_bytes == b"";
(d) with text stops and a budget, both modes and the uninterrupted stream equal `one_shot`, an
    independent reference that decodes all processed bytes at once and finds the stop by
    searching the whole byte string.
"""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.seq.test_stop import pieces, synthetic
from tinyllm.seq.stop import FINISH_REASONS, OutputStream, StopPolicy

DEADLINE = 100.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def stop_stream(**options) -> OutputStream:
    return OutputStream(synthetic, StopPolicy(text_stop_strings=["STOP"]), **options)


def test_finish_reasons_are_declared():
    assert FINISH_REASONS == ("stop", "length", "end", "cancelled", "deadline")


@pytest.mark.parametrize("mode, shown, withheld", [("release", "ST", b""), ("drop", "", b"ST")])
def test_cancel_finishes_and_applies_the_holdback_policy(mode, shown, withheld):
    stream = stop_stream(on_interrupt=mode)
    assert stream.push_many([400, 83, 84]) == "OK "  # "ST" may start STOP
    result = stream.cancel()
    assert (result.finish_reason, result.matched_stop, result.processed_ids, result.token_count) == \
        ("cancelled", None, [400, 83, 84], 3)
    assert (result.visible_text, result.final_text, result.withheld_bytes) == ("OK " + shown, shown, withheld)
    assert stream.finished and stream.finish() is result
    with pytest.raises(ValueError, match="already finished"):
        stream.push(33)


@pytest.mark.parametrize("mode, visible, withheld", [("release", "OK \ufffd", b""), ("drop", "OK ", b"\xe2\x82")])
def test_an_unfinished_character_at_cancel(mode, visible, withheld):
    stream = OutputStream(synthetic, StopPolicy(), on_interrupt=mode)
    stream.push_many([400, 401, 0x82])
    result = stream.cancel()
    assert (result.visible_text, result.withheld_bytes) == (visible, withheld)


def test_cancel_on_a_finished_stream_returns_the_same_result():
    stream = OutputStream(synthetic, StopPolicy(single_token_ids=[260]))
    stream.push_many([400, 260])
    stopped = stream.finish()
    again = stream.cancel()
    assert again is stopped
    assert (again.finish_reason, again.matched_stop, again.visible_text) == ("stop", 260, "OK ")
    assert stream.cancel() is stopped  # and it stays so


def test_hidden_stop_id_counts_as_a_token_but_shows_no_text():
    stream = OutputStream(synthetic, StopPolicy(single_token_ids=[260]))
    stream.push_many([400, 65, 260])
    result = stream.finish()
    assert (result.visible_text, result.processed_ids, result.token_count) == ("OK A", [400, 65, 260], 3)


@pytest.mark.parametrize("mode, returned, visible, withheld", [("release", "S", "OK S", b""),
                                                               ("drop", "", "OK ", b"S")])
def test_deadline_in_push_does_not_process_the_id(mode, returned, visible, withheld):
    clock = FakeClock()
    stream = stop_stream(deadline=DEADLINE, clock=clock, on_interrupt=mode)
    assert stream.push(400) == "OK "
    clock.now = DEADLINE - 0.5
    assert stream.push(83) == "" and not stream.finished
    clock.now = DEADLINE  # reached: clock() >= deadline
    assert stream.push(84) == returned
    result = stream.finish()
    assert (result.finish_reason, result.processed_ids, result.token_count) == ("deadline", [400, 83], 2)
    assert (result.visible_text, result.final_text, result.withheld_bytes) == (visible, returned, withheld)


def test_poll_finishes_only_once_the_deadline_is_reached():
    clock = FakeClock()
    stream = stop_stream(deadline=DEADLINE, clock=clock)
    stream.push_many([400, 83])
    assert (stream.poll(), stream.finished) == ("", False)
    clock.now = DEADLINE + 1
    assert (stream.poll(), stream.finished) == ("S", True)
    assert stream.poll() == ""  # a finished stream releases nothing more
    assert stream.finish().finish_reason == "deadline"
    with pytest.raises(ValueError, match="already finished"):
        stream.push(33)


def test_without_a_deadline_the_clock_is_never_consulted():
    def clock():
        raise AssertionError("clock read without a deadline")

    stream = stop_stream(clock=clock)
    assert stream.push_many([400, 33]) == "OK !"
    assert (stream.poll(), stream.finished) == ("", False)


def test_option_errors_name_the_parameter_found_and_expected():
    for options, message in [
        (dict(on_interrupt="keep"), r"on_interrupt = 'keep'; expected 'release' or 'drop'"),
        (dict(on_interrupt=None), r"on_interrupt = None; expected"),
        (dict(deadline="soon"), r"deadline = 'soon'; expected None or a number"),
        (dict(deadline=True), r"deadline = True; expected"),
        (dict(deadline=float("nan")), r"deadline = nan; expected"),
        (dict(clock=5), r"clock = 5; expected a function"),
    ]:
        with pytest.raises(ValueError, match=message):
            stop_stream(**options)


# -- properties ---------------------------------------------------------------------------------
def interrupt(stream: OutputStream, clock: FakeClock, how: str, next_id: int) -> str:
    """Interrupt `stream` by `how`; return the text the client gets from the interrupt."""
    if how == "cancel":
        was_finished = stream.finished
        result = stream.cancel()
        return "" if was_finished else result.final_text
    clock.now = DEADLINE
    if how == "poll" or stream.finished:
        return stream.poll()
    return stream.push(next_id)


def run_interrupted(token_bytes, policy, ids, k, how, mode):
    """Push ids[:k] (until a stop), then interrupt; return (texts before, interrupt text, result)."""
    clock = FakeClock()
    stream = OutputStream(token_bytes, policy, deadline=None if how == "cancel" else DEADLINE, clock=clock,
                          on_interrupt=mode)
    before = [stream.push(i) for i in ids[:k] if not stream.finished]
    was_finished = stream.finished
    last = interrupt(stream, clock, how, ids[k] if k < len(ids) else 0)
    result = stream.finish()
    if not was_finished:
        assert result.final_text == last
    return before, last, result, was_finished


def fed_then_finished(token_bytes, policy, ids):
    stream = OutputStream(token_bytes, policy)
    stream.push_many(ids)
    return stream.finish()


interrupts = st.sampled_from(["cancel", "deadline", "poll"])


@settings(max_examples=400, deadline=None)
@given(
    table=st.lists(pieces, min_size=12, max_size=12),
    ids=st.lists(st.integers(0, 11), max_size=25),
    k=st.integers(0, 26),
    how=interrupts,
    singles=st.lists(st.integers(0, 11), max_size=2),
    sequences=st.lists(st.lists(st.integers(0, 11), min_size=1, max_size=3), max_size=2),
    strings=st.lists(st.sampled_from(["STOP", "TO", "€!", "P", "OPS", "S S"]), max_size=2),
    strip=st.booleans(),
    budget=st.one_of(st.none(), st.integers(1, 30)),
)
def test_interrupted_streaming_equals_one_shot(table, ids, k, how, singles, sequences, strings, strip, budget):
    token_bytes = table.__getitem__
    policy = StopPolicy(singles, sequences, strings, strip, budget)
    reason = "cancelled" if how == "cancel" else "deadline"
    fresh = fed_then_finished(token_bytes, policy, ids[:k])
    runs = {}
    for mode in ("release", "drop"):
        before, last, result, was_finished = run_interrupted(token_bytes, policy, ids, k, how, mode)
        # (a) what the client was given is exactly the visible text
        assert "".join(before) + last == result.visible_text
        assert result.finish_reason in FINISH_REASONS
        assert result.token_count == len(result.processed_ids)
        if was_finished:
            assert result.finish_reason in ("stop", "length") and result.withheld_bytes == b""
        else:
            assert result.finish_reason == reason and result.matched_stop is None
        runs[mode] = (before, result)
    release, drop = runs["release"][1], runs["drop"][1]
    # (b) release == the same ids fed to a fresh stream and finished; later ids never processed
    assert (release.visible_text, release.processed_ids, release.matched_stop) == \
        (fresh.visible_text, fresh.processed_ids, fresh.matched_stop)
    assert release.finish_reason == (reason if fresh.finish_reason == "end" else fresh.finish_reason)
    assert release.withheld_bytes == b""
    # (c) drop shows nothing at the interrupt, and what it withholds is exactly the difference
    assert runs["drop"][0] == runs["release"][0]  # the policy changes nothing before the interrupt
    assert drop.visible_text == "".join(runs["drop"][0])
    assert release.visible_text == drop.visible_text + drop.withheld_bytes.decode("utf-8", "replace")
    assert release.visible_text.startswith(drop.visible_text)
    assert (drop.processed_ids, drop.finish_reason, drop.matched_stop) == \
        (release.processed_ids, release.finish_reason, release.matched_stop)


# -- (d) an independent one-shot reference ------------------------------------------------------
def one_shot(token_bytes, ids, strings, strip, budget):
    """Text stops and a budget, applied to all the bytes at once: (visible, processed, reason,
    matched, held), where `held` is what a stream would still hold had the source not ended."""
    if budget is not None:
        ids = ids[:budget]
    data = b"".join(token_bytes(i) for i in ids)
    ends = [len(b"".join(token_bytes(i) for i in ids[: j + 1])) for j in range(len(ids))]
    found = [(data.find(s.encode()), n, s) for n, s in enumerate(strings) if s.encode() in data]
    if found:
        first_end = min(at + len(s.encode()) for at, _, s in found)
        j = next(j for j, end in enumerate(ends) if end >= first_end)  # the id that completes a stop
        at, _, stop = min(f for f in found if f[0] + len(f[2].encode()) <= ends[j])
        cut = at if strip else at + len(stop.encode())
        return data[:cut].decode("utf-8", "replace"), ids[: j + 1], "stop", stop, b""
    reason = "length" if budget is not None and len(ids) == budget else "end"
    stops = [s.encode() for s in strings]
    hold = 0 if reason == "length" else \
        max((n for s in stops for n in range(1, len(s)) if data.endswith(s[:n])), default=0)
    return data.decode("utf-8", "replace"), ids, reason, None, data[len(data) - hold:]


@settings(max_examples=400, deadline=None)
@given(
    table=st.lists(pieces, min_size=12, max_size=12),
    ids=st.lists(st.integers(0, 11), max_size=25),
    k=st.integers(0, 26),
    how=interrupts,
    strings=st.lists(st.sampled_from(["STOP", "TO", "€!", "P", "OPS", "S S"]), max_size=3),
    strip=st.booleans(),
    budget=st.one_of(st.none(), st.integers(1, 30)),
)
def test_streams_equal_an_independent_one_shot_reference(table, ids, k, how, strings, strip, budget):
    token_bytes = table.__getitem__
    policy = StopPolicy(text_stop_strings=strings, strip_matched_stop=strip, max_new_tokens=budget)
    # Not interrupted: the whole id list.
    visible, processed, reason, matched, _ = one_shot(token_bytes, ids, strings, strip, budget)
    result = fed_then_finished(token_bytes, policy, ids)
    assert (result.visible_text, result.processed_ids, result.finish_reason, result.matched_stop) == \
        (visible, processed, reason, matched)
    # Interrupted after k ids.
    visible, processed, reason, matched, held = one_shot(token_bytes, ids[:k], strings, strip, budget)
    if reason == "end":
        reason = "cancelled" if how == "cancel" else "deadline"
    release = run_interrupted(token_bytes, policy, ids, k, how, "release")[2]
    assert (release.visible_text, release.processed_ids, release.finish_reason, release.matched_stop) == \
        (visible, processed, reason, matched)
    # drop: the bytes before the hold are decoded with Python's codec, which keeps an unfinished
    # last character back; that character and the hold are what is withheld.
    data = b"".join(token_bytes(i) for i in processed)
    codec = codecs.getincrementaldecoder("utf-8")("replace")
    shown = codec.decode(data[: len(data) - len(held)]) if reason in ("cancelled", "deadline") else visible
    withheld = codec.getstate()[0] + held if reason in ("cancelled", "deadline") else b""
    drop = run_interrupted(token_bytes, policy, ids, k, how, "drop")[2]
    assert (drop.visible_text, drop.withheld_bytes, drop.processed_ids, drop.finish_reason) == \
        (shown, withheld, processed, reason)
