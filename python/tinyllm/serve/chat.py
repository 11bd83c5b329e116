"""`POST /v1/chat/compile` and `POST /v1/cache/blocks`: the runtime identity over HTTP.

The service is its own checkpoint: a request is compiled with a served tokenizer and the chat
template found beside it (its model directory, or its preset's), and bound to exactly that pair
(`Checkpoint(tokenizer hash, template hash, vocabulary size)`), so a client can send the
compiled request on and any model checkpoint can check the two hashes it carries. The block keys
are `tinyllm.runtime.cache_blocks` of such a request under a model revision and key mode.

>>> from fastapi.testclient import TestClient
>>> from tinyllm.serve.app import create_app
>>> client = TestClient(create_app(["smollm2"]))
>>> compiled = client.post("/v1/chat/compile", json={"messages": [{"role": "user", "content": "Hi"}]}).json()
>>> compiled["prompt_boundary"] == len(compiled["input_ids"])
True
>>> r = client.post("/v1/cache/blocks", json={"request": compiled, "block_size": 8, "model_revision": "r1"}).json()
>>> len(r["blocks"]) * 8 + len(r["tail"]) == len(compiled["input_ids"])
True
"""

from __future__ import annotations

import re

from tinyllm.serve.errors import RequestError
from tinyllm.serve.models import CacheBlocksRequest, ChatCompileRequest

#: "messages[1].role: ..." - the field a runtime error message starts with.
_FIELD = re.compile(r"^(?:CompiledRequest\.|ModelState\.)?([A-Za-z_]\w*(?:\[\d+\]|\.[A-Za-z_]\w*)*)\s*[:=]")


def field_of(error: ValueError, default: str, prefix: str = "") -> str:
    """The field a runtime ValueError names at its start ("messages[1].role: expected ..."), else
    `default`."""
    found = _FIELD.match(str(error))
    return prefix + found.group(1) if found else default


def register(app, reg) -> None:
    """Add the two endpoints to `app`, serving the tokenizers of `reg`."""

    @app.post("/v1/chat/compile")
    def chat_compile(req: ChatCompileRequest) -> dict:
        from tinyllm.runtime import Checkpoint, compile_request

        name, tok = reg.resolve(req.tokenizer)
        template = reg.template(name)
        checkpoint = Checkpoint(tok.semantic_hash, template.hash, tok.vocab_size)
        for k, message in enumerate(req.messages):
            for key in ("role", "content"):
                if isinstance(message, dict) and key not in message:
                    raise RequestError(f"messages[{k}].{key}", f"messages[{k}].{key}: missing; expected a message "
                                                               '{"role": ..., "content": ...}')
        try:
            compiled = compile_request(req.messages, req.mode, tok, template, checkpoint)
        except ValueError as e:
            param = field_of(e, "messages")
            raise RequestError(param if param == "mode" or param.startswith("messages") else "messages",
                               str(e)) from None
        return {"tokenizer": name, **_request_json(compiled)}

    @app.post("/v1/cache/blocks")
    def cache_blocks_endpoint(req: CacheBlocksRequest) -> dict:
        from tinyllm.runtime import KEY_MODES, CompiledRequest, ModelState, cache_blocks

        fields = ("input_ids", "prompt_boundary", "special_tokens_mask", "sequence_ownership",
                  "tokenizer_semantic_hash", "template_hash")
        missing = [f for f in fields if f not in req.request]
        if missing:
            raise RequestError(f"request.{missing[0]}", f"request.{missing[0]}: missing; a compiled request has "
                                                        f"{', '.join(fields)}")
        extra = sorted(set(req.request) - set(fields) - {"tokenizer"})
        if extra:
            raise RequestError(f"request.{extra[0]}", f"request.{extra[0]}: not a field of a compiled request")
        if req.block_size < 1:
            raise RequestError("block_size", f"block_size: found {req.block_size}; expected an integer >= 1")
        if req.key_mode not in KEY_MODES:
            raise RequestError("key_mode", f"key_mode: found {req.key_mode!r}; expected one of {', '.join(KEY_MODES)}")
        try:
            compiled = CompiledRequest(**{f: req.request[f] for f in fields})
        except (ValueError, TypeError) as e:
            raise RequestError(field_of(e, "request", "request.") if isinstance(e, ValueError) else "request",
                               str(e)) from None
        try:
            state = ModelState(req.model_revision, req.adapter, req.position_policy)
        except ValueError as e:
            raise RequestError(field_of(e, "model_revision"), str(e)) from None
        blocks, tail = cache_blocks(compiled, req.block_size, req.key_mode, state)
        return {"blocks": [{"index": k, "ids": list(ids), "key": key} for k, ids, key in blocks],
                "tail": list(tail), "key_mode": req.key_mode, "block_size": req.block_size}


def _request_json(compiled) -> dict:
    return {"input_ids": list(compiled.input_ids), "prompt_boundary": compiled.prompt_boundary,
            "special_tokens_mask": list(compiled.special_tokens_mask),
            "sequence_ownership": list(compiled.sequence_ownership),
            "tokenizer_semantic_hash": compiled.tokenizer_semantic_hash, "template_hash": compiled.template_hash}
