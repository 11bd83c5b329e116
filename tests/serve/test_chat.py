"""`/v1/chat/compile` and `/v1/cache/blocks`: the same compiled request and keys as the runtime
gives in Python, and a 400 naming the field for each bad one."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from tinyllm.runtime import Checkpoint, ModelState, cache_blocks, compile_request  # noqa: E402
from tinyllm.seq.chat import ChatTemplate  # noqa: E402
from tinyllm.serve import create_app  # noqa: E402
from tinyllm.tok import load  # noqa: E402
from tinyllm.tok.load import PRESET_DIR  # noqa: E402

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "héllo <|im_end|>"}]


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(["smollm2", "gpt2"]), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def compiled(client):
    return client.post("/v1/chat/compile", json={"messages": MESSAGES}).json()


def _python_request(mode: str):
    tok = load("smollm2")
    template = ChatTemplate.from_dir(f"{PRESET_DIR}/smollm2")
    return compile_request(MESSAGES, mode, tok, template, Checkpoint(tok.semantic_hash, template.hash, tok.vocab_size))


@pytest.mark.parametrize("mode", ["training", "generation", "prefill"])
def test_compile_equals_the_runtime(client, mode):
    body = client.post("/v1/chat/compile", json={"messages": MESSAGES, "mode": mode}).json()
    expected = _python_request(mode)
    assert body["input_ids"] == list(expected.input_ids)
    assert body["prompt_boundary"] == expected.prompt_boundary
    assert body["special_tokens_mask"] == list(expected.special_tokens_mask)
    assert body["sequence_ownership"] == list(expected.sequence_ownership)
    assert (body["tokenizer_semantic_hash"], body["template_hash"]) == (expected.tokenizer_semantic_hash,
                                                                        expected.template_hash)


def test_typed_control_text_in_a_message_stays_text(compiled):
    im_end = load("smollm2").special_ids["<|im_end|>"]
    user_text = [i for i, owner in zip(compiled["input_ids"], compiled["sequence_ownership"]) if owner != "template"]
    assert im_end not in user_text


@pytest.mark.parametrize("key_mode", ["minimal", "conservative"])
def test_blocks_equal_the_runtime(client, compiled, key_mode):
    body = client.post("/v1/cache/blocks", json={"request": compiled, "block_size": 4, "key_mode": key_mode,
                                                 "model_revision": "r1", "adapter": "a"}).json()
    blocks, tail = cache_blocks(_python_request("generation"), 4, key_mode, ModelState("r1", "a"))
    assert [(b["index"], tuple(b["ids"]), b["key"]) for b in body["blocks"]] == blocks
    assert body["tail"] == list(tail)


def test_a_changed_id_changes_its_block_key_and_every_later_one(client, compiled):
    def keys(request):
        return [b["key"] for b in client.post("/v1/cache/blocks", json={"request": request, "block_size": 4,
                                                                       "model_revision": "r1"}).json()["blocks"]]
    before = keys(compiled)
    changed = {**compiled, "input_ids": compiled["input_ids"][:5] + [7] + compiled["input_ids"][6:]}
    after = keys(changed)
    assert after[0] == before[0] and all(a != b for a, b in zip(after[1:], before[1:]))


@pytest.mark.parametrize("body, param", [
    ({"messages": [{"role": "user", "content": "a"}, {"role": 5, "content": "b"}]}, "messages[1].role"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"messages": [{"content": "x"}]}, "messages[0].role"),
    ({"messages": "hi"}, "messages"),
    ({}, "messages"),
    ({"messages": MESSAGES, "mode": "gen"}, "mode"),
    ({"messages": MESSAGES, "mode": 1}, "mode"),
    ({"messages": MESSAGES, "tokenizer": "gpt2"}, "tokenizer"),
    ({"messages": MESSAGES, "tokenizer": "nope"}, "tokenizer"),
    ({"messages": MESSAGES, "extra": 1}, "extra"),
])
def test_compile_errors_name_the_field(client, body, param):
    r = client.post("/v1/chat/compile", json=body)
    assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text


@pytest.mark.parametrize("change, param", [
    ({"block_size": 0}, "block_size"),
    ({"block_size": "4"}, "block_size"),
    ({"key_mode": "fast"}, "key_mode"),
    ({"model_revision": ""}, "model_revision"),
    ({"model_revision": None}, "model_revision"),
    ({"adapter": 3}, "adapter"),
    ({"position_policy": ""}, "position_policy"),
    ({"request": "x"}, "request"),
    ({"request": {"input_ids": [1]}}, "request.prompt_boundary"),
    ({"request": "BAD_IDS"}, "request.input_ids[1]"),
    ({"request": "BAD_HASH"}, "request.template_hash"),
    ({"request": "BAD_BOUNDARY"}, "request.prompt_boundary"),
    ({"request": "EXTRA"}, "request.surprise"),
    ({"surprise": 1}, "surprise"),
])
def test_block_errors_name_the_field(client, compiled, change, param):
    named = {"BAD_IDS": {**compiled, "input_ids": [1, -2] + compiled["input_ids"][2:]},
             "BAD_HASH": {**compiled, "template_hash": "zz"},
             "BAD_BOUNDARY": {**compiled, "prompt_boundary": 10**6},
             "EXTRA": {**compiled, "surprise": 1}}
    request = change.get("request", compiled)
    request = named.get(request, request) if isinstance(request, str) else request
    body = {"request": request, "block_size": 4, "model_revision": "r1", **{k: v for k, v in change.items()
                                                                           if k != "request"}}
    r = client.post("/v1/cache/blocks", json=body)
    assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text
