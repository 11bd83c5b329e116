"""The app `tinyllm serve` runs, made from the environment it sets, so that every uvicorn worker
process builds its own (tokenizers loaded once per worker)."""

from __future__ import annotations

import os

from tinyllm.serve.app import DEFAULT_TOKENIZERS, Limits, create_app


def app_from_environment():
    names = [n for n in os.environ.get("TINYLLM_SERVE_TOKENIZERS", "").split("\n") if n] or list(DEFAULT_TOKENIZERS)
    limits = Limits(max_body_bytes=int(os.environ.get("TINYLLM_SERVE_MAX_BODY", Limits.max_body_bytes)),
                    max_text_chars=int(os.environ.get("TINYLLM_SERVE_MAX_TEXT", Limits.max_text_chars)))
    return create_app(names, api_key=os.environ.get("TINYLLM_API_KEY") or None, limits=limits)
