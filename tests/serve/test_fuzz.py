"""The token service under generated requests: schemathesis over every operation of its own OpenAPI
schema (never a 5xx), random JSON bodies with the real field names (a 200, or a 400/413 whose
body names a field), and the SSE stream over HTTP equal to one-shot decode for any gpt2 ids,
characters split across ids included."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")
from fastapi.testclient import TestClient  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from tests.support.sse import events  # noqa: E402
from tinyllm.serve import create_app  # noqa: E402
from tinyllm.tok import load  # noqa: E402

NAMES = ["gpt2", "o200k"]
GPT2 = load("gpt2")
O200K = load("o200k")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])


def _no_token(tok, i: int) -> bool:
    try:
        tok.token_bytes(i)
    except ValueError:
        return True
    return False


#: o200k ids below its vocabulary size with no token; the stream does not refuse them yet
#: (tests/serve/test_api.py::test_a_stream_of_an_id_without_a_token_is_a_400), so the random bodies
#: leave them out.
HOLES = frozenset(i for i in range(O200K.vocab_size) if _no_token(O200K, i))


def _split(i: int) -> bool:
    try:
        GPT2.token_bytes(i).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


#: gpt2 ids whose bytes are not UTF-8 on their own (a piece of a character).
SPLIT_IDS = [i for i in range(GPT2.vocab_size) if _split(i)]


#: One app for the whole module: schemathesis needs its schema when the tests are collected (its
#: lazy `schemathesis.pytest.from_fixture` sets `request.node._nodeid`, which pytest 9 no longer has).
APP = create_app(NAMES)


@pytest.fixture(scope="module")
def client():
    return TestClient(APP, raise_server_exceptions=False)


# -- schemathesis: every operation, never a 5xx ---------------------------------------------------

schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_a_server_error(case):
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code < 500, response.text


# -- random JSON bodies with the real field names ---------------------------------------------------

FIELDS = {
    "/v1/tokenize": ["tokenizer", "text", "texts", "add_special", "allowed_special", "return_pieces",
                     "return_offsets"],
    "/v1/count": ["tokenizer", "text", "texts", "add_special", "allowed_special"],
    "/v1/detokenize": ["tokenizer", "ids", "skip_special"],
    "/v1/detokenize/stream": ["tokenizer", "ids", "skip_special", "stop", "stop_ids", "max_tokens", "strip_stop"],
}
ALL_FIELDS = sorted({f for names in FIELDS.values() for f in names})

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-2, 60_000)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
           | st.sampled_from(["all", "gpt2", "o200k", "<|endoftext|>", "<|endofprompt|>", "", "héllo 😀"]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
IDS = st.lists(st.integers(0, 50_256) | st.integers(-3, 210_000).filter(lambda i: i not in HOLES)
               | st.sampled_from([0, 50_256, 199_999, 200_018]), max_size=12)
VALUES = {  # values that are often right, so that a body gets past its first field
    "tokenizer": st.sampled_from(NAMES) | JSON,
    "text": st.text(max_size=30) | JSON,
    "texts": st.lists(st.text(max_size=20), max_size=4) | JSON,
    "ids": IDS | JSON,
    "stop_ids": IDS | JSON,
    "stop": st.lists(st.text(max_size=4), max_size=3) | JSON,
    "allowed_special": st.sampled_from(["all", [], ["<|endoftext|>"], ["<|endofprompt|>"]]) | JSON,
    "max_tokens": st.integers(-2, 20) | JSON,
}


@st.composite
def bodies(draw, path):
    names = draw(st.lists(st.sampled_from(FIELDS[path]) | st.sampled_from(ALL_FIELDS) | st.text(max_size=6),
                          max_size=6, unique=True))
    return {name: draw(VALUES.get(name, st.booleans() | JSON)) for name in names}


@pytest.mark.parametrize("path", sorted(FIELDS))
@FUZZ
@given(data=st.data())
def test_random_bodies_are_served_or_refused_naming_a_field(client, path, data):
    body = data.draw(bodies(path) | JSON, label="body")
    if path == "/v1/detokenize/stream" and isinstance(body, dict) and isinstance(body.get("ids"), list):
        assume(body.get("tokenizer") != "o200k" or not HOLES.intersection(i for i in body["ids"] if type(i) is int))
    r = client.post(path, json=body)
    assert r.status_code in (200, 400, 413), (r.status_code, r.text)
    if r.status_code != 200:
        error = r.json()["error"]
        assert set(r.json()) == {"error"} and set(error) == {"param", "message"}
        assert isinstance(error["param"], str) and error["param"]
        assert isinstance(error["message"], str) and error["message"]
        param = error["param"]
        named = (param == "body" or (isinstance(body, dict) and param in body)  # an unknown field, verbatim
                 or any(param == f or param.startswith((f + "[", f + ".")) for f in FIELDS[path]))
        assert named, error
    elif path == "/v1/detokenize/stream":
        evs = events(r)
        assert evs and evs[-1].get("finish_reason") in ("end", "stop", "length"), evs
    else:
        assert r.json()["tokenizer"] in NAMES


# -- the stream over HTTP equals one-shot decode ------------------------------------------------------

GPT2_IDS = st.lists(st.integers(0, GPT2.vocab_size - 1) | st.sampled_from(SPLIT_IDS) | st.just(50_256),
                    max_size=24)


def test_split_ids_and_holes_exist():
    assert len(SPLIT_IDS) > 100 and all(not _split(i) for i in (15496, 995))
    assert 200000 in HOLES and not HOLES & set(O200K.special_ids.values())


@FUZZ
@given(ids=GPT2_IDS, skip_special=st.booleans())
def test_stream_equals_detokenize_equals_decode(client, ids, skip_special):
    body = {"tokenizer": "gpt2", "ids": ids, "skip_special": skip_special}
    r = client.post("/v1/detokenize/stream", json=body)
    assert r.status_code == 200, r.text
    evs = events(r)
    assert evs[-1]["finish_reason"] == "end" and all("finish_reason" not in e for e in evs[:-1])
    joined = "".join(e["text"] for e in evs)
    one_shot = client.post("/v1/detokenize", json=body).json()["text"]
    assert joined == one_shot == GPT2.decode(ids, skip_special)


O200K_IDS = st.lists(st.integers(0, O200K.vocab_size - 1).filter(lambda i: i not in HOLES)
                     | st.sampled_from(sorted(O200K.special_ids.values())), max_size=24)


@FUZZ
@given(ids=O200K_IDS, skip_special=st.booleans())
def test_o200k_stream_equals_detokenize_equals_decode(client, ids, skip_special):
    body = {"tokenizer": "o200k", "ids": ids, "skip_special": skip_special}
    evs = events(client.post("/v1/detokenize/stream", json=body))
    assert evs[-1]["finish_reason"] == "end"
    joined = "".join(e["text"] for e in evs)
    assert joined == client.post("/v1/detokenize", json=body).json()["text"] == O200K.decode(ids, skip_special)


@pytest.mark.parametrize("name", NAMES)
def test_the_seed_example_streams_back_to_its_text(client, name):
    text = "héllo wörld 😀 猫"
    ids = load(name).encode(text)
    evs = events(client.post("/v1/detokenize/stream", json={"tokenizer": name, "ids": ids}))
    assert "".join(e["text"] for e in evs) == text and evs[-1]["finish_reason"] == "end"
    assert all("\ufffd" not in e["text"] for e in evs)  # a split character waits for its rest
    if name == "gpt2":
        assert any(i in SPLIT_IDS for i in ids)


@FUZZ
@given(text=st.text(alphabet="ab !é😀", max_size=24), stop=st.text(alphabet="ab !é😀", min_size=1, max_size=3),
       max_tokens=st.none() | st.integers(1, 12), strip_stop=st.booleans())
def test_stream_stops_where_the_stop_string_first_completes(client, text, stop, max_tokens, strip_stop):
    """The reference, from decode alone: the first prefix of the ids (within the budget) whose text
    holds the stop ends the stream there, the stop cut off (or kept, up to its end); without one,
    the text of the budgeted ids, "length" when the budget was spent, else "end"."""
    ids = GPT2.encode(text)
    r = client.post("/v1/detokenize/stream", json={"ids": ids, "stop": [stop], "max_tokens": max_tokens,
                                                   "strip_stop": strip_stop})
    evs = events(r)
    joined, reason = "".join(e["text"] for e in evs), evs[-1]["finish_reason"]
    n = len(ids) if max_tokens is None else min(len(ids), max_tokens)
    for k in range(1, n + 1):
        prefix = GPT2.decode(ids[:k])
        if stop in prefix:
            at = prefix.index(stop)
            assert (joined, reason) == (prefix[:at] if strip_stop else prefix[:at + len(stop)], "stop")
            return
    spent = max_tokens is not None and len(ids) >= max_tokens
    assert (joined, reason) == (GPT2.decode(ids[:n]), "length" if spent else "end")
