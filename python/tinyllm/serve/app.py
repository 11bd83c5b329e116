"""The token service as a FastAPI app: `create_app(["gpt2", ...])`, served by `tinyllm serve`.

    GET  /healthz                  {"status": "ok"} (never behind the API key)
    GET  /v1/tokenizers            name, kind, vocabulary size, semantic hash, special ids of each
    POST /v1/tokenize              ids (pieces, offsets on request) of `text` or of each of `texts`
    POST /v1/count                 token counts, without the ids
    POST /v1/detokenize            text of `ids` (every id checked)
    POST /v1/detokenize/stream     the same text as Server-Sent Events, one id at a time, through
                                   the stop policy (`tinyllm.seq.stop.OutputStream`)
    POST /v1/chat/compile          messages -> a compiled request (ids, boundary, mask, ownership,
                                   hashes) with the tokenizer's chat template (`tinyllm.serve.chat`)
    POST /v1/cache/blocks          a compiled request -> prefix-cache block keys and the tail
    GET  /                         the playground page
    GET  /openapi.json, /docs      the schema, and its page

A bad request is a 400 (401 without the API key, 413 past a size limit) whose body names the
field: `{"error": {"param": "ids[3]", "message": "..."}}`; the service never answers 500 for
anything a client sends (`tinyllm.serve.errors`). Encoding is linear in the text, and texts,
batches, id lists and bodies have limits (`Limits`), so no request runs unbounded.

>>> from fastapi.testclient import TestClient
>>> client = TestClient(create_app(["gpt2"]))
>>> client.post("/v1/tokenize", json={"text": "Hello world"}).json()["ids"]
[15496, 995]
>>> r = client.post("/v1/detokenize", json={"ids": [15496, 99999999]})
>>> r.status_code, r.json()["error"]["param"]
(400, 'ids[1]')
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from importlib import resources
from typing import Iterable, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from tinyllm.serve.errors import RequestError, ids_param, param_of
from tinyllm.serve.models import CountRequest, DetokenizeRequest, StreamRequest, TokenizeRequest
from tinyllm.serve.registry import Registry

#: What `tinyllm serve` serves without `-t`: the built-in presets.
DEFAULT_TOKENIZERS = ("gpt2", "cl100k", "o200k", "smollm2")


@dataclass(frozen=True)
class Limits:
    """Bounds on one request (a request past one is refused with 413, naming the field)."""

    max_body_bytes: int = 16 << 20
    max_text_chars: int = 4 << 20
    max_texts: int = 4096
    max_ids: int = 1 << 20


def create_app(tokenizers: Iterable = DEFAULT_TOKENIZERS, *, api_key: Optional[str] = None,
               limits: Limits = Limits(), registry: Optional[Registry] = None) -> FastAPI:
    """The service for `tokenizers` (preset names or paths, loaded now, once); with `api_key`,
    every endpoint but /healthz wants it (`Authorization: Bearer KEY` or `X-API-Key: KEY`; the
    page also takes `?key=KEY`)."""
    reg = registry or Registry(tokenizers)
    app = FastAPI(title="tinyllm token service", version=_version(),
                  description="Tokenize, count and decode with tinyllm; errors name the field.")
    app.state.registry = reg
    _install_errors(app)
    app.add_middleware(Guard, api_key=api_key, max_body_bytes=limits.max_body_bytes)
    page = resources.files("tinyllm.serve").joinpath("playground.html").read_text(encoding="utf-8")

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok", "tokenizers": len(reg.tokenizers)}

    @app.get("/v1/tokenizers")
    def list_tokenizers() -> dict:
        return {"default": reg.default, "tokenizers": reg.infos()}

    @app.post("/v1/tokenize")
    async def tokenize(req: TokenizeRequest) -> dict:
        name, tok = reg.resolve(req.tokenizer)
        texts, single = _texts(req, limits)
        allowed = _allowed(req.allowed_special)

        def work() -> list[dict]:
            if req.return_pieces or req.return_offsets:
                return [_structured(tok, t, req.add_special, allowed, req.return_pieces, req.return_offsets)
                        for t in texts]
            batch = _encode(lambda: tok.encode_batch(texts, req.add_special, allowed_special=allowed))
            return [{"ids": ids, "count": len(ids)} for ids in batch]

        rows = await _run(work, sum(map(len, texts)))
        head = reg.identity(name)
        return {**head, **rows[0]} if single else {**head, "results": rows}

    @app.post("/v1/count")
    async def count(req: CountRequest) -> dict:
        name, tok = reg.resolve(req.tokenizer)
        texts, single = _texts(req, limits)
        allowed = _allowed(req.allowed_special)

        def work():
            return _encode(lambda: tok.encode_batch_flat(texts, req.add_special, allowed_special=allowed))[1]

        offsets = await _run(work, sum(map(len, texts)))
        counts = [offsets[k + 1] - offsets[k] for k in range(len(texts))]
        head = reg.identity(name)
        return {**head, "count": counts[0]} if single else {**head, "counts": counts, "total": sum(counts)}

    @app.post("/v1/detokenize")
    async def detokenize(req: DetokenizeRequest) -> dict:
        name, tok = reg.resolve(req.tokenizer)
        _check_length("ids", req.ids, limits.max_ids)

        def work() -> str:
            try:
                return tok.decode(req.ids, req.skip_special)
            except ValueError as e:
                raise RequestError(ids_param(e), str(e)) from None

        text = await _run(work, len(req.ids) * 4)
        return {**reg.identity(name), "text": text}

    @app.post("/v1/detokenize/stream")
    def detokenize_stream(req: StreamRequest) -> StreamingResponse:
        from tinyllm.serve.streaming import decode_events

        name, tok = reg.resolve(req.tokenizer)
        _check_length("ids", req.ids, limits.max_ids)
        events = decode_events(tok, req)  # checks every id before the first event
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Tokenizer": name})

    from tinyllm.serve import chat

    chat.register(app, reg)

    @app.get("/", response_class=HTMLResponse)
    def playground() -> HTMLResponse:
        return HTMLResponse(page)

    return app


#: Requests of up to this many characters (or 4 x ids) are served on the event loop: an 8 KB text
#: encodes in about 0.1 ms, less than the hop to the thread pool costs. Larger ones go to the pool,
#: so one big request (up to `Limits.max_text_chars`) does not stall every other.
INLINE_CHARS = 1 << 16


async def _run(work, size: int):
    """`work()` on the event loop when `size` is small, else on the thread pool."""
    if size <= INLINE_CHARS:
        return work()
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(work)


def _version() -> str:
    from tinyllm import __version__

    return __version__


def _texts(req, limits: Limits) -> tuple[list[str], bool]:
    """(the texts, whether one `text` was given); exactly one of `text` and `texts`."""
    if (req.text is None) == (req.texts is None):
        raise RequestError("text", "found " + ("both text and texts" if req.text is not None else "neither text nor "
                                                "texts") + "; expected exactly one of them")
    texts = [req.text] if req.text is not None else req.texts
    _check_length("texts", texts, limits.max_texts)
    for k, t in enumerate(texts):
        if len(t) > limits.max_text_chars:
            where = "text" if req.text is not None else f"texts[{k}]"
            raise RequestError(where, f"{where}: {len(t):,} characters; expected at most {limits.max_text_chars:,}",
                               413)
    return texts, req.text is not None


def _check_length(param: str, items: list, limit: int) -> None:
    if len(items) > limit:
        raise RequestError(param, f"{param}: {len(items):,} items; expected at most {limit:,}", 413)


def _allowed(value):
    """`allowed_special` as the tokenizers take it: "all", or a tuple of special-token texts."""
    if value == "all":
        return "all"
    if not isinstance(value, list):
        raise RequestError("allowed_special", f"allowed_special: found {json.dumps(value)[:80]}; expected \"all\" or "
                                              "a list of special-token texts")
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise RequestError(f"allowed_special[{k}]", f"allowed_special[{k}]: found {json.dumps(item)[:80]}; "
                                                        "expected a string")
    return tuple(value)


def _encode(run):
    """Run an encode call; a ValueError it raises is about `allowed_special` (a text that is not
    a special token of this tokenizer): encoding never raises on a str."""
    try:
        return run()
    except ValueError as e:
        raise RequestError("allowed_special", str(e)) from None


def _structured(tok, text: str, add_special: bool, allowed, pieces: bool, offsets: bool) -> dict:
    enc = _encode(lambda: tok.encode_structured(text, add_special, allowed_special=allowed))
    row = {"ids": list(enc.ids), "count": len(enc.ids)}
    if pieces:
        row["pieces"] = list(enc.pieces)
    if offsets:
        row["offsets"] = [list(o) if o is not None else None for o in enc.offsets]
    return row


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(RequestError)
    def request_error(request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
        param = "body" if first.get("type") == "json_invalid" else param_of(first.get("loc", ("body",)))
        found = first.get("input")
        message = f"{param}: {first.get('msg', 'invalid')}"
        if first.get("type") not in ("missing", "json_invalid") and found is not None:
            message += f" (found {json.dumps(found, default=repr)[:80]})"
        return JSONResponse(RequestError(param, message).body(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        param = {400: "body", 404: "path", 405: "method"}.get(exc.status_code, "request")
        return JSONResponse(RequestError(param, f"{request.method} {request.url.path}: {exc.detail}").body(),
                            status_code=exc.status_code, headers=getattr(exc, "headers", None))


class Guard:
    """ASGI middleware run before any body is parsed: the API key (every path but /healthz), the
    body-size limit (413, from Content-Length, or counted when the body is chunked), and JSON as
    the body's type whatever the client declared (`curl -d` says form-urlencoded; every POST
    here takes JSON and nothing else)."""

    def __init__(self, app, api_key: Optional[str], max_body_bytes: int) -> None:
        self.app, self.api_key, self.max_body_bytes = app, api_key, max_body_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        if self.api_key is not None and scope["path"] != "/healthz" and not _authorized(scope, headers,
                                                                                      self.api_key):
            error = RequestError("authorization", "a valid API key is required (Authorization: Bearer KEY or "
                                                  "X-API-Key: KEY)", 401)
            await _refuse(error, scope, receive, send, {"WWW-Authenticate": "Bearer"})
            return
        size = headers.get(b"content-length")
        if size is not None and not size.isdigit():
            await _refuse(RequestError("content-length", f"content-length: found {size.decode('latin-1')[:40]!r}; "
                                                         "expected a number of bytes"), scope, receive, send)
            return
        if size is not None and int(size) > self.max_body_bytes:
            await _refuse(self._too_big(size.decode("latin-1")), scope, receive, send)
            return
        if scope["method"] == "POST":
            scope = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k.lower() != b"content-type"]
                         + [(b"content-type", b"application/json")])
            if size is None:  # chunked: read it here, within the limit, and hand it on whole
                body = await _read_body(receive, self.max_body_bytes)
                if body is None:
                    await _refuse(self._too_big(f"more than {self.max_body_bytes:,}"), scope, receive, send)
                    return
                receive = _replay(body)
        await self.app(scope, receive, send)

    def _too_big(self, size: str) -> RequestError:
        return RequestError("body", f"body: {size} bytes; expected at most {self.max_body_bytes:,}", 413)


async def _refuse(error: RequestError, scope, receive, send, headers: Optional[dict] = None) -> None:
    await JSONResponse(error.body(), status_code=error.status, headers=headers)(scope, receive, send)


async def _read_body(receive, limit: int) -> Optional[bytes]:
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes):
    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _authorized(scope, headers: dict, key: str) -> bool:
    """Constant-time comparison of whatever key the request carries."""
    given = headers.get(b"x-api-key")
    auth = headers.get(b"authorization", b"")
    if given is None and auth.lower().startswith(b"bearer "):
        given = auth[7:].strip()
    if given is None and scope["path"] == "/":
        from urllib.parse import parse_qs

        found = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key")
        given = found[0].encode("utf-8") if found else None
    return given is not None and hmac.compare_digest(given, key.encode("utf-8"))
