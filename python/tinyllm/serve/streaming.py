"""`POST /v1/detokenize/stream`: ids decoded one at a time as Server-Sent Events.

Each id goes through `tinyllm.seq.stop.OutputStream` (exact token bytes, stop matching, holdback,
incremental UTF-8), and each piece of text it releases is one event, `data: {"text": "..."}`. The
last event also carries `finish_reason` ("end" when the ids ran out, "stop", "length"). Joined,
the events' texts equal `tokenizer.decode(ids, skip_special)` when no stop fires, whatever the ids
(a character split across ids is held until it completes):

>>> from tinyllm.tok import load
>>> from tinyllm.serve.models import StreamRequest
>>> events = list(decode_events(load("gpt2"), StreamRequest(ids=[15496, 995, 0])))
>>> [e.decode().strip() for e in events]
['data: {"text": "Hello"}', 'data: {"text": " world"}', 'data: {"text": "!"}', 'data: {"text": "", "finish_reason": "end"}']
"""

from __future__ import annotations

import json
from typing import Iterator

from tinyllm.serve.errors import RequestError, ids_param


def _check(ids: list[int], vocab_size: int, param: str) -> None:
    for k, i in enumerate(ids):
        if not 0 <= i < vocab_size:
            raise RequestError(f"{param}[{k}]", f"{param}[{k}] = {i} is out of range for a vocabulary of "
                                                f"{vocab_size} ids (0..{vocab_size - 1})")


def decode_events(tok, req) -> Iterator[bytes]:
    """The events of `req` (a `StreamRequest`); every id and the stop policy are checked before
    this returns, so a bad request is a 400 and never a stream cut short."""
    from tinyllm.seq.stop import OutputStream, StopPolicy

    try:  # decode checks every id: its range, and a token behind it (o200k has holes)
        tok.decode(req.ids)
    except ValueError as e:
        raise RequestError(ids_param(e), str(e)) from None
    _check(req.stop_ids, tok.vocab_size, "stop_ids")
    if req.max_tokens is not None and req.max_tokens < 1:
        raise RequestError("max_tokens", f"max_tokens: found {req.max_tokens}; expected an integer >= 1")
    for k, s in enumerate(req.stop):
        if not s:
            raise RequestError(f"stop[{k}]", f"stop[{k}]: found an empty string; expected a non-empty stop string")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise RequestError(f"stop[{k}]", f"stop[{k}]: found a lone surrogate; expected Unicode text") from None
    specials = frozenset(getattr(tok, "special_ids", {}).values()) if req.skip_special else frozenset()

    def token_bytes(i: int) -> bytes:
        return b"" if i in specials else tok.token_bytes(i)

    policy = StopPolicy(single_token_ids=list(req.stop_ids), text_stop_strings=list(req.stop),
                        strip_matched_stop=req.strip_stop, max_new_tokens=req.max_tokens)
    return _events(OutputStream(token_bytes, policy), req.ids)


def _event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode("utf-8")


def _events(stream, ids: list[int]) -> Iterator[bytes]:
    for i in ids:
        if stream.finished:
            break
        text = stream.push(i)
        if text:
            yield _event({"text": text})
    # When a push finished the stream it returned the last text itself; otherwise finish()
    # releases what was held.
    sent_by_push = stream.finished
    result = stream.finish()
    yield _event({"text": "" if sent_by_push else result.final_text, "finish_reason": result.finish_reason})
