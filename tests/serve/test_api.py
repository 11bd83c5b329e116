"""The token service's contract, endpoint by endpoint and field by field: every answer equals what
the library itself says (`tinyllm.tok.load(name)`), every refused request is a 400 (401 without
the API key, 413 past a size limit, 404/405 for a path or method) whose body names the field,
and the limits hold exactly at their bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from tests.support.rust import needs_rust  # noqa: E402
from tests.support.sse import events  # noqa: E402
from tinyllm.serve import Limits, create_app  # noqa: E402
from tinyllm.tok import load  # noqa: E402

NAMES = ["gpt2", "o200k"]
EOT = "<|endoftext|>"
CONTROL = "a<|endoftext|>b"
FEW = settings(max_examples=40, deadline=None)


@pytest.fixture(scope="module")
def client():
    # A 500 is an answer to assert on, not an exception out of the test client.
    return TestClient(create_app(NAMES), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def toks():
    return {name: load(name) for name in NAMES}


@pytest.fixture(scope="module")
def small():
    limits = Limits(max_texts=2, max_text_chars=10, max_ids=3, max_body_bytes=1000)
    return TestClient(create_app(["gpt2"], limits=limits), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def keyed():
    return TestClient(create_app(["gpt2"], api_key="k"), raise_server_exceptions=False)


def post(client, path, body):
    """POST `body`: a str is sent as it is (JSON that `json=` could not make), anything else as JSON."""
    if isinstance(body, str):
        return client.post(path, content=body.encode("utf-8", "surrogatepass"),
                           headers={"content-type": "application/json"})
    return client.post(path, json=body)


def streamed(client, body) -> tuple[str, str]:
    """(the joined text, the finish reason) of one stream request; only the last event finishes."""
    r = client.post("/v1/detokenize/stream", json=body)
    assert r.status_code == 200, r.text
    evs = events(r)
    assert evs and "finish_reason" in evs[-1], evs
    assert all("finish_reason" not in e for e in evs[:-1]), evs
    return "".join(e["text"] for e in evs), evs[-1]["finish_reason"]


def assert_error(r, status: int, param: str) -> None:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["param"] == param, error
    assert isinstance(error["message"], str) and error["message"]


# -- happy paths ----------------------------------------------------------------------------------

def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok", "tokenizers": 2}


@needs_rust
def test_the_service_seeds_its_bpe_word_caches_at_start_up(client):
    # Without warm_up the seeds come only after 4,096 merged pieces, inside some request.
    for tok in client.app.state.registry.tokenizers.values():
        assert tok.fast_engine()[0].seed_count() > 40_000


def test_tokenizers_lists_each_served_tokenizer_as_the_library_sees_it(client, toks):
    body = client.get("/v1/tokenizers").json()
    assert body["default"] == "gpt2"
    assert [t["name"] for t in body["tokenizers"]] == NAMES
    for info in body["tokenizers"]:
        tok = toks[info["name"]]
        assert info["vocab_size"] == tok.vocab_size
        assert info["semantic_hash"] == load(info["name"]).semantic_hash
        assert info["special_ids"] == dict(tok.special_ids)
        assert (info["bos_id"], info["eos_id"]) == (tok.bos_id, tok.eos_id)
    assert body["tokenizers"][0]["special_ids"] == {EOT: 50256}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("add_special", [False, True])
@pytest.mark.parametrize("text", ["Hello world", "", "héllo wörld 😀 猫", "  spaces\n\ttabs  ", CONTROL])
def test_tokenize_one_text_equals_encode(client, toks, name, add_special, text):
    r = client.post("/v1/tokenize", json={"tokenizer": name, "text": text, "add_special": add_special})
    assert r.status_code == 200, r.text
    body = r.json()
    ids = toks[name].encode(text, add_special)
    assert body == {"tokenizer": name, "semantic_hash": toks[name].semantic_hash, "ids": ids, "count": len(ids)}


def test_the_first_tokenizer_is_the_default(client, toks):
    body = client.post("/v1/tokenize", json={"text": "Hello world"}).json()
    assert body["tokenizer"] == "gpt2" and body["ids"] == toks["gpt2"].encode("Hello world") == [15496, 995]


@FEW
@given(texts=st.lists(st.text(max_size=40), max_size=5), name=st.sampled_from(NAMES))
def test_tokenize_many_texts_equals_encode_of_each(client, toks, texts, name):
    body = client.post("/v1/tokenize", json={"tokenizer": name, "texts": texts}).json()
    assert "ids" not in body
    assert body["results"] == [{"ids": toks[name].encode(t), "count": len(toks[name].encode(t))} for t in texts]


@pytest.mark.parametrize("pieces", [False, True])
@pytest.mark.parametrize("offsets", [False, True])
@pytest.mark.parametrize("text", ["Hello world", "héllo 😀", CONTROL])
def test_tokenize_pieces_and_offsets_only_when_asked(client, toks, pieces, offsets, text):
    r = client.post("/v1/tokenize", json={"texts": [text, "x"], "return_pieces": pieces, "return_offsets": offsets})
    row = r.json()["results"][0]
    enc = toks["gpt2"].encode_structured(text, False, allowed_special=())
    assert row["ids"] == list(enc.ids) == toks["gpt2"].encode(text) and row["count"] == len(enc.ids)
    assert ("pieces" in row) == pieces and ("offsets" in row) == offsets
    if pieces:
        assert row["pieces"] == list(enc.pieces)
    if offsets:
        assert row["offsets"] == [list(o) if o is not None else None for o in enc.offsets]


def test_offsets_are_code_points_of_the_text(client):
    body = client.post("/v1/tokenize", json={"text": "héllo wörld", "return_offsets": True}).json()
    assert body["offsets"][0] == [0, 1] and body["offsets"][-1][1] == len("héllo wörld")


def test_typed_control_text_stays_text_by_default(client, toks):
    default = client.post("/v1/tokenize", json={"text": CONTROL}).json()["ids"]
    empty = client.post("/v1/tokenize", json={"text": CONTROL, "allowed_special": []}).json()["ids"]
    assert default == empty == toks["gpt2"].encode(CONTROL)
    assert 50256 not in default and toks["gpt2"].decode(default) == CONTROL


@pytest.mark.parametrize("allowed", ["all", [EOT]])
def test_allowed_special_lets_the_control_text_match(client, toks, allowed):
    body = client.post("/v1/tokenize", json={"text": CONTROL, "allowed_special": allowed}).json()
    assert body["ids"] == toks["gpt2"].encode(CONTROL, allowed_special="all") == [64, 50256, 65]
    counted = client.post("/v1/count", json={"text": CONTROL, "allowed_special": allowed}).json()
    assert counted["count"] == 3


def test_allowed_special_list_matches_only_the_listed_tokens(client, toks):
    text = "<|endoftext|><|endofprompt|>"
    ids = client.post("/v1/tokenize", json={"tokenizer": "o200k", "text": text,
                                            "allowed_special": [EOT]}).json()["ids"]
    assert ids == toks["o200k"].encode(text, allowed_special=(EOT,))
    assert ids[0] == 199999 and 200018 not in ids


@FEW
@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=5), name=st.sampled_from(NAMES),
       add_special=st.booleans())
def test_count_equals_len_of_encode(client, toks, texts, name, add_special):
    lens = [len(toks[name].encode(t, add_special)) for t in texts]
    one = client.post("/v1/count", json={"tokenizer": name, "text": texts[0], "add_special": add_special}).json()
    assert one == {"tokenizer": name, "semantic_hash": toks[name].semantic_hash, "count": lens[0]}
    many = client.post("/v1/count", json={"tokenizer": name, "texts": texts, "add_special": add_special}).json()
    assert many["counts"] == lens and many["total"] == sum(lens) and "count" not in many


def test_empty_batches_are_empty_answers(client):
    assert client.post("/v1/tokenize", json={"texts": []}).json()["results"] == []
    body = client.post("/v1/count", json={"texts": []}).json()
    assert body["counts"] == [] and body["total"] == 0


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("skip_special", [False, True])
def test_detokenize_equals_decode(client, toks, name, skip_special):
    tok = toks[name]
    ids = tok.encode("Hello <|endoftext|> héllo 😀 猫", allowed_special="all")
    assert tok.eos_id in ids
    r = client.post("/v1/detokenize", json={"tokenizer": name, "ids": ids, "skip_special": skip_special})
    assert r.status_code == 200, r.text
    assert r.json() == {"tokenizer": name, "semantic_hash": tok.semantic_hash, "text": tok.decode(ids, skip_special)}
    assert (EOT in r.json()["text"]) != skip_special


def test_detokenize_of_no_ids_is_empty(client):
    assert client.post("/v1/detokenize", json={"ids": []}).json()["text"] == ""


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("skip_special", [False, True])
def test_stream_joins_to_decode_and_ends(client, toks, name, skip_special):
    tok = toks[name]
    ids = tok.encode("Hello <|endoftext|> héllo wörld 😀 猫", allowed_special="all")
    r = client.post("/v1/detokenize/stream", json={"tokenizer": name, "ids": ids, "skip_special": skip_special})
    assert r.headers["x-tokenizer"] == name and r.headers["cache-control"] == "no-store"
    text, reason = streamed(client, {"tokenizer": name, "ids": ids, "skip_special": skip_special})
    assert text == tok.decode(ids, skip_special) and reason == "end"


def test_stream_of_no_ids_is_one_final_event(client):
    assert events(client.post("/v1/detokenize/stream", json={"ids": []})) == [{"text": "", "finish_reason": "end"}]


def test_stream_sends_text_as_it_comes(client):
    texts = [e["text"] for e in events(client.post("/v1/detokenize/stream", json={"ids": [15496, 995, 0]}))]
    assert texts[:2] == ["Hello", " world"] and "".join(texts) == "Hello world!"


@pytest.mark.parametrize("policy, text, reason", [
    ({"stop": ["wor"]}, "Hello ", "stop"),
    ({"stop": ["wor"], "strip_stop": False}, "Hello wor", "stop"),
    ({"stop": ["lo w"]}, "Hel", "stop"),  # across a token boundary
    ({"stop": ["xyz", "!"]}, "Hello world", "stop"),
    ({"stop": ["nowhere"]}, "Hello world!", "end"),
    ({"stop_ids": [995]}, "Hello", "stop"),
    ({"stop_ids": [995], "strip_stop": False}, "Hello world", "stop"),
    ({"stop_ids": [15496]}, "", "stop"),
    ({"max_tokens": 2}, "Hello world", "length"),
    ({"max_tokens": 1}, "Hello", "length"),
    ({"max_tokens": 3}, "Hello world!", "length"),  # the budget is spent on the last id
    ({"max_tokens": 50}, "Hello world!", "end"),
])
def test_stream_stops(client, policy, text, reason):
    assert streamed(client, {"ids": [15496, 995, 0], **policy}) == (text, reason)


# -- every 400 names its field --------------------------------------------------------------------

TEXT_ERRORS = [  # for /v1/tokenize and /v1/count alike
    ({"tokenizer": "nope", "text": "x"}, "tokenizer"),
    ({"tokenizer": 5, "text": "x"}, "tokenizer"),
    ({"tokenizer": ["gpt2"], "text": "x"}, "tokenizer"),
    ({"text": 5}, "text"),
    ({"text": ["x"]}, "text"),
    ({"text": True}, "text"),
    ({"texts": ["a", "b", 3]}, "texts[2]"),
    ({"texts": ["a", None]}, "texts[1]"),
    ({"texts": "abc"}, "texts"),
    ({"texts": {"a": "b"}}, "texts"),
    ({"text": "a", "texts": ["b"]}, "text"),
    ({}, "text"),
    ({"text": None, "texts": None}, "text"),
    ({"text": "a", "add_special": "yes"}, "add_special"),
    ({"text": "a", "add_special": 1}, "add_special"),
    ({"text": "a", "add_special": None}, "add_special"),
    ({"text": "a", "allowed_special": 5}, "allowed_special"),
    ({"text": "a", "allowed_special": None}, "allowed_special"),
    ({"text": "a", "allowed_special": "none"}, "allowed_special"),
    ({"text": "a", "allowed_special": {"all": True}}, "allowed_special"),
    ({"text": "a", "allowed_special": [1]}, "allowed_special[0]"),
    ({"text": "a", "allowed_special": [EOT, None]}, "allowed_special[1]"),
    ({"text": "a", "allowed_special": ["<|nope|>"]}, "allowed_special"),
    ({"text": "a", "allowed_special": [EOT, "<|endofprompt|>"]}, "allowed_special"),  # o200k's, not gpt2's
    ({"text": "a", "add_specials": True}, "add_specials"),
    ({"text": "a", "ids": [1]}, "ids"),
]
TOKENIZE_ONLY_ERRORS = [
    ({"text": "a", "return_pieces": "yes"}, "return_pieces"),
    ({"text": "a", "return_offsets": 1}, "return_offsets"),
]
COUNT_ONLY_ERRORS = [
    ({"text": "a", "return_pieces": True}, "return_pieces"),  # count declares no such field
    ({"text": "a", "return_offsets": False}, "return_offsets"),
]
IDS_ERRORS = [  # for /v1/detokenize and /v1/detokenize/stream alike
    ({}, "ids"),
    ({"ids": None}, "ids"),
    ({"ids": "1 2"}, "ids"),
    ({"ids": {"0": 1}}, "ids"),
    ({"ids": [1, 2, 3, 99999999]}, "ids[3]"),
    ({"ids": [50257]}, "ids[0]"),
    ({"ids": [2 ** 70]}, "ids[0]"),
    ({"ids": [-1]}, "ids[0]"),
    ({"ids": [1.5]}, "ids[0]"),
    ({"ids": [1.0]}, "ids[0]"),
    ({"ids": [True]}, "ids[0]"),
    ({"ids": ["7"]}, "ids[0]"),
    ({"ids": [None]}, "ids[0]"),
    ({"ids": [[1]]}, "ids[0]"),
    ({"ids": [1, 2, "x"]}, "ids[2]"),
    ('{"ids": [NaN]}', "ids[0]"),
    ({"ids": [1], "skip_special": "no"}, "skip_special"),
    ({"ids": [1], "skip_special": 0}, "skip_special"),
    ({"ids": [1], "tokenizer": "nope"}, "tokenizer"),
    ({"ids": [1], "tokenizer": 2}, "tokenizer"),
    ({"ids": [1], "text": "a"}, "text"),
    # the stream's answer to this one is test_a_stream_of_an_id_without_a_token_is_a_400 (a bug)
]
STREAM_ONLY_ERRORS = [
    ({"ids": [1], "stop_ids": [99999999]}, "stop_ids[0]"),
    ({"ids": [1], "stop_ids": [1, -1]}, "stop_ids[1]"),
    ({"ids": [1], "stop_ids": ["a"]}, "stop_ids[0]"),
    ({"ids": [1], "stop_ids": 5}, "stop_ids"),
    ({"ids": [1], "max_tokens": 0}, "max_tokens"),
    ({"ids": [1], "max_tokens": -3}, "max_tokens"),
    ({"ids": [1], "max_tokens": "3"}, "max_tokens"),
    ({"ids": [1], "max_tokens": 1.5}, "max_tokens"),
    ({"ids": [1], "max_tokens": True}, "max_tokens"),
    ('{"ids": [1], "max_tokens": Infinity}', "max_tokens"),
    ({"ids": [1], "stop": [""]}, "stop[0]"),
    ({"ids": [1], "stop": ["a", ""]}, "stop[1]"),
    ({"ids": [1], "stop": "a"}, "stop"),
    ({"ids": [1], "stop": [1]}, "stop[0]"),
    ({"ids": [1], "strip_stop": "yes"}, "strip_stop"),
    ({"ids": [1], "stops": ["a"]}, "stops"),
]
DETOKENIZE_ONLY_ERRORS = [
    ({"ids": [1], "stop": ["a"]}, "stop"),  # only the stream declares it
    ({"ids": [1], "max_tokens": 3}, "max_tokens"),
    ({"ids": [5, 199999, 200000], "tokenizer": "o200k"}, "ids[2]"),  # a hole in o200k's vocabulary
]


def _cases(paths, table):
    return [pytest.param(path, body, param, id=f"{path}-{param}-{k}") for path in paths
            for k, (body, param) in enumerate(table)]


@pytest.mark.parametrize("path, body, param", [
    *_cases(["/v1/tokenize", "/v1/count"], TEXT_ERRORS),
    *_cases(["/v1/tokenize"], TOKENIZE_ONLY_ERRORS),
    *_cases(["/v1/count"], COUNT_ONLY_ERRORS),
    *_cases(["/v1/detokenize", "/v1/detokenize/stream"], IDS_ERRORS),
    *_cases(["/v1/detokenize/stream"], STREAM_ONLY_ERRORS),
    *_cases(["/v1/detokenize"], DETOKENIZE_ONLY_ERRORS),
])
def test_a_bad_field_is_a_400_naming_it(client, path, body, param):
    assert_error(post(client, path, body), 400, param)


POSTS = ["/v1/tokenize", "/v1/count", "/v1/detokenize", "/v1/detokenize/stream"]


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("raw", ['{"text": ', "{'text': 'a'}", "nope", '{"text": "a"}}', "[1, 2]", '"text"',
                                 "null", "1"])
def test_a_body_that_is_not_a_json_object_is_a_400_naming_the_body(client, path, raw):
    assert_error(post(client, path, raw), 400, "body")


@pytest.mark.parametrize("path", POSTS)
def test_an_empty_body_is_a_400_naming_the_body(client, path):
    assert_error(client.post(path), 400, "body")


@pytest.mark.parametrize("path", ["/v1/tokenize", "/v1/detokenize"])
def test_a_too_deeply_nested_body_is_a_400_naming_the_body(client, path):
    assert_error(post(client, path, '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"), 400, "body")


def test_a_stop_string_that_is_not_unicode_text_is_a_400(client):
    assert_error(post(client, "/v1/detokenize/stream", '{"ids": [1], "stop": ["ok", "\\ud800"]}'), 400, "stop[1]")


def test_a_stream_of_an_id_without_a_token_is_a_400(client):
    r = client.post("/v1/detokenize/stream", json={"tokenizer": "o200k", "ids": [5, 199999, 200000]})
    assert_error(r, 400, "ids[2]")


def test_a_chunked_body_within_the_limit_is_served(small):
    def chunks():
        yield b'{"text": '
        yield b'"Hello"' + b" " * 900 + b"}"
    r = small.post("/v1/tokenize", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["ids"] == [15496]


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain", None])
def test_a_post_body_is_json_whatever_its_declared_type(client, content_type):
    headers = {"content-type": content_type} if content_type else {}
    r = client.post("/v1/tokenize", content=b'{"text": "Hello world"}', headers=headers)
    assert r.status_code == 200 and r.json()["ids"] == [15496, 995]


def test_lone_surrogates_in_text_are_encoded_as_the_library_does(client, toks):
    r = post(client, "/v1/tokenize", '{"text": "a\\ud800b"}')
    assert r.status_code == 200 and r.json()["ids"] == toks["gpt2"].encode("a\ud800b")


def test_an_unknown_path_is_a_404_naming_the_path(client):
    assert_error(client.get("/v1/nope"), 404, "path")
    assert_error(client.post("/v1/tokenise", json={"text": "a"}), 404, "path")


@pytest.mark.parametrize("method, path", [("GET", "/v1/tokenize"), ("GET", "/v1/detokenize/stream"),
                                          ("DELETE", "/healthz"), ("PUT", "/v1/count"), ("POST", "/v1/tokenizers")])
def test_a_wrong_method_is_a_405_naming_the_method(client, method, path):
    assert_error(client.request(method, path), 405, "method")


def test_the_first_bad_field_is_the_one_named(client):
    assert_error(client.post("/v1/tokenize", json={"text": 5, "add_special": "yes"}), 400, "text")


# -- size limits ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, body, param", [
    ("/v1/tokenize", {"texts": ["a", "b", "c"]}, "texts"),
    ("/v1/count", {"texts": ["a", "b", "c"]}, "texts"),
    ("/v1/tokenize", {"text": "a" * 11}, "text"),
    ("/v1/count", {"text": "é" * 11}, "text"),
    ("/v1/tokenize", {"texts": ["a", "a" * 11]}, "texts[1]"),
    ("/v1/count", {"texts": ["a" * 11]}, "texts[0]"),
    ("/v1/detokenize", {"ids": [1, 2, 3, 4]}, "ids"),
    ("/v1/detokenize/stream", {"ids": [1, 2, 3, 4]}, "ids"),
    ("/v1/tokenize", {"text": "a", "pad": "x" * 1000}, "body"),
    ("/v1/detokenize", {"ids": [1] + [0] * 600}, "body"),
])
def test_past_a_limit_is_a_413_naming_the_field(small, path, body, param):
    assert_error(small.post(path, json=body), 413, param)


@pytest.mark.parametrize("path, body", [
    ("/v1/tokenize", {"texts": ["a" * 10, "😀" * 10]}),
    ("/v1/count", {"texts": ["a", "b"]}),
    ("/v1/tokenize", {"text": "a" * 10}),
    ("/v1/detokenize", {"ids": [1, 2, 3]}),
    ("/v1/detokenize/stream", {"ids": [1, 2, 3]}),
    ("/v1/tokenize", {"text": "a", "allowed_special": [EOT] * 40}),  # 700 bytes: under the body limit
])
def test_at_a_limit_is_still_served(small, path, body):
    assert small.post(path, json=body).status_code == 200


def test_a_chunked_body_past_the_limit_is_a_413(small):
    def chunks():
        yield b'{"text": "a"'
        yield b" " * 2000
        yield b"}"
    r = small.post("/v1/tokenize", content=chunks(), headers={"content-type": "application/json"})
    assert_error(r, 413, "body")


# -- the API key ------------------------------------------------------------------------------------

def test_healthz_needs_no_key(keyed):
    assert keyed.get("/healthz").status_code == 200


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"},
                                     {"Authorization": "k"}, {"Authorization": "Basic k"}, {"X-API-Key": ""},
                                     {"Authorization": "Bearer "}, {"X-API-Key": "kk"}])
def test_without_the_key_is_a_401_naming_authorization(keyed, headers):
    r = keyed.post("/v1/tokenize", json={"text": "a"}, headers=headers)
    assert_error(r, 401, "authorization")
    assert r.headers["www-authenticate"] == "Bearer"
    assert_error(keyed.get("/v1/tokenizers", headers=headers), 401, "authorization")
    assert_error(keyed.post("/v1/detokenize/stream", json={"ids": [1]}, headers=headers), 401, "authorization")


@pytest.mark.parametrize("headers", [{"Authorization": "Bearer k"}, {"Authorization": "bearer k"},
                                     {"X-API-Key": "k"}])
def test_with_the_key_is_served(keyed, headers):
    r = keyed.post("/v1/tokenize", json={"text": "Hello world"}, headers=headers)
    assert r.status_code == 200 and r.json()["ids"] == [15496, 995]
    assert keyed.get("/v1/tokenizers", headers=headers).status_code == 200


def test_the_key_is_checked_before_the_body(keyed):
    assert_error(post(keyed, "/v1/tokenize", "not json"), 401, "authorization")
    assert_error(keyed.get("/v1/nope"), 401, "authorization")


def test_only_the_page_takes_the_key_as_a_query(keyed):
    assert keyed.get("/", params={"key": "k"}).status_code == 200
    assert_error(keyed.get("/", params={"key": "x"}), 401, "authorization")
    assert_error(keyed.post("/v1/tokenize", params={"key": "k"}, json={"text": "a"}), 401, "authorization")
