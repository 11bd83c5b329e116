"""`tinyllm serve`: the token service on uvicorn (needs the `serve` extra:
`pip install 'tinyllm[serve]'`).

    tinyllm serve                               # the built-in presets on http://127.0.0.1:8000
    tinyllm serve -t gpt2 -t ./model/ --port 9000 --workers 4
    TINYLLM_API_KEY=secret tinyllm serve        # every endpoint but /healthz wants the key
"""

from __future__ import annotations

import os

API_KEY_ENV = "TINYLLM_API_KEY"


def add_parsers(sub) -> None:
    """Register `serve` (imports nothing of FastAPI until it runs)."""
    serve = sub.add_parser("serve", help="the HTTP token service and its playground page (needs tinyllm[serve])")
    serve.add_argument("--tokenizer", "-t", action="append", metavar="NAME_OR_PATH",
                       help="a tokenizer to serve (repeatable; default: the built-in presets)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, help="server processes (default: 1)")
    serve.add_argument("--api-key", help=f"require this key (default: ${API_KEY_ENV} when set)")
    serve.add_argument("--max-body-mb", type=float, default=16.0, help="largest request body, in MB (default: 16)")
    serve.add_argument("--max-text-chars", type=int, default=4 << 20,
                       help="longest text, in characters (default: 4194304)")
    serve.set_defaults(run=cmd_serve)


def cmd_serve(args) -> int:
    try:
        import uvicorn
    except ImportError:
        raise ValueError("serve: needs FastAPI and uvicorn; expected `pip install 'tinyllm[serve]'`") from None
    if args.workers < 1:
        raise ValueError(f"--workers: found {args.workers}; expected an integer >= 1")
    if not 0 < args.port < 65536:
        raise ValueError(f"--port: found {args.port}; expected 1..65535")
    # The app is made in each worker process from these (uvicorn imports it by name there).
    os.environ["TINYLLM_SERVE_TOKENIZERS"] = "\n".join(args.tokenizer or [])
    if not args.max_body_mb > 0:
        raise ValueError(f"--max-body-mb: found {args.max_body_mb}; expected a positive number of MB")
    if args.max_text_chars < 1:
        raise ValueError(f"--max-text-chars: found {args.max_text_chars}; expected an integer >= 1")
    os.environ["TINYLLM_SERVE_MAX_BODY"] = str(int(args.max_body_mb * 1e6))
    os.environ["TINYLLM_SERVE_MAX_TEXT"] = str(args.max_text_chars)
    if args.api_key:
        os.environ[API_KEY_ENV] = args.api_key
    from tinyllm.serve.app_factory import app_from_environment

    if args.workers == 1:
        uvicorn.run(app_from_environment(), host=args.host, port=args.port, log_level="info")
    else:
        uvicorn.run("tinyllm.serve.app_factory:app_from_environment", factory=True, host=args.host,
                    port=args.port, workers=args.workers, log_level="info")
    return 0
