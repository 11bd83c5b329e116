"""The HTTP token service (`tinyllm serve`) and its playground page; needs the `serve` extra
(`pip install 'tinyllm[serve]'`: FastAPI and uvicorn).

`create_app(tokenizers)` is the FastAPI app (`tinyllm.serve.app` lists the endpoints):
tokenize, count, detokenize and stream-decode over JSON, errors that name the field as HTTP 400,
an optional API key, size limits, and a page at `/` where a person can see how text splits.

The names below are imported on first use (PEP 562 `__getattr__`): the CLI registers `serve` on
every call and must not pay for FastAPI.
"""

from tinyllm._lazy import lazy_exports

#: Each public name, by the submodule that defines it.
_HOMES = {
    "app": ("DEFAULT_TOKENIZERS", "Limits", "create_app"),
    "errors": ("RequestError",),
}

__getattr__, __all__ = lazy_exports("tinyllm.serve", _HOMES)
