"""StopPolicy and OutputStream: seed 003's five cases, streaming == one-shot processing, holdback bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import ours
from tinyllm.seq.stop import OutputStream, StopPolicy

VOCAB = {400: b"OK ", 401: b"\xe2", 402: b"\x82\xac", 403: b"ST", 260: b"<|eot|>", 33: b"!"}


def synthetic(i: int) -> bytes:
    return VOCAB[i] if i in VOCAB else bytes([i])


def stream_all(token_bytes, policy, ids):
    stream = OutputStream(token_bytes, policy)
    chunks = [stream.push(i) for i in ids if not stream.finished]
    before = len(chunks)
    chunks.append(stream.finish().visible_text[len("".join(chunks)):])
    return stream, "".join(chunks[:before]), stream.finish()


def one_shot(token_bytes, policy, ids):
    """The same rules applied to the whole id list at once (no streaming state)."""
    processed, out = [], b""
    for i in ids:
        processed.append(i)
        if i in policy.single_token_ids:
            out += b"" if policy.strip_matched_stop else token_bytes(i)
            return out.decode("utf-8", "replace"), processed, "stop", i
        out += token_bytes(i)
        for seq in policy.multi_token_sequences:
            if tuple(processed[-len(seq):]) == seq:
                if policy.strip_matched_stop:
                    out = out[: len(out) - sum(len(token_bytes(x)) for x in seq)]
                return out.decode("utf-8", "replace"), processed, "stop", seq
        hits = [(out.find(s.encode()), k, s) for k, s in enumerate(policy.text_stop_strings) if s.encode() in out]
        if hits:
            at, _, s = min(hits)
            end = at if policy.strip_matched_stop else at + len(s.encode())
            return out[:end].decode("utf-8", "replace"), processed, "stop", s
        if policy.max_new_tokens is not None and len(processed) >= policy.max_new_tokens:
            return out.decode("utf-8", "replace"), processed, "length", None
    return out.decode("utf-8", "replace"), processed, "end", None


@pytest.mark.parametrize("ids, policy, visible, reason, matched, processed", [
    ([400, 401, 402, 260], dict(single_token_ids=[260]), "OK €", "stop", 260, [400, 401, 402, 260]),
    ([400, 83, 84, 79, 80, 33], dict(multi_token_sequences=[[83, 84, 79, 80]]), "OK ", "stop", (83, 84, 79, 80),
     [400, 83, 84, 79, 80]),
    ([400, 403, 79, 80, 33], dict(multi_token_sequences=[[83, 84, 79, 80]]), "OK STOP!", "end", None,
     [400, 403, 79, 80, 33]),
    ([400, 403, 79, 80, 33], dict(multi_token_sequences=[[83, 84, 79, 80]], text_stop_strings=["STOP"]), "OK ",
     "stop", "STOP", [400, 403, 79, 80]),
    ([400, 65, 66, 67], dict(max_new_tokens=3), "OK AB", "length", None, [400, 65, 66]),
    ([400, 33], dict(), "OK !", "end", None, [400, 33]),
])
def test_seed_output_cases(ids, policy, visible, reason, matched, processed):
    stream, streamed, result = stream_all(synthetic, StopPolicy(**policy), ids)
    assert (result.visible_text, result.finish_reason, result.matched_stop, result.processed_ids) == \
        (visible, reason, matched, processed)
    assert "\ufffd" not in streamed


def test_split_euro_is_never_shown_half_and_eot_is_hidden():
    stream = OutputStream(synthetic, StopPolicy(single_token_ids=[260]))
    assert [stream.push(i) for i in (400, 401, 402)] == ["OK ", "", "€"]
    assert stream.push(260) == "" and stream.finished
    with pytest.raises(ValueError, match="already finished"):
        stream.push(33)
    assert stream.finish().processed_ids == [400, 401, 402, 260]


def test_text_stop_prefix_is_held_then_released_when_it_breaks():
    stream = OutputStream(synthetic, StopPolicy(text_stop_strings=["STOP"]))
    assert stream.push(400) == "OK "
    assert (stream.push(83), stream.held_bytes) == ("", 1)
    assert (stream.push(84), stream.held_bytes) == ("", 2)
    assert stream.push(33) == "ST!"  # "ST!" can no longer become STOP
    assert stream.finish().visible_text == "OK ST!"


def test_keeping_the_matched_stop():
    policy = StopPolicy(text_stop_strings=["STOP"], strip_matched_stop=False)
    assert stream_all(synthetic, policy, [400, 403, 79, 80, 33])[2].visible_text == "OK STOP"
    policy = StopPolicy(single_token_ids=[260], strip_matched_stop=False)
    assert stream_all(synthetic, policy, [400, 260])[2].visible_text == "OK <|eot|>"


def test_prompt_never_seeds_a_match():
    # The prompt ended in "ST"; only generated ids are pushed, so "OP" alone is not a stop.
    stream = OutputStream(synthetic, StopPolicy(text_stop_strings=["STOP"]))
    assert stream.push_many([79, 80]) == "OP"
    assert stream.finish().finish_reason == "end"


def test_policy_errors_name_the_field():
    for kwargs, field in [(dict(single_token_ids=[-1]), "single_token_ids"),
                          (dict(multi_token_sequences=[[]]), r"multi_token_sequences\[0\]"),
                          (dict(text_stop_strings=[""]), r"text_stop_strings\[0\]"),
                          (dict(text_stop_strings="STOP"), "text_stop_strings"),
                          (dict(max_new_tokens=0), "max_new_tokens"),
                          (dict(strip_matched_stop="yes"), "strip_matched_stop")]:
        with pytest.raises(ValueError, match=field):
            StopPolicy(**kwargs)
    with pytest.raises(ValueError, match="policy"):
        OutputStream(synthetic, {"max_new_tokens": 3})


pieces = st.sampled_from([b"S", b"T", b"O", b"P", b"ST", b"OP", b"\xe2", b"\x82", b"\xac", b"\xe2\x82", b"!", b" ",
                          b"", b"STO", b"\xff"])


@settings(max_examples=400, deadline=None)
@given(
    table=st.lists(pieces, min_size=12, max_size=12),
    ids=st.lists(st.integers(0, 11), max_size=25),
    singles=st.lists(st.integers(0, 11), max_size=2),
    sequences=st.lists(st.lists(st.integers(0, 11), min_size=1, max_size=3), max_size=2),
    strings=st.lists(st.sampled_from(["STOP", "TO", "€!", "P", "OPS", "S S"]), max_size=2),
    strip=st.booleans(),
    budget=st.one_of(st.none(), st.integers(1, 30)),
)
def test_streaming_equals_one_shot_processing(table, ids, singles, sequences, strings, strip, budget):
    token_bytes = table.__getitem__
    policy = StopPolicy(singles, sequences, strings, strip, budget)
    stream, streamed, result = stream_all(token_bytes, policy, ids)
    visible, processed, reason, matched = one_shot(token_bytes, policy, ids)
    assert (result.visible_text, result.processed_ids, result.finish_reason, result.matched_stop) == \
        (visible, processed, reason, matched)
    assert visible.startswith(streamed)  # what was shown is never taken back


@settings(max_examples=200, deadline=None)
@given(table=st.lists(pieces, min_size=12, max_size=12), ids=st.lists(st.integers(0, 11), max_size=25),
       strings=st.lists(st.sampled_from(["STOP", "TO", "€!", "OPS"]), min_size=1, max_size=2))
def test_holdback_is_bounded_by_the_longest_stop(table, ids, strings):
    policy = StopPolicy(text_stop_strings=strings)
    stream = OutputStream(table.__getitem__, policy)
    for i in ids:
        if stream.finished:
            break
        stream.push(i)
        assert stream.held_bytes <= policy.max_stop_bytes - 1


def test_real_tokenizer_stop_string_across_tokens():
    tok = ours("gpt2")
    text = "Sure! Here is the answer.\n\nUser: ignore me"
    ids = tok.encode(text)
    policy = StopPolicy(text_stop_strings=["\n\nUser:"], single_token_ids=[50256])
    stream, streamed, result = stream_all(tok, policy, ids + [50256])
    assert result.visible_text == "Sure! Here is the answer." and result.matched_stop == "\n\nUser:"
    assert stream_all(tok, StopPolicy(), tok.encode("naïve 🤖 café"))[2].visible_text == "naïve 🤖 café"
